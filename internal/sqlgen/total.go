package sqlgen

import (
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/duckfn"
	"github.com/dpsql/dpsql/internal/store"
)

// PrintData prints an analyst expression or FROM clause that is evaluated over private rows.
// Such an expression must be total: it must not fail on some rows and not on others, since
// whether a query fails would then reveal one user's data with certainty (say, an overflow
// only for a value above 5), and no noise can hide it. A failure that happens for every row
// is no better: it happens only when some row reaches it (one user's row passing a WHERE).
//
// On both dialects a scalar subquery is printed as (SELECT * FROM (q) LIMIT 1): a subquery
// that returns several rows only for one user's row would otherwise fail the query.
//
// On DuckDB every expression that can fail at run time (arithmetic, comparisons, casts,
// scalar function calls, BETWEEN, IN, LIKE, EXTRACT) is wrapped in TRY(...), which yields
// NULL for the rows where it fails, and casts become TRY(TRY_CAST(...)). A comparison of two columns
// (a join condition) is printed outside TRY only when both have the same type, which DuckDB
// folds at bind time: CASE WHEN typeof(a) = typeof(b) THEN TRY(a) = TRY(b) ELSE TRY(a = b)
// END, so hash joins stay possible, an implicit cast (text compared with a number) cannot
// fail, and no side folds into a constant filter pushed into a scan. A
// value in a boolean position (WHERE, ON, HAVING, QUALIFY, FILTER, CASE WHEN, NOT, AND, OR,
// IS TRUE) that is not a boolean expression is printed as TRY_CAST(x AS BOOLEAN), and
// CASE x WHEN v is printed as CASE WHEN x = v, a guarded comparison.
//
// PostgreSQL has no TRY. There, arithmetic, casts, fallible functions and LIKE with a
// pattern that is not a valid literal call total helper functions that the owner's store.Init
// installs in the dpsql schema (see internal/store/total.go): each has the signature of the
// PostgreSQL operator or function it guards, so calls resolve to the same types, and returns
// NULL where the original fails. Casts are printed as
// CASE WHEN FALSE THEN CAST(x AS T) ELSE dpsql.cast_T(x) END: the dead branch keeps
// PostgreSQL's own type check (a cast that does not exist is refused before any row is
// read) and the planner removes it. Subtrees that read no column are printed as written:
// PostgreSQL folds their IMMUTABLE calls while planning (in Check, before the charge), and
// Check computes every one of them once before the charge too (ConstantParts), since
// PostgreSQL computes the others (a text cast to DATE, TIMESTAMPTZ arithmetic, which depend
// on settings) row by row, where a CASE on one person's row could reach them.
func PrintData(d backend.Dialect, n ast.Node) string {
	p := basePrinter(d)
	base := p.Hook
	p.Hook = guardSizes(func(p *ast.Printer, n ast.Node) bool {
		if c, ok := totalSum(d, n); ok {
			if !base(p, c) {
				p.Default(c)
			}
			return true
		}
		if s, ok := n.(*ast.Subquery); ok {
			p.WriteString("(SELECT * FROM (")
			p.Print(s.Query)
			p.WriteString(") AS _dp_scalar LIMIT 1)")
			return true
		}
		switch d {
		case backend.DuckDB:
			return printDuckDB(p, n, base)
		case backend.Postgres:
			return printPostgres(p, n, base)
		}
		return base(p, n)
	})
	p.Print(n)
	return p.String()
}

// printDuckDB is PrintData's hook on DuckDB.
func printDuckDB(p *ast.Printer, n ast.Node, base func(*ast.Printer, ast.Node) bool) bool {
	if c := boolPositions(n); c != nil {
		p.Default(c)
		return true
	}
	if c, ok := withoutStatistics(n); ok {
		// DuckDB's optimizer derives date_trunc's (and yearweek's) result range from its
		// argument's stored minimum and maximum, and fails while planning when one stored
		// date lies beyond year 290308: before any row is read, whatever the WHERE, so only
		// when such a row exists (outside review). DuckDB keeps no statistics for TRY(x).
		// Analyst sessions plan without statistics propagation (backend/duckdb), which
		// covers every function; this keeps owner sessions' runs in agreement.
		n = c
	}
	if x, works := datePartCall(n); x != nil {
		// DuckDB raises "not implemented", which TRY does not catch, at run time and row by
		// row, for a part the value's type lacks (date_part('dow', iv) of an INTERVAL,
		// date_diff('day', t1, t2) of TIMEs, dayofweek(iv)): the query failed only when one
		// person's row passed the WHERE (outside reviews). typeof(x) is fixed when the query
		// is bound, so the call is evaluated only on the types it works on.
		quoted := make([]string, len(works))
		for i, t := range works {
			quoted[i] = ast.QuoteString(t)
		}
		p.WriteString("CASE WHEN typeof(")
		p.Print(x)
		p.WriteString(") IN (" + strings.Join(quoted, ", ") + ") THEN TRY(")
		if !base(p, n) {
			p.Default(n)
		}
		p.WriteString(") END")
		return true
	}
	switch x := n.(type) {
	case *ast.Query:
		if !x.Whole {
			return base(p, n)
		}
		materialized(p, func() { p.Default(x) })
		return true
	case *ast.Cast:
		// TRY_CAST, itself inside TRY: DuckDB's TRY_CAST still raises for some conversions
		// (TIMESTAMP 'infinity' to TIME, the largest DATE to TIMESTAMPTZ, a TIMESTAMP beyond
		// TIMESTAMP_NS's range: an outside review), which TRY catches. The TRY is around the
		// cast itself, so that DuckDB, which computes a repeated expression once, computes
		// it with its TRY. The operand is printed (and guarded) on its own.
		// DuckDB refuses aggregates and window functions inside TRY: a cast of one stays a
		// bare TRY_CAST (anywhere in an anonymized query the analyzer allows it only where
		// it cannot fail: to text, or a count's, sum's or average's result to a type other
		// than a date or time, analyzer.aggregateCastTotal).
		cc := *x
		cc.Safe, cc.Colon = true, false
		if aggregates(x.X) {
			return base(p, &cc)
		}
		p.WriteString("TRY(")
		if !base(p, &cc) {
			p.Default(&cc)
		}
		p.WriteString(")")
		return true
	case *ast.FuncCall:
		if c := coalesceAsCase(x); c != nil {
			// DuckDB's COALESCE (and IFNULL) converting an argument to the common type
			// inside TRY crashed the process (a segmentation fault in DuckDB 1.5) when one
			// person's value did not convert (a DATE beyond TIMESTAMP's range beside a
			// TIMESTAMP): a crash only when that row was read (an outside review). CASE
			// converts its branches the same way, and TRY catches the failure there.
			p.Print(c)
			return true
		}
		if interpolating(x) {
			// DuckDB interpolates a DATE's median as a TIMESTAMP when it finalizes the
			// group, and fails on a date outside TIMESTAMP's range: one unit's value in a
			// per-unit subquery failed the query (outside review). The argument is read as a
			// number (TRY_CAST); other types are refused when the query is bound.
			cc := *x
			cc.Args = append([]ast.Expr{&ast.Cast{X: x.Args[0], Type: &ast.TypeName{Name: "DOUBLE"}, Safe: true}}, x.Args[1:]...)
			if !base(p, &cc) {
				p.Default(&cc)
			}
			return true
		}
	case *ast.InSubquery:
		printInSubquery(p, x)
		return true
	case *ast.Binary:
		if isComparison(x.Op) && isColumn(x.L) && isColumn(x.R) {
			// Each side is read as TRY(column), which cannot fail and which the optimizer
			// neither removes nor reads as the bare column: a comparison whose other side
			// is a constant (a subquery's CAST(5000 AS INT), a parameter) would otherwise
			// fold into column = 5000 and be pushed into a Parquet scan as a constant
			// filter, which reads the bloom filter of each row group whose minimum and
			// maximum admit 5000; a damaged filter then failed the query only when the
			// target's value made the group admit it (an outside review). Pushed as
			// TRY(column) = 5000, the filter is evaluated on the rows alone. Joins on
			// TRY(a) = TRY(b) stay hash joins.
			p.WriteString("CASE WHEN typeof(")
			p.Print(x.L)
			p.WriteString(") = typeof(")
			p.Print(x.R)
			p.WriteString(") THEN ")
			p.WriteString("TRY(")
			p.Print(x.L)
			p.WriteString(") " + x.Op + " TRY(")
			p.Print(x.R)
			p.WriteString(")")
			p.WriteString(" ELSE TRY(")
			p.Default(x)
			p.WriteString(") END")
			return true
		}
	}
	if !fallible(n) {
		return base(p, n)
	}
	p.WriteString("TRY(")
	if !base(p, n) {
		p.Default(n)
	}
	p.WriteString(")")
	return true
}

// withoutStatistics returns a call whose range DuckDB derives from its argument's statistics
// (date_trunc(part, x), yearweek(x): duckfn.RangeFromStatistics) with x read as TRY(x), and
// whether n is one.
func withoutStatistics(n ast.Node) (ast.Node, bool) {
	c, ok := n.(*ast.FuncCall)
	if !ok || c.Over != nil || len(c.Name) != 1 {
		return n, false
	}
	i := duckfn.RangeFromStatistics(c.Name[0].Name, len(c.Args))
	if i < 0 {
		return n, false
	}
	if t, ok := c.Args[i].(*ast.FuncCall); ok && len(t.Name) == 1 && strings.EqualFold(t.Name[0].Name, "try") {
		return n, false
	}
	cc := *c
	cc.Args = append([]ast.Expr(nil), c.Args...)
	cc.Args[i] = &ast.FuncCall{Name: []*ast.Ident{{Name: "TRY"}}, Args: []ast.Expr{c.Args[i]}}
	return &cc, true
}

// datePartCall returns, for a date function n whose part is a constant (the analyzer refuses
// any other): date_part, datepart and EXTRACT, a function named after a part (dayofweek(x)),
// date_diff, datediff, date_sub, datesub, date_trunc and datetrunc, the value it reads the part
// of and the types on which DuckDB does not fail at run time with an error TRY does not catch
// (duckfn.DatePartFails); nil when it fails on none of them.
func datePartCall(n ast.Node) (ast.Expr, []string) {
	var fn, part string
	var x ast.Expr
	switch c := n.(type) {
	case *ast.Extract:
		fn, part, x = "date_part", c.Field, c.X
	case *ast.FuncCall:
		if c.Over != nil || len(c.Name) != 1 {
			return nil, nil
		}
		name := strings.ToLower(c.Name[0].Name)
		if p, ok := duckfn.NamedPart(name); ok && len(c.Args) == 1 {
			fn, part, x = "date_part", p, c.Args[0]
			break
		}
		var ok bool
		if fn, ok = duckfn.DateFunction(name); !ok || len(c.Args) < 2 {
			return nil, nil
		}
		l, ok := c.Args[0].(*ast.Literal)
		if !ok || l.Kind != ast.StringLit {
			return nil, nil
		}
		part, x = l.Text, c.Args[1]
	default:
		return nil, nil
	}
	var works []string
	for _, t := range duckfn.TemporalTypes {
		if !duckfn.DatePartFails(fn, part, t) {
			works = append(works, t)
		}
	}
	if len(works) == len(duckfn.TemporalTypes) {
		return nil, nil
	}
	return x, works
}

// interpolating reports whether call is an aggregate that interpolates between its
// argument's values (median, quantile_cont, percentile_cont).
func interpolating(call *ast.FuncCall) bool {
	if call.Over != nil || len(call.Name) != 1 || len(call.Args) == 0 {
		return false
	}
	switch strings.ToLower(call.Name[0].Name) {
	case "median", "quantile_cont", "percentile_cont":
		return true
	}
	return false
}

// coalesceAsCase returns coalesce(a, b, ...) or ifnull(a, b) as CASE WHEN a IS NOT NULL THEN
// a WHEN b IS NOT NULL THEN b ... ELSE last END, the same value of the same type; nil for any
// other call.
func coalesceAsCase(c *ast.FuncCall) *ast.Case {
	if c.Over != nil || len(c.Name) != 1 || len(c.Args) < 2 || c.Distinct || c.Star {
		return nil
	}
	switch strings.ToLower(c.Name[0].Name) {
	case "coalesce", "ifnull":
	default:
		return nil
	}
	k := &ast.Case{Else: c.Args[len(c.Args)-1]}
	for _, a := range c.Args[:len(c.Args)-1] {
		k.Whens = append(k.Whens, &ast.When{Cond: &ast.IsNull{X: a, Not: true, Value: "NULL"}, Result: a})
	}
	return k
}

// aggregates reports whether x computes an aggregate or a window function (outside any
// subquery of its own).
func aggregates(x ast.Expr) bool {
	found := false
	ast.Inspect(x, func(n ast.Node) bool {
		switch c := n.(type) {
		case *ast.Query:
			return false
		case *ast.FuncCall:
			if c.Over != nil || len(c.Name) == 1 && analyzer.IsAggregate(c.Name[0].Name) {
				found = true
			}
		}
		return !found
	})
	return found
}

// materialized prints, on DuckDB, the query that body prints as a query that reads it through
// a materialized CTE: a public part of an anonymized query (ast.Query.Whole,
// ast.TableName.Whole), which DuckDB then computes whole before its consumers run, with no
// key of the private side pushed into it, even when the private side is empty.
func materialized(p *ast.Printer, body func()) {
	p.WriteString("WITH _dp_whole AS MATERIALIZED (")
	body()
	p.WriteString(") SELECT * FROM _dp_whole")
}

// printInSubquery prints x [NOT] IN (query) on DuckDB. IN converts x and the query's column
// to one type, row by row, which can fail on one person's value, and DuckDB refuses a
// subquery inside TRY; so it is printed as the same three-valued answer from two EXISTS over
// the query, each comparison guarded like a join's (CASE WHEN typeof(a) = typeof(b) ..., TRY
// around the comparison alone): true if some value equals x, else NULL if x is NULL or a
// value is (and the query returns a row), else false. The analyzer checked that the query
// returns one column.
func printInSubquery(p *ast.Printer, x *ast.InSubquery) {
	col := &ast.ColumnRef{Parts: []*ast.Ident{{Name: "_dp_in"}, {Name: "_dp_c"}}}
	exists := func(where func()) {
		p.WriteString("EXISTS (SELECT 1 FROM (")
		p.Print(x.Query)
		p.WriteString(") AS _dp_in(_dp_c) WHERE ")
		where()
		p.WriteString(")")
	}
	if x.Not {
		p.WriteString("NOT ")
	}
	p.WriteString("(CASE WHEN ")
	exists(func() {
		p.Print(&ast.Binary{Op: "=", L: &ast.Paren{X: x.X}, R: col})
	})
	p.WriteString(" THEN TRUE WHEN ")
	exists(func() {
		p.WriteString("(")
		p.Print(x.X)
		p.WriteString(") IS NULL OR _dp_in._dp_c IS NULL")
	})
	p.WriteString(" THEN NULL ELSE FALSE END)")
}

// fallible reports whether evaluating n (not counting its children) can fail at run time on
// DuckDB.
func fallible(n ast.Node) bool {
	switch x := n.(type) {
	case *ast.Binary:
		return x.Op != "AND" && x.Op != "OR"
	case *ast.Unary:
		return x.Op == "-" || x.Op == "+"
	case *ast.Between, *ast.InList, *ast.Like, *ast.Extract, *ast.InSubquery:
		return true
	case *ast.Case, *ast.ArrayLit:
		// Their values take one type, to which DuckDB converts each branch's or element's
		// value row by row: CASE WHEN k = 'secret' THEN 'x' ELSE 1 END failed on one
		// person's row only (outside review).
		return true
	case *ast.FuncCall:
		return x.Over == nil && len(x.Name) == 1 && !analyzer.IsAggregate(x.Name[0].Name)
	}
	return false
}

func isComparison(op string) bool {
	switch op {
	case "=", "<>", "!=", "<", "<=", ">", ">=", "IS DISTINCT FROM", "IS NOT DISTINCT FROM":
		return true
	}
	return false
}

func isColumn(e ast.Expr) bool {
	for {
		switch x := e.(type) {
		case *ast.Paren:
			e = x.X
		case *ast.ColumnRef:
			return true
		default:
			return false
		}
	}
}

// boolPositions returns a shallow copy of n in which every operand that DuckDB would convert
// to BOOLEAN implicitly (and fail on a value such as 'x') is an explicit TRY_CAST(... AS
// BOOLEAN), and a CASE with an operand is a searched CASE of comparisons; nil if n has no
// such operand.
func boolPositions(n ast.Node) ast.Node {
	changed := false
	cond := func(e ast.Expr) ast.Expr {
		if e == nil || isBoolean(e) {
			return e
		}
		changed = true
		return boolCast(e)
	}
	switch x := n.(type) {
	case *ast.Select:
		c := *x
		c.Where, c.Having, c.Qualify = cond(x.Where), cond(x.Having), cond(x.Qualify)
		if changed {
			return &c
		}
	case *ast.Join:
		c := *x
		if c.On = cond(x.On); changed {
			return &c
		}
	case *ast.Unary:
		c := *x
		if x.Op == "NOT" {
			if c.X = cond(x.X); changed {
				return &c
			}
		}
	case *ast.Binary:
		c := *x
		if x.Op == "AND" || x.Op == "OR" {
			if c.L, c.R = cond(x.L), cond(x.R); changed {
				return &c
			}
		}
	case *ast.IsNull:
		c := *x
		if x.Value == "TRUE" || x.Value == "FALSE" {
			if c.X = cond(x.X); changed {
				return &c
			}
		}
	case *ast.FuncCall:
		c := *x
		if c.Filter = cond(x.Filter); changed {
			return &c
		}
	case *ast.Case:
		c := *x
		c.Whens = make([]*ast.When, len(x.Whens))
		for i, w := range x.Whens {
			cw := *w
			if x.Operand != nil {
				cw.Cond = &ast.Binary{Op: "=", L: x.Operand, R: w.Cond}
			} else {
				cw.Cond = cond(w.Cond)
			}
			c.Whens[i] = &cw
		}
		if x.Operand != nil || changed {
			c.Operand = nil
			return &c
		}
	}
	return nil
}

// condition is e in a boolean position (a WHERE clause): on DuckDB, TRY_CAST(e AS BOOLEAN)
// unless e is a boolean expression (see PrintData).
func condition(d backend.Dialect, e ast.Expr) ast.Expr {
	if d != backend.DuckDB || isBoolean(e) {
		return e
	}
	return boolCast(e)
}

func boolCast(e ast.Expr) ast.Expr {
	return &ast.Cast{X: e, Type: &ast.TypeName{Name: "BOOLEAN"}, Safe: true}
}

// isBoolean reports whether e is a boolean expression whatever the types of its operands.
func isBoolean(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.Paren:
		return isBoolean(x.X)
	case *ast.Binary:
		return isComparison(x.Op) || x.Op == "AND" || x.Op == "OR"
	case *ast.Unary:
		return x.Op == "NOT"
	case *ast.IsNull, *ast.Between, *ast.InList, *ast.InSubquery, *ast.Like, *ast.Exists:
		return true
	case *ast.Literal:
		return x.Kind == ast.BoolLit || x.Kind == ast.NullLit
	case *ast.Cast:
		t := strings.ToUpper(x.Type.Name)
		return x.Safe && (t == "BOOLEAN" || t == "BOOL") && len(x.Type.Args) == 0
	}
	return false
}

// ---- PostgreSQL ----

// pgGuardedFuncs and pgCastTypes are the functions and cast targets that have total helpers
// on PostgreSQL (internal/store installs them). The other allowlisted functions are total
// there (lower, length, strpos, greatest, coalesce, ...) or do not exist on PostgreSQL, which
// then refuses the query before reading a row.
var (
	pgGuardedFuncs = setOf(store.TotalFuncs...)
	pgCastTypes    = setOf(store.TotalCasts...)
)

// pgCasts maps PostgreSQL type spellings (as printed) to pg_catalog type names. Casts to
// other types (text types, which cannot fail) stay as written.
var pgCasts = map[string]string{
	"SMALLINT": "int2", "INT2": "int2", "INTEGER": "int4", "INT": "int4", "INT4": "int4",
	"BIGINT": "int8", "INT8": "int8", "NUMERIC": "numeric", "DECIMAL": "numeric",
	"REAL": "float4", "FLOAT4": "float4", "DOUBLE PRECISION": "float8", "FLOAT8": "float8",
	"BOOLEAN": "bool", "DATE": "date", "TIMESTAMP": "timestamp",
	"TIMESTAMP WITHOUT TIME ZONE": "timestamp", "TIMESTAMPTZ": "timestamptz",
	"TIMESTAMP WITH TIME ZONE": "timestamptz", "TIME": "time", "INTERVAL": "interval",
}

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// printPostgres is PrintData's hook on PostgreSQL.
func printPostgres(p *ast.Printer, n ast.Node, base func(*ast.Printer, ast.Node) bool) bool {
	if e, ok := n.(ast.Expr); ok && !readsData(e) {
		return base(p, n)
	}
	switch x := n.(type) {
	case *ast.Binary:
		if f, ok := store.TotalOperators[x.Op]; ok {
			pgCall(p, f, x.L, x.R)
			return true
		}
	case *ast.Unary:
		if x.Op == "-" {
			pgCall(p, store.TotalOperators["-u"], x.X)
			return true
		}
	case *ast.Cast:
		t := strings.ToUpper(Print(backend.Postgres, x.Type))
		if c, ok := pgCasts[t]; ok && pgCastTypes[c] {
			p.WriteString(pgTotalCast(PrintData(backend.Postgres, x.X), t, c))
			return true
		}
		if prec, scale, ok := numericTypmod(x.Type); ok {
			p.WriteString(pgNumericCast(PrintData(backend.Postgres, x.X), prec, scale))
			return true
		}
		if t == "BYTEA" {
			p.WriteString(pgByteaCast(PrintData(backend.Postgres, x.X)))
			return true
		}
	case *ast.Extract:
		pgCall(p, `"extract"`, &ast.Literal{Kind: ast.StringLit, Text: strings.ToLower(x.Field)}, x.X)
		return true
	case *ast.Like:
		// The analyzer refuses LIKE ... ESCAPE, so x.Escape is nil here.
		if validLikeLiteral(x.Pattern) {
			break
		}
		if x.Not {
			p.WriteString("NOT ")
		}
		op := store.TotalOperators["~~"]
		if x.ILike {
			op = store.TotalOperators["~~*"]
		}
		pgCall(p, op, x.X, x.Pattern)
		return true
	case *ast.FuncCall:
		if len(x.Name) != 1 || x.Over != nil || x.Distinct || x.Star || len(x.NamedArgs) > 0 {
			break
		}
		name := strings.ToLower(x.Name[0].Name)
		if to, ok := funcNames[backend.Postgres][name]; ok {
			name = to
		}
		if !pgGuardedFuncs[name] {
			break
		}
		args := x.Args
		if (name == "round" || name == "trunc") && len(args) == 2 {
			// PostgreSQL rounds to n digits only NUMERIC values (see printer).
			args = []ast.Expr{&ast.Cast{X: args[0], Type: &ast.TypeName{Name: "NUMERIC"}}, args[1]}
		}
		pgCall(p, `"`+name+`"`, args...)
		return true
	}
	return base(p, n)
}

// pgSafeSources are, for each guarded cast target, the source types whose cast to it
// cannot fail.
var pgSafeSources = map[string][]string{
	"float8":  {"smallint", "integer", "bigint", "real", "double precision"},
	"float4":  {"smallint", "integer", "bigint", "real"},
	"numeric": {"smallint", "integer", "bigint", "numeric"},
	"int8":    {"smallint", "integer", "bigint"},
	"int4":    {"smallint", "integer"},
	"int2":    {"smallint"},
}

// pgTotalCast is the total cast of the printed expression x to the type spelled t (c in
// pg_catalog): the dead branch keeps PostgreSQL's type check (the planner drops it); a source
// type whose cast cannot fail is cast as written (pg_typeof costs little), any other calls
// the dpsql.cast_<c> helper, which returns NULL where the cast fails.
func pgTotalCast(x, t, c string) string {
	var b strings.Builder
	b.WriteString("CASE WHEN FALSE THEN CAST(" + x + " AS " + t + ")")
	safe := append([]string{c}, pgSafeSources[c]...)
	for i, s := range safe {
		safe[i] = "CAST('" + s + "' AS REGTYPE)"
	}
	b.WriteString(" WHEN pg_typeof(" + x + ") IN (" + strings.Join(safe, ", ") + ") THEN CAST(" + x + " AS " + t + ")")
	b.WriteString(" ELSE dpsql.cast_" + c + "(" + x + ") END")
	return b.String()
}

// pgCall prints dpsql.f(args).
func pgCall(p *ast.Printer, f string, args ...ast.Expr) {
	p.WriteString("dpsql." + f + "(")
	for i, a := range args {
		if i > 0 {
			p.WriteString(", ")
		}
		p.Expr(a, 0)
	}
	p.WriteString(")")
}

// readsData reports whether e refers to a column or a subquery: an expression without either
// is a constant that PostgreSQL folds while planning, before any row is read.
func readsData(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.ColumnRef, *ast.Subquery, *ast.Exists, *ast.InSubquery:
			found = true
		case *ast.FuncCall:
			if x.Over != nil || analyzer.IsAggregate(x.Name[len(x.Name)-1].Name) {
				found = true
			}
		}
		return !found
	})
	return found
}

// validLikeLiteral reports whether pattern is a string literal that PostgreSQL's LIKE
// accepts (it fails on a pattern ending with the escape character \).
func validLikeLiteral(pattern ast.Expr) bool {
	l, ok := pattern.(*ast.Literal)
	if !ok || l.Kind != ast.StringLit {
		return false
	}
	n := len(l.Text) - len(strings.TrimRight(l.Text, `\`))
	return n%2 == 0
}

// pgSummable is the NUMERIC n with finite values beyond +-1e130000 made +-1e130000:
// PostgreSQL's NUMERIC holds at most 131072 digits before the point, so a sum of two values of
// 9e131071 overflowed ("value overflows numeric format") only on the rows of the unit that
// held them (an outside review). Such terms cannot overflow a sum before 10^1000 rows;
// infinities and NaN stay as they are (their sums do not fail).
func pgSummable(n ast.Expr) ast.Expr {
	lim := &ast.Cast{X: &ast.Literal{Kind: ast.StringLit, Text: "1e130000"}, Type: &ast.TypeName{Name: "NUMERIC"}}
	neg := &ast.Cast{X: &ast.Literal{Kind: ast.StringLit, Text: "-1e130000"}, Type: &ast.TypeName{Name: "NUMERIC"}}
	inf := &ast.Cast{X: &ast.Literal{Kind: ast.StringLit, Text: "Infinity"}, Type: &ast.TypeName{Name: "NUMERIC"}}
	ninf := &ast.Cast{X: &ast.Literal{Kind: ast.StringLit, Text: "-Infinity"}, Type: &ast.TypeName{Name: "NUMERIC"}}
	and := func(a, b ast.Expr) ast.Expr { return &ast.Binary{Op: "AND", L: a, R: b} }
	return &ast.Case{Whens: []*ast.When{
		{Cond: and(&ast.Binary{Op: ">", L: n, R: lim}, &ast.Binary{Op: "<", L: n, R: inf}), Result: lim},
		{Cond: and(&ast.Binary{Op: "<", L: n, R: neg}, &ast.Binary{Op: ">", L: n, R: ninf}), Result: neg},
	}, Else: n}
}

// totalSum returns sum, avg or mean of x (an analyst's aggregate, in a FROM subquery over
// private data or an expression subquery) over a type where it cannot overflow: DuckDB sums
// HUGEINT and DECIMAL(38) in types that raise an error on overflow, even inside TRY, and
// PostgreSQL's float sums raise one too; one user's rows could make a query fail. On DuckDB
// the argument is multiplied by a DOUBLE 1 (the sum becomes a double, which overflows to
// infinity; text stays a type error) and read as a DOUBLE (TRY_CAST: an INTERVAL times a
// DOUBLE is still an INTERVAL, whose average overflowed on one unit's values in an outside
// review; it is NULL now), on PostgreSQL it is cast to NUMERIC (the cast is printed total,
// like any other).
func totalSum(d backend.Dialect, n ast.Node) (*ast.FuncCall, bool) {
	f, ok := n.(*ast.FuncCall)
	if !ok || len(f.Name) != 1 || len(f.Args) != 1 || f.Star || f.Over != nil {
		return nil, false
	}
	switch strings.ToLower(f.Name[0].Name) {
	case "sum", "avg", "mean":
	default:
		return nil, false
	}
	c := *f
	switch d {
	case backend.DuckDB:
		one := &ast.Cast{X: intLit("1"), Type: &ast.TypeName{Name: "DOUBLE"}}
		c.Args = []ast.Expr{&ast.Cast{X: &ast.Binary{Op: "*", L: &ast.Paren{X: f.Args[0]}, R: one}, Type: &ast.TypeName{Name: "DOUBLE"}, Safe: true}}
	case backend.Postgres:
		c.Args = []ast.Expr{pgSummable(&ast.Cast{X: f.Args[0], Type: &ast.TypeName{Name: "NUMERIC"}})}
	default:
		return nil, false
	}
	return &c, true
}
