// Package analyzer resolves names in a parsed statement against the catalog and enforces the
// rules that keep every row owned by exactly one privacy unit (DESIGN.md section 2 step 1,
// the ZetaSQL rules): joins between private relations equate their units, no cross joins
// between them, outer joins preserve only private sides, FROM subqueries over private data
// output the unit and group by it, expression subqueries read no private data, no window
// functions, LIMIT, ORDER BY or DISTINCT across units inside the anonymized FROM, and only
// anonymized aggregates in an anonymized SELECT.
//
// Each refusal is a *sqlerr.Error that names the rule, points at the offending SQL and says
// how to fix the query. What the analyzer accepts it describes as a *Query (an anonymized
// aggregation: options, source, privacy unit, keys, aggregates, post-processing) or a
// *PublicQuery (a plain query over public relations only), for internal/rewrite.
//
// The analyzer also holds the allowlist of scalar and aggregate functions: anything not on
// it is refused, so analyst SQL can never call a database function that reaches outside the
// data (file readers, settings, environment).
package analyzer
