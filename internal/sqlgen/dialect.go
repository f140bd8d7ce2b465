package sqlgen

import (
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/backend"
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
	// DuckDB 1.5 has if but not iff, which the analysts' allowlist accepts.
	backend.DuckDB: {"iff": "if"},
}

// printer returns a Printer that spells trees for dialect d, with the size guards.
func printer(d backend.Dialect) *ast.Printer {
	p := basePrinter(d)
	p.Hook = guardSizes(p.Hook)
	return p
}

// basePrinter returns a Printer that spells trees for dialect d, without the size guards.
func basePrinter(d backend.Dialect) *ast.Printer {
	p := &ast.Printer{}
	// Function names are printed as written: PostgreSQL reserves coalesce, greatest, least
	// and others as words of its grammar, where a quoted name would be no function.
	fnIdents := map[*ast.Ident]bool{}
	p.Hook = func(p *ast.Printer, n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			return !fnIdents[n] && printIdent(p, d, n)
		case *ast.TableName:
			return printDeclared(p, d, n)
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
		case *ast.Interval:
			// PostgreSQL has INTERVAL '1' DAY but not INTERVAL 1 DAY: a count is a multiple of
			// one unit there (the count is a constant, folded while planning). DuckDB reads
			// INTERVAL -1 DAY, but its total form INTERVAL TRY(-1) DAY only in parentheses.
			l, literal := n.Value.(*ast.Literal)
			switch {
			case d == backend.Postgres && !(literal && l.Kind == ast.StringLit):
				p.WriteString("(INTERVAL '" + pgIntervalUnit(n.Unit) + "' * (")
				p.Print(n.Value)
				p.WriteString("))")
			case d != backend.Postgres && !literal:
				p.WriteString("INTERVAL (")
				p.Print(n.Value)
				p.WriteString(") " + n.Unit)
			default:
				return false
			}
			return true
		case *ast.ArrayLit:
			// DuckDB's list [a, b]; PostgreSQL's ARRAY[a, b].
			if d == backend.Postgres {
				p.WriteString("ARRAY")
			}
			p.WriteString("[")
			for i, e := range n.Elems {
				if i > 0 {
					p.WriteString(", ")
				}
				p.Print(e)
			}
			p.WriteString("]")
			return true
		case *ast.Subscript:
			// Both dialects index from 1 and give NULL out of range; DuckDB counts negative
			// indexes from the end, so an index before the first element becomes NULL. The
			// analyzer allows only small constant indexes, so i + 1 cannot overflow.
			p.WriteString("(")
			p.Print(n.X)
			p.WriteString(")[CASE WHEN (")
			p.Print(n.Index)
			if n.ZeroBased() {
				p.WriteString(") >= 0 THEN (")
				p.Print(n.Index)
				p.WriteString(") + 1 END]")
			} else {
				p.WriteString(") >= 1 THEN (")
				p.Print(n.Index)
				p.WriteString(") END]")
			}
			return true
		case *ast.FieldAccess:
			printFieldAccess(p, d, n)
			return true
		case *ast.FuncCall:
			for _, id := range n.Name {
				fnIdents[id] = true
			}
			if len(n.Name) != 1 || n.Over != nil {
				return false
			}
			name := strings.ToLower(n.Name[0].Name)
			if n.Clock != "" && printClock(p, name, n) {
				return true
			}
			if printJSONFunc(p, d, name, n) {
				return true
			}
			if d == backend.Postgres && name == "array_length" && len(n.Args) == 1 {
				// GoogleSQL's ARRAY_LENGTH is 0 for an empty array; PostgreSQL's
				// array_length(a, 1) is NULL there, cardinality(a) is 0.
				p.WriteString("cardinality(")
				p.Print(n.Args[0])
				p.WriteString(")")
				return true
			}
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
				fnIdents[c.Name[0]] = true
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

// printDeclared prints a reference to a view on DuckDB as a projection that converts each
// column to the type the catalog holds for it, under the name the query reads it by:
// (SELECT CASE WHEN typeof("m") = 'BIGINT' THEN "m" ELSE TRY(TRY_CAST("m" AS BIGINT)) END AS
// "m", ... FROM "v") AS "v". DuckDB binds a view's query
// again at every read, so a view whose types can follow its data (Parquet files added to a
// glob with a wider type; a public view over a CSV file, whose types are detected from its
// rows; private views may not read CSV or JSON at all, internal/store's fileformat.go) would
// otherwise read with types the current files decide, and whether the query binds, or the
// type checks before the charge pass, would depend on them. The catalog's types are public and fixed when the view is created; a
// value the conversion cannot make becomes NULL, which changes only its own row. DuckDB
// folds the typeof test when it binds the query, so a view whose types did not change reads
// as before (projections and filters still reach read_parquet). Tables and
// PostgreSQL views have fixed column types and are printed as named, except that a private
// relation's columns of float or interval types, or nesting them, are read as canonical
// values (ast.TableName.PrivateColumns, NormaliseStored).
func printDeclared(p *ast.Printer, d backend.Dialect, n *ast.TableName) bool {
	if d != backend.DuckDB {
		return false
	}
	// normalise reads the floats and intervals of a private relation's column as canonical
	// values (ast.TableName.PrivateColumns); ok is false for a column without them, and for
	// a float column the query reads only where its sign cannot matter (signBlindFloat).
	normalise := func(name, x string) (string, bool) {
		for _, c := range n.PrivateColumns {
			if c.Name == name && !signBlindFloat(n, c) {
				return NormaliseStored(x, c.Type)
			}
		}
		return x, false
	}
	var replace []string
	if len(n.Declared) == 0 {
		for _, c := range n.PrivateColumns {
			col := ast.QuoteIdent(c.Name)
			if x, ok := normalise(c.Name, col); ok {
				replace = append(replace, x+" AS "+col)
			}
		}
		if len(replace) == 0 && !n.Whole {
			return false
		}
	}
	read := func() {
		p.WriteString("SELECT ")
		if len(n.Declared) > 0 {
			for i, c := range n.Declared {
				if i > 0 {
					p.WriteString(", ")
				}
				col := ast.QuoteIdent(c.Name)
				// The conversion, when the type changed, inside TRY: DuckDB's TRY_CAST still
				// fails between some date and time types (a TIMESTAMP beyond TIMESTAMP_NS's
				// range, TIMESTAMP 'infinity' to TIME: an outside review). typeof is fixed
				// when the query is bound, so a column of the declared type reads as itself
				// and its filters still reach the files.
				x, _ := normalise(c.Name, fmt.Sprintf("CASE WHEN typeof(%s) = %s THEN %s ELSE TRY(TRY_CAST(%s AS %s)) END",
					col, ast.QuoteString(c.Type), col, col, c.Type))
				p.WriteString(x + " AS " + col)
			}
		} else if len(replace) > 0 {
			p.WriteString("* REPLACE (" + strings.Join(replace, ", ") + ")")
		} else {
			p.WriteString("*")
		}
		p.WriteString(" FROM ")
		p.Name(n.Name)
	}
	p.WriteString("(")
	if n.Whole {
		// A public view (or a table with generated columns) of an anonymized query, computed
		// whole like a public subquery (ast.TableName.Whole).
		materialized(p, read)
	} else {
		read()
	}
	p.WriteString(")")
	if n.Alias != nil {
		p.WriteString(" ")
		p.Print(n.Alias)
	} else {
		p.WriteString(" AS ")
		p.Print(&ast.Ident{Name: n.Name[len(n.Name)-1].Name, Quoted: true})
	}
	return true
}

// signBlindFloat reports whether column c of relation n is a float (not a list or struct of
// them, nor an interval, whose '30 days' and '1 month' are different values to a sum) that
// the query reads only as the argument of aggregates that cannot tell a zero's or a NaN's
// sign (ast.TableName.SignBlind): it is read as stored, without NormaliseStored's CASE,
// which cost a fifth of the plain query's time on a sum over 10^7 rows (docs/benchmarks.md).
func signBlindFloat(n *ast.TableName, c ast.DeclaredColumn) bool {
	if !floatNames[strings.ToUpper(strings.TrimSpace(c.Type))] {
		return false
	}
	for _, name := range n.SignBlind {
		if name == c.Name {
			return true
		}
	}
	return false
}

// printClock prints a call that reads the clock with the query's instant instead
// (ast.FuncCall.Clock): now() and current_timestamp() as that TIMESTAMPTZ, current_date() as
// its date in the session's time zone (which is what current_date is), age(x) as the age at
// midnight of that date.
func printClock(p *ast.Printer, name string, n *ast.FuncCall) bool {
	instant := "CAST(" + ast.QuoteString(n.Clock) + " AS TIMESTAMP WITH TIME ZONE)"
	switch {
	case (name == "now" || name == "current_timestamp") && len(n.Args) == 0:
		p.WriteString(instant)
	case name == "current_date" && len(n.Args) == 0:
		p.WriteString("CAST(" + instant + " AS DATE)")
	case name == "age" && len(n.Args) == 1:
		p.WriteString("age(CAST(CAST(" + instant + " AS DATE) AS TIMESTAMP), ")
		p.Print(n.Args[0])
		p.WriteString(")")
	default:
		return false
	}
	return true
}

// pgIntervalUnit is one unit of an INTERVAL n UNIT (DAY, DAYS, QUARTER, CENTURIES, ...) as
// PostgreSQL's interval input reads it: "1 day", "3 months" for a quarter.
func pgIntervalUnit(unit string) string {
	u := strings.ToLower(unit)
	switch u {
	case "quarter", "quarters":
		return "3 months"
	case "millennia":
		return "1 millennium"
	case "centuries":
		return "1 century"
	}
	return "1 " + strings.TrimSuffix(u, "s")
}
