package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/exec"
	"github.com/dpsql/dpsql/internal/limits"
	"github.com/dpsql/dpsql/internal/parser"
	"github.com/dpsql/dpsql/internal/rewrite"
	"github.com/dpsql/dpsql/internal/sqlgen"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/ledger"
	"github.com/dpsql/dpsql/sqlerr"
)

// Options configures an Engine.
type Options struct {
	// Backend is the open database. Required.
	Backend backend.Backend
	// Mechanisms release the groups. Required: exec.Secure{} in production.
	Mechanisms exec.Mechanisms
	// Owner runs statements with the data owner's rights.
	Owner bool
	// ConfidenceLevel, in (0,1), adds confidence intervals to every released aggregate.
	ConfidenceLevel float64
	// StatementTimeout bounds each statement. 0 means DefaultAnalystTimeout while the engine
	// serves an analyst and no limit for the owner; a negative value means no limit. While the
	// engine serves an analyst, the data owner's statement_timeout (SET LIMITS, stored in the
	// database) applies when it is stricter: this setting can tighten it, never loosen it.
	StatementTimeout time.Duration
	// Stager, when set, computes anonymized queries' stages instead of Backend (dpsql-beam:
	// on Apache Beam, over the files of the private relations); Backend still analyzes,
	// checks and post-processes (exec.Stager).
	Stager exec.Stager
	// PolicyOnly limits an owner's session to policy, budget and account statements and
	// queries: CREATE ... AS and raw statements other than queries are refused (dpsql serve on
	// DuckDB, whose owner accounts work inside the locked-down instance the server holds:
	// tables and views are created with dpsql FILE --owner while the server is stopped).
	PolicyOnly bool
	// Ledger, when set, is the budget ledger instead of the one in Backend's dpsql schema
	// (dpsql-beam --ledger: a DuckDB file or PostgreSQL database shared with other runs).
	Ledger *ledger.Ledger
	// Analyst is the account the engine serves (dpsql serve's logged-in analyst; "" for the
	// command line and the Go API). Its charges must fit the account's allowance as well as the
	// database's total and are recorded with its name; SHOW BUDGET shows the account's share.
	Analyst string
}

// DefaultAnalystTimeout bounds each analyst statement when Options.StatementTimeout is 0. An
// anonymized query that reaches it is charged (its timing may depend on the data) and fails.
const DefaultAnalystTimeout = 5 * time.Minute

// Engine runs statements on one database. It is not safe for concurrent use.
type Engine struct {
	o      Options
	b      backend.Backend
	cat    *catalog.Catalog
	ledger *ledger.Ledger
	// owners are the data owner's limits for analyst sessions, read when the engine starts
	// serving an analyst (see applyLimits).
	owners limits.Limits
	// bound is set while Exec runs a script given query parameters: the owner's raw queries
	// are then printed from the tree (which holds the values) instead of sent as written.
	bound bool
	// gen is the policy generation cat was loaded at (store.PolicyGeneration, see refresh).
	gen int64
	// catErr, for the owner only, is why the policy could not be loaded (a declared relation
	// dropped, a private view replaced by one that breaks a rule): the owner's session goes
	// on with an empty catalog so that the owner can repair the policy, and every statement
	// that needs the catalog fails with this error (see reload).
	catErr error
	// shapes remembers how the session's stages bound contributions (exec.ShapeCache: a
	// choice of speed only), cleared with each catalog load.
	shapes *exec.ShapeCache
}

// New opens an engine on o.Backend: the owner's engine creates dpsql's schema if needed; an
// analyst's needs it to exist. On PostgreSQL an owner's engine needs a role that owns the
// dpsql schema (or may create it): store.CheckOwner refuses any other.
func New(ctx context.Context, o Options) (*Engine, error) {
	if o.Backend == nil || o.Mechanisms == nil {
		return nil, errors.New("engine: Backend and Mechanisms are required")
	}
	if o.ConfidenceLevel != 0 && !(o.ConfidenceLevel > 0 && o.ConfidenceLevel < 1) {
		return nil, fmt.Errorf("engine: the confidence level must be in (0, 1), got %g", o.ConfidenceLevel)
	}
	e := &Engine{o: o, b: o.Backend, ledger: o.Ledger, shapes: exec.NewShapeCache()}
	if e.ledger == nil {
		e.ledger = ledger.New(store.NewLedgerStore(o.Backend))
	}
	if o.Analyst != "" {
		e.ledger = e.ledger.For(o.Analyst)
	}
	if o.Owner {
		// Being the owner is a property of the database role (PostgreSQL), not of the flag.
		if err := store.CheckOwner(ctx, o.Backend); err != nil {
			return nil, err
		}
		if err := store.Init(ctx, o.Backend); err != nil {
			return nil, err
		}
	}
	if err := e.reload(ctx); err != nil {
		if errors.Is(err, store.ErrNotInitialized) && !o.Owner {
			return nil, sqlerr.New(sqlerr.Pos{}, sqlerr.ObjectNotInPrerequisite,
				"this database has no dpsql privacy policy yet").
				WithHint("the data owner must first open it with --owner, declare private relations and set a budget")
		}
		return nil, err
	}
	if !o.Owner {
		if err := e.applyLimits(ctx); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// applyLimits reads the owner's limits for analyst sessions and applies them for the rest of
// the session: the statement timeout in the engine (timeout) and, on PostgreSQL, in the
// backend's server-side statement_timeout. DuckDB's memory limit cannot be changed once the
// configuration is locked: the backend applies the owner's before it locks it (see
// duckdb.Options.OwnerMemoryLimit); a limit the owner sets later binds sessions that start
// later.
func (e *Engine) applyLimits(ctx context.Context) error {
	l, err := store.ReadLimits(ctx, e.b)
	if err != nil {
		return err
	}
	e.owners = l
	if pg, ok := e.b.(interface{ LimitStatementTimeout(time.Duration) }); ok {
		pg.LimitStatementTimeout(e.timeout())
	}
	return nil
}

func (e *Engine) reload(ctx context.Context) error {
	// The generation first: a change committed while the catalog loads is loaded again at
	// the next statement.
	gen, err := store.PolicyGeneration(ctx, e.b)
	if err != nil {
		return err
	}
	cat, err := store.LoadCatalog(ctx, e.b)
	var policyErr *sqlerr.Error
	if err != nil && e.o.Owner && errors.As(err, &policyErr) {
		// The policy no longer matches the database: only the owner can repair it, which
		// needs a session (DROP, CREATE, ALTER ... SET OPTIONS work without the catalog).
		cat = catalog.New()
		e.catErr = err
	} else if err != nil {
		return err
	} else {
		e.catErr = nil
	}
	e.cat, e.gen = cat, gen
	e.shapes.Clear()
	return nil
}

// BecomeAnalyst drops the owner's rights for the rest of the session (the database is
// locked down as for an analyst), so that an owner's setup script and an analyst's queries
// can share one in-memory database.
func (e *Engine) BecomeAnalyst(ctx context.Context) error {
	if !e.o.Owner {
		return nil
	}
	sw, ok := e.b.(interface{ BecomeAnalyst(context.Context) error })
	if !ok {
		return fmt.Errorf("engine: the %s backend cannot drop the owner's rights", e.b.Dialect())
	}
	if err := sw.BecomeAnalyst(ctx); err != nil {
		return err
	}
	e.o.Owner = false
	if err := e.reload(ctx); err != nil {
		return err
	}
	return e.applyLimits(ctx)
}

// Close closes the backend.
func (e *Engine) Close() error { return e.b.Close() }

// Exec runs the statements of script in order. It stops at the first error and returns the
// results before it with the error; error positions are relative to script. A panic inside
// dpsql does not escape: it becomes an internal error (SQLSTATE XX000) whose Cause is a
// *PanicError.
//
// args are the values of the script's query parameters: either all database/sql NamedArgs
// (sql.Named("lower", 1)) for @name parameters, or all plain values for $1, $2, ... in order;
// each value one parser.ParamOf accepts. They are bound by the parser as typed literals,
// before any analysis: a parameter is the analyst's input, public, and every check sees its
// value.
//
// Before each statement the engine loads the catalog again if the privacy policy changed
// since it loaded it (another session's or process's policy statement).
func (e *Engine) Exec(ctx context.Context, script string, args ...any) (results []*Result, err error) {
	var at sqlerr.Pos
	defer func() {
		if r := recover(); r != nil {
			err = Internal(r, debug.Stack(), at)
		}
	}()
	params, err := Params(args)
	if err != nil {
		return nil, err
	}
	stmts, err := parser.ParseParams(script, params, e.o.Owner)
	if err != nil {
		return nil, err
	}
	e.bound = len(params) > 0
	defer func() { e.bound = false }()
	for _, st := range stmts {
		at = st.Span().Start
		text := redacted(st, stmtText(script, st))
		if err := e.refresh(ctx); err != nil {
			return results, e.dbError(ctx, err, st)
		}
		sctx, cancel := ctx, context.CancelFunc(func() {})
		if d := e.timeout(); d > 0 {
			sctx, cancel = context.WithTimeout(ctx, d)
		}
		res, err := e.stmt(sctx, st, text)
		cancel()
		if err != nil {
			return results, e.dbError(ctx, err, st)
		}
		res.Statement = text
		results = append(results, res)
	}
	return results, nil
}

// Params reads Exec's args: each a database/sql NamedArg with a non-empty name, given once,
// or each a plain value, the value of $1, $2, ... in order. Named and positional values
// cannot be mixed.
func Params(args []any) (parser.Params, error) {
	if len(args) == 0 {
		return nil, nil
	}
	params := make(parser.Params, len(args))
	_, named := args[0].(sql.NamedArg)
	for i, a := range args {
		na, ok := a.(sql.NamedArg)
		if ok != named {
			return nil, &sqlerr.Error{Code: sqlerr.InvalidParameterValue,
				Msg:  fmt.Sprintf("query parameter %d mixes named and positional values", i+1),
				Hint: `give either only sql.Named("name", value) values, for @name, or only plain values, for $1, $2, ...`}
		}
		if !named {
			p, err := parser.ParamOf(a)
			if err != nil {
				return nil, &sqlerr.Error{Code: sqlerr.InvalidParameterValue, Msg: fmt.Sprintf("query parameter $%d: %v", i+1, err), Hint: paramTypesHint}
			}
			params[parser.Positional(i+1)] = p
			continue
		}
		if na.Name == "" {
			return nil, &sqlerr.Error{Code: sqlerr.UndefinedParameter,
				Msg:  fmt.Sprintf("query parameter %d has an empty name", i+1),
				Hint: `name each parameter with sql.Named("name", value) and write @name in the query`}
		}
		key := strings.ToLower(na.Name)
		if _, dup := params[key]; dup {
			return nil, &sqlerr.Error{Code: sqlerr.InvalidParameterValue, Msg: fmt.Sprintf("query parameter @%s is given twice", na.Name)}
		}
		p, err := parser.ParamOf(na.Value)
		if err != nil {
			return nil, &sqlerr.Error{Code: sqlerr.InvalidParameterValue, Msg: fmt.Sprintf("query parameter @%s: %v", na.Name, err), Hint: paramTypesHint}
		}
		params[key] = p
	}
	return params, nil
}

const paramTypesHint = "give a bool, an integer, a finite float, a string, a time.Time, a *big.Rat, *big.Int or dpsql.Decimal (NUMERIC: at most 9 digits after the point, below 10^29), nil, or a parser.Param"

// timeout is the limit of one statement (0: none), see Options.StatementTimeout: for an
// analyst, the stricter of the process's and the data owner's.
func (e *Engine) timeout() time.Duration {
	var t time.Duration
	switch t = e.o.StatementTimeout; {
	case e.o.Owner:
		return max(t, 0)
	case t == 0:
		t = DefaultAnalystTimeout
	}
	return limits.Stricter(t, e.owners.StatementTimeout)
}

// PanicError is the Cause of the internal error that replaces a panic: Value is what was
// passed to panic, Stack the panicking goroutine's stack, for a bug report.
type PanicError struct {
	Value any
	Stack []byte
}

func (p *PanicError) Error() string { return fmt.Sprintf("panic: %v", p.Value) }

// Internal turns a recovered panic value into the error the API returns: SQLSTATE XX000 at
// pos (which may be the zero Pos), with the panic as a *PanicError Cause. The root package
// uses it too, so that no panic crosses the public API.
func Internal(r any, stack []byte, pos sqlerr.Pos) error {
	pe, ok := r.(*PanicError)
	if !ok {
		pe = &PanicError{Value: r, Stack: stack}
	}
	return &sqlerr.Error{Code: sqlerr.InternalError, Pos: pos, Cause: pe,
		Msg:  fmt.Sprintf("internal error: %v", pe.Value),
		Hint: "this is a bug in dpsql, not in the statement; please report it with the statement that caused it"}
}

func stmtText(script string, st ast.Stmt) string {
	sp := st.Span()
	if sp.Start.Offset >= 0 && sp.End.Offset <= len(script) && sp.Start.Offset <= sp.End.Offset {
		return strings.TrimSpace(script[sp.Start.Offset:sp.End.Offset])
	}
	return ""
}

// dbError gives errors from the database a position (the statement's) and a code.
func (e *Engine) dbError(ctx context.Context, err error, st ast.Stmt) error {
	if _, ok := sqlerr.As(err); ok {
		return err
	}
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return &sqlerr.Error{Code: sqlerr.QueryCanceled, Pos: st.Span().Start, Msg: "canceling statement due to user request", Cause: err}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &sqlerr.Error{Code: sqlerr.QueryCanceled, Pos: st.Span().Start, Msg: "canceling statement due to statement timeout", Cause: err}
	}
	if pp := (*exec.PublicPartError)(nil); errors.As(err, &pp) {
		se := &sqlerr.Error{Code: sqlerr.DataException, Msg: pp.Err.Error(), Cause: err}
		if !e.o.Owner {
			se, _ = sqlerr.As(analystDBError(pp.Err, st))
		}
		se.Pos = pp.Pos
		cause := strings.TrimPrefix(se.Msg, "the database refused this query: ")
		se.Msg = "computing this public relation or subquery failed: " + cause
		se.Hint = "an anonymized query computes its public relations and subqueries whole, before it reads private data, so that whether it fails cannot depend on the private rows (docs/security.md); nothing was charged. Make the failing expression total (TRY_CAST, NULLIF, CASE) or filter the row out inside the subquery"
		if pp.Constant {
			se.Msg = "computing this constant expression failed: " + cause
			se.Hint = "an anonymized query computes some constant expressions once, before it reads private data (on DuckDB the patterns of regexp_replace and regexp_extract; on PostgreSQL every one: it computes some, dates and times with a time zone, casts from text, row by row, where whether they fail could depend on the private rows; docs/security.md); nothing was charged. Correct the expression"
		}
		return se
	}
	if !e.o.Owner {
		return analystDBError(err, st)
	}
	return &sqlerr.Error{Code: sqlerr.DataException, Pos: st.Span().Start, Msg: err.Error(), Cause: err}
}

// analystDBError rewrites, for an analyst, an error the database returned that dpsql did not
// turn into its own: a query dpsql accepted that the database refused while binding it (a
// LIMIT 0 check, before any charge), or an error of a query over public relations. Errors
// after the charge never come here (they are the uniform failedAfterData). The database's
// text names the SQL dpsql generated (its total-form helpers, TRY, _dp_ columns, its stack
// traces and context lines), so the analyst gets dpsql's words, the database's first line
// cleaned of those names, its SQLSTATE where it has one, and what to do.
func analystDBError(err error, st ast.Stmt) error {
	code := sqlerr.DataException
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) && len(coded.SQLState()) == 5 {
		code = coded.SQLState()
	}
	msg := cleanDBMessage(err.Error())
	if m := duckUnknownColumn.FindStringSubmatch(msg); m != nil {
		code, msg = sqlerr.UndefinedColumn, fmt.Sprintf("column %q does not exist", m[1])
	}
	if code == sqlerr.DataException && isBindError(err.Error()) {
		code = "42000" // syntax error or access rule violation: refused while binding
	}
	if code == sqlerr.UndefinedColumn {
		// A name dpsql left to the database (in ORDER BY, or beside a column whose name
		// only the database knows): a misspelling, not a type mismatch.
		return &sqlerr.Error{Code: code, Pos: st.Span().Start, Cause: err, Msg: msg,
			Hint: "check the column's spelling: it must be a column of a relation in FROM or an output name of the SELECT list"}
	}
	return &sqlerr.Error{Code: code, Pos: st.Span().Start, Cause: err,
		Msg: "the database refused this query: " + msg,
		Hint: "dpsql's checks passed but the database could not run the query as written (nothing was charged if it was anonymized); " +
			"this is most often a type mismatch between operands or arguments: CAST one side explicitly. If the query looks right, please report it"}
}

// duckUnknownColumn is DuckDB's message for a column name it cannot bind.
var duckUnknownColumn = regexp.MustCompile(`^Referenced column "((?:[^"]|"")*)" not found`)

// dbPrefixes are the prefixes the backends and databases put before an error's own text.
var dbPrefixes = regexp.MustCompile(`^(?:(?:duckdb|postgres|postgres: query|query)\s*:\s*|ERROR:\s*|[A-Z][A-Za-z ]* Error:\s*)+`)

// dbInternals are the names of dpsql's generated SQL that a database message may quote.
var dbInternals = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\bdpsql\.op_add\b`), "operator +"},
	{regexp.MustCompile(`\bdpsql\.op_sub\b`), "operator -"},
	{regexp.MustCompile(`\bdpsql\.op_mul\b`), "operator *"},
	{regexp.MustCompile(`\bdpsql\.op_div\b`), "operator /"},
	{regexp.MustCompile(`\bdpsql\.op_mod\b`), "operator %"},
	{regexp.MustCompile(`\bdpsql\.op_neg\b`), "operator -"},
	{regexp.MustCompile(`\bdpsql\.op_i?like\b`), "LIKE"},
	{regexp.MustCompile(`\bdpsql\.cast_\w+`), "CAST"},
	{regexp.MustCompile(`\bdpsql\.(\w+)`), "$1"},
	{regexp.MustCompile(`\bfunction (operator|CAST|LIKE)\b`), "$1"},
	{regexp.MustCompile(`\b_dp_\w+`), "(generated)"},
	{regexp.MustCompile(`\s*\(SQLSTATE [0-9A-Z]{5}\)`), ""},
}

// cleanDBMessage is the first line of a database error without its prefixes and with the
// names of dpsql's generated SQL replaced by what the analyst wrote.
func cleanDBMessage(m string) string {
	if i := strings.IndexByte(m, '\n'); i >= 0 {
		m = m[:i]
	}
	m = strings.TrimSpace(dbPrefixes.ReplaceAllString(strings.TrimSpace(m), ""))
	for _, r := range dbInternals {
		m = r.re.ReplaceAllString(m, r.with)
	}
	if m == "" {
		m = "no reason given"
	}
	return m
}

// isBindError reports whether a DuckDB message is one of its errors of binding or parsing
// (decided from the query and the schema, before any row is read).
func isBindError(m string) bool {
	for _, kind := range []string{"Binder Error", "Parser Error", "Catalog Error", "Not implemented Error"} {
		if strings.Contains(m, kind) {
			return true
		}
	}
	return false
}

func (e *Engine) stmt(ctx context.Context, st ast.Stmt, text string) (*Result, error) {
	switch s := st.(type) {
	case *ast.QueryStmt:
		return e.query(ctx, s.Query, text, false)
	case *ast.ExplainStmt:
		return e.query(ctx, s.Query, text, true)
	case *ast.CreateStmt:
		return e.create(ctx, s)
	case *ast.AlterOptionsStmt:
		return e.alter(ctx, s)
	case *ast.SetBudgetStmt:
		return e.setBudget(ctx, s)
	case *ast.SetLimitsStmt:
		return e.setLimits(ctx, s)
	case *ast.ShowStmt:
		return e.show(ctx, s)
	case *ast.RawStmt:
		return e.raw(ctx, s)
	case *ast.CreateAnalystStmt:
		return e.createAnalyst(ctx, s)
	case *ast.AlterAnalystStmt:
		return e.alterAnalyst(ctx, s)
	case *ast.DropAnalystStmt:
		return e.dropAnalyst(ctx, s)
	}
	return nil, fmt.Errorf("engine: unexpected statement %T", st)
}

func isAnonymized(q *ast.Query) bool {
	s, ok := q.Body.(*ast.Select)
	return ok && s.Anon != nil
}

func (e *Engine) query(ctx context.Context, q *ast.Query, text string, explain bool) (*Result, error) {
	if e.o.Owner && !isAnonymized(q) {
		// Anonymized SELECTs inside the owner's query are released as an analyst's are.
		n, err := analyzer.AnalyzeOwnerParts(q, e.cat)
		if n != nil && e.catErr != nil {
			return nil, e.catErr
		}
		if err != nil {
			return nil, err
		}
		if n != nil {
			return e.nested(ctx, n, text, explain)
		}
		// The owner reads anything, in the database's own dialect.
		if explain {
			return e.rawQuery(ctx, "EXPLAIN "+sqlgen.Print(e.b.Dialect(), q))
		}
		if e.bound {
			// The text still says @name; the tree holds the values.
			return e.rawQuery(ctx, sqlgen.Print(e.b.Dialect(), q))
		}
		return e.rawQuery(ctx, text)
	}
	if e.catErr != nil {
		return nil, e.catErr
	}
	an, err := analyzer.Analyze(q, e.cat)
	if err != nil {
		return nil, err
	}
	switch a := an.(type) {
	case *analyzer.PublicQuery:
		sql := sqlgen.Print(e.b.Dialect(), a.Query)
		if explain {
			return &Result{Columns: []Column{{Name: "QUERY PLAN", Type: "VARCHAR"}},
				Rows: [][]any{{"query over public relations, run as written; spends no budget"}, {sql}}, Tag: "EXPLAIN"}, nil
		}
		return e.rawQuery(ctx, sql)
	case *analyzer.Query:
		return e.anonymized(ctx, a, text, explain)
	case *analyzer.Nested:
		return e.nested(ctx, a, text, explain)
	}
	return nil, fmt.Errorf("engine: unexpected analysis %T", an)
}

func (e *Engine) rawQuery(ctx context.Context, sql string) (*Result, error) {
	rows, err := e.b.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	return rowsResult(rows.Columns, rows.Types, rows.Values), nil
}

func rowsResult(cols, types []string, values [][]any) *Result {
	r := &Result{Rows: values, Tag: "SELECT " + strconv.Itoa(len(values))}
	for i, c := range cols {
		t := ""
		if i < len(types) {
			t = types[i]
		}
		r.Columns = append(r.Columns, Column{Name: c, Type: t})
	}
	return r
}

// prepare plans an analyzed anonymized query and binds it (reading no rows): the rewrite,
// the mechanisms, the key and value types. It returns the query's cost.
func (e *Engine) prepare(ctx context.Context, q *analyzer.Query) (*exec.Prepared, ledger.Budget, error) {
	if q.Options.UnboundedGroups {
		// Unbounded contributions (a NULL or missing kappa) only where the owner lifted the
		// budget: a decision on public configuration, never on data. The ledger is asked again
		// when the charge is committed.
		st, err := e.ledger.Status(ctx)
		if err != nil {
			return nil, ledger.Budget{}, err
		}
		q.Options.UnboundedAllowed = st.Unlimited
	}
	unusable := func(err error) error {
		if _, ok := sqlerr.As(err); ok {
			return err
		}
		return sqlerr.New(q.Options.Pos, sqlerr.InvalidParameterValue, "these privacy parameters cannot be used: %v", err).
			WithHint("epsilon=1e20 already gives noise-free results (for non-private test data); keep epsilon, bounds and kappa within the range a float64 noise grid can represent")
	}
	p, err := rewrite.Rewrite(q)
	if err != nil {
		// The plan's own checks (an epsilon split into a share that underflows to 0, ...)
		// are about the options, not the database (outside review).
		return nil, ledger.Budget{}, unusable(err)
	}
	prep, err := exec.Prepare(p, e.o.Mechanisms, e.b.Dialect())
	if err != nil {
		return nil, ledger.Budget{}, unusable(err)
	}
	prep.Stager, prep.Shapes = e.o.Stager, e.shapes
	// The files of the private views the query reads, again: a file of another type may
	// have joined a glob since the catalog was loaded (store.CheckPrivateViewFiles).
	if err := store.CheckPrivateViewFiles(ctx, e.b, e.relationsRead(q)); err != nil {
		return nil, ledger.Budget{}, err
	}
	// Types of keys and values, from a query that reads no rows: the SQL normalises keys by
	// them, and a key that could not be post-processed is refused here, before any charge.
	if err := prep.Bind(ctx, e.b); err != nil {
		return nil, ledger.Budget{}, err
	}
	return prep, ledger.Budget{Epsilon: p.Cost.Epsilon, Delta: p.Cost.Delta}, nil
}

// relationsRead returns the catalog's relations that q's data names (a CTE named like one
// counts too: a relation more is only checked more).
func (e *Engine) relationsRead(q *analyzer.Query) []*catalog.Relation {
	var out []*catalog.Relation
	seen := map[*catalog.Relation]bool{}
	for _, n := range q.Data() {
		ast.Inspect(n, func(m ast.Node) bool {
			if t, ok := m.(*ast.TableName); ok {
				parts := make([]string, len(t.Name))
				for i, p := range t.Name {
					parts[i] = p.Name
				}
				if r, ok := e.cat.Lookup(strings.Join(parts, ".")); ok && !seen[r] {
					seen[r] = true
					out = append(out, r)
				}
			}
			return true
		})
	}
	return out
}

func (e *Engine) anonymized(ctx context.Context, q *analyzer.Query, text string, explain bool) (*Result, error) {
	if q.Options.ConfidenceLevel == 0 {
		q.Options.ConfidenceLevel = e.o.ConfidenceLevel
	}
	prep, cost, err := e.prepare(ctx, q)
	if err != nil {
		return nil, err
	}
	if explain {
		lines, err := e.explainLines(ctx, prep, cost)
		if err != nil {
			return nil, err
		}
		return planResult(lines), nil
	}
	// Everything that can fail without reading a private row fails here, for free.
	if err := prep.Check(ctx, e.b); err != nil {
		return nil, err
	}
	st, err := e.charge(ctx, cost, text, q.Options.Pos, prep)
	if err != nil {
		return nil, err
	}
	res, err := run(ctx, prep, e.b)
	if err != nil {
		if pe := (*exec.PostProcessError)(nil); errors.As(err, &pe) && ctx.Err() == nil {
			return nil, postProcessFailed(q.Options.Pos, cost, pe.Err)
		}
		return nil, withBoundsNeeds(e.failedAfterData(q, cost, err), prep.Plan)
	}
	out := rowsResult(res.Columns, res.Types, res.Rows)
	out.Noise = res.Noise
	out.Notices = append(out.Notices, chargeNotice(cost, st))
	addReleaseNotices(out, prep.Plan, "")
	out.charged(cost, st)
	return out, nil
}

// explainLines are EXPLAIN's lines for a prepared anonymized query of the given cost: the
// plan's, then the stager's (where the stage runs elsewhere than the backend).
func (e *Engine) explainLines(ctx context.Context, prep *exec.Prepared, cost ledger.Budget) ([]string, error) {
	var lines []string
	for _, row := range explainResult(prep, cost).Rows {
		lines = append(lines, row[0].(string))
	}
	if e.o.Stager != nil {
		more, err := e.o.Stager.Explain(ctx, prep.Plan)
		if err != nil {
			return nil, err
		}
		lines = append(lines, more...)
	}
	return lines, nil
}

// planResult is an EXPLAIN result of the given lines.
func planResult(lines []string) *Result {
	r := &Result{Columns: []Column{{Name: "QUERY PLAN", Type: "VARCHAR"}}, Tag: "EXPLAIN"}
	for _, l := range lines {
		r.Rows = append(r.Rows, []any{l})
	}
	return r
}

// charge records cost durably (budget before data: the charge is durable before the database
// reads a private row, so a query that cannot be paid never runs, and whatever happens from
// here on is paid for). A ledger error without a position points at pos. A plan with
// unbounded contributions was allowed under a lifted budget: if the owner set one between the
// check and the charge, it is refused here, before any private row is read.
//
// The stage does not start while the COMMIT is written, although the transaction's write to
// the budget row already reserves it: a process that died during the stage before the COMMIT
// was durable (a crash on one person's value) would leave a data-dependent failure unpaid
// (docs/benchmarks.md, "Quantile intervals, and where a fresh process's first query goes").
func (e *Engine) charge(ctx context.Context, cost ledger.Budget, text string, pos sqlerr.Pos, preps ...*exec.Prepared) (ledger.Status, error) {
	spend, err := e.ledger.Prepare(cost, text)
	if err != nil {
		return ledger.Status{}, err
	}
	st, err := spend.Commit(ctx)
	if err != nil {
		if se, ok := sqlerr.As(err); ok && !se.Pos.IsValid() {
			se.Pos = pos
		}
		return ledger.Status{}, err
	}
	for _, prep := range preps {
		if prep.Plan.Unbounded && !st.Unlimited {
			return ledger.Status{}, sqlerr.Privacy(prep.Plan.Query.Options.Pos, analyzer.RuleBoundedGroups,
				"the data owner set a budget: contributions across groups must be bounded", "add kappa=1")
		}
	}
	return st, nil
}

// run runs a checked, paid plan. A panic there happened after private data was read, so it is
// returned as an error like any other failure (and reported uniformly), not as an internal
// error whose occurrence would tell the analyst something about the data.
func run(ctx context.Context, prep *exec.Prepared, b backend.Backend) (res *exec.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return prep.Run(ctx, b)
}

func chargeNotice(cost ledger.Budget, st ledger.Status) string {
	if a := st.Account; a != nil && (a.LimitEpsilon || a.LimitDelta || !st.Unlimited) {
		return fmt.Sprintf("charged %s; you have %s left (analyst %s)", cost, st.AccountRemainingText(), a.Name)
	}
	if st.Unlimited {
		return fmt.Sprintf("charged %s; the budget limit is lifted (spent so far: %s)", cost, st.Spent)
	}
	return fmt.Sprintf("charged %s; remaining %s", cost, st.RemainingText())
}

func explainResult(prep *exec.Prepared, cost ledger.Budget) *Result {
	p := prep.Plan
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	add("%s", explainSummary(p, cost))
	if p.Unbounded {
		add("Anonymized aggregation (%d group keys, %d aggregates), kappa = NULL: contributions across groups not bounded (SET BUDGET UNLIMITED; no privacy guarantee)", len(p.Query.Keys), len(p.Aggregates))
	} else {
		add("Anonymized aggregation (%d group keys, %d aggregates), kappa = %d", len(p.Query.Keys), len(p.Aggregates), p.Kappa)
	}
	add("Budget charged when run, before the data is read: %s", cost)
	add("Partition selection (%s): epsilon = %g, delta = %g", p.Selection.Rule, p.Selection.Epsilon, p.Selection.Delta)
	for _, a := range p.Aggregates {
		if a.Implicit {
			add("Aggregate %s: %s noise, epsilon = %g, delta = %g, bounds estimated when run with epsilon = %g (approximate bounds on a logarithmic histogram)",
				a.Name, a.Noise, a.Epsilon, a.Delta, a.BoundsEpsilon)
			continue
		}
		add("Aggregate %s: %s noise, epsilon = %g, delta = %g, bounds [%g, %g]", a.Name, a.Noise, a.Epsilon, a.Delta, a.Lower, a.Upper)
	}
	if prep.OnePass() {
		add("Stage SQL (runs in the database; one row per group comes back, with the per-unit values of the aggregates with implicit bounds binned by the bounds histogram: the bounds are drawn from all groups' bins, then each group's clamped sums follow exactly from its bins):")
		for _, l := range strings.Split(prep.StageSQL, "\n") {
			add("  %s", l)
		}
		goto done
	}
	if prep.Release == nil {
		add("Bounds SQL (runs first; the stage SQL is generated once the bounds are known):")
		for _, sql := range prep.BoundsSQL {
			for _, l := range strings.Split(sql, "\n") {
				add("  %s", l)
			}
		}
		goto done
	}
	for _, d := range prep.Release.Describe() {
		add("  %s", d)
	}
	add("Stage SQL (runs in the database; one row per group comes back):")
	for _, l := range strings.Split(prep.StageSQL, "\n") {
		add("  %s", l)
	}
done:
	r := &Result{Columns: []Column{{Name: "QUERY PLAN", Type: "VARCHAR"}}, Tag: "EXPLAIN"}
	for _, l := range lines {
		r.Rows = append(r.Rows, []any{l})
	}
	return r
}

// failedAfterData is the one error of every query that failed after it started reading
// private data: a database error, an error of the release in Go, too few data for implicit
// bounds, the statement timeout, a cancellation, a panic. Whether such a failure happens, and
// its cause, may depend on one user's data, so the query was charged before it ran and
// analysts see the same code, message and hint whatever the cause; the owner, who may read
// the data anyway, also sees the cause.
func (e *Engine) failedAfterData(q *analyzer.Query, cost ledger.Budget, cause error) error {
	return e.failedAfterDataAt(q.Options.Pos, cost, cause)
}

// postProcessFailed is the error of a query whose post-processing (the SQL over its released
// rows, exec.PostProcessError) failed: the budget was spent, but the cause depends on
// released values only, so it is shown, in the database's SQLSTATE, cleaned of the names of
// the SQL dpsql generated, for analysts as for the owner.
func postProcessFailed(pos sqlerr.Pos, cost ledger.Budget, cause error) error {
	code := sqlerr.DataException
	var coded interface{ SQLState() string }
	if errors.As(cause, &coded) && len(coded.SQLState()) == 5 {
		code = coded.SQLState()
	}
	return &ChargedError{Charge: cost, Err: &sqlerr.Error{Code: code, Pos: pos, Cause: cause,
		Msg: fmt.Sprintf("post-processing the released values failed; the query was charged %s: %s", cost, cleanDBMessage(cause.Error())),
		Hint: "the expressions, HAVING, ORDER BY and LIMIT over the anonymized results run on the released (noisy) values only, so the cause is shown; " +
			"make them total for any released value (TRY_CAST or a wider type, NULLIF for divisors, CASE guards) and run the query again, which is charged again"}}
}

func (e *Engine) failedAfterDataAt(pos sqlerr.Pos, cost ledger.Budget, cause error) error {
	se := &sqlerr.Error{Code: sqlerr.FailedAfterData, Pos: pos,
		Msg: fmt.Sprintf("the query failed after it started reading private data; the attempt was charged %s", cost),
		Hint: "the cause is withheld, because whether and why a query fails there can depend on one user's data; " +
			"possible causes: an expression that fails on some row (make it total: TRY_CAST, NULLIF for divisors, CASE guards), " +
			"too few data to estimate implicit bounds (give CLAMPED BETWEEN bounds), the statement timeout or memory limit, a cancellation"}
	if e.o.Owner {
		se.Msg += ": " + cause.Error()
		se.Cause = cause
	}
	return &ChargedError{Charge: cost, Err: se}
}

// ChargedError is the error of a statement that failed after its charge was recorded, with
// what it spent (for a server's log of what each statement cost); Unwrap gives the error the
// user is shown.
type ChargedError struct {
	Charge ledger.Budget
	Err    error
}

func (e *ChargedError) Error() string { return e.Err.Error() }
func (e *ChargedError) Unwrap() error { return e.Err }
