// Package parser turns SQL text into dpsql's syntax tree (package ast). It is the first
// security boundary of dpsql: what it does not accept is refused with a positioned
// *sqlerr.Error (Code sqlerr.SyntaxError, or sqlerr.FeatureNotSupported for forms it
// recognises but refuses, such as SELECT INTO, PIVOT or a file name in FROM).
//
// The parser is a hand-written recursive-descent parser with one function per precedence
// level of expressions. It accepts the SELECT subset analysts may write, including the
// three spellings of anonymized aggregation (ZetaSQL's WITH ANONYMIZATION with CLAMPED
// BETWEEN, the thesis form with trailing bounds, and GoogleSQL's WITH DIFFERENTIAL_PRIVACY
// with named arguments), EXPLAIN, and the owner's policy statements (CREATE ... OPTIONS(...)
// AS, ALTER ... SET OPTIONS, SET BUDGET, SET LIMITS, SHOW) and account statements (CREATE,
// ALTER and DROP ANALYST, which must always parse: their text holds a password, so it is never
// passed on, and none of their errors quotes a token). Any other statement is kept as text in
// an *ast.RawStmt for the engine to pass on or refuse.
//
// Query parameters (ParseParams) are written @name or $1, $2, ...; each becomes its value's
// typed literal where it is written.
//
// Guarantees: Parse never panics and never loops on any input (nesting deeper than
// MaxDepth is an error); every node has its Span; every tree it returns prints (ast.Format)
// to text that parses back to the same tree (but for analysts' passwords, which print as
// ast.RedactedPassword). The fuzz tests check all three.
package parser
