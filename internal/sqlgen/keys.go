package sqlgen

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/plan"
	"github.com/dpsql/dpsql/sqlerr"
)

// NormaliseKey prints group key x, of database type typ, as its exact value: the stage groups
// by this form, once, in _dp_rows, and everything downstream (the kappa step's hashes and
// prefilter, the per-unit aggregation, the final GROUP BY, the quantile windows, the public
// domain join) uses that column, so they all agree on what one group is.
//
// A database's equality can be coarser than the value, and then one group holds values that
// print differently and hash differently:
//
//   - collations: DuckDB's NOCASE (or ICU) VARCHAR, PostgreSQL's nondeterministic ICU
//     collations and citext compare 'zz' and 'ZZ' equal, while DuckDB's hash() and
//     PostgreSQL's text of a row tell them apart (the kappa step would count one unit once per
//     spelling in one group); keys are compared byte-wise instead (COLLATE "binary" on DuckDB,
//     TEXT COLLATE "C" on PostgreSQL);
//   - -0 and 0 are equal floats, '1 day' and '24 hours' equal intervals, 1.0 and 1.00 equal
//     PostgreSQL numerics: the group would be released under the spelling of whichever row the
//     database met first, which can be one person's; each is mapped to one canonical value.
//
// Other types compare by value already. typ "" (unknown) leaves x as it is.
func NormaliseKey(d backend.Dialect, x, typ string) string {
	t := strings.ToUpper(strings.TrimSpace(typ))
	if d == backend.Postgres {
		switch {
		case strings.HasSuffix(t, "[]") && TypeFamily(strings.TrimSuffix(t, "[]")) == "text":
			// Arrays compare their elements with the elements' collation.
			return fmt.Sprintf("(CAST(%s AS TEXT[]) COLLATE \"C\")", x)
		case t == "TEXT" || t == "NAME" || t == "CITEXT" || t == "BPCHAR" || t == "VARCHAR" ||
			strings.HasPrefix(t, "CHARACTER") || strings.HasPrefix(t, "CHAR("):
			return fmt.Sprintf("(CAST(%s AS TEXT) COLLATE \"C\")", x)
		case t == "DOUBLE PRECISION" || t == "REAL":
			return fmt.Sprintf("((%s) + CAST(0 AS %s))", x, t)
		case t == "NUMERIC" || strings.HasPrefix(t, "NUMERIC("):
			return fmt.Sprintf("trim_scale(%s)", x)
		case t == "INTERVAL" || strings.HasPrefix(t, "INTERVAL"):
			return fmt.Sprintf("justify_interval(%s)", x)
		}
		return x
	}
	switch t {
	case "VARCHAR":
		return fmt.Sprintf("((%s) COLLATE \"binary\")", x)
	case "DOUBLE", "FLOAT":
		return fmt.Sprintf("((%s) + CAST(0 AS %s))", x, t)
	case "INTERVAL":
		return fmt.Sprintf("normalized_interval(%s)", x)
	case "JSON":
		// DuckDB groups JSON by its text, and its Go driver gives JSON back parsed, so that
		// the texts 1 and "1", or null and NULL, would come back alike: the key goes out as
		// its text (StageKeyType).
		return fmt.Sprintf("CAST(%s AS VARCHAR)", x)
	}
	return x
}

// StageKeyType is the type a DuckDB stage gives a key of database type typ once NormaliseKey
// has normalised it: its own, but VARCHAR for JSON, which goes out as its text.
func StageKeyType(typ string) string {
	if strings.EqualFold(strings.TrimSpace(typ), "JSON") {
		return "VARCHAR"
	}
	return typ
}

// NestsInexactValues reports whether a group key of database type typ nests values that the
// database compares by an equality coarser than their spelling, which NormaliseKey maps to a
// canonical value only at the top level: floats (-0 and 0), intervals ('1 month' and '30
// days') and, on PostgreSQL, numerics (1.0 and 1.00), inside a list, an array, a STRUCT, a
// MAP or a UNION. DuckDB groups [-0.0] with [0.0] and releases the group under the spelling
// of whichever row it met first, which can be one person's (outside review). Field names in
// double quotes are not read as types.
func NestsInexactValues(d backend.Dialect, typ string) bool {
	t := strings.ToUpper(quotedName.ReplaceAllString(typ, `""`))
	nested := strings.Contains(t, "[") || strings.HasPrefix(t, "STRUCT(") || strings.HasPrefix(t, "MAP(") || strings.HasPrefix(t, "UNION(")
	if !nested {
		return false
	}
	if d == backend.Postgres {
		return pgInexactElement.MatchString(t)
	}
	return inexactElement.MatchString(t)
}

var (
	quotedName       = regexp.MustCompile(`"(?:[^"]|"")*"`)
	inexactElement   = regexp.MustCompile(`\b(DOUBLE|FLOAT|REAL|INTERVAL)\b`)
	pgInexactElement = regexp.MustCompile(`\b(DOUBLE PRECISION|REAL|INTERVAL|NUMERIC)\b`)
)

// keyExpr is key i of p as the stage prints it: the analyst's expression x, normalised by the
// key's type once the executor knows it.
func keyExpr(p *plan.Plan, d backend.Dialect, i int, x string) string {
	if i < len(p.KeyTypes) {
		return NormaliseKey(d, x, p.KeyTypes[i])
	}
	return x
}

// CheckKeyTypes refuses, before any data is read, group keys whose values could not be read
// back reliably or printed back as SQL:
//
//   - a key of a type that holds a MAP, anywhere inside it: DuckDB's Go driver cannot read
//     every MAP (two keys of type BLOB, UUID or BIT panic inside it, TIME '24:00:00' and
//     '00:00:00' keys merge, a map of n entries costs n² to read, past any timeout), so
//     whether such a query failed, and what it showed, would depend on one person's map (an
//     outside review); CAST(m AS VARCHAR), DuckDB's text of the map, is the key to use;
//   - when the query is post-processed (HAVING, ORDER BY, LIMIT, expressions over keys, a
//     query over the released rows of a nested part), keys the release step could not print
//     back as SQL: DuckDB's STRUCT, MAP and UNION values. Such a query would otherwise fail
//     only once groups were released, and whether any group is released depends on the
//     data. A query whose outputs are exactly keys and aggregates, with or without
//     confidence intervals, is not post-processed by the database unless it is a nested
//     part.
func CheckKeyTypes(q *analyzer.Query, types []string, postProcessed bool) error {
	for i, typ := range types {
		if holdsMap(typ) && i < len(q.Keys) {
			return sqlerr.New(q.Keys[i].Expr.Span().Start, sqlerr.FeatureNotSupported,
				"a group key of type %s is not supported: a MAP cannot always be read back from the database (maps keyed by BLOB, UUID or BIT values, TIME '24:00:00' keys, very large maps), so whether the query worked would depend on the rows", typ).
				WithHint("group by CAST(%s AS VARCHAR), DuckDB's text of the value", ast.Format(q.Keys[i].Expr))
		}
	}
	if !postProcessed {
		return nil
	}
	for i, typ := range types {
		t := strings.ToUpper(typ)
		for _, nested := range []string{"STRUCT(", "MAP(", "UNION("} {
			if strings.Contains(t, nested) && i < len(q.Keys) {
				return sqlerr.New(q.Keys[i].Expr.Span().Start, sqlerr.FeatureNotSupported,
					"a group key of type %s cannot be post-processed (HAVING, ORDER BY, LIMIT, expressions over the keys, or a query over the released rows)", typ).
					WithHint("group by the fields of the value instead (s.field), or select only the key and the aggregates, outside another query")
			}
		}
	}
	return nil
}

// holdsMap reports whether a DuckDB type name is a MAP or holds one: in a list's elements,
// a STRUCT's fields or a UNION's members.
func holdsMap(typ string) bool {
	if k, _ := backend.MapTypes(typ); k != "" {
		return true
	}
	if e := backend.ElemType(typ); e != "" {
		return holdsMap(e)
	}
	t := strings.TrimSpace(typ)
	if strings.HasPrefix(strings.ToUpper(t), "UNION(") {
		t = "STRUCT(" + t[len("UNION("):]
	}
	for _, f := range backend.StructFields(t) {
		if holdsMap(f.Type) {
			return true
		}
	}
	return false
}

// DomainValues prints a query over an owner's public domain (see analyzer.ParseDomain) with
// one column, k: its values as the domain itself types them, for checking the domain against
// its column when the owner declares it.
func DomainValues(d backend.Dialect, dom ast.Expr) string {
	return "SELECT _dp_k0 AS k FROM " + domainSQL(d, dom, "_dp_k0")
}

// TypeFamily groups database type names whose values convert into each other without
// reinterpretation: "text" (character strings), "number" (integers, decimals, floats); any
// other type is its own family (its name without length or precision). A public domain must
// be of its column's family: text compared with numbers (or dates) would convert one to the
// other, so that '01', '+1' and ' 1' would all meet the domain value 1.
func TypeFamily(typ string) string {
	t := strings.ToUpper(strings.TrimSpace(typ))
	base := t
	if i := strings.IndexByte(base, '('); i >= 0 {
		base = strings.TrimSpace(base[:i])
	}
	switch base {
	case "VARCHAR", "TEXT", "CHAR", "CHARACTER", "CHARACTER VARYING", "BPCHAR", "NAME", "CITEXT", "STRING":
		return "text"
	case "TINYINT", "SMALLINT", "INTEGER", "INT", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
		"UBIGINT", "UHUGEINT", "INT2", "INT4", "INT8", "DECIMAL", "NUMERIC", "DOUBLE", "FLOAT", "REAL",
		"DOUBLE PRECISION", "FLOAT4", "FLOAT8":
		return "number"
	}
	return base
}
