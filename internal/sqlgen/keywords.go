package sqlgen

import (
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/ast"
)

// reserved are the words each dialect reserves in some position (DuckDB's duckdb_keywords()
// of a category other than unreserved, PostgreSQL's pg_get_keywords() of a category other
// than U), lower case. dpsql's own parser reserves fewer words (ast.IsReserved), so an
// analyst may write a column named at or user unquoted; the printer quotes such names for
// the database (printIdent). TestReservedWordsMatchDatabase checks the lists against the
// live databases.
var reserved = map[backend.Dialect]map[string]bool{
	backend.DuckDB: setOf(
		"all", "analyse", "analyze", "and", "anti", "any", "array", "as", "asc", "asof", "asymmetric",
		"at", "authorization", "between", "bigint", "binary", "bit", "boolean", "both", "by", "case",
		"cast", "char", "character", "check", "coalesce", "collate", "collation", "column", "columns",
		"concurrently", "constraint", "create", "cross", "dec", "decimal", "default", "deferrable",
		"desc", "describe", "distinct", "do", "else", "end", "except", "exists", "extract", "false",
		"fetch", "float", "for", "foreign", "freeze", "from", "full", "generated", "glob", "group",
		"grouping", "grouping_id", "having", "ilike", "in", "initially", "inner", "inout", "int",
		"integer", "intersect", "interval", "into", "is", "isnull", "join", "lambda", "lateral",
		"leading", "left", "like", "limit", "map", "national", "natural", "nchar", "none", "not",
		"notnull", "null", "nullif", "numeric", "offset", "on", "only", "or", "order", "out", "outer",
		"overlaps", "overlay", "pivot", "pivot_longer", "pivot_wider", "placing", "position",
		"positional", "precision", "primary", "qualify", "real", "references", "returning", "right",
		"row", "select", "semi", "setof", "show", "similar", "smallint", "some", "struct",
		"substring", "summarize", "symmetric", "table", "tablesample", "then", "time", "timestamp",
		"to", "trailing", "treat", "trim", "true", "try_cast", "union", "unique", "unpack", "unpivot",
		"using", "values", "varchar", "variadic", "verbose", "when", "where", "window", "with",
		"xmlattributes", "xmlconcat", "xmlelement", "xmlexists", "xmlforest", "xmlnamespaces",
		"xmlparse", "xmlpi", "xmlroot", "xmlserialize", "xmltable",
	),
	backend.Postgres: setOf(
		"all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric",
		"authorization", "between", "bigint", "binary", "bit", "boolean", "both", "case", "cast",
		"char", "character", "check", "coalesce", "collate", "collation", "column", "concurrently",
		"constraint", "create", "cross", "current_catalog", "current_date", "current_role",
		"current_schema", "current_time", "current_timestamp", "current_user", "dec", "decimal",
		"default", "deferrable", "desc", "distinct", "do", "else", "end", "except", "exists",
		"extract", "false", "fetch", "float", "for", "foreign", "freeze", "from", "full", "grant",
		"greatest", "group", "grouping", "having", "ilike", "in", "initially", "inner", "inout",
		"int", "integer", "intersect", "interval", "into", "is", "isnull", "join", "lateral",
		"leading", "least", "left", "like", "limit", "localtime", "localtimestamp", "national",
		"natural", "nchar", "none", "normalize", "not", "notnull", "null", "nullif", "numeric",
		"offset", "on", "only", "or", "order", "out", "outer", "overlaps", "overlay", "placing",
		"position", "precision", "primary", "real", "references", "returning", "right", "row",
		"select", "session_user", "setof", "similar", "smallint", "some", "substring", "symmetric",
		"table", "tablesample", "then", "time", "timestamp", "to", "trailing", "treat", "trim",
		"true", "union", "unique", "user", "using", "values", "varchar", "variadic", "verbose",
		"when", "where", "window", "with", "xmlattributes", "xmlconcat", "xmlelement", "xmlexists",
		"xmlforest", "xmlnamespaces", "xmlparse", "xmlpi", "xmlroot", "xmlserialize", "xmltable",
	),
}

// Reserved reports whether dialect d reserves word (any case) in some position, so that an
// identifier spelled like it must be quoted.
func Reserved(d backend.Dialect, word string) bool { return reserved[d][asciiLower(word)] }

// asciiLower folds ASCII letters only, as PostgreSQL folds unquoted identifiers in UTF-8.
func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}

// printIdent prints an identifier for dialect d when the dialect needs it quoted and dpsql's
// default spelling would not quote it: an unquoted name the dialect reserves (a column named
// at on DuckDB, user on PostgreSQL). The quoted spelling must name what the unquoted one
// names: PostgreSQL folds unquoted identifiers to lower case and keeps quoted ones as they
// are, so there the folded spelling is quoted; DuckDB matches identifiers without regard to
// case, quoted or not, and names result columns as written, so the name is quoted as written.
// It reports false for everything else (printed the default way).
func printIdent(p *ast.Printer, d backend.Dialect, id *ast.Ident) bool {
	if id.Quoted || !ast.IsBareIdent(id.Name) || !Reserved(d, id.Name) {
		return false
	}
	name := id.Name
	if d == backend.Postgres {
		name = asciiLower(name)
	}
	p.WriteString(ast.QuoteIdent(name))
	return true
}
