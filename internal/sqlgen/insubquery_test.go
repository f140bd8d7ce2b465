package sqlgen_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/parser"
	"github.com/dpsql/dpsql/internal/sqlgen"
)

// TestInSubqueryThreeValued: on DuckDB, x [NOT] IN (query) over data is printed without TRY
// around the subquery (which DuckDB refuses) as CASE over two EXISTS; its value must be IN's
// own, NULLs included, for every kind of x and of the query's rows.
func TestInSubqueryThreeValued(t *testing.T) {
	ctx := context.Background()
	db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sets := []string{
		"SELECT 1 WHERE false", "SELECT 1", "SELECT 2", "SELECT NULL::INTEGER",
		"SELECT 2 UNION ALL SELECT NULL", "SELECT 1 UNION ALL SELECT NULL", "SELECT NULL UNION ALL SELECT 3",
	}
	for _, x := range []string{"1", "NULL::INTEGER", "CAST(1 AS BIGINT)", "CAST('1' AS VARCHAR)"} {
		for _, set := range sets {
			for _, not := range []string{"", "NOT "} {
				expr := fmt.Sprintf("%s %sIN (%s)", x, not, set)
				q, err := parser.ParseQuery("SELECT " + expr)
				if err != nil {
					t.Fatal(err)
				}
				in := q.Body.(*ast.Select).Items[0].Expr
				printed := sqlgen.PrintData(backend.DuckDB, in)
				value := func(sql string) string {
					rows, err := db.Query(ctx, "SELECT "+sql)
					if err != nil {
						return "error"
					}
					return fmt.Sprint(rows.Values[0][0])
				}
				// Where DuckDB's IN refuses to compare the types, the printed form compares them
				// as a join's ON does (a value that does not convert is not equal).
				if want, got := value(expr), value(printed); want != "error" && got != want || got == "error" {
					t.Errorf("%s is %s, printed as %s it is %s", expr, want, printed, got)
				}
			}
		}
	}
}
