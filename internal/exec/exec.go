package exec

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/dp/agg"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/plan"
	"github.com/dpsql/dpsql/internal/sqlgen"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/sqlerr"
)

// Result is a released table, not yet shown: the engine charges the ledger first.
type Result struct {
	Columns []string
	Types   []string
	Rows    [][]any
	// Noise is, per column, the standard deviation of the noise in its values: 0 for a key
	// (exact), the mechanism's for an aggregate output whose noise depends on public
	// parameters only (NoiseReporter), NaN for other noisy columns (averages, quantiles,
	// expressions over released values, interval bounds).
	Noise []float64
	// StageSQL is the SQL the database ran, for EXPLAIN ANALYZE and debugging.
	StageSQL string
	// Groups and Released count the groups seen and released.
	Groups, Released int
}

// Prepared is a plan with its mechanisms, ready to run or explain. When an aggregate has
// implicit bounds, its mechanisms and stage SQL exist only once the bounds are estimated
// (Release is nil until then, and BoundsSQL holds the histogram queries).
type Prepared struct {
	Plan      *plan.Plan
	Release   Release
	StageSQL  string
	BoundsSQL []string
	m         Mechanisms
	dialect   backend.Dialect
	// probe is the result of the query that reads no rows (column names and types), once
	// Bind ran it.
	probe *backend.Rows
	// checked is set once Check passed.
	checked bool
	// Stager, when set, computes the stage and the bounds histograms instead of the backend
	// (which still binds, probes and post-processes): dpsql-beam runs them on Apache Beam.
	Stager Stager
	// hist, when set, is the histogram layout of each aggregate (NumBins 0 without implicit
	// bounds) of a plan whose implicit bounds the stage estimates in its own pass
	// (sqlgen.StageBinned): StageSQL is then that query, and BoundsSQL the histogram
	// queries a Stager runs instead.
	hist []sqlgen.BinLayout
	// Shapes, when set, remembers chooseBounding's decisions across the session's queries.
	Shapes *ShapeCache
}

// A Stager computes what a plan's stage query and implicit-bounds histogram queries compute,
// somewhere other than the backend: beam/sqlbeam runs them as Beam pipelines over the files
// of the private relation, each worker running sqlgen.ShardQuery with its own DuckDB and
// internal/shard merging. Its results must be exactly the backend's rows for the same plan.
type Stager interface {
	// Check fails if the plan cannot be staged, reading no private row: the engine runs it
	// before it charges the query (through Prepared.Check).
	Check(ctx context.Context, p *plan.Plan) error
	// Histogram returns the rows of sqlgen.BoundsStage(p, j, scaleExp, numBins).
	Histogram(ctx context.Context, p *plan.Plan, j, scaleExp, numBins int) (*backend.Rows, error)
	// Stage returns the rows of sqlgen.Stage(p); b is the backend, which may hold
	// what the stage joins (public domains).
	Stage(ctx context.Context, p *plan.Plan, b backend.Backend) (*backend.Rows, error)
	// Explain describes for EXPLAIN how the stage runs, after the engine's plan.
	Explain(ctx context.Context, p *plan.Plan) ([]string, error)
}

// Prepare builds the mechanisms and the stage SQL of a plan, or, when bounds must be
// estimated first, the histogram queries that estimate them.
func Prepare(p *plan.Plan, m Mechanisms, d backend.Dialect) (*Prepared, error) {
	pr := &Prepared{Plan: p, m: m, dialect: d}
	if d == backend.Postgres {
		if err := sqlgen.PostgresCasts(p.Query); err != nil {
			return nil, err
		}
		if err := sqlgen.PostgresFunctions(p.Query); err != nil {
			return nil, err
		}
	}
	setIntervalLevels(p)
	var err error
	if pr.BoundsSQL, err = pr.boundsSQL(); err != nil {
		return nil, err
	}
	if len(pr.BoundsSQL) == 0 {
		if err := pr.finish(); err != nil {
			return nil, err
		}
		return pr, nil
	}
	return pr, pr.prepareOnePass()
}

// prepareOnePass makes the stage estimate the implicit bounds in its own pass when it can
// (sqlgen.OnePassBounds): the aggregates with explicit bounds get their encodings now, the
// others keep their values binned until the bounds are drawn.
func (pr *Prepared) prepareOnePass() error {
	hist := make([]sqlgen.BinLayout, len(pr.Plan.Aggregates))
	for j, a := range pr.Plan.Aggregates {
		if !a.Implicit {
			continue
		}
		h, err := Histogram(a)
		if err != nil {
			return err
		}
		hist[j] = sqlgen.BinLayout{ScaleExp: h.ScaleExp, NumBins: h.NumBins}
	}
	if !sqlgen.OnePassBounds(pr.Plan, hist) {
		return nil
	}
	for _, a := range pr.Plan.Aggregates {
		if a.Implicit || a.Func == analyzer.CountUnits {
			continue
		}
		e, err := Encoding(a)
		if err != nil {
			return err
		}
		a.Encoding = e
	}
	pr.hist = hist
	return pr.binnedSQL()
}

// binnedSQL prints StageSQL as sqlgen.StageBinned.
func (pr *Prepared) binnedSQL() error {
	sql, err := sqlgen.StageBinned(pr.Plan, pr.dialect, pr.hist)
	if err != nil {
		return err
	}
	pr.StageSQL = sql
	return nil
}

// OnePass reports whether the stage estimates the implicit bounds (not a Stager, which runs
// the histogram queries and the stage of sqlgen.Stage).
func (pr *Prepared) OnePass() bool { return pr.hist != nil && pr.Stager == nil }

// finish builds the mechanisms and the stage SQL once every bound is known.
func (pr *Prepared) finish() error {
	rel, err := pr.m.Prepare(pr.Plan)
	if err != nil {
		return err
	}
	for _, a := range pr.Plan.Aggregates {
		if a.Func == analyzer.Percentile || a.Func == analyzer.Quantiles {
			if a.Leaves, err = NumLeaves(a); err != nil {
				return err
			}
		}
	}
	pr.Release = rel
	if pr.OnePass() {
		return nil // StageSQL is the binned stage that ran
	}
	pr.StageSQL, err = sqlgen.Stage(pr.Plan, pr.dialect)
	return err
}

// estimateBounds runs the histogram queries and fixes the implicit bounds.
func (pr *Prepared) estimateBounds(ctx context.Context, b backend.Backend) error {
	k := 0
	for j, a := range pr.Plan.Aggregates {
		if !a.Implicit {
			continue
		}
		h, err := Histogram(a)
		if err != nil {
			return err
		}
		var rows *backend.Rows
		if pr.Stager != nil {
			rows, err = pr.Stager.Histogram(ctx, pr.Plan, j, h.ScaleExp, h.NumBins)
		} else {
			rows, err = b.Query(ctx, pr.BoundsSQL[k])
		}
		if err != nil {
			return err
		}
		k++
		s := agg.BoundsSummary{Positive: make([]int64, h.NumBins), Negative: make([]int64, h.NumBins)}
		for _, r := range rows.Values {
			neg, _ := r[0].(bool)
			bin, err := toInt64(r[1])
			if err != nil || bin < 0 || bin >= int64(h.NumBins) {
				return fmt.Errorf("exec: histogram bin %v out of range", r[1])
			}
			n, err := toInt64(r[2])
			if err != nil {
				return err
			}
			if neg {
				s.Negative[bin] += n
			} else {
				s.Positive[bin] += n
			}
		}
		if err := pr.fixBounds(a, s); err != nil {
			return err
		}
	}
	return pr.finish()
}

// fixBounds draws aggregate a's implicit bounds from the exact histogram of its values.
func (pr *Prepared) fixBounds(a *plan.Aggregate, s agg.BoundsSummary) error {
	r, err := pr.m.Bounds(a, s)
	if err != nil {
		return err
	}
	setBounds(a, r.Lower, r.Upper)
	a.Bounding = plan.BoundingReport{NumInputs: r.NumInputs, NumOutside: r.NumOutside}
	return nil
}

// Check runs, on b, everything about the plan that can fail without reading a private row:
// the probe (names and types of the keys and values), the binding of the first query that
// reads the data (bounds histogram or stage, wrapped so that it returns no row: a LIMIT 0,
// which DuckDB plans as an empty result and PostgreSQL stops before reading its input), and
// the binding of the post-processing query over an empty table of released groups (wrapped
// the same way). Its errors therefore do not depend on the data, and the engine runs it before charging the
// query, so that a mistake costs nothing. Stage runs it if it has not run.
func (pr *Prepared) Check(ctx context.Context, b backend.Backend) error {
	if err := pr.Bind(ctx, b); err != nil {
		return err
	}
	check := noRows(pr.firstSQL())
	if pr.Stager == nil && sqlgen.UsesPrefilter(pr.Plan, pr.dialect) && !pr.Plan.AggregateFirst {
		// The other form of contribution bounding, which chooseBounding may take from the
		// data after the charge: bound now, so that whether the query fails never depends
		// on the form (outside review).
		alt, err := pr.aggregateFirstSQL()
		if err != nil {
			return err
		}
		check = noRows("(" + check + ")\nUNION ALL\n(" + noRows(alt) + ")")
	}
	if pr.dialect == backend.Postgres {
		conv, ok := b.(backend.ConversionReporter)
		if !ok {
			// Fail closed: a wrapper that hides the capability must not skip the check.
			return fmt.Errorf("exec: the PostgreSQL backend %T does not report implicit conversions (backend.ConversionReporter)", b)
		}
		// The statements that read private rows are checked for the conversions the
		// database inserts by itself; the post-processing query reads released values only,
		// and is bound on its own below.
		_, found, err := conv.QueryConversions(ctx, check)
		if err != nil {
			return err
		}
		if len(found) > 0 {
			return implicitConversionError(pr.Plan.Query.Node.Span().Start, found[0])
		}
		check = ""
	}
	if post := pr.postProcessed(); post != nil {
		sql, err := sqlgen.Release(post, pr.dialect, pr.releaseTable(pr.probe))
		if err != nil {
			return err
		}
		if check == "" {
			check = noRows(sql)
		} else {
			// Both bindings in one statement, one round trip: each branch returns no row.
			check = noRows("(" + check + ")\nUNION ALL\n(" + noRows(sql) + ")")
		}
	}
	if check != "" {
		if _, err := b.Query(ctx, check); err != nil {
			return err
		}
	}
	parts, err := sqlgen.WholeChecks(pr.Plan, pr.dialect)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if _, err := b.Query(ctx, p.SQL); err != nil {
			return &PublicPartError{Pos: p.Node.Span().Start, Err: err, Constant: p.Constant}
		}
	}
	if pr.Stager != nil {
		if err := pr.Stager.Check(ctx, pr.Plan); err != nil {
			return err
		}
	}
	pr.checked = true
	return nil
}

// checkUnitJoinTypes refuses a join of two private relations whose privacy units have
// different types, unless both are exact numbers (exactNumber: the database compares them in
// a common type that holds both, or not at all) or both text compared as it is
// (varyingText). Other pairs compare through an
// implicit cast that can be many-to-one: a text unit '007' and '0007' each met the integer
// unit 7, and integers above 2^53 met as the same DOUBLE, so one person's rows joined the rows
// of 61 or 100 units and were counted by each (outside review). The probes read no row.
func checkUnitJoinTypes(ctx context.Context, b backend.Backend, q *analyzer.Query, d backend.Dialect) error {
	for _, p := range sqlgen.UnitJoinProbes(q, d) {
		refuse := func(format string, args ...any) error {
			return sqlerr.Privacy(p.Join.Span().Start, analyzer.RuleUnitJoin, fmt.Sprintf(format, args...),
				"the data owner gives the privacy units one type in the relations analysts read (a view with CAST(uid AS BIGINT) or CAST(uid AS VARCHAR))")
		}
		left, right, err := probeSides(ctx, b, p.Left, p.Right)
		if err != nil {
			return refuse("the privacy units of this join's sides cannot be typed without data: %v", err)
		}
		lt, rt := left.Types[0], right.Types[0]
		if !strings.EqualFold(lt, rt) && !(exactNumber(lt) && exactNumber(rt)) && !(varyingText(lt) && varyingText(rt)) {
			return refuse("this join compares privacy units of type %s with units of type %s: the database would convert one to the other, which can match one person's unit to several ('007' and '7', large integers as floating-point numbers), and one person's rows would count for each", lt, rt)
		}
	}
	return nil
}

// varyingText reports whether a column type is text compared as it is (DuckDB's VARCHAR,
// PostgreSQL's text and character varying; not character(n), whose comparison ignores
// trailing spaces).
func varyingText(t string) bool {
	t = typeBase(t)
	return t == "VARCHAR" || t == "TEXT" || t == "CHARACTER VARYING"
}

// typeBase is a column type's name in upper case without its parameters (DECIMAL(18,3):
// DECIMAL).
func typeBase(t string) string {
	t = strings.ToUpper(strings.TrimSpace(t))
	if i := strings.IndexByte(t, '('); i >= 0 {
		t = strings.TrimSpace(t[:i])
	}
	return t
}

// exactNumber reports whether a column type (DuckDB's or PostgreSQL's name) is an integer or
// a fixed-point number that DuckDB compares with the others exactly. Not UHUGEINT: DuckDB
// compares it with a HUGEINT as two DOUBLEs, so a HUGEINT unit met every UHUGEINT unit that
// rounds to it (outside review: one person counted by 100 units).
func exactNumber(t string) bool {
	switch typeBase(t) {
	case "TINYINT", "SMALLINT", "INTEGER", "INT", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT",
		"INT2", "INT4", "INT8", "DECIMAL", "NUMERIC":
		return true
	}
	return false
}

// checkJoinColumnTypes refuses a USING or NATURAL join whose matched columns have different
// types on its two sides (sqlgen.JoinProbes): the database would convert one side row by row,
// and a row that does not convert would make the query fail after the charge, depending on
// that row alone (outside review). The probes read no row; their answer depends on the schema.
func checkJoinColumnTypes(ctx context.Context, b backend.Backend, q *analyzer.Query, d backend.Dialect) error {
	for _, p := range sqlgen.JoinProbes(q, d) {
		refuse := func(format string, args ...any) error {
			return sqlerr.Privacy(p.Join.Span().Start, analyzer.RuleJoinColumnTypes, fmt.Sprintf(format, args...),
				"write the join with ON and compare values of one type (CAST one side explicitly), or make both columns the same type")
		}
		left, right, err := probeSides(ctx, b, p.Left, p.Right)
		if err != nil {
			return refuse("the columns of this join's sides cannot be read without data: %v", err)
		}
		typeOf := func(r *backend.Rows, name string) (string, bool) {
			for i, c := range r.Columns {
				if catalog.SameName(c, name) {
					return r.Types[i], true
				}
			}
			return "", false
		}
		cols := p.Columns
		if cols == nil { // NATURAL: the columns both sides have
			for _, c := range left.Columns {
				if _, ok := typeOf(right, c); ok {
					cols = append(cols, c)
				}
			}
		}
		for _, c := range cols {
			lt, lok := typeOf(left, c)
			rt, rok := typeOf(right, c)
			if lok && rok && !strings.EqualFold(lt, rt) && !convertibleNumbers(lt, rt) {
				return refuse("the join matches column %s of type %s with one of type %s: the database would convert the values row by row, and a value that does not convert would make the query fail because of one row", c, lt, rt)
			}
		}
	}
	return nil
}

// checkUnionColumnTypes refuses a set operation whose branches give a column different types
// (sqlgen.UnionProbes), numbers apart: the database would convert one branch's values row by
// row, failing on one row's value, and privacy units of two types would make one person two
// units (outside review: a DOUBLE unit 1.0 and a VARCHAR unit '1'). The probes read no row.
func checkUnionColumnTypes(ctx context.Context, b backend.Backend, q *analyzer.Query, d backend.Dialect) error {
	for _, p := range sqlgen.UnionProbes(q, d) {
		refuse := func(format string, args ...any) error {
			return sqlerr.Privacy(p.Union.Span().Start, analyzer.RuleUnionColumnTypes, fmt.Sprintf(format, args...),
				"give each column one type in every branch (CAST it explicitly in the branch that differs)")
		}
		left, right, err := probeSides(ctx, b, p.Left, p.Right)
		if err != nil {
			return refuse("the columns of this %s's branches cannot be read without data: %v", p.Union.Op, err)
		}
		for i := range min(len(left.Types), len(right.Types)) {
			lt, rt := left.Types[i], right.Types[i]
			if !strings.EqualFold(lt, rt) && !convertibleNumbers(lt, rt) {
				return refuse("column %d of this %s is of type %s in one branch and %s in the other: the database would convert the values row by row, and a value that does not convert, or a privacy unit of another type, would change the result because of one row", i+1, p.Union.Op, lt, rt)
			}
		}
	}
	return nil
}

// probeSides runs the probes of a join's sides or a set operation's branches (queries that
// read no row) and returns their columns and types.
func probeSides(ctx context.Context, b backend.Backend, left, right string) (l, r *backend.Rows, err error) {
	if l, err = b.Query(ctx, left); err != nil {
		return nil, nil, err
	}
	if r, err = b.Query(ctx, right); err != nil {
		return nil, nil, err
	}
	return l, r, nil
}

// convertibleNumbers reports whether two different column types are numbers that the
// database converts to a common type without failing: integers and floating-point numbers.
// A DECIMAL is not one: an integer of 10^8 does not fit DECIMAL(38,30), the type DuckDB
// gives a column of both; nor is UHUGEINT, which DuckDB meets with a signed integer in
// HUGEINT, where a value above 2^127 does not fit (outside reviews: USING joins and UNION
// ALLs failed on one row).
func convertibleNumbers(a, b string) bool {
	return numericType(a) && numericType(b) && !exactOnly(a) && !exactOnly(b)
}

// exactOnly reports whether a numeric column type meets another only when both are the
// same type: fixed-point numbers (DECIMAL, NUMERIC) and UHUGEINT.
func exactOnly(t string) bool {
	t = strings.ToUpper(strings.TrimSpace(t))
	return strings.HasPrefix(t, "DECIMAL") || strings.HasPrefix(t, "NUMERIC") || t == "UHUGEINT"
}

// numericType reports whether a column type (DuckDB's or PostgreSQL's name) is a number: two
// numeric types are compared in their common wider type, a conversion that cannot fail.
func numericType(t string) bool {
	t = strings.ToUpper(strings.TrimSpace(t))
	if i := strings.IndexByte(t, '('); i >= 0 {
		t = t[:i]
	}
	switch t {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
		"UBIGINT", "UHUGEINT", "FLOAT", "REAL", "DOUBLE", "DOUBLE PRECISION", "DECIMAL", "NUMERIC",
		"INT2", "INT4", "INT8", "FLOAT4", "FLOAT8":
		return true
	}
	return false
}

// noRows wraps a query so that it binds (names, types, functions) but returns no row and
// reads none.
func noRows(sql string) string {
	return "SELECT 1 FROM (\n" + sql + "\n) AS _dp_check LIMIT 0"
}

// Run executes a prepared plan on b: Check if it has not run, the stage SQL, selection and
// noise per group, and the post-processing query. Nothing is charged here. Every error after
// Check, whatever its cause (the database, a cancellation or timeout, too few data, the
// release in Go), is a *DataError.
func (pr *Prepared) Run(ctx context.Context, b backend.Backend) (*Result, error) {
	st, err := pr.Stage(ctx, b)
	if err != nil {
		return nil, err
	}
	return pr.ReleaseRows(ctx, b, st)
}

// StageRows is what the database computed for a plan: one exact row per group.
type StageRows struct {
	probe, rows *backend.Rows
}

// Stage runs the plan's SQL in the database. Its result is exact and must never be shown:
// Release turns it into released values.
func (pr *Prepared) Stage(ctx context.Context, b backend.Backend) (*StageRows, error) {
	if !pr.checked {
		// Check reads no rows: its errors (names, types) do not depend on the data.
		if err := pr.Check(ctx, b); err != nil {
			return nil, err
		}
	}
	if err := pr.chooseBounding(ctx, b); err != nil {
		return nil, &DataError{Err: err}
	}
	st, err := pr.stage(ctx, b)
	if err != nil {
		return nil, &DataError{Err: err}
	}
	st.probe = pr.probe
	return st, nil
}

// Bind asks the database for the types of the keys and values with a query that reads no
// rows (so its errors, names and types, do not depend on the data), and prints the plan's SQL
// again with each key normalised by its type. It refuses keys the release could not
// post-process. Stage calls it when it has not run yet; EXPLAIN calls it to show the SQL that
// will run.
func (pr *Prepared) Bind(ctx context.Context, b backend.Backend) error {
	if pr.probe != nil {
		return nil
	}
	if err := checkJoinColumnTypes(ctx, b, pr.Plan.Query, pr.dialect); err != nil {
		return err
	}
	if err := checkUnionColumnTypes(ctx, b, pr.Plan.Query, pr.dialect); err != nil {
		return err
	}
	if err := checkUnitJoinTypes(ctx, b, pr.Plan.Query, pr.dialect); err != nil {
		return err
	}
	probe, err := b.Query(ctx, sqlgen.Probe(pr.Plan.Query, pr.dialect))
	if err != nil {
		return err
	}
	// The unit's type first: the stage SQL that setKeyTypes prints hashes units by it
	// (sqlgen.UsesPrefilter on PostgreSQL).
	pr.Plan.UnitType = probe.Types[len(probe.Types)-1]
	nk := len(pr.Plan.Query.Keys)
	if err := checkArgTypes(pr.Plan.Query, probe.Types[nk:], pr.dialect); err != nil {
		return err
	}
	pr.Plan.ValueTypes = append([]string(nil), probe.Types[nk:nk+len(pr.Plan.Aggregates)]...)
	if err := pr.setKeyTypes(probe.Types[:nk]); err != nil {
		return err
	}
	// After the keys' types: text keys are then compared by their bytes (NormaliseKey).
	if err := pr.exactGroups(ctx, b); err != nil {
		return err
	}
	pr.probe = probe
	return nil
}

// firstSQL is the first query the stage runs: the stage, or the first histogram query of
// implicit bounds estimated apart.
func (pr *Prepared) firstSQL() string {
	if len(pr.BoundsSQL) > 0 && !pr.OnePass() {
		return pr.BoundsSQL[0]
	}
	return pr.StageSQL
}

// aggregateFirstSQL is firstSQL with the plan's contribution bounding aggregating per unit
// first (plan.Plan.AggregateFirst); the plan is left as it was.
func (pr *Prepared) aggregateFirstSQL() (string, error) {
	p := pr.Plan
	was := p.AggregateFirst
	p.AggregateFirst = true
	err := pr.reprint()
	alt := pr.firstSQL()
	p.AggregateFirst = was
	if err2 := pr.reprint(); err == nil {
		err = err2
	}
	return alt, err
}

// exactGroups reads DuckDB's plan of the stage's grouping, which reads no row, and from it
// refuses, before any data is read, a query
// whose privacy unit or group keys the database compares by a collation (a column's
// COLLATE NOCASE, an ICU locale, the owner's SET default_collation, which also reaches
// JSON): the stage groups each unit's rows by (unit, hash of unit and keys), and hash() tells
// apart spellings such an equality joins, so one unit spelled several ways would keep a
// per-unit row per spelling in one group (outside reviews). DuckDB's own plan of the grouping, which reads no row, shows the
// collation (store.InexactGroups). Text keys are compared by their bytes already
// (NormaliseKey); relations whose unit column has a collation are refused when declared and
// loaded (store).
func (pr *Prepared) exactGroups(ctx context.Context, b backend.Backend) error {
	if pr.dialect != backend.DuckDB {
		return nil
	}
	p := pr.Plan
	rows, err := b.Query(ctx, "SELECT json_serialize_plan(CAST($1 AS VARCHAR)), CAST(current_setting('default_collation') AS VARCHAR)", sqlgen.GroupingSQL(p))
	if err != nil {
		return err
	}
	if len(rows.Values) != 1 {
		return fmt.Errorf("exec: the plan of the grouping: %d rows", len(rows.Values))
	}
	plan, _ := rows.Values[0][0].(string)
	inexact, err := store.InexactGroups(plan, 1+len(p.Query.Keys))
	if notShown := (*store.PlanNotShownError)(nil); errors.As(err, &notShown) {
		// A public view over CSV or JSON files in the query: DuckDB cannot serialize its
		// reader. Without a default collation no collation can reach the grouping unseen:
		// every private relation's unit was checked when the catalog loaded, text keys are
		// compared by their bytes (NormaliseKey), and other types carry no column collation.
		if dc, _ := rows.Values[0][1].(string); dc == "" || strings.EqualFold(dc, "binary") {
			return nil
		}
	}
	if err != nil {
		return err
	}
	if len(inexact) == 0 {
		return nil
	}
	what := "the privacy unit"
	if i := inexact[0]; i > 0 {
		what = fmt.Sprintf("group key %s", sqlgen.PrintData(pr.dialect, p.Query.Keys[i-1].Expr))
	}
	return sqlerr.Privacy(p.Query.Options.Pos, store.RuleUnitCollation,
		what+" is compared by a collation (COLLATE NOCASE, NOACCENT, NFC, an ICU locale, or SET default_collation), which makes texts with different bytes equal: dpsql bounds each unit's groups by a hash of the bytes, which must agree with that equality",
		`the data owner gives it a plain text type in a view: CAST(uid AS VARCHAR) COLLATE "binary", or lower(uid) COLLATE "binary" for one unit whatever the case (and no SET default_collation)`)
}

// setKeyTypes records the keys' database types and prints the plan's SQL again with each key normalised by its type
// (sqlgen.NormaliseKey). It refuses, before any data is read, keys that the release step
// could not post-process and keys nesting values that have several spellings
// (sqlgen.NestsInexactValues).
func (pr *Prepared) setKeyTypes(types []string) error {
	q := pr.Plan.Query
	if err := sqlgen.CheckKeyTypes(q, types, !direct(q)); err != nil {
		return err
	}
	for i, typ := range types {
		if i < len(q.Keys) && strings.Contains(strings.ToUpper(typ), "VARIANT") {
			// The driver cannot read VARIANT values back: such a query failed only when
			// the stage returned a row (outside review).
			return sqlerr.New(q.Keys[i].Expr.Span().Start, sqlerr.FeatureNotSupported,
				"a group key of type %s cannot be read back", typ).WithHint("group by a value of another type (CAST(k AS VARCHAR))")
		}
		if i < len(q.Keys) && sqlgen.NestsInexactValues(pr.dialect, typ) {
			return sqlerr.Privacy(q.Keys[i].Expr.Span().Start, store.RuleUnitCollation,
				fmt.Sprintf("group key %s, of type %s, holds floating-point or interval values (or PostgreSQL numerics), which the database groups by an equality coarser than their spelling (-0 and 0, '1 month' and '30 days'): a group would be shown under the spelling of whichever row the database met first, which can be one person's; dpsql gives such values one spelling only outside lists, arrays, structs, maps and unions",
					sqlgen.PrintData(pr.dialect, q.Keys[i].Expr), typ),
				"group by its elements (k[OFFSET(0)]), which are normalised, or by the columns the struct or map was built from")
		}
	}
	pr.Plan.KeyTypes = append([]string(nil), types...)
	return pr.reprint()
}

// reprint prints the plan's SQL again after a change of the plan (key types, the bounding
// form).
func (pr *Prepared) reprint() error {
	if pr.Release != nil {
		sql, err := sqlgen.Stage(pr.Plan, pr.dialect)
		if err != nil {
			return err
		}
		pr.StageSQL = sql
		return nil
	}
	var err error
	if pr.BoundsSQL, err = pr.boundsSQL(); err != nil {
		return err
	}
	if pr.hist != nil {
		return pr.binnedSQL()
	}
	return nil
}

// boundsSQL prints the histogram queries of the aggregates with implicit bounds.
func (pr *Prepared) boundsSQL() ([]string, error) {
	var out []string
	for j, a := range pr.Plan.Aggregates {
		if !a.Implicit {
			continue
		}
		h, err := Histogram(a)
		if err != nil {
			return nil, err
		}
		sql, err := sqlgen.BoundsStage(pr.Plan, pr.dialect, j, h.ScaleExp, h.NumBins)
		if err != nil {
			return nil, err
		}
		out = append(out, sql)
	}
	return out, nil
}

// chooseBounding picks how the stage bounds contributions (docs/design/bounding-on-duckdb.md):
// the prefilter (bound the rows, then aggregate per unit) pays off when many units exceed
// kappa and rows rarely repeat a (unit, group) pair; otherwise aggregating per unit first is
// cheaper (plan.Plan.AggregateFirst; on DuckDB's easy shape of docs/benchmarks.md 1.65 times
// the floor against 3.8). It reads statistics of a 1/64 sample of the units; they decide only
// the speed (both forms keep the same groups for a given seed) and are never shown, so they
// spend no budget. Timing is out of scope, as everywhere. With pr.Shapes set, a decision
// taken for the same statistics query earlier in the session is reused instead of reading
// the sample again (ShapeCache).
func (pr *Prepared) chooseBounding(ctx context.Context, b backend.Backend) error {
	if pr.Stager != nil || !sqlgen.UsesPrefilter(pr.Plan, pr.dialect) {
		return nil
	}
	stats := sqlgen.ShapeStats(pr.Plan, pr.dialect)
	if d, ok := pr.Shapes.lookup(stats); ok {
		return pr.setBounding(d)
	}
	rows, err := b.Query(ctx, stats)
	if err != nil || len(rows.Values) != 1 {
		return err
	}
	var st [4]float64
	for i := range st {
		n, err := toInt64(rows.Values[0][i])
		if err != nil {
			return err
		}
		st[i] = float64(n)
	}
	units, nrows, pairs, removed := st[0], st[1], st[2], st[3]
	// Few data, or the prefilter's case: keep it.
	d := Bounding{AggregateFirst: !(units < 100 || pairs == 0 || (nrows/pairs < 2 && removed/pairs >= 0.10))}
	pr.Shapes.store(stats, d)
	return pr.setBounding(d)
}

// setBounding makes the stage bound contributions as d says.
func (pr *Prepared) setBounding(d Bounding) error {
	if !d.AggregateFirst {
		return nil
	}
	pr.Plan.AggregateFirst = true
	return pr.reprint()
}

func (pr *Prepared) stage(ctx context.Context, b backend.Backend) (*StageRows, error) {
	if pr.Release == nil && pr.OnePass() {
		rows, err := b.Query(ctx, pr.StageSQL)
		if err != nil {
			return nil, err
		}
		if err := pr.binnedBounds(rows); err != nil {
			return nil, err
		}
		return &StageRows{rows: rows}, nil
	}
	if pr.Release == nil {
		if err := pr.estimateBounds(ctx, b); err != nil {
			return nil, err
		}
	}
	var rows *backend.Rows
	var err error
	if pr.Stager != nil {
		rows, err = pr.Stager.Stage(ctx, pr.Plan, b)
	} else {
		rows, err = b.Query(ctx, pr.StageSQL)
	}
	if err != nil {
		return nil, err
	}
	return &StageRows{rows: rows}, nil
}

// implicitConversionError refuses a query in which the database converts a value by itself,
// row by row over private data, in a way that can fail (backend.ConversionReporter).
func implicitConversionError(pos sqlerr.Pos, c backend.Conversion) error {
	if c.From == "array" {
		return sqlerr.Privacy(pos, analyzer.RuleImplicitConversion,
			"on PostgreSQL, ARRAY[...] of arrays over private rows fails when the inner arrays' lengths differ, so whether the query fails would depend on one person's data",
			"build a one-dimensional array (ARRAY[a, b]), or concatenate arrays with array_cat")
	}
	what := "a " + c.From + " value"
	if c.Column != "" {
		what = fmt.Sprintf("the %s column %s", c.From, ast.QuoteIdent(c.Column))
	}
	if c.From == "?" {
		what = "a value"
		if c.Column != "" {
			what = "the column " + ast.QuoteIdent(c.Column)
		}
	}
	return sqlerr.Privacy(pos, analyzer.RuleImplicitConversion,
		fmt.Sprintf("on PostgreSQL this query makes the database convert %s to %s by itself, row by row; that conversion fails on some values (beyond the range of %s), so whether the query fails would depend on one person's data", what, strings.ToUpper(c.To), strings.ToUpper(c.To)),
		fmt.Sprintf("convert it explicitly where the two types meet, with CAST(... AS %s): dpsql makes explicit casts total (NULL where they fail)", strings.ToUpper(c.To)))
}

// PublicPartError is the failure of a public part of an anonymized query that Check
// computed whole (sqlgen.WholeChecks). It read no private row and happened before the
// charge, whatever the private rows, so the engine shows it with its cause.
type PublicPartError struct {
	Pos sqlerr.Pos
	Err error
	// Constant: the part is a constant expression (sqlgen.ConstantParts).
	Constant bool
}

func (e *PublicPartError) Error() string {
	return "computing a public part of the query: " + e.Err.Error()
}
func (e *PublicPartError) Unwrap() error { return e.Err }

// DataError is an error that happened after the query started reading private data (or
// using values estimated from it): a database error, too few data for implicit bounds, an
// error of the release in Go, and also a cancellation or a timeout, since when a query is
// cancelled relative to its progress can depend on the data. Whether it happens may depend on
// the data, so the engine charges the query for it (before running it) and shows analysts one
// uniform error, never the cause.
type DataError struct{ Err error }

func (e *DataError) Error() string { return e.Err.Error() }
func (e *DataError) Unwrap() error { return e.Err }

// PostProcessError is an error of the post-processing query: the SQL over a VALUES table of
// the released rows only (keys, noisy values and their intervals, after selection), which
// reads no private relation. Its cause depends on released values only, so the engine may
// show it (the query has still been charged), except a timeout or cancellation, whose timing
// depends on how long the stage took.
type PostProcessError struct{ Err error }

func (e *PostProcessError) Error() string {
	return "post-processing the released values: " + e.Err.Error()
}
func (e *PostProcessError) Unwrap() error { return e.Err }

// ReleaseRows selects and noises the groups of st (each call draws fresh noise) and
// post-processes them. Nothing is charged here. Its errors are *DataError values.
func (pr *Prepared) ReleaseRows(ctx context.Context, b backend.Backend, st *StageRows) (*Result, error) {
	res, err := pr.releaseRows(ctx, b, st)
	if err != nil {
		return nil, &DataError{Err: err}
	}
	return res, nil
}

// releaseTable is the empty table of released groups: keys (typed as the probe found them),
// then each aggregate's value (and interval). It sets IntegerResult on integer sums.
func (pr *Prepared) releaseTable(probe *backend.Rows) *sqlgen.ReleaseTable {
	nk := len(pr.Plan.Query.Keys)
	table := &sqlgen.ReleaseTable{}
	for i := 0; i < nk; i++ {
		table.Columns = append(table.Columns, analyzer.KeyColumn(i))
		table.Types = append(table.Types, probe.Types[i])
	}
	level := pr.Plan.ConfidenceLevel
	for j, a := range pr.Plan.Aggregates {
		t := "DOUBLE"
		if pr.dialect == backend.Postgres {
			t = "DOUBLE PRECISION"
		}
		if a.Func == analyzer.CountRows || a.Func == analyzer.CountValues || a.Func == analyzer.CountUnits {
			t = "BIGINT"
		} else if a.Func == analyzer.Quantiles {
			t += "[]"
		} else if a.Func == analyzer.Sum && isIntegerType(probe.Types[nk+j]) {
			a.IntegerResult = true
			t = "BIGINT"
		}
		lt := t // the interval's type: NULL for a report, whose interval is inside it
		if a.Report != nil {
			t = reportType(a, pr.dialect)
		}
		table.Columns = append(table.Columns, analyzer.AggColumn(j))
		table.Types = append(table.Types, t)
		if level > 0 {
			table.Columns = append(table.Columns, analyzer.AggColumn(j)+"_lo", analyzer.AggColumn(j)+"_hi")
			table.Types = append(table.Types, lt, lt)
		}
	}
	return table
}

// postProcessed is the query the database evaluates over the released groups, or nil when
// the result is the released table's columns picked in Go (directColumns): the outputs are
// exactly keys and aggregates, with their intervals' bounds beside them when the query asks
// for confidence intervals.
func (pr *Prepared) postProcessed() *analyzer.Query {
	if direct(pr.Plan.Query) {
		return nil
	}
	return withIntervals(pr.Plan, pr.Plan.ConfidenceLevel)
}

func (pr *Prepared) releaseRows(ctx context.Context, b backend.Backend, st *StageRows) (*Result, error) {
	res, table, err := pr.releasedTable(ctx, st)
	if err != nil {
		return nil, err
	}
	return pr.postProcess(ctx, b, res, table, pr.postProcessed())
}

// releasedTable selects and noises the groups of st: the released table (keys, then each
// aggregate's value and, with confidence intervals, its bounds), and the Result to fill.
func (pr *Prepared) releasedTable(ctx context.Context, st *StageRows) (*Result, *sqlgen.ReleaseTable, error) {
	q := pr.Plan.Query
	rows := st.rows
	col := map[string]int{}
	for i, c := range rows.Columns {
		col[strings.ToLower(c)] = i
	}
	nk := len(q.Keys)
	table := pr.releaseTable(st.probe)
	level := pr.Plan.ConfidenceLevel
	res := &Result{StageSQL: pr.StageSQL, Groups: len(rows.Values)}
	bins := make([]binColumns, len(pr.Plan.Aggregates)) // where each one-pass aggregate's bins are
	var entries []binEntry
	for j := range bins {
		if pr.OnePass() && pr.hist[j].NumBins > 0 {
			var err error
			if bins[j], err = binColumnsOf(col, j); err != nil {
				return nil, nil, err
			}
		}
	}
	for _, row := range rows.Values {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		n, err := toInt64(row[col[sqlgen.UnitsColumn]])
		if err != nil {
			return nil, nil, fmt.Errorf("exec: unit count: %w", err)
		}
		keep, err := pr.Release.Keep(n)
		if err != nil {
			return nil, nil, err
		}
		if !keep {
			continue
		}
		out := append([]any(nil), row[:nk]...)
		for j := range pr.Plan.Aggregates {
			var s Summary
			var err error
			if pr.OnePass() && pr.hist[j].NumBins > 0 {
				if entries, err = bins[j].read(row, entries); err == nil {
					s, err = binnedSummary(pr.Plan.Aggregates[j], pr.hist[j], entries, n)
				}
			} else {
				s, err = summary(row, col, j, n)
			}
			if err != nil {
				return nil, nil, err
			}
			if a := pr.Plan.Aggregates[j]; a.Func == analyzer.Percentile || a.Func == analyzer.Quantiles {
				if s.Leaves, err = leaves(row, col, j); err != nil {
					return nil, nil, err
				}
			}
			v, err := pr.Release.Value(j, s)
			if err != nil {
				return nil, nil, err
			}
			if pr.Plan.Aggregates[j].IntegerResult {
				v = roundValue(v)
			}
			if a := pr.Plan.Aggregates[j]; a.Report != nil {
				v = Value{V: renderReport(a, v)}
			}
			out = append(out, v.V)
			if level > 0 {
				out = append(out, v.Lo, v.Hi)
			}
		}
		table.Rows = append(table.Rows, out)
	}
	res.Released = len(table.Rows)
	return res, table, nil
}

// postProcess fills res's columns, types, rows and noise from the released table: by
// post, a query the database evaluates over it, or, when post is nil, by picking the
// table's columns in Go (directColumns).
func (pr *Prepared) postProcess(ctx context.Context, b backend.Backend, res *Result, table *sqlgen.ReleaseTable, post *analyzer.Query) (*Result, error) {
	if post == nil {
		outputs, cells, err := directColumns(pr.Plan, table)
		if err != nil {
			return nil, err
		}
		res.Columns, res.Types = outputNames(outputs), pick(cells, table.Types)
		res.Rows = make([][]any, len(table.Rows))
		for i, r := range table.Rows {
			res.Rows[i] = pick(cells, r)
		}
		res.Noise = pr.noise(outputs, len(res.Columns))
		return res, nil
	}
	sql, err := sqlgen.Release(post, pr.dialect, table)
	if err != nil {
		return nil, err
	}
	out, err := b.Query(ctx, sql)
	if err != nil {
		return nil, &PostProcessError{Err: err}
	}
	res.Columns, res.Types, res.Rows = out.Columns, out.Types, out.Values
	res.Noise = pr.noise(post.Outputs, len(res.Columns))
	return res, nil
}

// noise is the Noise of a result whose columns are outputs (ncol of them; if the counts
// differ, every column is noisy of unknown scale). Each value is public: it depends on the
// plan's parameters only, never on the data.
func (pr *Prepared) noise(outputs []*analyzer.Output, ncol int) []float64 {
	out := make([]float64, ncol)
	rep, _ := pr.Release.(NoiseReporter)
	for i := range out {
		out[i] = math.NaN()
		if len(outputs) != ncol {
			continue
		}
		switch o := outputs[i]; {
		case o.Key >= 0:
			out[i] = 0
		case o.Agg >= 0 && rep != nil && pr.Plan.Aggregates[o.Agg].Report == nil:
			out[i] = rep.NoiseStddev(o.Agg)
		}
	}
	return out
}

// direct reports whether the outputs are exactly keys and aggregates with nothing to
// post-process.
func direct(q *analyzer.Query) bool {
	if q.Having != nil || len(q.OrderBy) > 0 || q.Limit != nil || q.Offset != nil {
		return false
	}
	for _, o := range q.Outputs {
		if o.Key < 0 && o.Agg < 0 {
			return false
		}
	}
	return true
}

// directColumns is, for a direct query (see direct), the outputs withIntervals gives it
// and where each comes from in the released table t: every one of them reads a column of t
// (a key, an aggregate's value or an end of its interval), so the database's query over t
// would only pick columns, which Go does without a statement.
func directColumns(p *plan.Plan, t *sqlgen.ReleaseTable) (outputs []*analyzer.Output, cells []int, err error) {
	at := make(map[string]int, len(t.Columns))
	for i, c := range t.Columns {
		at[c] = i
	}
	outputs = withIntervals(p, p.ConfidenceLevel).Outputs
	for _, o := range outputs {
		c, ok := o.Expr.(*ast.ColumnRef)
		var i int
		if ok && len(c.Parts) == 1 {
			i, ok = at[c.Parts[0].Name]
		}
		if !ok {
			return nil, nil, fmt.Errorf("exec: output %s is not a released column", o.Name)
		}
		cells = append(cells, i)
	}
	return outputs, cells, nil
}

// outputNames are the names of outputs.
func outputNames(outputs []*analyzer.Output) []string {
	names := make([]string, len(outputs))
	for i, o := range outputs {
		names[i] = o.Name
	}
	return names
}

// pick returns the elements of from at the indexes cells.
func pick[T any](cells []int, from []T) []T {
	out := make([]T, len(cells))
	for i, c := range cells {
		out[i] = from[c]
	}
	return out
}

// Released returns the names and types of the plan's released columns, reading no rows
// (after Bind): the empty released table post-processed with LIMIT 0. A nested query's outer
// query is checked against them before anything is charged.
func (pr *Prepared) Released(ctx context.Context, b backend.Backend) (*sqlgen.ReleaseTable, error) {
	if err := pr.Bind(ctx, b); err != nil {
		return nil, err
	}
	table := pr.releaseTable(pr.probe)
	// The outer query reads a part's released rows back through SQL (sqlgen.Released), as
	// a post-processing query would: its keys must print as SQL values.
	if err := sqlgen.CheckKeyTypes(pr.Plan.Query, table.Types[:len(pr.Plan.Query.Keys)], true); err != nil {
		return nil, err
	}
	post := pr.postProcessed()
	if post == nil {
		outputs, cells, err := directColumns(pr.Plan, table)
		if err != nil {
			return nil, err
		}
		return &sqlgen.ReleaseTable{Columns: outputNames(outputs), Types: pick(cells, table.Types)}, nil
	}
	sql, err := sqlgen.Release(post, pr.dialect, table)
	if err != nil {
		return nil, err
	}
	rows, err := b.Query(ctx, "SELECT * FROM (\n"+sql+"\n) AS _dp_check LIMIT 0")
	if err != nil {
		return nil, err
	}
	return &sqlgen.ReleaseTable{Columns: rows.Columns, Types: rows.Types}, nil
}

// withIntervals adds, after each output that is exactly an aggregate without a report, two
// outputs with the bounds of its confidence interval (a report holds its own), and after each
// output computed from released values the bounds of its interval where one can be
// propagated (intervals.go).
func withIntervals(p *plan.Plan, level float64) *analyzer.Query {
	q := p.Query
	if level == 0 {
		return q
	}
	spans := planIntervals(p, level).spans
	c := *q
	c.Outputs = nil
	for k, o := range q.Outputs {
		c.Outputs = append(c.Outputs, o)
		var ends []ast.Expr
		if s, ok := spans[k]; ok {
			ends = []ast.Expr{s.lo, s.hi}
		} else if o.Agg >= 0 && p.Aggregates[o.Agg].Report == nil {
			ends = []ast.Expr{analyzer.ColumnRefNamed(analyzer.AggColumn(o.Agg) + "_lo"), analyzer.ColumnRefNamed(analyzer.AggColumn(o.Agg) + "_hi")}
		}
		for i, end := range ends {
			c.Outputs = append(c.Outputs, &analyzer.Output{Name: o.Name + []string{"_lo", "_hi"}[i], Expr: end, Key: -1, Agg: -1})
		}
	}
	return &c
}

func summary(row []any, col map[string]int, j int, units int64) (Summary, error) {
	s := Summary{Units: units}
	var err error
	if i, ok := col[sqlgen.CountColumn(j)]; ok {
		if s.Count, err = toInt64(row[i]); err != nil {
			return s, err
		}
	}
	if i, ok := col[sqlgen.SumColumn(j)]; ok {
		if s.Sum, err = toBig(row[i]); err != nil {
			return s, err
		}
	}
	if i, ok := col[sqlgen.SquareColumn(j)]; ok {
		if s.Square, err = toBig(row[i]); err != nil {
			return s, err
		}
	}
	return s, nil
}

func toInt64(v any) (int64, error) {
	switch x := v.(type) {
	case nil:
		return 0, nil
	case int64:
		return x, nil
	case *big.Int:
		if x.IsInt64() {
			return x.Int64(), nil
		}
	case float64:
		return int64(x), nil
	case backend.Decimal:
		if i, ok := x.Int(); ok && i.IsInt64() {
			return i.Int64(), nil
		}
	}
	return 0, fmt.Errorf("unexpected integer value %v (%T)", v, v)
}

func toBig(v any) (*big.Int, error) {
	switch x := v.(type) {
	case nil:
		return new(big.Int), nil
	case int64:
		return big.NewInt(x), nil
	case *big.Int:
		return x, nil
	case float64:
		b, acc := new(big.Float).SetFloat64(x).Int(nil)
		if acc != big.Exact {
			return nil, fmt.Errorf("inexact sum %v", x)
		}
		return b, nil
	case backend.Decimal:
		if b, ok := x.Int(); ok {
			return b, nil
		}
		return nil, fmt.Errorf("inexact sum %v", x)
	case string:
		b, ok := new(big.Int).SetString(x, 10)
		if ok {
			return b, nil
		}
	}
	return nil, fmt.Errorf("unexpected sum value %v (%T)", v, v)
}

func isIntegerType(t string) bool {
	switch strings.ToUpper(t) {
	case "TINYINT", "SMALLINT", "INTEGER", "INT", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
		"UINTEGER", "UBIGINT", "INT2", "INT4", "INT8", "INT64":
		return true
	}
	return false
}
