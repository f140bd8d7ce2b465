package sqlgen

import (
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/ast"
)

// typeNames maps GoogleSQL and common type spellings to each dialect.
var typeNames = map[backend.Dialect]map[string]string{
	backend.DuckDB: {
		"INT64": "BIGINT", "FLOAT64": "DOUBLE", "STRING": "VARCHAR", "BOOL": "BOOLEAN",
		"NUMERIC": "DECIMAL(38, 9)", "BIGNUMERIC": "DOUBLE", "BYTES": "BLOB",
	},
	backend.Postgres: {
		"INT64": "BIGINT", "FLOAT64": "DOUBLE PRECISION", "DOUBLE": "DOUBLE PRECISION",
		"STRING": "TEXT", "BOOL": "BOOLEAN", "VARCHAR": "TEXT", "FLOAT": "DOUBLE PRECISION",
		"HUGEINT": "NUMERIC", "BYTES": "BYTEA", "BLOB": "BYTEA", "INT": "INTEGER",
		"UBIGINT": "NUMERIC", "TINYINT": "SMALLINT", "UTINYINT": "SMALLINT", "USMALLINT": "INTEGER",
		"UINTEGER": "BIGINT",
	},
}

// funcNames maps function names for a dialect (lower case).
var funcNames = map[backend.Dialect]map[string]string{
	backend.Postgres: {
		"ifnull": "coalesce", "lcase": "lower", "ucase": "upper", "pow": "power",
		"char_length": "length", "character_length": "length", "instr": "strpos",
		"datepart": "date_part", "datetrunc": "date_trunc", "len": "length",
	},
}

// printer returns a Printer that spells trees for dialect d.
func printer(d backend.Dialect) *ast.Printer {
	p := &ast.Printer{}
	// guarded holds the nodes sizeGuard is printing, so that printing one of them again
	// (inside its guard) goes on to the rest of the hook.
	guarded := map[ast.Node]bool{}
	p.Hook = func(p *ast.Printer, n ast.Node) bool {
		if !guarded[n] && sizeGuard(p, n, func(m ast.Node) {
			guarded[m] = true
			p.Print(m)
			delete(guarded, m)
		}) {
			return true
		}
		switch n := n.(type) {
		case *ast.TypeName:
			if t, ok := typeNames[d][strings.ToUpper(n.Name)]; ok && len(n.Args) == 0 {
				p.WriteString(t)
				return true
			}
		case *ast.Cast:
			if !n.Safe {
				return false
			}
			// SAFE_CAST (GoogleSQL) and TRY_CAST: DuckDB spells it TRY_CAST; PostgreSQL has
			// no safe cast, so the cast there fails on bad input.
			if d == backend.Postgres {
				p.WriteString("CAST(")
			} else {
				p.WriteString("TRY_CAST(")
			}
			p.Print(n.X)
			p.WriteString(" AS ")
			p.Print(n.Type)
			p.WriteString(")")
			return true
		case *ast.FuncCall:
			if len(n.Name) != 1 || n.Over != nil {
				return false
			}
			name := strings.ToLower(n.Name[0].Name)
			if d == backend.Postgres && (name == "if" || name == "iff") && len(n.Args) == 3 {
				p.WriteString("(CASE WHEN ")
				p.Print(n.Args[0])
				p.WriteString(" THEN ")
				p.Print(n.Args[1])
				p.WriteString(" ELSE ")
				p.Print(n.Args[2])
				p.WriteString(" END)")
				return true
			}
			if d == backend.Postgres && (name == "round" || name == "trunc") && len(n.Args) == 2 {
				// PostgreSQL rounds to n digits only NUMERIC values (there is no
				// round(double precision, integer)); both round half away from zero.
				p.WriteString(name + "(CAST(")
				p.Print(n.Args[0])
				p.WriteString(" AS NUMERIC), ")
				p.Print(n.Args[1])
				p.WriteString(")")
				return true
			}
			if to, ok := funcNames[d][name]; ok {
				c := *n
				c.Name = []*ast.Ident{{Name: to}}
				p.Default(&c)
				return true
			}
		}
		return false
	}
	return p
}

// Print prints a node for dialect d.
func Print(d backend.Dialect, n ast.Node) string {
	p := printer(d)
	p.Print(n)
	return p.String()
}

// PrintData prints an analyst expression or FROM clause that is evaluated over private rows.
// Such an expression must not fail on some rows and not on others: whether a query fails
// would then reveal one user's data with certainty (say, an overflow only for a value above
// 5), and no noise can hide it. So on DuckDB every expression that can fail at run time
// (arithmetic, comparisons with constants, casts, scalar function calls, BETWEEN, IN, LIKE,
// EXTRACT) is wrapped in TRY(...), which yields NULL for the rows where it fails. Equalities
// between two columns (join conditions) are left as they are, so hash joins stay possible.
// PostgreSQL has no TRY: there, division and modulo by zero give NULL; other run-time errors
// (integer overflow, invalid casts) still fail the query, which the engine then charges and
// reports without the database's message (see docs/security.md).
func PrintData(d backend.Dialect, n ast.Node) string {
	p := printer(d)
	base := p.Hook
	p.Hook = func(p *ast.Printer, n ast.Node) bool {
		switch d {
		case backend.DuckDB:
			if !fallible(n) {
				return base(p, n)
			}
			p.WriteString("TRY(")
			if c, ok := n.(*ast.Cast); ok && !c.Safe {
				cc := *c
				cc.Safe = true
				n = &cc
			}
			if !base(p, n) {
				p.Default(n)
			}
			p.WriteString(")")
			return true
		case backend.Postgres:
			if b, ok := n.(*ast.Binary); ok && (b.Op == "/" || b.Op == "%") {
				p.WriteString("(")
				p.Expr(b.L, ast.BinaryPrecedence(b.Op)+1)
				p.WriteString(" " + b.Op + " NULLIF(")
				p.Print(b.R)
				p.WriteString(", 0))")
				return true
			}
		}
		return base(p, n)
	}
	p.Print(n)
	return p.String()
}

// fallible reports whether evaluating n (not counting its children) can fail at run time.
func fallible(n ast.Node) bool {
	switch x := n.(type) {
	case *ast.Binary:
		switch x.Op {
		case "AND", "OR":
			return false
		case "=", "<>", "<", "<=", ">", ">=", "IS DISTINCT FROM", "IS NOT DISTINCT FROM":
			_, lc := x.L.(*ast.ColumnRef)
			_, rc := x.R.(*ast.ColumnRef)
			return !(lc && rc)
		}
		return true
	case *ast.Unary:
		return x.Op == "-" || x.Op == "+"
	case *ast.Cast, *ast.Between, *ast.InList, *ast.Like, *ast.Extract:
		return true
	case *ast.FuncCall:
		return x.Over == nil && len(x.Name) == 1 && !analyzer.IsAggregate(x.Name[0].Name)
	}
	return false
}
