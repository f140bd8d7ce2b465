package sqlgen

import (
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/ast"
)

// A view is read through a projection to its declared types on DuckDB only: DuckDB binds a
// view's query again at every read, PostgreSQL fixes a view's types when it is created.
func TestDeclaredViewProjection(t *testing.T) {
	view := func(alias *ast.TableAlias) *ast.TableName {
		return &ast.TableName{
			Name:  []*ast.Ident{{Name: "v", Quoted: true}},
			Alias: alias,
			Declared: []ast.DeclaredColumn{
				{Name: "uid", Type: "BIGINT"}, {Name: "Diag nosis", Type: "ENUM('flu', 'Cold')"},
			},
		}
	}
	const proj = `(SELECT CASE WHEN typeof("uid") = 'BIGINT' THEN "uid" ELSE TRY(TRY_CAST("uid" AS BIGINT)) END AS "uid", ` +
		`CASE WHEN typeof("Diag nosis") = 'ENUM(''flu'', ''Cold'')' THEN "Diag nosis" ELSE TRY(TRY_CAST("Diag nosis" AS ENUM('flu', 'Cold'))) END AS "Diag nosis" FROM "v")`
	cases := []struct {
		name string
		d    backend.Dialect
		n    *ast.TableName
		want string
	}{
		{"duckdb view", backend.DuckDB, view(nil), proj + ` AS "v"`},
		{"duckdb view with alias", backend.DuckDB, view(&ast.TableAlias{Name: &ast.Ident{Name: "x"}}), proj + ` AS x`},
		{"duckdb view with column aliases", backend.DuckDB,
			view(&ast.TableAlias{Name: &ast.Ident{Name: "x"}, Columns: []*ast.Ident{{Name: "a"}, {Name: "b"}}}), proj + ` AS x (a, b)`},
		{"duckdb table", backend.DuckDB, &ast.TableName{Name: []*ast.Ident{{Name: "t", Quoted: true}}}, `"t"`},
		{"postgres view", backend.Postgres, view(nil), `"v"`},
	}
	for _, c := range cases {
		for _, pr := range []func(backend.Dialect, ast.Node) string{Print, PrintData} {
			if got := pr(c.d, c.n); got != c.want {
				t.Errorf("%s: got\n%s\nwant\n%s", c.name, got, c.want)
			}
		}
	}
}
