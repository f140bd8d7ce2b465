package engine

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/limits"
	"github.com/dpsql/dpsql/internal/scram"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/ledger"
	"github.com/dpsql/dpsql/sqlerr"
)

// The owner's account statements (dpsql serve's analysts):
//
//	CREATE ANALYST name PASSWORD 'secret' [OPTIONS(epsilon=10, delta=1e-4, statement_timeout='60s',
//		max_concurrent_queries=4, owner=false)]
//	ALTER ANALYST name [PASSWORD 'new'] [SET OPTIONS(...)]   -- options not named keep their value; NULL removes one
//	DROP ANALYST [IF EXISTS] name
//	SHOW ANALYSTS
//
// The password is stored only as its SCRAM-SHA-256 verifier; the statements' text is never
// passed to the database, and the result's Statement is the printed form, with the password
// redacted (ast.RedactedPassword). An account without epsilon and delta has no allowance of
// its own: the database's total still bounds it, shared with every other analyst.

const accountOptionsHint = "the options are epsilon (> 0), delta (in [0, 1)), statement_timeout ('60s'), " +
	"max_concurrent_queries (1 to 1000), owner (TRUE or FALSE) and, with ALTER ANALYST, allow_below_spent (TRUE sets an allowance below what was spent); NULL removes a limit: " +
	"OPTIONS(epsilon = 10, delta = 1e-4, statement_timeout = '60s', max_concurrent_queries = 4, owner = FALSE)"

// MaxConcurrentQueries is the largest max_concurrent_queries of an account.
const MaxConcurrentQueries = 1000

// accountOptions applies an OPTIONS list to a: options not named keep their value. It returns
// the position of the option that asked for an allowance or for owner rights (for the error
// that refuses both), or the zero Pos.
func accountOptions(opts []*ast.Option, a *store.Analyst) (allowanceAt, ownerAt sqlerr.Pos, err error) {
	seen := map[string]bool{}
	for _, o := range opts {
		name := strings.ToLower(o.Name.Name)
		if seen[name] {
			return allowanceAt, ownerAt, sqlerr.New(o.Span().Start, sqlerr.InvalidParameterValue, "option %s is given twice", o.Name.Name).
				WithHint("%s", accountOptionsHint)
		}
		seen[name] = true
		at := o.Value.Span().Start
		l, _ := o.Value.(*ast.Literal)
		null := l != nil && l.Kind == ast.NullLit
		bad := func(format string, args ...any) error {
			return sqlerr.New(at, sqlerr.InvalidParameterValue, format, args...).WithHint("%s", accountOptionsHint)
		}
		switch name {
		case "epsilon", "delta":
			var p **float64 = &a.AllowanceEpsilon
			if name == "delta" {
				p = &a.AllowanceDelta
			}
			if null {
				*p = nil
				continue
			}
			v, err := constFloat(o.Value)
			switch {
			case err != nil:
				return allowanceAt, ownerAt, bad("%s must be a number or NULL", name)
			case name == "epsilon" && !(v > 0 && !math.IsInf(v, 0)):
				return allowanceAt, ownerAt, bad("epsilon must be a finite number greater than 0, got %g", v)
			case name == "delta" && !(v >= 0 && v < 1):
				return allowanceAt, ownerAt, bad("delta must be in [0, 1), got %g", v)
			}
			*p = &v
			allowanceAt = o.Span().Start
		case "statement_timeout":
			text, null, ok := optionText(o.Value)
			if !ok {
				return allowanceAt, ownerAt, bad("statement_timeout must be a duration in quotes or NULL")
			}
			if null {
				a.StatementTimeout = 0
				continue
			}
			d, err := limits.ParseTimeout(text)
			if err != nil {
				return allowanceAt, ownerAt, sqlerr.New(at, sqlerr.InvalidParameterValue, "statement_timeout: %v", err).
					WithHint("give a duration in quotes between %v and %v, like statement_timeout = '60s', '5m' or '1h30m'; NULL removes the limit",
						limits.MinStatementTimeout, limits.MaxStatementTimeout)
			}
			a.StatementTimeout = d
		case "max_concurrent_queries":
			if null {
				a.MaxConcurrentQueries = 0
				continue
			}
			n, err := strconv.ParseInt(literalText(l, ast.IntLit), 10, 64)
			if err != nil || n < 1 || n > MaxConcurrentQueries {
				return allowanceAt, ownerAt, bad("max_concurrent_queries must be an integer from 1 to %d, or NULL", MaxConcurrentQueries)
			}
			a.MaxConcurrentQueries = n
		case "owner":
			if l == nil || l.Kind != ast.BoolLit {
				return allowanceAt, ownerAt, bad("owner must be TRUE or FALSE")
			}
			a.Owner = l.Text == "TRUE"
			if a.Owner {
				ownerAt = o.Span().Start
			}
		default:
			return allowanceAt, ownerAt, sqlerr.New(o.Span().Start, sqlerr.InvalidParameterValue, "unknown analyst option %s", o.Name.Name).
				WithHint("%s", accountOptionsHint)
		}
	}
	return allowanceAt, ownerAt, nil
}

// literalText is l's text if l is a literal of kind, else "".
func literalText(l *ast.Literal, kind ast.LiteralKind) string {
	if l == nil || l.Kind != kind {
		return ""
	}
	return l.Text
}

// settle checks what accountOptions made of a: an owner account has no allowance.
func settle(s ast.Stmt, a *store.Analyst, allowanceAt, ownerAt sqlerr.Pos) error {
	if a.Owner && (a.AllowanceEpsilon != nil || a.AllowanceDelta != nil) {
		at := allowanceAt
		if !at.IsValid() {
			at = ownerAt
		}
		if !at.IsValid() {
			at = s.Span().Start
		}
		return sqlerr.New(at, sqlerr.InvalidParameterValue, "an owner account (owner = TRUE) has no allowance: it has the data owner's rights").
			WithHint("give either owner = TRUE or epsilon and delta; to make an account with an allowance an owner, remove it too: SET OPTIONS(owner = TRUE, epsilon = NULL, delta = NULL)")
	}
	return nil
}

// newVerifier is the stored form of the password in pw (a non-empty string literal).
func newVerifier(pw *ast.Literal) (string, error) {
	if pw.Text == "" {
		return "", sqlerr.New(pw.Span().Start, sqlerr.InvalidParameterValue, "the password must not be empty").
			WithHint("PASSWORD 'a long secret'")
	}
	v, err := scram.NewVerifier(pw.Text)
	if err != nil {
		// scram's errors never hold the password.
		return "", err
	}
	return v, nil
}

// positioned gives a store error without a position the statement's.
func positioned(err error, s ast.Stmt) error {
	if se, ok := sqlerr.As(err); ok && !se.Pos.IsValid() {
		se.Pos = s.Span().Start
	}
	return err
}

func (e *Engine) createAnalyst(ctx context.Context, s *ast.CreateAnalystStmt) (*Result, error) {
	if err := e.needOwner(s, "CREATE ANALYST"); err != nil {
		return nil, err
	}
	a := store.Analyst{Name: s.Name.Name}
	allowanceAt, ownerAt, err := accountOptions(s.Options, &a)
	if err == nil {
		err = settle(s, &a, allowanceAt, ownerAt)
	}
	if err != nil {
		return nil, err
	}
	if a.Verifier, err = newVerifier(s.Password); err != nil {
		return nil, err
	}
	if err := e.b.Tx(ctx, func(q backend.Querier) error { return store.CreateAnalyst(ctx, q, a) }); err != nil {
		return nil, positioned(err, s)
	}
	r := &Result{Tag: "CREATE ANALYST"}
	if !a.Owner && a.AllowanceEpsilon == nil && a.AllowanceDelta == nil {
		r.Notices = []string{fmt.Sprintf("analyst %s has no allowance of its own: only the database's budget, shared by all analysts, bounds it; "+
			"give one with ALTER ANALYST %s SET OPTIONS(epsilon = ..., delta = ...)", a.Name, a.Name)}
	}
	return r, nil
}

func (e *Engine) alterAnalyst(ctx context.Context, s *ast.AlterAnalystStmt) (*Result, error) {
	if err := e.needOwner(s, "ALTER ANALYST"); err != nil {
		return nil, err
	}
	var verifier string
	if s.Password != nil {
		var err error
		if verifier, err = newVerifier(s.Password); err != nil {
			return nil, err
		}
	}
	belowSpent, opts, err := belowSpentOption(s.Options)
	if err != nil {
		return nil, err
	}
	var notice string
	err = e.b.Tx(ctx, func(q backend.Querier) error {
		a, ok, err := store.LookupAnalyst(ctx, q, s.Name.Name)
		if err != nil {
			return err
		}
		if !ok {
			return sqlerr.New(s.Name.Span().Start, sqlerr.UndefinedObject, "analyst %s does not exist", s.Name.Name).
				WithHint("SHOW ANALYSTS lists the accounts; CREATE ANALYST %s PASSWORD '...' creates it", s.Name.Name)
		}
		allowanceAt, ownerAt, err := accountOptions(opts, &a)
		if err == nil {
			err = settle(s, &a, allowanceAt, ownerAt)
		}
		if err != nil {
			return err
		}
		if notice, err = allowanceBelowSpent(s, a, allowanceAt, belowSpent); err != nil {
			return err
		}
		if verifier != "" {
			a.Verifier = verifier
		}
		return store.UpdateAnalyst(ctx, q, a)
	})
	if err != nil {
		return nil, positioned(err, s)
	}
	r := &Result{Tag: "ALTER ANALYST"}
	if notice != "" {
		r.Notices = []string{notice}
	}
	return r, nil
}

// allowanceBelowSpent checks an account's new allowance against what it already spent, as SET
// BUDGET checks the total: an allowance below it stops the account's spending, so it is
// refused unless allow_below_spent = TRUE (belowSpent), and then comes with a notice.
func allowanceBelowSpent(s ast.Stmt, a store.Analyst, allowanceAt sqlerr.Pos, belowSpent bool) (notice string, err error) {
	// A component without an allowance never binds: compare it as unbounded.
	allowance := ledger.Budget{Epsilon: math.Inf(1), Delta: math.Inf(1)}
	if a.AllowanceEpsilon != nil {
		allowance.Epsilon = *a.AllowanceEpsilon
	}
	if a.AllowanceDelta != nil {
		allowance.Delta = *a.AllowanceDelta
	}
	if !ledger.BelowSpent(allowance, a.Spent) {
		return "", nil
	}
	if belowSpent {
		return fmt.Sprintf("analyst %s's allowance is below what it already spent (%s): it can spend nothing more until the allowance is raised",
			a.Name, a.Spent), nil
	}
	at := allowanceAt
	if !at.IsValid() {
		at = s.Span().Start
	}
	return "", sqlerr.New(at, sqlerr.InvalidParameterValue,
		"the new allowance of analyst %s is below what it already spent (%s): it could spend nothing more", a.Name, a.Spent).
		WithHint("give an allowance of at least what was spent (an allowance counts all the account's spending, it is not what is left); " +
			"to stop the account's spending on purpose, add allow_below_spent = TRUE to the options")
}

func (e *Engine) dropAnalyst(ctx context.Context, s *ast.DropAnalystStmt) (*Result, error) {
	if err := e.needOwner(s, "DROP ANALYST"); err != nil {
		return nil, err
	}
	var existed bool
	err := e.b.Tx(ctx, func(q backend.Querier) (err error) {
		existed, err = store.DropAnalyst(ctx, q, s.Name.Name)
		return err
	})
	if err != nil {
		return nil, positioned(err, s)
	}
	r := &Result{Tag: "DROP ANALYST"}
	switch {
	case !existed && !s.IfExists:
		return nil, sqlerr.New(s.Name.Span().Start, sqlerr.UndefinedObject, "analyst %s does not exist", s.Name.Name).
			WithHint("SHOW ANALYSTS lists the accounts; DROP ANALYST IF EXISTS %s drops it only if it exists", s.Name.Name)
	case !existed:
		r.Notices = []string{fmt.Sprintf("analyst %s does not exist, skipping", s.Name.Name)}
	default:
		r.Notices = []string{fmt.Sprintf("analyst %s is dropped: its open sessions can no longer spend; what it spent stays spent", s.Name.Name)}
	}
	return r, nil
}

// showAnalysts is SHOW ANALYSTS, for the owner: one row per account. The allowance is NULL
// where the account has none (only the database's total bounds it); remaining is what the
// allowance has left (NULL without an allowance).
func (e *Engine) showAnalysts(ctx context.Context, s *ast.ShowStmt) (*Result, error) {
	if err := e.needOwner(s, "SHOW ANALYSTS"); err != nil {
		return nil, err
	}
	list, err := store.ListAnalysts(ctx, e.b)
	if err != nil {
		return nil, positioned(err, s)
	}
	r := &Result{Tag: "SHOW", Columns: []Column{{"name", "VARCHAR"}, {"owner", "BOOLEAN"},
		{"allowance_epsilon", "DOUBLE"}, {"allowance_delta", "DOUBLE"}, {"spent_epsilon", "DOUBLE"}, {"spent_delta", "DOUBLE"},
		{"remaining_epsilon", "DOUBLE"}, {"remaining_delta", "DOUBLE"}, {"statement_timeout", "VARCHAR"}, {"max_concurrent_queries", "BIGINT"}}}
	orNull := func(p *float64) any {
		if p == nil {
			return nil
		}
		return r15(*p)
	}
	for _, a := range list {
		remEps, remDelta := a.Remaining()
		var timeout, conc any
		if a.StatementTimeout > 0 {
			timeout = limits.FormatTimeout(a.StatementTimeout)
		}
		if a.MaxConcurrentQueries > 0 {
			conc = a.MaxConcurrentQueries
		}
		r.Rows = append(r.Rows, []any{a.Name, a.Owner, orNull(a.AllowanceEpsilon), orNull(a.AllowanceDelta),
			r15(a.Spent.Epsilon), r15(a.Spent.Delta), orNull(remEps), orNull(remDelta), timeout, conc})
	}
	return r, nil
}

// r15 rounds to 15 significant digits: sums of float64 costs carry rounding noise
// (9.900000000000001e-05).
func r15(v float64) float64 {
	f, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 15, 64), 64)
	if err != nil || math.IsInf(f, 0) && !math.IsInf(v, 0) {
		// Near the largest double (what spent saturates at) the rounding overflows.
		return v
	}
	return f
}

// budgetRows are SHOW BUDGET's rows for a session with an account: the allowance (the
// database's total where the account has none), what the analyst spent, what the analyst can
// still spend (the smaller of the allowance's and the database's remainders), and what the
// database has left for all analysts.
func budgetRows(st ledger.Status) [][]any {
	a := st.Account
	total := st.Total
	if a.LimitEpsilon {
		total.Epsilon = a.Allowance.Epsilon
	}
	if a.LimitDelta {
		total.Delta = a.Allowance.Delta
	}
	rem, db := st.AccountRemaining(), st.Remaining()
	// Under a lifted database limit (SET BUDGET UNLIMITED), what is not bounded by an
	// allowance is NULL: there is no number to show.
	limited := func(v float64, bounded bool) any {
		if st.Unlimited && !bounded || math.IsInf(v, 1) {
			return nil
		}
		return r15(v)
	}
	return [][]any{
		{"total", limited(total.Epsilon, a.LimitEpsilon), limited(total.Delta, a.LimitDelta)},
		{"spent", r15(a.Spent.Epsilon), r15(a.Spent.Delta)},
		{"remaining", limited(rem.Epsilon, a.LimitEpsilon), limited(rem.Delta, a.LimitDelta)},
		{"database remaining", limited(db.Epsilon, false), limited(db.Delta, false)}}
}

// redacted is the text a result records for a statement: account statements are printed, so
// that their password is not kept (ast.RedactedPassword).
func redacted(st ast.Stmt, text string) string {
	switch st.(type) {
	case *ast.CreateAnalystStmt, *ast.AlterAnalystStmt:
		return ast.Format(st)
	}
	return text
}

// refresh loads the catalog again when the policy changed since it was loaded (another
// session's statement, or the owner's in another process): every open session is bound by
// a policy change from its next statement on.
func (e *Engine) refresh(ctx context.Context) error {
	gen, err := store.PolicyGeneration(ctx, e.b)
	if err != nil || gen == e.gen {
		return err
	}
	return e.reload(ctx)
}
