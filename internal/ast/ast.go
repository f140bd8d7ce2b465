package ast

import "github.com/dpsql/dpsql/sqlerr"

// Span is the source range of a node: Start is the first byte, End one past the last.
type Span struct {
	Start, End sqlerr.Pos
}

// Node is any syntax tree node.
type Node interface {
	Span() Span
}

// span is embedded in nodes to implement Node.
type span struct{ S Span }

func (s span) Span() Span { return s.S }

// SetSpan records where a node is; parsers and rewrites call it.
func (s *span) SetSpan(sp Span) { s.S = sp }

// Ident is an identifier. Quoted identifiers ("Name") keep their case; unquoted ones are
// compared case-insensitively, as in SQL.
type Ident struct {
	span
	Name   string
	Quoted bool
}

// ---- Statements ----

// Stmt is a top-level statement.
type Stmt interface {
	Node
	stmt()
}

// QueryStmt is a SELECT (possibly with the anonymization clause somewhere inside).
type QueryStmt struct {
	span
	Query *Query
}

// ExplainStmt is EXPLAIN <query>: show the plan, the rewritten SQL, the mechanisms and the
// budget the query would charge, without running it.
type ExplainStmt struct {
	span
	Query *Query
}

// CreateStmt is the owner's CREATE [OR REPLACE] [TEMP] (TABLE|VIEW) name OPTIONS(...) AS body.
// Body is kept as source text, not parsed: the owner may use the full dialect of the database
// there (file readers and all); dpsql runs it as written and records the OPTIONS as policy.
type CreateStmt struct {
	span
	OrReplace bool
	Temp      bool
	Kind      string // "TABLE" or "VIEW"
	Name      []*Ident
	Options   []*Option
	Body      string // the text after AS
	BodySpan  Span
}

// AlterOptionsStmt is the owner's ALTER (TABLE|VIEW) name SET OPTIONS(...), which changes
// the policy of an existing relation (e.g. anonymization_userid_column='id', public=true).
type AlterOptionsStmt struct {
	span
	Kind string // "TABLE" or "VIEW"
	Name []*Ident
	// Column is set for ALTER TABLE t ALTER COLUMN c SET OPTIONS(...), which sets a column's
	// policy (its public domain).
	Column  *Ident
	Options []*Option
}

// SetBudgetStmt is the owner's SET BUDGET OPTIONS(epsilon=..., delta=...) or SET BUDGET
// UNLIMITED.
type SetBudgetStmt struct {
	span
	Unlimited bool
	Options   []*Option
}

// SetLimitsStmt is the owner's SET LIMITS OPTIONS(statement_timeout = '60s', memory_limit =
// '2GB'): the limits of every analyst session, stored with the policy.
type SetLimitsStmt struct {
	span
	Options []*Option
}

// ShowStmt is SHOW BUDGET, SHOW TABLES (the relations an analyst may use) or SHOW POLICY.
type ShowStmt struct {
	span
	What string // upper case: "BUDGET", "TABLES", "POLICY", "LIMITS", "ANALYSTS"
}

// CreateAnalystStmt is the owner's CREATE ANALYST name PASSWORD 'secret' [OPTIONS(...)]: an
// analyst's account for dpsql serve. The password is printed as '********' (Format), so no
// printed form of the statement holds it.
type CreateAnalystStmt struct {
	span
	Name     *Ident
	Password *Literal // a string literal (or a parameter's value)
	Options  []*Option
}

// AlterAnalystStmt is the owner's ALTER ANALYST name [PASSWORD 'new'] [SET OPTIONS(...)], with
// at least one of the two.
type AlterAnalystStmt struct {
	span
	Name     *Ident
	Password *Literal // nil: unchanged
	Options  []*Option
}

// DropAnalystStmt is the owner's DROP ANALYST [IF EXISTS] name.
type DropAnalystStmt struct {
	span
	IfExists bool
	Name     *Ident
}

// RawStmt is any other statement, kept as text with its first keyword (upper case). The
// owner's raw statements are passed to the database; an analyst's are refused.
type RawStmt struct {
	span
	Keyword string
	Text    string
}

func (*QueryStmt) stmt()         {}
func (*ExplainStmt) stmt()       {}
func (*CreateStmt) stmt()        {}
func (*AlterOptionsStmt) stmt()  {}
func (*SetBudgetStmt) stmt()     {}
func (*SetLimitsStmt) stmt()     {}
func (*ShowStmt) stmt()          {}
func (*RawStmt) stmt()           {}
func (*CreateAnalystStmt) stmt() {}
func (*AlterAnalystStmt) stmt()  {}
func (*DropAnalystStmt) stmt()   {}

// Option is name = value in an OPTIONS(...) list.
type Option struct {
	span
	Name  *Ident
	Value Expr
}

// ---- Queries ----

// Query is a full query expression: optional CTEs, a body, ORDER BY, LIMIT and OFFSET.
type Query struct {
	span
	With    []*CTE
	Body    SetExpr
	OrderBy []*OrderItem
	Limit   Expr
	Offset  Expr
	// Whole is set by the analyzer on a subquery or CTE of an anonymized query that reads
	// no private relation and refers to no column outside itself: the SQL generator has the
	// database compute it whole, before the private rows are joined to it, so that how much
	// of it is computed (and so whether it fails) cannot depend on them.
	Whole bool
}

// CTE is one WITH item: name [(columns)] AS (query).
type CTE struct {
	span
	Name    *Ident
	Columns []*Ident
	Query   *Query
}

// SetExpr is the body of a query: a *Select, a *SetOp, or a *ParenQuery.
type SetExpr interface {
	Node
	setExpr()
}

// SetOp is left UNION|INTERSECT|EXCEPT [ALL|DISTINCT] right.
type SetOp struct {
	span
	Op    string // "UNION", "INTERSECT", "EXCEPT"
	All   bool
	Left  SetExpr
	Right SetExpr
}

// ParenQuery is a parenthesised query used as a set operand: (SELECT ... ORDER BY ... LIMIT).
type ParenQuery struct {
	span
	Query *Query
}

// Select is one SELECT block.
type Select struct {
	span
	Anon     *AnonClause // nil unless WITH ANONYMIZATION / WITH DIFFERENTIAL_PRIVACY
	Distinct bool
	Items    []*SelectItem
	From     []TableExpr // comma-separated items (an implicit cross join); nil without FROM
	Where    Expr
	GroupBy  *GroupBy
	Having   Expr
	Qualify  Expr
	Windows  []*NamedWindow // WINDOW w AS (...)
}

// ReleasedRows is the body of a query that stands for an anonymized part's released rows:
// SQL generated by dpsql (never by the parser) from the part's release, printed as it is.
// The engine puts it in place of a part nested in an anonymized query after analysis, so
// that the outer query's generated SQL reads the released rows (a typed VALUES table).
type ReleasedRows struct {
	span
	SQL string
}

func (*Select) setExpr()       {}
func (*SetOp) setExpr()        {}
func (*ParenQuery) setExpr()   {}
func (*ReleasedRows) setExpr() {}

// AnonSyntax says which spelling introduced the anonymization clause.
type AnonSyntax int

const (
	// Anonymization is WITH ANONYMIZATION [OPTIONS(...)] (ZetaSQL, the thesis).
	Anonymization AnonSyntax = iota + 1
	// DifferentialPrivacy is WITH DIFFERENTIAL_PRIVACY [OPTIONS(...)] (GoogleSQL, BigQuery).
	DifferentialPrivacy
)

// AnonClause is the anonymization clause of a SELECT.
type AnonClause struct {
	span
	Syntax  AnonSyntax
	Options []*Option // nil when OPTIONS is absent
}

// SelectItem is expr [AS alias], * or table.*; Star items have Expr nil.
type SelectItem struct {
	span
	Expr      Expr
	Alias     *Ident
	Star      bool
	StarTable []*Ident // qualifier of table.*; nil for a bare *
	Except    []*Ident // * EXCLUDE (...) / EXCEPT (...) columns
}

// GroupBy is GROUP BY items; Kind is "" for a plain list, or "ROLLUP", "CUBE",
// "GROUPING SETS", "ALL" (the analyzer refuses all but the plain list in anonymized queries).
type GroupBy struct {
	span
	Kind  string
	Items []Expr
}

// OrderItem is expr [ASC|DESC] [NULLS FIRST|LAST].
type OrderItem struct {
	span
	Expr       Expr
	Desc       bool
	NullsFirst *bool // nil when not given
}

// NamedWindow is WINDOW name AS (spec).
type NamedWindow struct {
	span
	Name *Ident
	Spec *WindowSpec
}

// ---- FROM ----

// TableExpr is an item of FROM: *TableName, *SubqueryTable, *Join, *TableFunc.
type TableExpr interface {
	Node
	tableExpr()
}

// TableAlias is AS alias [(col, ...)].
type TableAlias struct {
	span
	Name    *Ident
	Columns []*Ident
}

// TableName is a (possibly qualified) relation name.
type TableName struct {
	span
	Name  []*Ident
	Alias *TableAlias
	// Declared is set by the analyzer when the relation is a view: its columns with the
	// types the catalog holds for them. DuckDB binds a view's query again at every read, so
	// a view's types can follow its files (a Parquet file with a wider type added to a glob);
	// internal/sqlgen reads such a view through a projection that converts each column to
	// its declared type. Format ignores it.
	Declared []DeclaredColumn
	// PrivateColumns is set by the analyzer when the relation is private: its columns with
	// the types the catalog holds. internal/sqlgen reads those of a floating-point or
	// interval type, or nesting one (DOUBLE[], STRUCT(x DOUBLE), ...), with every such value
	// read as one canonical value on DuckDB: -0.0 as 0.0, -nan as nan, '30 days' as '1 month'
	// (sqlgen.NormaliseStored). DuckDB's storage compresses a run of values it finds equal
	// into the first of them, and a Parquet file's dictionary keeps one of them, so the 0.0s
	// stored after one person's -0.0 read back as -0.0, which an expression reading the sign
	// (a cast to text) showed only when that person's row was there (outside reviews).
	// Format ignores it.
	PrivateColumns []DeclaredColumn
	// SignBlind is set by internal/rewrite on a private relation of an anonymized query's
	// FROM: the columns the query reads only as the whole argument of aggregates that cannot
	// tell -0.0 from 0.0 or -nan from nan (ANON_SUM, ANON_AVG, ANON_COUNT). internal/sqlgen
	// reads those of a float type as stored, without the canonical read PrivateColumns
	// implies. Format ignores it.
	SignBlind []string
	// CTE is set by the analyzer when the name reads a CTE: its declaration. Format ignores
	// it.
	CTE *CTE
	// Whole is set by the analyzer on a public view (or DuckDB table with generated columns,
	// catalog.Relation.Computed) read by an anonymized query: like a
	// public subquery there (Query.Whole), internal/sqlgen has the database compute it whole
	// on DuckDB, so that how much of the owner's view is computed cannot depend on the
	// private rows joined to it. Format ignores it.
	Whole bool
}

// DeclaredColumn is a column of a relation with its type as the catalog spells it.
type DeclaredColumn struct {
	Name, Type string
}

// SubqueryTable is [LATERAL] (query) [AS alias].
type SubqueryTable struct {
	span
	Lateral bool
	Query   *Query
	Alias   *TableAlias
}

// TableFunc is name(args) in FROM (read_csv(...), range(...)); analysts may not use them.
// NamedArgs holds name => value arguments.
type TableFunc struct {
	span
	Name      []*Ident
	Args      []Expr
	NamedArgs []*NamedArg
	Alias     *TableAlias
}

// JoinKind is the kind of a join.
type JoinKind int

const (
	InnerJoin JoinKind = iota + 1
	LeftJoin
	RightJoin
	FullJoin
	CrossJoin
)

// Join is left [NATURAL] kind JOIN right [ON cond | USING (cols)].
type Join struct {
	span
	Kind    JoinKind
	Natural bool
	Left    TableExpr
	Right   TableExpr
	On      Expr
	Using   []*Ident
	// Units is set by the analyzer when the join equates the privacy units of two private
	// sides: the unit column it compares on Left ([0]) and on Right ([1]), for the executor's
	// check of their types (internal/sqlgen.UnitJoinProbes). Format ignores it.
	Units []Expr
}

// Unnest is UNNEST(array) [AS alias] in FROM: one row per element of the array, in one column
// named by the alias. The array may refer to columns of the FROM items before it (each row of
// those is joined with its own elements).
type Unnest struct {
	span
	Expr  Expr
	Alias *TableAlias
}

func (*Unnest) tableExpr()        {}
func (*TableName) tableExpr()     {}
func (*SubqueryTable) tableExpr() {}
func (*TableFunc) tableExpr()     {}
func (*Join) tableExpr()          {}

// ---- Expressions ----

// Expr is an expression.
type Expr interface {
	Node
	expr()
}

// ColumnRef is a (possibly qualified) column name: a, t.a, s.t.a.
type ColumnRef struct {
	span
	Parts []*Ident
}

// LiteralKind is the kind of a literal.
type LiteralKind int

const (
	IntLit LiteralKind = iota + 1
	FloatLit
	StringLit
	BoolLit
	NullLit
)

// Literal is a constant. Text is the value as written for numbers ("1e-5"), the decoded
// value for strings (without quotes, ” unescaped), "TRUE"/"FALSE" for booleans, "NULL".
type Literal struct {
	span
	Kind LiteralKind
	Text string
}

// TypedLiteral is TYPE 'text': DATE '2024-01-01', TIMESTAMP '...', INTERVAL '1 day'.
type TypedLiteral struct {
	span
	Type string // upper case
	Text string
}

// Interval is INTERVAL expr unit (INTERVAL 3 DAY, INTERVAL '3' DAY).
type Interval struct {
	span
	Value Expr
	Unit  string // upper case: DAY, MONTH, ...
}

// Unary is op x: "-", "+", "NOT", "~".
type Unary struct {
	span
	Op string
	X  Expr
}

// Binary is l op r. Op is upper case for words: "+", "-", "*", "/", "%", "||", "=", "<>",
// "<", "<=", ">", ">=", "AND", "OR", "IS DISTINCT FROM", "IS NOT DISTINCT FROM".
type Binary struct {
	span
	Op string
	L  Expr
	R  Expr
}

// IsNull is x IS [NOT] NULL; also x IS [NOT] TRUE/FALSE via Value ("NULL", "TRUE", "FALSE").
type IsNull struct {
	span
	X     Expr
	Not   bool
	Value string
}

// Between is x [NOT] BETWEEN lo AND hi.
type Between struct {
	span
	X, Lo, Hi Expr
	Not       bool
}

// InList is x [NOT] IN (a, b, ...).
type InList struct {
	span
	X    Expr
	List []Expr
	Not  bool
}

// InSubquery is x [NOT] IN (query).
type InSubquery struct {
	span
	X     Expr
	Query *Query
	Not   bool
}

// Like is x [NOT] LIKE|ILIKE pattern [ESCAPE esc].
type Like struct {
	span
	X       Expr
	Pattern Expr
	Escape  Expr
	Not     bool
	ILike   bool
}

// Case is CASE [operand] WHEN ... THEN ... [ELSE ...] END.
type Case struct {
	span
	Operand Expr
	Whens   []*When
	Else    Expr
}

// When is one WHEN cond THEN result arm.
type When struct {
	span
	Cond   Expr
	Result Expr
}

// TypeName is a SQL type: INT64, VARCHAR, DECIMAL(10, 2), ...
type TypeName struct {
	span
	Name string // upper case, words joined by one space ("DOUBLE PRECISION")
	Args []string
}

// Cast is CAST(x AS type), SAFE_CAST/TRY_CAST(x AS type), or x::type.
type Cast struct {
	span
	X    Expr
	Type *TypeName
	Safe bool // SAFE_CAST or TRY_CAST
	// Colon is true when written x::type (printed back the same way).
	Colon bool
}

// FuncCall is a function or aggregate call:
//
//	name([DISTINCT] args [, name => value ...] [CLAMPED BETWEEN lo AND hi] [WITH REPORT(FORMAT = f)])
//	    [FILTER (WHERE ...)] [OVER (...)] [.field ...]
//
// COUNT(*) has Star set. NamedArgs hold GoogleSQL's named arguments such as
// contribution_bounds_per_group => (0, 100). Report is ZetaSQL's WITH REPORT modifier of
// anonymized aggregates; Fields is a field path read from the call's result (ZetaSQL:
// ANON_SUM(x WITH REPORT(FORMAT=JSON)).result.value), which only reports accept.
type FuncCall struct {
	span
	Name      []*Ident
	Distinct  bool
	Star      bool
	Args      []Expr
	NamedArgs []*NamedArg
	Clamped   *Clamp
	Report    *Report
	Filter    Expr
	Over      *WindowSpec
	Fields    []*Ident
	// Clock is set by internal/rewrite on a call of an anonymized query that reads the clock
	// (now(), current_date(), current_timestamp(), age(x)): the query's instant, as
	// TIMESTAMPTZ text in UTC, which internal/sqlgen prints in place of the clock, so that
	// every statement dpsql sends for the query (the checks before the charge, the stage)
	// reads one instant. Format ignores it.
	Clock string
}

// Report is WITH REPORT [(FORMAT = JSON | PROTO)] inside an ANON_ aggregate (ZetaSQL): the
// aggregate returns its value with its confidence interval (and bounding report) as a JSON
// value or a text protocol buffer. Format is nil when no options were written.
type Report struct {
	span
	Format *Ident
}

// NamedArg is name => value.
type NamedArg struct {
	span
	Name  *Ident
	Value Expr
}

// Clamp is CLAMPED BETWEEN lo AND hi inside an ANON_ aggregate.
type Clamp struct {
	span
	Lo, Hi Expr
}

// WindowSpec is OVER (name | [PARTITION BY ...] [ORDER BY ...] [frame]).
type WindowSpec struct {
	span
	Name        *Ident
	PartitionBy []Expr
	OrderBy     []*OrderItem
	Frame       *WindowFrame // nil if none
}

// WindowFrame is (ROWS | RANGE | GROUPS) (BETWEEN start AND end | start) [EXCLUDE ...].
type WindowFrame struct {
	span
	Unit    string // ROWS, RANGE or GROUPS
	Start   *FrameBound
	End     *FrameBound // nil without BETWEEN
	Exclude string      // "", "CURRENT ROW", "GROUP", "TIES" or "NO OTHERS"
}

// FrameBound is one end of a window frame.
type FrameBound struct {
	span
	// Kind is UNBOUNDED PRECEDING, UNBOUNDED FOLLOWING, CURRENT ROW, PRECEDING or FOLLOWING.
	Kind string
	// Offset is the expression before PRECEDING or FOLLOWING; nil for the other kinds.
	Offset Expr
}

// Extract is EXTRACT(field FROM x).
type Extract struct {
	span
	Field string // upper case
	X     Expr
}

// Tuple is (a, b, ...) with two or more elements (e.g. contribution bounds (0, 100)).
type Tuple struct {
	span
	Elems []Expr
}

// Paren is (x): kept so printing preserves the written grouping.
type Paren struct {
	span
	X Expr
}

// Subquery is a scalar subquery (query).
type Subquery struct {
	span
	Query *Query
}

// Exists is [NOT] EXISTS (query).
type Exists struct {
	span
	Query *Query
	Not   bool
}

// Subscript is x[OFFSET(i)], x[ORDINAL(i)], x[SAFE_OFFSET(i)] or x[SAFE_ORDINAL(i)]: the
// element of array x at 0-based offset or 1-based ordinal i. dpsql evaluates every form as
// the SAFE one (NULL when i is out of range), so that no query fails on one row's array.
type Subscript struct {
	span
	X     Expr
	Kind  string // "OFFSET", "ORDINAL", "SAFE_OFFSET" or "SAFE_ORDINAL"
	Index Expr
}

// ZeroBased reports whether the index is an offset (0-based) rather than an ordinal.
func (s *Subscript) ZeroBased() bool { return s.Kind == "OFFSET" || s.Kind == "SAFE_OFFSET" }

// FieldAccess is x.field after a subscript: a field of an element of a released report's
// array (ZetaSQL: anon_result[OFFSET(0)].noise_confidence_interval.lower_bound). The element
// is a JSON object in the database; the SQL generator reads the field (see sqlgen).
type FieldAccess struct {
	span
	X     Expr
	Field *Ident
}

// ArrayLit is an array constructor: [a, b, ...] or ARRAY[a, b, ...].
type ArrayLit struct {
	span
	Elems   []Expr
	Keyword bool // written ARRAY[...]
}

func (*Subscript) expr()    {}
func (*FieldAccess) expr()  {}
func (*ArrayLit) expr()     {}
func (*ColumnRef) expr()    {}
func (*Literal) expr()      {}
func (*TypedLiteral) expr() {}
func (*Interval) expr()     {}
func (*Unary) expr()        {}
func (*Binary) expr()       {}
func (*IsNull) expr()       {}
func (*Between) expr()      {}
func (*InList) expr()       {}
func (*InSubquery) expr()   {}
func (*Like) expr()         {}
func (*Case) expr()         {}
func (*Cast) expr()         {}
func (*FuncCall) expr()     {}
func (*Extract) expr()      {}
func (*Tuple) expr()        {}
func (*Paren) expr()        {}
func (*Subquery) expr()     {}
func (*Exists) expr()       {}

// RedactedPassword is how Format prints an analyst's password: never the password itself.
const RedactedPassword = "'********'"
