package sqlgen

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/sqlerr"
)

// pgTextTypes are the cast targets PostgreSQL converts any value to without failing (a text
// longer than a VARCHAR(n) or CHAR(n) is cut by an explicit cast, not refused).
var pgTextTypes = setOf("TEXT", "VARCHAR", "CHARACTER VARYING", "CHAR", "CHARACTER", "BPCHAR", "NAME")

// PostgresCasts refuses, on PostgreSQL, a cast in the data of anonymized query q
// (analyzer.Query.Data) to a type that dpsql cannot make total there:
// anything but the numbers, booleans, dates and times of dpsql.cast_<type> (pgCasts),
// NUMERIC(p, s) (pgNumericCast), BYTEA (pgByteaCast) and text. PostgreSQL has no TRY: CAST(... AS uuid),
// CAST(... AS json) and an array type fail on one value, and such a
// cast of a value built from the target's row failed the query only when the target's row was
// there (an outside review: one exact bit at any epsilon). In a public part (computed whole
// before the charge) the same cast could fail in the stage and not in the check if its value
// read the clock ('now'). The refusal depends on the query's text only.
func PostgresCasts(q *analyzer.Query) error {
	return walkData(q, func(m ast.Node) error {
		c, ok := m.(*ast.Cast)
		if !ok || !readsData(c.X) {
			// A cast of a constant fails or not whatever the data: PostgreSQL folds it
			// while planning, or Check computes it once before the charge (ConstantParts).
			return nil
		}
		t := strings.ToUpper(Print(backend.Postgres, c.Type))
		if _, ok := pgCasts[t]; ok {
			return nil
		}
		name := strings.ToUpper(c.Type.Name)
		if pgTextTypes[name] || pgTextTypes[t] {
			return nil
		}
		if _, _, ok := numericTypmod(c.Type); ok || t == "BYTEA" {
			return nil
		}
		return sqlerr.New(c.Span().Start, sqlerr.FeatureNotSupported,
			"on PostgreSQL a cast to %s inside an anonymized query is not supported: it can fail on one row's value, and PostgreSQL has no TRY", t).
			WithHint("cast to TEXT, a number, BOOLEAN, or a date or time type, which dpsql makes total; compare text instead of uuid or json")
	})
}

// walkData calls fn on every node of anonymized query q's data (analyzer.Query.Data) until
// it returns an error, and returns that error.
func walkData(q *analyzer.Query, fn func(ast.Node) error) error {
	var err error
	for _, n := range q.Data() {
		ast.Walk(n, func(m ast.Node) bool {
			if err == nil {
				err = fn(m)
			}
			return err == nil
		})
	}
	return err
}

// numericTypmod returns the precision and scale of NUMERIC(p[, s]) or DECIMAL(p[, s]) with
// 0 <= s <= p <= 1000 (the form pgNumericCast guards).
func numericTypmod(t *ast.TypeName) (p, s int, ok bool) {
	name := strings.ToUpper(t.Name)
	if name != "NUMERIC" && name != "DECIMAL" || len(t.Args) == 0 || len(t.Args) > 2 {
		return 0, 0, false
	}
	p, err := strconv.Atoi(strings.TrimSpace(t.Args[0]))
	if err != nil {
		return 0, 0, false
	}
	if len(t.Args) == 2 {
		if s, err = strconv.Atoi(strings.TrimSpace(t.Args[1])); err != nil {
			return 0, 0, false
		}
	}
	return p, s, s >= 0 && s <= p && p >= 1 && p <= 1000
}

// pgNumericCast is the total cast of the printed expression x to NUMERIC(p, s): the value as
// an unconstrained NUMERIC (total, pgTotalCast), then NULL where, rounded to s digits, it
// needs more than p - s digits before the point (PostgreSQL's "numeric field overflow").
// PostgreSQL rounds half away from zero, so a value fits if its magnitude is below
// 10^(p-s) - 0.5·10^-s (999.995 for NUMERIC(5, 2)); the test needs no round(), which itself
// overflows on a value of PostgreSQL's largest magnitude (an outside review: 131,072 nines).
func pgNumericCast(x string, p, s int) string {
	n := pgTotalCast(x, "NUMERIC", "numeric")
	limit := strings.Repeat("9", p-s) + "." + strings.Repeat("9", s) + "5"
	if p == s {
		limit = "0" + limit
	}
	return fmt.Sprintf("CAST(CASE WHEN abs(%s) < CAST('%s' AS NUMERIC) THEN %s END AS NUMERIC(%d, %d))", n, limit, n, p, s)
}

// pgByteaCast is the total cast of the printed expression x to BYTEA: PostgreSQL reads a
// text's backslashes as escapes and fails on a bad one ('\q'), so a text with a backslash
// is NULL; any other text is its bytes, as the cast gives them.
func pgByteaCast(x string) string {
	return "CASE WHEN pg_typeof(" + x + ") = CAST('bytea' AS REGTYPE) THEN CAST(" + x + " AS BYTEA) WHEN strpos(CAST(" + x +
		" AS TEXT), chr(92)) > 0 THEN NULL ELSE CAST(" + x + " AS BYTEA) END"
}

// PostgresFunctions refuses, on PostgreSQL, calls in the data of anonymized query q that
// PostgreSQL evaluates row by row, that no total helper covers, and that fail on some rows:
//
//   - format(f, ...) raises for a conversion other than %s, %L and %% (an unknown one, a
//     width), for an argument it is not given, and for %I of a NULL: with a CASE on the
//     target's row, or the target's NULL, the query failed only with the target (an outside
//     review). Allowed: a literal f of %s, %L and %% only, each naming an argument given.
//   - regexp_matches is a set-returning function there (one row per match, so it multiplies
//     rows), and an invalid pattern fails on the rows that reach it.
//
// The refusal depends on the query's text only.
func PostgresFunctions(q *analyzer.Query) error {
	return walkData(q, func(m ast.Node) error {
		c, ok := m.(*ast.FuncCall)
		if !ok || len(c.Name) != 1 {
			return nil
		}
		switch strings.ToLower(c.Name[0].Name) {
		case "format":
			if len(c.Args) > 0 {
				if l, ok := c.Args[0].(*ast.Literal); ok && l.Kind == ast.StringLit && pgFormatTotal(l.Text, len(c.Args)-1) {
					return nil
				}
			}
			return sqlerr.New(c.Span().Start, sqlerr.FeatureNotSupported,
				"on PostgreSQL format() inside an anonymized query takes a literal format string of %%s, %%L and %%%% only, each naming an argument it is given: PostgreSQL raises an error for other conversions (%%I of a NULL, a width, a missing argument) on the rows that reach them, so whether the query fails would depend on the data").
				WithHint("use %%s and %%L, or build the text with ||")
		case "regexp_matches":
			return sqlerr.New(c.Span().Start, sqlerr.FeatureNotSupported,
				"on PostgreSQL regexp_matches inside an anonymized query is not supported: there it returns a row per match (multiplying rows), and an invalid pattern fails on the rows that reach it").
				WithHint("use regexp_replace, or LIKE")
		}
		return nil
	})
}

// pgFormatTotal reports whether the format string f of PostgreSQL's format() with args
// arguments after it uses only %s, %L and %%, each with an optional position n$, and names
// only arguments it is given (an unpositioned conversion takes the argument after the last
// one taken).
func pgFormatTotal(f string, args int) bool {
	next := 1
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		if i++; i >= len(f) {
			return false
		}
		if f[i] == '%' {
			continue
		}
		pos := next
		j := i
		for j < len(f) && j-i < 7 && f[j] >= '0' && f[j] <= '9' {
			j++
		}
		if j > i {
			if j >= len(f) || f[j] != '$' {
				return false // a width, or a position too long
			}
			pos, _ = strconv.Atoi(f[i:j])
			i = j + 1
		}
		if i >= len(f) || f[i] != 's' && f[i] != 'L' || pos < 1 || pos > args {
			return false
		}
		next = pos + 1
	}
	return true
}
