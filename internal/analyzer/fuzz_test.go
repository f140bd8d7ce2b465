package analyzer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/exec"
	"github.com/dpsql/dpsql/internal/parser"
	"github.com/dpsql/dpsql/internal/rewrite"
	"github.com/dpsql/dpsql/internal/sqlgen"
	"github.com/dpsql/dpsql/internal/testmode"
	"github.com/dpsql/dpsql/sqlerr"
)

// fuzzCatalog is testCatalog with the relations of the conformance files added, so that the
// seeds taken from those files get past name resolution.
func fuzzCatalog() *catalog.Catalog {
	rels := testCatalog().Relations()
	add := func(name string, kind catalog.Kind, unit string, cols ...string) {
		r := &catalog.Relation{Name: name, Kind: kind, PrivacyUnit: unit}
		for _, c := range cols {
			typ := "BIGINT"
			if n, t, ok := strings.Cut(c, " "); ok {
				c, typ = n, t
			}
			r.Columns = append(r.Columns, catalog.Column{Name: c, Type: typ})
		}
		rels = append(rels, r)
	}
	private, public := catalog.Private, catalog.Public
	add("visits", private, "uid", "uid", "page VARCHAR", "secs")
	add("buys", private, "uid", "uid", "item VARCHAR", "amount")
	add("accounts", private, "owner_id", "owner_id", "tier VARCHAR")
	add("Table1", private, "uid", "uid", "partition_key VARCHAR")
	add("Table2", private, "uid", "uid", "val DOUBLE")
	add("Employee", private, "uid", "uid", "dept VARCHAR")
	add("Order", private, "uid", "uid", "oid")
	add("orders", private, "uid", "uid", "item VARCHAR", "qty", "price DOUBLE", "day DATE", "note VARCHAR", "discount DOUBLE")
	add("s", private, "uid", "uid", "grp VARCHAR", "x DOUBLE")
	add("many", private, "uid", "uid", "grp VARCHAR")
	add("kk", private, "uid", "uid", "grp VARCHAR")
	add("people", private, "uid", "uid")
	add("pages", public, "", "page VARCHAR", "section VARCHAR")
	return catalog.New(rels...)
}

// conformanceQueries returns the SQL of every record of the conformance files.
func conformanceQueries(t testing.TB) []string {
	files, err := filepath.Glob("../conformance/testdata/*.test")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, block := range strings.Split(string(b), "\n\n") {
			lines := strings.Split(strings.TrimSpace(block), "\n")
			for len(lines) > 0 && strings.HasPrefix(lines[0], "#") {
				lines = lines[1:]
			}
			if len(lines) < 2 || !(strings.HasPrefix(lines[0], "query") || strings.HasPrefix(lines[0], "statement")) {
				continue
			}
			var sql []string
			for _, l := range lines[1:] {
				if l == "----" {
					break
				}
				sql = append(sql, l)
			}
			out = append(out, strings.Join(sql, "\n"))
		}
	}
	return out
}

// checkPositioned fails unless err is an *sqlerr.Error whose position is a valid place in src.
func checkPositioned(t *testing.T, stage, src string, err error) *sqlerr.Error {
	t.Helper()
	se, ok := sqlerr.As(err)
	if !ok {
		t.Fatalf("%s: %q: error is not an *sqlerr.Error: %v", stage, src, err)
	}
	if se.Code == "" {
		t.Fatalf("%s: %q: error without a SQLSTATE: %v", stage, src, err)
	}
	if !se.Pos.IsValid() || se.Pos.Offset > len(src) || sqlerr.PosAt(src, se.Pos.Offset) != se.Pos {
		t.Fatalf("%s: %q: bad error position %+v: %v", stage, src, se.Pos, err)
	}
	if se.Rule != "" && se.Hint == "" {
		t.Fatalf("%s: %q: privacy refusal without a hint: %v", stage, src, err)
	}
	_ = sqlerr.Render(err, src)
	return se
}

// readsOnlyPublic reports the first relation a query accepted as public reads that is not
// public in cat. Names defined as CTEs anywhere in the query are skipped (a CTE may shadow a
// relation); FuzzEngine checks the same property by construction, without this shortcut.
func readsOnlyPublic(q *ast.Query, cat *catalog.Catalog) (string, bool) {
	ctes := map[string]bool{}
	ast.Walk(q, func(n ast.Node) bool {
		if c, ok := n.(*ast.CTE); ok {
			ctes[strings.ToLower(c.Name.Name)] = true
		}
		return true
	})
	bad := ""
	ast.Walk(q, func(n ast.Node) bool {
		t, ok := n.(*ast.TableName)
		if !ok || bad != "" {
			return bad == ""
		}
		var parts []string
		for _, id := range t.Name {
			parts = append(parts, id.Name)
		}
		name := strings.Join(parts, ".")
		if len(parts) == 1 && ctes[strings.ToLower(name)] {
			return true
		}
		if rel, ok := cat.Lookup(name); !ok || rel.Kind != catalog.Public {
			bad = name
		}
		return true
	})
	return bad, bad == ""
}

// FuzzAnalyze parses and analyzes arbitrary text against a fixed catalog: nothing panics or
// hangs, every error is a positioned *sqlerr.Error, a query accepted as public reads public
// relations only, and an accepted anonymized query can be rewritten and printed as stage SQL
// for both dialects.
func FuzzAnalyze(f *testing.F) {
	for _, file := range []string{"testdata/refuse.sql", "testdata/accept.sql"} {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, c := range strings.Split(string(b), "\n----\n") {
			f.Add(strings.TrimSpace(c))
		}
	}
	for _, q := range conformanceQueries(f) {
		f.Add(q)
	}
	cat := fuzzCatalog()
	f.Fuzz(func(t *testing.T, src string) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			analyzeOne(t, cat, src)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%q: analysis took more than 10s", src)
		}
	})
}

func analyzeOne(t *testing.T, cat *catalog.Catalog, src string) {
	q, err := parser.ParseQuery(src)
	if err != nil {
		checkPositioned(t, "parse", src, err)
		return
	}
	an, err := analyzer.Analyze(q, cat)
	if err != nil {
		se := checkPositioned(t, "analyze", src, err)
		if se.Code == sqlerr.InternalError {
			t.Fatalf("%q: internal error: %v", src, err)
		}
		return
	}
	switch a := an.(type) {
	case *analyzer.PublicQuery:
		if name, ok := readsOnlyPublic(a.Query, cat); !ok {
			t.Fatalf("%q: accepted as a public query but reads %s", src, name)
		}
		_ = sqlgen.Print(backend.DuckDB, a.Query)
		_ = sqlgen.Print(backend.Postgres, a.Query)
	case *analyzer.Query:
		if a.Unit == nil {
			t.Fatalf("%q: anonymized query without a privacy unit", src)
		}
		for _, d := range []backend.Dialect{backend.DuckDB, backend.Postgres} {
			p, err := rewrite.Rewrite(a)
			if err != nil {
				checkPositioned(t, "rewrite", src, err)
				return
			}
			// Mechanisms may refuse parameters they cannot represent (the engine turns that
			// into a positioned error); they must not panic.
			if prep, err := exec.Prepare(p, testmode.Noiseless{}, d); err == nil {
				_ = prep.StageSQL
			}
		}
	case *analyzer.Nested:
		for _, part := range a.Parts {
			if part.Query.Unit == nil {
				t.Fatalf("%q: anonymized part without a privacy unit", src)
			}
		}
		if a.Anon != nil && a.Anon.Unit == nil {
			t.Fatalf("%q: anonymized query without a privacy unit", src)
		}
	default:
		t.Fatalf("%q: unexpected analysis %T", src, an)
	}
}
