package analyzer

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/sqlerr"
)

// parseOptions validates the anonymization clause's options. Option names are case-insensitive
// (EPSILON, Delta); word values may be written as identifiers (group_selection_strategy =
// PUBLIC_GROUPS) or strings. The rules, and why:
//   - epsilon is required, non-NULL, finite and > 0: it is the privacy loss;
//   - exactly one of delta (in [0, 1], as in ZetaSQL; the budget decides what may be spent) and
//     k_threshold (>= 1) is required: partition selection needs one of them. k_threshold has
//     ZetaSQL's meaning: a group is released when its noisy unit count, rounded to an integer,
//     is at least k_threshold; the delta that costs is derived and charged (rewrite);
//   - kappa / max_groups_contributed is a positive integer. Left out in the ANONYMIZATION
//     syntax, or given as NULL in either syntax, it means what it means in ZetaSQL's reference
//     implementation: contributions across groups are not bounded (Options.UnboundedGroups).
//     That is exact and safe with no GROUP BY (a unit then reaches one group, kappa = 1);
//     with GROUP BY it gives no privacy guarantee, so the engine allows it only when the data
//     owner lifted the budget (SET BUDGET UNLIMITED, test data) and refuses it otherwise. In the
//     DIFFERENTIAL_PRIVACY syntax a missing max_groups_contributed defaults to 1, as in
//     GoogleSQL;
//   - min_privacy_units_per_group cannot be combined with k_threshold (ZetaSQL refuses it: two
//     thresholds would apply) nor with PUBLIC_GROUPS (no group is thresholded);
//   - max_rows_contributed is mutually exclusive with kappa;
//   - kappa and max_rows_contributed are at most MaxContributions, so that every backend can
//     run the query (see there): a limit the database would only hit while reading the data
//     would fail the query after it was charged.
func parseOptions(c *ast.AnonClause) (Options, *ast.Ident, error) {
	o := Options{Syntax: c.Syntax, Pos: c.Span().Start, Noise: "laplace"}
	var unitCol *ast.Ident
	seen := map[string]*ast.Option{}
	var kappaOpt *ast.Option
	for _, opt := range c.Options {
		name := strings.ToLower(opt.Name.Name)
		canon := name
		if name == "max_groups_contributed" {
			canon = "kappa"
		}
		if prev, dup := seen[canon]; dup {
			return o, nil, sqlerr.New(opt.Span().Start, sqlerr.InvalidParameterValue,
				"option %s is given twice (first at %s)", opt.Name.Name, prev.Span().Start)
		}
		seen[canon] = opt
		var err error
		switch name {
		case "epsilon":
			if isNull(opt.Value) {
				err = optErr(opt, "option EPSILON must be set and non-NULL", "for example epsilon=1 (smaller: more privacy, more noise)")
				break
			}
			o.Epsilon, err = positiveFinite(opt)
		case "delta":
			if isNull(opt.Value) {
				err = optErr(opt, "option DELTA must be non-NULL", "for example delta=1e-5, below 1/(number of users)")
				break
			}
			o.Delta, err = number(opt)
			if err == nil && !(o.Delta >= 0 && o.Delta <= 1) {
				err = optErr(opt, fmt.Sprintf("delta must be in the inclusive interval [0, 1], but is %s", optNum(o.Delta)),
					"a typical delta is 1e-5 or less; below 1/(number of users)")
			}
			o.HasDelta = true
		case "k_threshold":
			o.KThreshold, err = number(opt)
			if err == nil && (o.KThreshold < 1 || math.IsInf(o.KThreshold, 0) || math.IsNaN(o.KThreshold)) {
				err = optErr(opt, "k_threshold must be a finite number >= 1", "")
			}
		case "kappa", "max_groups_contributed":
			kappaOpt = opt
			if isNull(opt.Value) {
				o.UnboundedGroups = true
				break
			}
			o.Kappa, err = contributions(opt)
		case "max_rows_contributed":
			o.MaxRowsContributed, err = contributions(opt)
		case "privacy_unit_column":
			unitCol, err = identValue(opt)
		case "group_selection_strategy":
			var v string
			v, err = wordValue(opt)
			switch strings.ToUpper(v) {
			case "PUBLIC_GROUPS":
				o.PublicGroups = true
			case "LAPLACE_THRESHOLD", "":
			default:
				if err == nil {
					err = optErr(opt, fmt.Sprintf("unknown group_selection_strategy %s", v), "use LAPLACE_THRESHOLD or PUBLIC_GROUPS")
				}
			}
		case "group_selection_epsilon":
			o.GroupSelectionEpsilon, err = positiveFinite(opt)
		case "min_privacy_units_per_group":
			o.MinPrivacyUnitsPerGroup, err = positiveInt(opt)
		case "noise_kind", "noise":
			var v string
			v, err = wordValue(opt)
			v = strings.ToLower(v)
			if err == nil && v != "laplace" && v != "gaussian" {
				err = optErr(opt, "noise_kind must be LAPLACE or GAUSSIAN", "")
			}
			o.Noise = v
		case "group_selection", "partition_selection":
			var v string
			v, err = wordValue(opt)
			o.Selection = strings.ToLower(v)
			switch o.Selection {
			case "laplace", "laplace_threshold", "gaussian", "gaussian_threshold", "optimal", "truncated_geometric":
			default:
				if err == nil {
					err = optErr(opt, "unknown group_selection "+v, "use LAPLACE_THRESHOLD, GAUSSIAN_THRESHOLD or TRUNCATED_GEOMETRIC")
				}
			}
		case "confidence_level":
			o.ConfidenceLevel, err = number(opt)
			if err == nil && !(o.ConfidenceLevel > 0 && o.ConfidenceLevel < 1) {
				err = optErr(opt, "confidence_level must be in (0, 1)", "for example confidence_level=0.95")
			}
		default:
			err = sqlerr.New(opt.Span().Start, sqlerr.InvalidParameterValue, "unknown anonymization option %s", opt.Name.Name).WithHint(
				"%s", withSuggestion(didYouMean(opt.Name.Name, optionNames),
					"known options: epsilon, delta, k_threshold, kappa (max_groups_contributed), max_rows_contributed, privacy_unit_column, group_selection_strategy, group_selection_epsilon, min_privacy_units_per_group, noise_kind, group_selection, confidence_level"))
		}
		if err != nil {
			return o, nil, err
		}
	}
	pos := c.Span().Start
	if seen["epsilon"] == nil {
		return o, nil, sqlerr.New(pos, sqlerr.InvalidParameterValue, "the anonymization clause needs epsilon: option EPSILON must be set and non-NULL").
			WithHint("add OPTIONS(epsilon=1, delta=1e-5, kappa=1) (smaller epsilon: more privacy, more noise)")
	}
	if m := seen["min_privacy_units_per_group"]; m != nil {
		if k := seen["k_threshold"]; k != nil {
			return o, nil, sqlerr.New(m.Span().Start, sqlerr.InvalidParameterValue,
				"the options min_privacy_units_per_group and k_threshold cannot be specified simultaneously").
				WithHint("give delta with min_privacy_units_per_group, or k_threshold alone")
		}
		if o.PublicGroups {
			return o, nil, sqlerr.New(m.Span().Start, sqlerr.InvalidParameterValue,
				"the min_privacy_units_per_group option must not be specified if group_selection_strategy=PUBLIC_GROUPS").
				WithHint("public groups are all released, none is thresholded: drop min_privacy_units_per_group")
		}
	}
	if o.HasDelta && o.KThreshold > 0 {
		return o, nil, sqlerr.New(seen["k_threshold"].Span().Start, sqlerr.InvalidParameterValue,
			"delta and k_threshold are mutually exclusive").WithHint("give delta only (preferred)")
	}
	if !o.HasDelta && o.KThreshold == 0 {
		msg := "the anonymization clause needs delta or k_threshold (option DELTA or K_THRESHOLD must be set)"
		if c.Syntax == ast.DifferentialPrivacy {
			msg = "the differential privacy clause needs delta (option DELTA must be set)"
		}
		return o, nil, sqlerr.New(pos, sqlerr.InvalidParameterValue, "%s", msg).
			WithHint("add delta=1e-5 (the probability that a group of one user is released); it must be below 1/(number of users)")
	}
	if o.Kappa > 0 && o.MaxRowsContributed > 0 {
		return o, nil, sqlerr.New(kappaOpt.Span().Start, sqlerr.InvalidParameterValue,
			"kappa (max_groups_contributed) and max_rows_contributed are mutually exclusive").WithHint("give one of them")
	}
	if o.UnboundedGroups && o.MaxRowsContributed > 0 {
		// max_rows_contributed bounds every contribution: a NULL kappa beside it adds nothing.
		o.UnboundedGroups = false
	}
	if o.Kappa == 0 && o.MaxRowsContributed == 0 && !o.UnboundedGroups {
		if c.Syntax == ast.Anonymization {
			o.UnboundedGroups = true
		} else {
			o.Kappa = 1
		}
	}
	return o, unitCol, nil
}

// isNull reports whether x is NULL or a cast of NULL.
func isNull(x ast.Expr) bool {
	switch x := x.(type) {
	case *ast.Literal:
		return x.Kind == ast.NullLit
	case *ast.Paren:
		return isNull(x.X)
	case *ast.Cast:
		return isNull(x.X)
	}
	return false
}

// optNum prints an option's value as ZetaSQL's messages do (inf, -inf, nan).
func optNum(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	case math.IsNaN(v):
		return "nan"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// intNum prints an integral option value: in full below 2^53, where a float64 holds every
// integer and no other reads as it, and in exponent form from there, where the value read
// may not be the one written (9223372036854775807 reads as 2^63, 2^53+1 as 2^53).
func intNum(v float64) string {
	if math.Abs(v) < 1<<53 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func optErr(opt *ast.Option, msg, hint string) error {
	return sqlerr.New(opt.Value.Span().Start, sqlerr.InvalidParameterValue, "%s", msg).WithHint("%s", hint)
}

func number(opt *ast.Option) (float64, error) {
	v, err := constNumber(opt.Value)
	if err != nil {
		return 0, optErr(opt, fmt.Sprintf("option %s must be a number", opt.Name.Name), "")
	}
	return v, nil
}

func positiveFinite(opt *ast.Option) (float64, error) {
	v, err := number(opt)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return 0, optErr(opt, fmt.Sprintf("%s must be finite and positive, but is %s", opt.Name.Name, optNum(v)),
			"epsilon=1e20 already gives noise-free results for test data")
	}
	return v, nil
}

func positiveInt(opt *ast.Option) (int64, error) {
	v, err := number(opt)
	if err != nil {
		return 0, err
	}
	if v != math.Trunc(v) || v < 1 {
		return 0, optErr(opt, fmt.Sprintf("%s must be a positive integer, but is %s", opt.Name.Name, optNum(v)), "")
	}
	if v > 1e9 {
		return 0, optErr(opt, fmt.Sprintf("%s is %s, above the limit of %d", opt.Name.Name, intNum(v), int64(1e9)), "")
	}
	return int64(v), nil
}

// MaxContributions is the largest kappa (max_groups_contributed) and max_rows_contributed.
// The stage keeps each unit's first n rows by priority with row_number() <= n, which DuckDB
// rewrites into arg_min(..., n), and DuckDB refuses n >= 1000000 ("n value must be <
// 1000000") only when it runs the query, after the charge; 100000 leaves room below that.
// Noise grows linearly with either limit, so larger values would release nothing useful.
const MaxContributions = 100000

func contributions(opt *ast.Option) (int64, error) {
	// An integer above the limit says so, however large (not "must be a positive integer").
	if v, err := number(opt); err == nil && v == math.Trunc(v) && v > MaxContributions {
		return 0, optErr(opt, fmt.Sprintf("%s is %s, above the limit of %d", opt.Name.Name, intNum(v), MaxContributions),
			fmt.Sprintf("give at most %d; noise grows with %s, so a smaller value (the number of groups or rows one unit really needs) gives more accurate results", MaxContributions, opt.Name.Name))
	}
	return positiveInt(opt)
}

func identValue(opt *ast.Option) (*ast.Ident, error) {
	switch v := opt.Value.(type) {
	case *ast.ColumnRef:
		return v.Parts[len(v.Parts)-1], nil
	case *ast.Literal:
		if v.Kind == ast.StringLit {
			return &ast.Ident{Name: v.Text}, nil
		}
	}
	return nil, optErr(opt, fmt.Sprintf("option %s must name a column", opt.Name.Name), "")
}

func wordValue(opt *ast.Option) (string, error) {
	switch v := opt.Value.(type) {
	case *ast.ColumnRef:
		return v.Parts[len(v.Parts)-1].Name, nil
	case *ast.Literal:
		if v.Kind == ast.StringLit {
			return v.Text, nil
		}
	}
	return "", optErr(opt, fmt.Sprintf("option %s must be a word", opt.Name.Name), "")
}

// constNumber evaluates a constant numeric expression: literals, unary signs, + - * / and
// parentheses.
func constNumber(x ast.Expr) (float64, error) {
	switch x := x.(type) {
	case *ast.Literal:
		if x.Kind == ast.IntLit || x.Kind == ast.FloatLit {
			return strconv.ParseFloat(x.Text, 64)
		}
	case *ast.Paren:
		return constNumber(x.X)
	case *ast.Unary:
		v, err := constNumber(x.X)
		if err != nil {
			return 0, err
		}
		switch x.Op {
		case "-":
			return -v, nil
		case "+":
			return v, nil
		}
	case *ast.Cast:
		// CAST('inf' AS DOUBLE), CAST('nan' AS FLOAT64): the special values, so that they are
		// refused with the option's own rule rather than as "not a number".
		if l, ok := x.X.(*ast.Literal); ok && l.Kind == ast.StringLit {
			return FloatText(l.Text)
		}
		return constNumber(x.X)
	case *ast.Binary:
		l, err := constNumber(x.L)
		if err != nil {
			return 0, err
		}
		r, err := constNumber(x.R)
		if err != nil {
			return 0, err
		}
		switch x.Op {
		case "+":
			return l + r, nil
		case "-":
			return l - r, nil
		case "*":
			return l * r, nil
		case "/":
			if r == 0 {
				return 0, fmt.Errorf("division by zero")
			}
			return l / r, nil
		}
	}
	return 0, fmt.Errorf("not a constant number")
}

// optionNames are the anonymization options, the candidates of "did you mean".
var optionNames = []string{"epsilon", "delta", "k_threshold", "kappa", "max_groups_contributed",
	"max_rows_contributed", "privacy_unit_column", "group_selection_strategy", "group_selection_epsilon",
	"min_privacy_units_per_group", "noise_kind", "noise", "group_selection", "partition_selection", "confidence_level"}

// FloatText reads the text of a string cast to a float (CAST('inf' AS DOUBLE)): the special
// values inf, infinity and nan in any case and with a sign, or a number.
func FloatText(text string) (float64, error) {
	t := strings.TrimSpace(text)
	switch strings.ToLower(t) {
	case "inf", "+inf", "infinity", "+infinity":
		return math.Inf(1), nil
	case "-inf", "-infinity":
		return math.Inf(-1), nil
	case "nan", "+nan", "-nan":
		return math.NaN(), nil
	}
	return strconv.ParseFloat(t, 64)
}
