package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/sqlgen"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/ledger"
	"github.com/dpsql/dpsql/sqlerr"
)

func (e *Engine) needOwner(n ast.Node, what string) error {
	if e.o.Owner {
		return nil
	}
	return sqlerr.New(n.Span().Start, sqlerr.InsufficientPrivilege, "only the data owner can run %s", what).
		WithHint("analysts run anonymized queries (SELECT WITH ANONYMIZATION ...), queries over public relations, EXPLAIN and SHOW; the owner opens the database with --owner")
}

// policy is what a statement's OPTIONS say about a relation.
type policy struct {
	set     bool
	private string // privacy unit column
	public  bool
	unset   bool
}

func parsePolicy(opts []*ast.Option) (policy, error) {
	var p policy
	for _, o := range opts {
		switch strings.ToLower(o.Name.Name) {
		case "anonymization_userid_column", "privacy_unit_column":
			switch v := o.Value.(type) {
			case *ast.Literal:
				if v.Kind == ast.NullLit {
					p.set, p.unset = true, true
					continue
				}
				if v.Kind == ast.StringLit && v.Text != "" {
					p.set, p.private = true, v.Text
					continue
				}
			case *ast.ColumnRef:
				p.set, p.private = true, v.Parts[len(v.Parts)-1].Name
				continue
			}
			return p, sqlerr.New(o.Value.Span().Start, sqlerr.InvalidParameterValue,
				"%s must name a column, like %s='id'", o.Name.Name, o.Name.Name)
		case "public":
			v, ok := o.Value.(*ast.Literal)
			if !ok || v.Kind != ast.BoolLit {
				return p, sqlerr.New(o.Value.Span().Start, sqlerr.InvalidParameterValue, "public must be TRUE or FALSE")
			}
			p.set = true
			if v.Text == "TRUE" {
				p.public = true
			} else {
				p.unset = true
			}
		default:
			return p, sqlerr.New(o.Span().Start, sqlerr.InvalidParameterValue, "unknown relation option %s", o.Name.Name).
				WithHint("use anonymization_userid_column='column' for a private relation or public=TRUE for a public one")
		}
	}
	if p.private != "" && p.public {
		return p, sqlerr.New(opts[0].Span().Start, sqlerr.InvalidParameterValue,
			"a relation cannot be both private (anonymization_userid_column) and public")
	}
	return p, nil
}

func (p policy) apply(ctx context.Context, q backend.Querier, name string) error {
	switch {
	case p.private != "":
		return store.SetPrivate(ctx, q, name, p.private)
	case p.public:
		return store.SetPublic(ctx, q, name)
	case p.unset:
		return store.Unset(ctx, q, name)
	}
	return nil
}

// notPolicyOnly refuses what creates or changes relations in a PolicyOnly session.
func (e *Engine) notPolicyOnly(n ast.Node, what string) error {
	if !e.o.PolicyOnly {
		return nil
	}
	return sqlerr.New(n.Span().Start, sqlerr.FeatureNotSupported,
		"%s cannot run in this session: through dpsql serve on DuckDB the data owner runs queries, policy, budget and account statements, not DDL or writes", what).
		WithHint("stop the server and run it with dpsql FILE --owner (the server holds the DuckDB file locked down)")
}

func (e *Engine) create(ctx context.Context, s *ast.CreateStmt) (*Result, error) {
	if err := e.needOwner(s, "CREATE "+s.Kind); err != nil {
		return nil, err
	}
	if err := e.notPolicyOnly(s, "CREATE "+s.Kind); err != nil {
		return nil, err
	}
	pol, err := parsePolicy(s.Options)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("CREATE ")
	if s.OrReplace {
		b.WriteString("OR REPLACE ")
	}
	if s.Temp {
		b.WriteString("TEMPORARY ")
	}
	name := identPath(s.Name)
	fmt.Fprintf(&b, "%s %s AS %s", s.Kind, quotedPath(s.Name), s.Body)
	err = e.b.Tx(ctx, func(q backend.Querier) error {
		if err := q.Exec(ctx, b.String()); err != nil {
			return err
		}
		if err := store.BumpPolicy(ctx, q); err != nil { // the relation's columns may have changed
			return err
		}
		return pol.apply(ctx, q, name)
	})
	if err != nil {
		return nil, err
	}
	if err := e.reload(ctx); err != nil {
		return nil, err
	}
	return &Result{Tag: "CREATE " + s.Kind}, nil
}

func (e *Engine) alter(ctx context.Context, s *ast.AlterOptionsStmt) (*Result, error) {
	if err := e.needOwner(s, "ALTER "+s.Kind); err != nil {
		return nil, err
	}
	if s.Column != nil {
		return e.alterColumn(ctx, s)
	}
	pol, err := parsePolicy(s.Options)
	if err != nil {
		return nil, err
	}
	if !pol.set {
		return nil, sqlerr.New(s.Span().Start, sqlerr.InvalidParameterValue, "SET OPTIONS needs an option")
	}
	if err := e.b.Tx(ctx, func(q backend.Querier) error { return pol.apply(ctx, q, identPath(s.Name)) }); err != nil {
		return nil, err
	}
	if err := e.reload(ctx); err != nil {
		return nil, err
	}
	return &Result{Tag: "ALTER " + s.Kind}, nil
}

func identPath(ids []*ast.Ident) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id.Name
	}
	return strings.Join(parts, ".")
}

func quotedPath(ids []*ast.Ident) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = ast.Format(id)
	}
	return strings.Join(parts, ".")
}

func (e *Engine) setBudget(ctx context.Context, s *ast.SetBudgetStmt) (*Result, error) {
	if err := e.needOwner(s, "SET BUDGET"); err != nil {
		return nil, err
	}
	if e.o.Ledger != nil {
		// The ledger is another database's (dpsql-beam --ledger): its own owner sets it.
		return nil, sqlerr.New(s.Span().Start, sqlerr.InsufficientPrivilege,
			"the budget is the shared ledger's: only the owner of that database can set it").
			WithHint("remove SET BUDGET from the setup, or set it there: dpsql --owner LEDGER -c \"SET BUDGET OPTIONS(epsilon=..., delta=...)\"")
	}
	belowSpent, opts, err := belowSpentOption(s.Options)
	if err != nil {
		return nil, err
	}
	var total ledger.Budget
	seenEps := false
	for _, o := range opts {
		v, err := constFloat(o.Value)
		if err != nil {
			return nil, sqlerr.New(o.Value.Span().Start, sqlerr.InvalidParameterValue, "%s must be a number", o.Name.Name)
		}
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, sqlerr.New(o.Value.Span().Start, sqlerr.InvalidParameterValue, "the budget's %s must be finite, got %g", o.Name.Name, v).
				WithHint("for no limit at all (non-private test data only) write SET BUDGET UNLIMITED")
		}
		switch strings.ToLower(o.Name.Name) {
		case "epsilon":
			total.Epsilon, seenEps = v, true
		case "delta":
			total.Delta = v
		default:
			return nil, sqlerr.New(o.Span().Start, sqlerr.InvalidParameterValue, "unknown budget option %s", o.Name.Name).
				WithHint("SET BUDGET OPTIONS(epsilon=..., delta=...[, allow_below_spent=TRUE])")
		}
	}
	if !s.Unlimited && !seenEps {
		return nil, sqlerr.New(s.Span().Start, sqlerr.InvalidParameterValue, "SET BUDGET needs epsilon").
			WithHint("SET BUDGET OPTIONS(epsilon=10, delta=1e-5), or SET BUDGET UNLIMITED for non-private test data")
	}
	st, err := e.ledger.SetTotalWith(ctx, total, ledger.TotalOptions{Unlimited: s.Unlimited, BelowSpent: belowSpent})
	if err != nil {
		if se, ok := sqlerr.As(err); ok && !se.Pos.IsValid() {
			se.Pos = s.Span().Start
		}
		return nil, err
	}
	r := &Result{Tag: "SET BUDGET"}
	switch {
	case s.Unlimited:
		r.Notices = []string{"the privacy budget limit is lifted: queries are recorded but never refused; do this only for non-private test data"}
	case ledger.BelowSpent(st.Total, st.Spent):
		r.Notices = []string{fmt.Sprintf("the total (%s) is below what was already spent (%s): nothing more can be spent until the total is raised above it", st.Total, st.Spent)}
	}
	return r, nil
}

// belowSpentOption takes the option allow_below_spent = TRUE | FALSE out of the options of SET
// BUDGET and ALTER ANALYST: with TRUE, a total (or an allowance) below what was already spent
// is set, which stops all spending; without it, such a total is refused. It returns the
// other options.
func belowSpentOption(opts []*ast.Option) (allow bool, rest []*ast.Option, err error) {
	seen := false
	for _, o := range opts {
		if !strings.EqualFold(o.Name.Name, "allow_below_spent") {
			rest = append(rest, o)
			continue
		}
		l, ok := o.Value.(*ast.Literal)
		switch {
		case seen:
			return false, nil, sqlerr.New(o.Span().Start, sqlerr.InvalidParameterValue, "option %s is given twice", o.Name.Name)
		case !ok || l.Kind != ast.BoolLit:
			return false, nil, sqlerr.New(o.Value.Span().Start, sqlerr.InvalidParameterValue, "allow_below_spent must be TRUE or FALSE").
				WithHint("allow_below_spent = TRUE sets a total below what was already spent, which stops all spending until it is raised")
		}
		seen, allow = true, l.Text == "TRUE"
	}
	return allow, rest, nil
}

// constFloat is the value of an option's number: a literal, signed or in parentheses, or the
// special values CAST('inf' AS DOUBLE) and CAST('nan' AS DOUBLE), so that they are refused
// for what they are (not finite) rather than as "not a number"; a literal beyond the
// largest double is infinite.
func constFloat(x ast.Expr) (float64, error) {
	switch n := x.(type) {
	case *ast.Literal:
		if n.Kind == ast.IntLit || n.Kind == ast.FloatLit {
			v, err := strconv.ParseFloat(n.Text, 64)
			if errors.Is(err, strconv.ErrRange) {
				err = nil
			}
			return v, err
		}
	case *ast.Paren:
		return constFloat(n.X)
	case *ast.Unary:
		switch n.Op {
		case "-":
			v, err := constFloat(n.X)
			return -v, err
		case "+":
			return constFloat(n.X)
		}
	case *ast.Cast:
		if l, ok := n.X.(*ast.Literal); ok && l.Kind == ast.StringLit {
			v, err := analyzer.FloatText(l.Text)
			if errors.Is(err, strconv.ErrRange) {
				err = nil
			}
			return v, err
		}
		return constFloat(n.X)
	}
	return 0, fmt.Errorf("not a number")
}

func (e *Engine) show(ctx context.Context, s *ast.ShowStmt) (*Result, error) {
	switch s.What {
	case "BUDGET":
		st, err := e.ledger.Status(ctx)
		if err != nil {
			return nil, err
		}
		r := &Result{Tag: "SHOW", Columns: []Column{{"setting", "VARCHAR"}, {"epsilon", "DOUBLE"}, {"delta", "DOUBLE"}}}
		if !st.Set {
			r.Notices = []string{"no budget is set: " + ledger.NoBudgetHint}
		}
		if st.Unlimited {
			r.Notices = append(r.Notices, "the budget limit is lifted (non-private test data)")
		}
		if st.Account != nil {
			if !st.Account.Exists {
				r.Notices = append(r.Notices, "analyst account "+st.Account.Name+" no longer exists: this session cannot spend")
			}
			r.Rows = budgetRows(st)
			return r, nil
		}
		rem := st.Remaining()
		r.Rows = [][]any{{"total", st.Total.Epsilon, st.Total.Delta}, {"spent", r15(st.Spent.Epsilon), r15(st.Spent.Delta)},
			{"remaining", r15(rem.Epsilon), r15(rem.Delta)}}
		if st.Unlimited {
			// SET BUDGET UNLIMITED: there is no total and no remainder to show (the stored
			// total is 0), only what was spent; NULL, as in an account's SHOW BUDGET.
			r.Rows[0][1], r.Rows[0][2], r.Rows[2][1], r.Rows[2][2] = nil, nil, nil, nil
		}
		return r, nil
	case "ANALYSTS":
		return e.showAnalysts(ctx, s)
	case "LIMITS":
		return e.showLimits(ctx)
	case "TABLES", "POLICY":
		if e.catErr != nil {
			return nil, e.catErr
		}
		r := &Result{Tag: "SHOW", Columns: []Column{{"name", "VARCHAR"}, {"kind", "VARCHAR"}, {"privacy_unit", "VARCHAR"}, {"columns", "VARCHAR"}}}
		for _, rel := range e.cat.Relations() {
			var cols []string
			for _, c := range rel.Columns {
				cols = append(cols, c.Name+" "+c.Type)
			}
			var unit any
			if rel.PrivacyUnit != "" {
				unit = rel.PrivacyUnit
			}
			r.Rows = append(r.Rows, []any{rel.Name, rel.Kind.String(), unit, strings.Join(cols, ", ")})
		}
		return r, nil
	}
	return nil, sqlerr.New(s.Span().Start, sqlerr.SyntaxError, "SHOW %s is not supported", s.What).WithHint("SHOW BUDGET, SHOW LIMITS, SHOW TABLES or SHOW ANALYSTS")
}

// changesCatalog are the first keywords of the owner's raw statements that may change the
// relations or columns of the catalog (DuckDB's ATTACH, DETACH and IMPORT too).
var changesCatalog = map[string]bool{"CREATE": true, "ALTER": true, "DROP": true, "ATTACH": true, "DETACH": true, "IMPORT": true}

func (e *Engine) raw(ctx context.Context, s *ast.RawStmt) (*Result, error) {
	if !e.o.Owner && !sqlStatements[strings.ToUpper(s.Keyword)] {
		return nil, unknownStatement(s)
	}
	if err := e.needOwner(s, s.Keyword+" statements"); err != nil {
		return nil, err
	}
	if s.Keyword != "SELECT" && s.Keyword != "WITH" {
		if err := e.notPolicyOnly(s, s.Keyword+" statements"); err != nil {
			return nil, err
		}
	}
	rows, err := e.b.Query(ctx, s.Text)
	if err != nil {
		return nil, err
	}
	if s.Keyword != "SELECT" && s.Keyword != "WITH" {
		if changesCatalog[strings.ToUpper(s.Keyword)] {
			// Relations and columns may have changed: other sessions load the catalog again.
			if err := e.b.Tx(ctx, func(q backend.Querier) error { return store.BumpPolicy(ctx, q) }); err != nil {
				return nil, err
			}
		}
		if err := e.reload(ctx); err != nil {
			return nil, err
		}
	}
	if len(rows.Columns) == 0 {
		return &Result{Tag: s.Keyword}, nil
	}
	return rowsResult(rows.Columns, rows.Types, rows.Values), nil
}

// checkDomainType refuses a public domain whose values are not of its column's type family
// (sqlgen.TypeFamily) or change when converted to the column's type and back: the database
// would otherwise compare the column with the domain through an implicit conversion (text
// '01', '+1' and ' 1' all meeting the number 1, and 'abc' failing the query), so that one
// person's values would decide which rows are released and whether the query fails. The
// database tells the types; stage SQL also casts the domain to the key's type.
func (e *Engine) checkDomainType(ctx context.Context, s *ast.AlterOptionsStmt, dom ast.Expr) error {
	d := e.b.Dialect()
	pos := s.Options[0].Value.Span().Start
	col, err := e.b.Query(ctx, fmt.Sprintf("SELECT %s FROM %s LIMIT 0", ast.Format(s.Column), quotedPath(s.Name)))
	if err != nil {
		return err
	}
	values := sqlgen.DomainValues(d, dom)
	dt, err := e.b.Query(ctx, values+" LIMIT 0")
	if err != nil {
		return sqlerr.New(pos, sqlerr.InvalidParameterValue, "the public domain cannot be read: %v", err)
	}
	ct, vt := col.Types[0], dt.Types[0]
	refuse := func(why string) error {
		return sqlerr.New(pos, sqlerr.DatatypeMismatch, "the public domain of %s (%s) does not fit column %s of type %s: %s",
			s.Column.Name, vt, s.Column.Name, ct, why).
			WithHint("give values of the column's type: ('a', 'b') for text, range(lo, hi) or numbers for numeric columns, DATE '2024-01-31' for dates, or a public column of the same type")
	}
	if sqlgen.TypeFamily(ct) != sqlgen.TypeFamily(vt) {
		return refuse("a value of one type would be compared with the other through a conversion")
	}
	changed, err := e.b.Query(ctx, fmt.Sprintf("SELECT count(*) FROM (%s) AS _dp_d WHERE CAST(CAST(k AS %s) AS %s) IS DISTINCT FROM k", values, ct, vt))
	if err != nil {
		return refuse("some values cannot be converted to the column's type")
	}
	if n, ok := changed.Values[0][0].(int64); !ok || n != 0 {
		return refuse("some values change when converted to the column's type")
	}
	return nil
}

// alterColumn sets a column's public domain:
//
//	ALTER TABLE t ALTER COLUMN c SET OPTIONS(public_domain = ('a', 'b') | range(0, 120) | pub.col | NULL)
//
// Queries that group only by columns with a public domain release every value of the domain
// (with noise, even those without rows) and no other, and spend nothing on selection.
func (e *Engine) alterColumn(ctx context.Context, s *ast.AlterOptionsStmt) (*Result, error) {
	if len(s.Options) != 1 || !strings.EqualFold(s.Options[0].Name.Name, "public_domain") {
		return nil, sqlerr.New(s.Span().Start, sqlerr.InvalidParameterValue, "ALTER COLUMN ... SET OPTIONS takes one option, public_domain").
			WithHint("public_domain = ('a', 'b'), range(0, 120), public_relation.column, or NULL to remove it")
	}
	v := s.Options[0].Value
	spec := ""
	if l, ok := v.(*ast.Literal); !ok || l.Kind != ast.NullLit {
		spec = ast.Format(v)
		dom, err := analyzer.ParseDomain(spec, e.cat)
		if err != nil {
			return nil, sqlerr.New(v.Span().Start, sqlerr.InvalidParameterValue, "%v", err)
		}
		if err := e.checkDomainType(ctx, s, dom); err != nil {
			return nil, err
		}
	}
	err := e.b.Tx(ctx, func(q backend.Querier) error {
		return store.SetDomain(ctx, q, identPath(s.Name), s.Column.Name, spec)
	})
	if err != nil {
		return nil, err
	}
	if err := e.reload(ctx); err != nil {
		return nil, err
	}
	return &Result{Tag: "ALTER " + s.Kind}, nil
}

// sqlStatements are the first words of the SQL statements DuckDB and PostgreSQL run that
// dpsql does not parse itself: an analyst who writes one is told that only the data owner
// can run it; any other first word is a syntax error (a misspelling like SELEC).
var sqlStatements = map[string]bool{
	"ABORT": true, "ALTER": true, "ANALYZE": true, "ATTACH": true, "BEGIN": true, "CALL": true,
	"CHECKPOINT": true, "CLOSE": true, "CLUSTER": true, "COMMENT": true, "COMMIT": true,
	"COPY": true, "CREATE": true, "DEALLOCATE": true, "DECLARE": true, "DELETE": true,
	"DESCRIBE": true, "DETACH": true, "DISCARD": true, "DO": true, "DROP": true, "END": true,
	"EXECUTE": true, "EXPORT": true, "FETCH": true, "FORCE": true, "FROM": true, "GRANT": true,
	"IMPORT": true, "INSERT": true, "INSTALL": true, "LISTEN": true, "LOAD": true, "LOCK": true,
	"MERGE": true, "MOVE": true, "NOTIFY": true, "PIVOT": true, "PRAGMA": true, "PREPARE": true,
	"REASSIGN": true, "REFRESH": true, "REINDEX": true, "RELEASE": true, "RESET": true,
	"REVOKE": true, "ROLLBACK": true, "SAVEPOINT": true, "SECURITY": true, "SELECT": true,
	"SET": true, "START": true, "SUMMARIZE": true, "TABLE": true, "TRUNCATE": true,
	"UNLISTEN": true, "UNPIVOT": true, "UPDATE": true, "UPSERT": true, "USE": true,
	"VACUUM": true, "VALUES": true, "WITH": true,
}

// analystShows are the SHOW statements an analyst can run.
const analystShows = "SHOW BUDGET, SHOW TABLES, SHOW POLICY and SHOW LIMITS"

// unknownStatement is an analyst's error for a statement that is neither dpsql's nor SQL's:
// a syntax error at its first word, with the statement it most likely meant. SHOW of
// something dpsql does not show lists the SHOW statements an analyst can run.
func unknownStatement(s *ast.RawStmt) error {
	kw := strings.ToUpper(s.Keyword)
	if kw == "SHOW" {
		what := ""
		if f := strings.Fields(s.Text[len(s.Keyword):]); len(f) > 0 {
			what = strings.ToUpper(strings.TrimRight(f[0], ";"))
		}
		return sqlerr.New(s.Span().Start, sqlerr.SyntaxError, "unknown statement SHOW %s", what).
			WithHint("%s", strings.TrimSpace(didYouMeanShow(what)+" Analysts can run "+analystShows+"."))
	}
	word := s.Keyword
	if len(word) <= len(s.Text) && strings.EqualFold(s.Text[:len(word)], word) {
		word = s.Text[:len(word)] // as written
	}
	e := sqlerr.New(s.Span().Start, sqlerr.SyntaxError, "syntax error at or near %q", word)
	if c := analyzer.Closest(kw, []string{"SELECT", "WITH", "EXPLAIN", "SHOW"}); c != "" {
		return e.WithHint("did you mean %s? Analysts run queries (SELECT, WITH), EXPLAIN and %s", c, analystShows)
	}
	return e.WithHint("analysts run queries (SELECT, WITH), EXPLAIN and %s", analystShows)
}

// didYouMeanShow suggests the analyst's SHOW statement nearest to SHOW what.
func didYouMeanShow(what string) string {
	if c := analyzer.Closest(what, []string{"BUDGET", "TABLES", "POLICY", "LIMITS"}); c != "" {
		return "did you mean SHOW " + c + "?"
	}
	return ""
}
