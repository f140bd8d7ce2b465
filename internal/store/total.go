package store

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/dpsql/dpsql/backend"
)

// Total helpers on PostgreSQL.
//
// PostgreSQL has no TRY: an overflow, a bad cast or sqrt(-1) fails the whole query, and a
// query that fails only because of one user's row reveals that row. So the owner's Init
// installs, in the dpsql schema, a total version of every PostgreSQL operator and function
// that internal/sqlgen prints over private rows and that can fail: one PL/pgSQL function per
// overload of the original, with the same argument and result types (generated from
// pg_operator and pg_proc, so that a call resolves to the same overload and type as the
// original would), which returns NULL where the original raises an error:
//
//	dpsql.op_add(int4, int4) RETURNS int4 ... BEGIN RETURN $1 OPERATOR(pg_catalog.+) $2;
//	                                          EXCEPTION WHEN OTHERS THEN RETURN NULL; END
//
// and likewise op_sub, op_mul, op_div, op_mod, op_neg (prefix -), op_like (~~), op_ilike
// (~~*), the functions in TotalFuncs under their own names (dpsql."sqrt"(float8), ...), and
// dpsql.cast_<t>(anyelement) for the types in TotalCasts. Bodies name everything in
// pg_catalog explicitly, so a search_path cannot redirect them. Catching an error needs a
// subtransaction, which PostgreSQL does not allow in parallel workers: the helpers are
// PARALLEL RESTRICTED (they run in the leader), which is their cost (see docs/security.md).
// A query cancellation (statement_timeout) is not caught.

// TotalOperators maps PostgreSQL operators to the names of their total helpers; "-u" is
// prefix minus.
var TotalOperators = map[string]string{
	"+": "op_add", "-": "op_sub", "*": "op_mul", "/": "op_div", "%": "op_mod", "-u": "op_neg",
	"~~": "op_like", "~~*": "op_ilike",
}

// TotalFuncs are the PostgreSQL functions that can fail for some arguments (domain errors,
// overflow, invalid units, sizes or regular expressions) and have total helpers of the same
// name in the dpsql schema.
var TotalFuncs = []string{
	"abs", "acos", "age", "asin", "atan", "atan2", "cbrt", "ceil", "ceiling", "chr", "cos",
	"date_part", "date_trunc", "degrees", "exp", "extract", "factorial", "floor", "gcd", "lcm",
	"left", "like_escape", "ln", "log", "log10", "lpad", "make_date", "make_timestamp", "mod",
	"power", "radians", "regexp_replace", "repeat", "replace", "right", "round", "rpad", "sin",
	"split_part", "sqrt", "substr", "substring", "tan", "to_timestamp", "trunc",
}

// TotalCasts are the target types (pg_catalog names) of the total casts dpsql.cast_<type>.
var TotalCasts = []string{
	"bool", "date", "float4", "float8", "int2", "int4", "int8", "interval", "numeric", "time",
	"timestamp", "timestamptz",
}

// totalMarker is a function whose presence says that this version of the helpers is
// installed.
const totalMarker = "total_v3"

// installTotal creates the total helpers on PostgreSQL if this version is missing; on other
// dialects it does nothing (DuckDB has TRY).
func installTotal(ctx context.Context, b backend.Backend) error {
	if b.Dialect() != backend.Postgres {
		return nil
	}
	rows, err := b.Query(ctx, `SELECT 1 FROM pg_catalog.pg_proc WHERE proname = $1
		AND pronamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = 'dpsql')`, totalMarker)
	if err != nil {
		return fmt.Errorf("store: look for dpsql's total helpers: %w", err)
	}
	if len(rows.Values) > 0 {
		return nil
	}
	err = b.Tx(ctx, func(q backend.Querier) error {
		stmts, err := totalStatements(ctx, q)
		if err != nil {
			return err
		}
		for _, s := range stmts {
			if err := q.Exec(ctx, s); err != nil {
				return fmt.Errorf("%w\n%s", err, s)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: cannot install dpsql's total helper functions: %w", err)
	}
	return nil
}

// typeName is SQL that formats the pg_type oid in column oid as a schema-qualified, quoted
// type name.
func typeName(oid string) string {
	return `(SELECT format('%I.%I', n.nspname, t.typname) FROM pg_catalog.pg_type t
	JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace WHERE t.oid = ` + oid + `)`
}

// notPseudo is SQL that is true when the type oid in column oid is not a pseudo-type (any,
// anyelement, ...), which helpers with fixed signatures cannot take.
func notPseudo(oid string) string {
	return `(SELECT t.typtype <> 'p' FROM pg_catalog.pg_type t WHERE t.oid = ` + oid + `)`
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + strings.ReplaceAll(n, "'", "''") + "'"
	}
	return strings.Join(q, ", ")
}

// totalStatements reads the overloads of the guarded operators and functions from the
// catalog and returns the statements that create their helpers.
func totalStatements(ctx context.Context, q backend.Querier) ([]string, error) {
	var ops []string
	for op := range TotalOperators {
		if op != "-u" {
			ops = append(ops, op)
		}
	}
	sort.Strings(ops)
	opRows, err := q.Query(ctx, fmt.Sprintf(`SELECT o.oprname::text, o.oprkind::text,
			COALESCE(%s, ''), %s, %s, p.provolatile::text, p.proisstrict
		FROM pg_catalog.pg_operator o JOIN pg_catalog.pg_proc p ON p.oid = o.oprcode
		WHERE o.oprnamespace = 'pg_catalog'::regnamespace AND o.oprname IN (%s)
		  AND (o.oprkind = 'b' OR o.oprkind = 'l' AND o.oprname = '-')
		  AND %s AND %s AND (o.oprkind = 'l' OR %s)
		ORDER BY 1, 2, 3, 4`,
		typeName("o.oprleft"), typeName("o.oprright"), typeName("o.oprresult"),
		quoteList(ops), notPseudo("o.oprright"), notPseudo("o.oprresult"), notPseudo("o.oprleft")))
	if err != nil {
		return nil, err
	}
	stmts := []string{
		`CREATE SCHEMA IF NOT EXISTS dpsql`,
		`CREATE OR REPLACE FUNCTION dpsql.` + totalMarker + `() RETURNS BOOLEAN LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT TRUE'`,
	}
	for _, r := range opRows.Values {
		op, kind, left, right, result := asString(r[0]), asString(r[1]), asString(r[2]), asString(r[3]), asString(r[4])
		name, body, args := TotalOperators[op], fmt.Sprintf("$1 OPERATOR(pg_catalog.%s) $2", op), left+", "+right
		if kind == "l" {
			name, body, args = TotalOperators["-u"], fmt.Sprintf("OPERATOR(pg_catalog.%s) $1", op), right
		}
		stmts = append(stmts, helper(name, args, result, body, asString(r[5]), r[6]))
	}
	fnRows, err := q.Query(ctx, fmt.Sprintf(`SELECT p.proname::text,
			(SELECT string_agg(%s, ', ' ORDER BY a.i) FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS a(o, i)),
			%s, p.provolatile::text, p.proisstrict, p.pronargs
		FROM pg_catalog.pg_proc p
		WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.proname IN (%s) AND p.prokind = 'f'
		  AND NOT p.proretset AND p.provariadic = 0 AND p.pronargs > 0 AND %s
		  AND NOT EXISTS (SELECT 1 FROM unnest(p.proargtypes::oid[]) AS a(o) WHERE NOT %s)
		ORDER BY 1, 2`,
		typeName("a.o"), typeName("p.prorettype"), quoteList(TotalFuncs),
		notPseudo("p.prorettype"), notPseudo("a.o")))
	if err != nil {
		return nil, err
	}
	native := map[string]bool{}
	for _, r := range fnRows.Values {
		native[asString(r[0])+"("+asString(r[1])+")"] = true
	}
	for _, r := range fnRows.Values {
		name := asString(r[0])
		if regexSubstring(name, asString(r[1])) {
			continue
		}
		n, err := asInt(r[5])
		if err != nil {
			return nil, err
		}
		body := fmt.Sprintf(`pg_catalog.%q(%s)`, name, strings.Join(placeholders(int(n)), ", "))
		stmts = append(stmts, helper(fmt.Sprintf("%q", name), asString(r[1]), asString(r[2]), body, asString(r[3]), r[4]))
		stmts = append(stmts, dateOverloads(name, strings.Split(asString(r[1]), ", "), asString(r[2]), native)...)
	}
	// Helpers of an earlier version that must not stay (CREATE OR REPLACE keeps them).
	stmts = append(stmts, `DROP FUNCTION IF EXISTS dpsql."substring"(pg_catalog.text, pg_catalog.text)`,
		`DROP FUNCTION IF EXISTS dpsql."substring"(pg_catalog.text, pg_catalog.text, pg_catalog.text)`)
	for _, t := range TotalCasts {
		// Casts from text depend on settings such as DateStyle: STABLE, not IMMUTABLE.
		stmts = append(stmts, helper("cast_"+t, "anyelement", "pg_catalog."+t, "$1::pg_catalog."+t, "s", false))
	}
	return stmts, nil
}

// regexSubstring reports whether a function overload is PostgreSQL's substring of a regular
// expression (substring(text, text)) or of a SIMILAR TO pattern (substring(text, text,
// text)). They get no helper, so an analyst's substring(s, x) with a text x fails to bind,
// before the charge, as on DuckDB: a pattern read from a row took PostgreSQL seconds to
// compile only on the target's row (an outside review, 2026-11-29), where the analyst's other
// regular expressions must be constants.
func regexSubstring(name, args string) bool {
	return name == "substring" && strings.HasPrefix(args, "pg_catalog.text, pg_catalog.text")
}

// dateOverloads returns, for a function overload whose parameters include TIMESTAMPTZ
// (date_trunc(text, timestamptz), age(timestamptz)), helpers that take a DATE in one or more
// of those places and convert it to TIMESTAMPTZ inside the helper, where a failure is caught:
// PostgreSQL calls the TIMESTAMPTZ overload for a DATE argument, converting the date
// implicitly and outside the helper, which fails on a date beyond TIMESTAMPTZ's range (and
// which dpsql therefore refuses, backend.ConversionReporter). With these, date_trunc('month',
// d) of a DATE column resolves to a helper that takes the DATE itself. Signatures PostgreSQL
// has natively (date_part(text, date)) are left alone.
func dateOverloads(name string, args []string, result string, native map[string]bool) []string {
	const tz, date = "pg_catalog.timestamptz", "pg_catalog.date"
	var at []int
	for i, a := range args {
		if a == tz {
			at = append(at, i)
		}
	}
	var stmts []string
	for mask := 1; mask < 1<<len(at); mask++ {
		sig := append([]string(nil), args...)
		params := placeholders(len(args))
		for k, i := range at {
			if mask&(1<<k) != 0 {
				sig[i] = date
				params[i] = fmt.Sprintf("$%d::%s", i+1, tz)
			}
		}
		if native[name+"("+strings.Join(sig, ", ")+")"] {
			continue
		}
		body := fmt.Sprintf(`pg_catalog.%q(%s)`, name, strings.Join(params, ", "))
		stmts = append(stmts, helper(fmt.Sprintf("%q", name), strings.Join(sig, ", "), result, body, "s", true))
	}
	return stmts
}

// placeholders are a function body's references to its n parameters: $1, ..., $n.
func placeholders(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("$%d", i+1)
	}
	return out
}

// helper is the statement that creates one total helper.
func helper(name, args, result, expr, volatile string, strict any) string {
	vol := map[string]string{"i": "IMMUTABLE", "s": "STABLE"}[volatile]
	if vol == "" {
		vol = "VOLATILE"
	}
	if b, ok := strict.(bool); ok && b {
		vol += " STRICT"
	}
	return fmt.Sprintf(`CREATE OR REPLACE FUNCTION dpsql.%s(%s) RETURNS %s LANGUAGE plpgsql %s PARALLEL RESTRICTED
AS $dpsql$BEGIN RETURN %s; EXCEPTION WHEN OTHERS THEN RETURN NULL; END$dpsql$`, name, args, result, vol, expr)
}
