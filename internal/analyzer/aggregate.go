package analyzer

import (
	"fmt"
	"math"
	"strings"

	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/sqlerr"
)

// aggregate folds the spellings of an anonymized aggregate call into an *Aggregate:
//
//	ANON_SUM(x CLAMPED BETWEEN L AND U)      ZetaSQL
//	ANON_SUM(x, L, U)                        the thesis' trailing bounds
//	SUM(x, contribution_bounds_per_group => (L, U))   GoogleSQL DIFFERENTIAL_PRIVACY
func (b *anonBuilder) aggregate(f Func, n *ast.FuncCall) (*Aggregate, error) {
	name := strings.ToLower(lastName(n.Name))
	upper := strings.ToUpper(name)
	agg := &Aggregate{Func: f, Call: n}
	args := n.Args
	if n.Filter != nil {
		return nil, sqlerr.New(n.Filter.Span().Start, sqlerr.FeatureNotSupported, "FILTER is not supported on anonymized aggregates").
			WithHint("move the condition into the argument: %s(CASE WHEN cond THEN x END ...)", upper)
	}
	// Named arguments (GoogleSQL).
	var reportFormat ast.Expr
	for _, na := range n.NamedArgs {
		switch strings.ToLower(na.Name.Name) {
		case "report_format":
			if reportFormat != nil {
				return nil, sqlerr.New(na.Span().Start, sqlerr.InvalidParameterValue, "report_format is given twice")
			}
			reportFormat = na.Value
		case "contribution_bounds_per_group", "contribution_bounds_per_row":
			perRow := strings.HasSuffix(strings.ToLower(na.Name.Name), "_row")
			if perRow != f.PerRow() {
				want := "contribution_bounds_per_group"
				if f.PerRow() {
					want = "contribution_bounds_per_row"
				}
				return nil, sqlerr.New(na.Span().Start, sqlerr.InvalidParameterValue,
					"%s takes %s, not %s", upper, want, na.Name.Name)
			}
			t, ok := na.Value.(*ast.Tuple)
			if !ok || len(t.Elems) != 2 {
				return nil, sqlerr.New(na.Value.Span().Start, sqlerr.InvalidParameterValue,
					"%s must be a pair (lower, upper)", na.Name.Name)
			}
			if err := b.setBounds(agg, t.Elems[0], t.Elems[1]); err != nil {
				return nil, err
			}
		case "epsilon":
			v, err := constNumber(na.Value)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				return nil, sqlerr.New(na.Value.Span().Start, sqlerr.InvalidParameterValue, "epsilon must be a finite number greater than 0")
			}
			agg.Epsilon = v
		default:
			return nil, sqlerr.New(na.Span().Start, sqlerr.InvalidParameterValue, "unknown argument %s of %s", na.Name.Name, upper).
				WithHint("known: contribution_bounds_per_group, contribution_bounds_per_row, epsilon, report_format")
		}
	}
	if n.Clamped != nil {
		if agg.HasBounds {
			return nil, sqlerr.New(n.Clamped.Span().Start, sqlerr.InvalidParameterValue, "bounds are given twice")
		}
		if err := b.setBounds(agg, n.Clamped.Lo, n.Clamped.Hi); err != nil {
			return nil, err
		}
	}
	trailing := func(lo, hi ast.Expr) error {
		if agg.HasBounds {
			return sqlerr.New(lo.Span().Start, sqlerr.InvalidParameterValue, "bounds are given twice")
		}
		return b.setBounds(agg, lo, hi)
	}
	zero := &ast.Literal{Kind: ast.IntLit, Text: "0"}
	switch f {
	case CountRows:
		switch {
		case n.Star:
			if len(args) == 1 { // thesis: ANON_COUNT(*, U)
				zero.SetSpan(args[0].Span())
				if err := trailing(zero, args[0]); err != nil {
					return nil, err
				}
			} else if len(args) > 1 {
				return nil, argCount(n, upper+"(*) takes no arguments besides bounds")
			}
		case n.Distinct:
			if len(args) != 1 {
				return nil, argCount(n, upper+"(DISTINCT x) takes one argument")
			}
			c, ok := ast.Unparen(args[0]).(*ast.ColumnRef)
			if !ok || !b.isUnit(c) {
				return nil, sqlerr.New(args[0].Span().Start, sqlerr.FeatureNotSupported,
					"%s(DISTINCT ...) is only supported on the privacy unit (it counts distinct users)", upper).
					WithHint("count distinct users with %s(DISTINCT <privacy unit>)", upper)
			}
			agg.Func = CountUnits
			agg.HasBounds, agg.Lower, agg.Upper = true, 0, 1
			if err := b.report(agg, n, reportFormat); err != nil {
				return nil, err
			}
			return agg, nil
		default:
			agg.Func = CountValues
			switch len(args) {
			case 1:
			case 2: // thesis: ANON_COUNT(x, U)
				zero.SetSpan(args[1].Span())
				if err := trailing(zero, args[1]); err != nil {
					return nil, err
				}
			default:
				return nil, argCount(n, upper+" takes one argument")
			}
			agg.Arg = args[0]
		}
	case Sum, Avg, VarPop, StddevPop:
		switch len(args) {
		case 1:
		case 3:
			if err := trailing(args[1], args[2]); err != nil {
				return nil, err
			}
		default:
			return nil, argCount(n, upper+" takes one argument and optional bounds")
		}
		agg.Arg = args[0]
	case Percentile:
		switch name {
		case "anon_median", "anon_min", "anon_max":
			agg.Percentile = map[string]float64{"anon_median": 0.5, "anon_min": 0, "anon_max": 1}[name]
			switch len(args) {
			case 1:
			case 3:
				if err := trailing(args[1], args[2]); err != nil {
					return nil, err
				}
			default:
				return nil, argCount(n, upper+" takes one argument and optional bounds")
			}
		default: // anon_percentile_cont, anon_ntile, percentile_cont
			switch len(args) {
			case 2:
			case 4:
				if err := trailing(args[2], args[3]); err != nil {
					return nil, err
				}
			default:
				return nil, argCount(n, upper+" takes a value and a percentile")
			}
			p, err := constNumber(args[1])
			if err != nil || !(p >= 0 && p <= 1) { // written so that NaN is refused too
				return nil, sqlerr.New(args[1].Span().Start, sqlerr.InvalidParameterValue,
					"the percentile of %s must be a constant in [0, 1]", upper)
			}
			agg.Percentile = p
		}
		agg.Arg = args[0]
	case Quantiles:
		if len(args) != 2 {
			return nil, argCount(n, upper+" takes a value and a number of quantiles")
		}
		v, err := constNumber(args[1])
		if err != nil || !(v >= 1 && v <= 1000) || v != math.Trunc(v) {
			return nil, sqlerr.New(args[1].Span().Start, sqlerr.InvalidParameterValue,
				"the number of quantiles of %s must be an integer constant between 1 and 1000", upper)
		}
		agg.N = int(v)
		agg.Arg = args[0]
	}
	if n.Distinct {
		return nil, sqlerr.New(n.Span().Start, sqlerr.FeatureNotSupported, "DISTINCT is only supported as %s(DISTINCT <privacy unit>)", "ANON_COUNT")
	}
	if agg.Arg != nil {
		if l, ok := ast.Unparen(agg.Arg).(*ast.Literal); ok && l.Kind == ast.NullLit && agg.Func != CountValues {
			// The literal NULL has no type (PostgreSQL cannot bind it as a sum's argument)
			// and aggregates no value: a mistake, said here rather than by the database.
			return nil, sqlerr.New(agg.Arg.Span().Start, sqlerr.DatatypeMismatch, "the argument of %s is the literal NULL: it has no type and no value", upper).
				WithHint("aggregate a numeric column or expression; write CAST(NULL AS DOUBLE) if you really mean no value")
		}
		if hasAnyAggregate(agg.Arg, b.q.Options.Syntax) {
			return nil, sqlerr.New(agg.Arg.Span().Start, sqlerr.GroupingError, "aggregate calls cannot be nested")
		}
		if err := b.a.exprChecksCols(agg.Arg, b.sc, b.env, ctxFrom, true, true); err != nil {
			return nil, err
		}
	}
	if err := b.report(agg, n, reportFormat); err != nil {
		return nil, err
	}
	if (agg.Func == CountRows || agg.Func == CountValues) && agg.HasBounds && agg.Lower < 0 {
		return nil, sqlerr.New(n.Span().Start, sqlerr.InvalidParameterValue, "the bounds of a count must not be negative")
	}
	return agg, nil
}

func (b *anonBuilder) isUnit(c *ast.ColumnRef) bool {
	r, err := b.sc.resolve(c)
	return err == nil && r.isUnit()
}

func argCount(n *ast.FuncCall, msg string) error {
	return sqlerr.New(n.Span().Start, sqlerr.UndefinedFunction, "%s", msg)
}

func (b *anonBuilder) setBounds(agg *Aggregate, lo, hi ast.Expr) error {
	l, err := constNumber(lo)
	if err != nil {
		return sqlerr.New(lo.Span().Start, sqlerr.InvalidParameterValue, "a clamping bound must be a constant number").
			WithHint("bounds must come from public knowledge, not from the data")
	}
	u, err := constNumber(hi)
	if err != nil {
		return sqlerr.New(hi.Span().Start, sqlerr.InvalidParameterValue, "a clamping bound must be a constant number")
	}
	if math.IsNaN(l) || math.IsNaN(u) || math.IsInf(l, 0) || math.IsInf(u, 0) {
		return sqlerr.New(lo.Span().Start, sqlerr.InvalidParameterValue, "clamping bounds must be finite")
	}
	if l > u {
		return sqlerr.New(lo.Span().Start, sqlerr.InvalidParameterValue,
			"the lower bound %s is greater than the upper bound %s", fmtNum(l), fmtNum(u))
	}
	if math.Abs(l) > 1e15 || math.Abs(u) > 1e15 {
		return sqlerr.New(lo.Span().Start, sqlerr.InvalidParameterValue,
			"clamping bounds beyond 1e15 in magnitude are not supported (the noise would swamp any result)")
	}
	agg.HasBounds, agg.Lower, agg.Upper = true, l, u
	return nil
}

func fmtNum(v float64) string { return fmt.Sprintf("%g", v) }
