package engine_test

import (
	"context"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/internal/parser"
	"github.com/dpsql/dpsql/internal/testmode"
	"github.com/dpsql/dpsql/sqlerr"
)

// marker is in every value of the private and hidden relations of the fuzzing database "A";
// no public relation holds it. The twin database "B" has the same schema and public data
// but other private values.
const marker = "98765432"

// fuzzSetup is the owner's script, with %s for the private values: a hidden table, a private
// view over it, a private table and two public tables.
const fuzzSetup = `
CREATE TABLE raw_visits AS
  SELECT * FROM (VALUES (%[1]s1, 'home', %[1]s1, 'p%[1]s1'), (%[1]s1, 'cart', %[1]s2, 'p%[1]s2'),
    (%[1]s2, 'home', %[1]s3, 'p%[1]s3'), (%[1]s3, 'help', %[1]s4, 'p%[1]s4')) AS t(uid, page, secs, note);
CREATE VIEW visits OPTIONS(anonymization_userid_column='uid') AS SELECT * FROM raw_visits;
CREATE TABLE buys OPTIONS(anonymization_userid_column='uid') AS
  SELECT * FROM (VALUES (%[1]s1, 'pen', %[1]s5), (%[1]s2, 'pen', %[1]s6), (%[1]s4, 'ruler', %[1]s7)) AS t(uid, item, amount);
CREATE TABLE items OPTIONS(public=TRUE) AS
  SELECT * FROM (VALUES ('pen', 'writing', 2), ('ruler', 'measuring', 3), ('eraser', 'writing', 1)) AS t(item, category, price);
CREATE TABLE pages OPTIONS(public=TRUE) AS
  SELECT * FROM (VALUES ('home', 'main'), ('cart', 'shop'), ('help', 'main')) AS t(page, section);
SET BUDGET UNLIMITED;
`

// fuzzEngines holds the two analyst engines, opened once per process: opening DuckDB for
// every input would make fuzzing a hundred times slower, and analysts cannot change the
// databases (the budget is unlimited, so the ledger never refuses).
type fuzzEngines struct {
	once sync.Once
	mu   sync.Mutex
	a, b *engine.Engine
	err  error
}

var engines fuzzEngines

func openAnalyst(ctx context.Context, private string) (*engine.Engine, error) {
	db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner, Threads: 1})
	if err != nil {
		return nil, err
	}
	e, err := engine.New(ctx, engine.Options{Backend: db, Mechanisms: testmode.Noiseless{}, Owner: true,
		StatementTimeout: 5 * time.Second})
	if err != nil {
		db.Close()
		return nil, err
	}
	if _, err := e.Exec(ctx, fmt.Sprintf(fuzzSetup, private)); err != nil {
		e.Close()
		return nil, err
	}
	if err := e.BecomeAnalyst(ctx); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

func (f *fuzzEngines) get(t testing.TB) (*engine.Engine, *engine.Engine) {
	f.once.Do(func() {
		ctx := context.Background()
		if f.a, f.err = openAnalyst(ctx, marker); f.err != nil {
			return
		}
		f.b, f.err = openAnalyst(ctx, "55500")
	})
	if f.err != nil {
		t.Fatal(f.err)
	}
	return f.a, f.b
}

// isAnonymized reports whether a statement's text is an anonymized query (or its EXPLAIN),
// by parsing it again.
func isAnonymized(text string) bool {
	stmts, err := parser.Parse(text)
	if err != nil || len(stmts) != 1 {
		return false
	}
	var q *ast.Query
	switch s := stmts[0].(type) {
	case *ast.QueryStmt:
		q = s.Query
	case *ast.ExplainStmt:
		q = s.Query
	default:
		return false
	}
	sel, ok := q.Body.(*ast.Select)
	return ok && sel.Anon != nil
}

func isShowBudget(text string) bool {
	stmts, err := parser.Parse(text)
	if err != nil || len(stmts) != 1 {
		return false
	}
	s, ok := stmts[0].(*ast.ShowStmt)
	return ok && strings.EqualFold(s.What, "BUDGET")
}

func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case *big.Int:
		return x.String()
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}

func render(r *engine.Result) string {
	var b strings.Builder
	for _, c := range r.Columns {
		b.WriteString(c.Name + " " + c.Type + "|")
	}
	b.WriteString("\n")
	for _, row := range r.Rows {
		for _, v := range row {
			b.WriteString(cell(v) + "|")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// run executes src on e with a deadline; the watchdog catches an engine that does not
// honour its context.
func run(t *testing.T, e *engine.Engine, src string) ([]*engine.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type out struct {
		res []*engine.Result
		err error
	}
	ch := make(chan out, 1)
	go func() {
		res, err := e.Exec(ctx, src)
		ch <- out{res, err}
	}()
	select {
	case o := <-ch:
		return o.res, o.err
	case <-time.After(30 * time.Second):
		t.Fatalf("%q: Exec ignored its 10s deadline", src)
		return nil, nil
	}
}

func checkError(t *testing.T, src string, err error) *sqlerr.Error {
	t.Helper()
	se, ok := sqlerr.As(err)
	if !ok {
		t.Fatalf("%q: error is not an *sqlerr.Error: %v", src, err)
	}
	if se.Pos.IsValid() && (se.Pos.Offset > len(src) || sqlerr.PosAt(src, se.Pos.Offset) != se.Pos) {
		t.Fatalf("%q: error position %+v is not in the input: %v", src, se.Pos, err)
	}
	return se
}

// FuzzEngine runs arbitrary text as an analyst on two databases that differ only in their
// private and hidden data. Nothing may panic or hang, every error is an *sqlerr.Error, and a
// statement that is not an anonymized query must never see private data: no value of its
// result holds the marker of database A's private values, and its result (or its failure)
// is the same on both databases.
func FuzzEngine(f *testing.F) {
	for _, s := range []string{
		"SELECT * FROM items",
		"SELECT * FROM visits",
		"SELECT * FROM raw_visits",
		"SELECT i.category, COUNT(*) FROM items i JOIN pages p ON p.page = i.item GROUP BY 1",
		"SHOW TABLES",
		"SELECT 1; SELECT 2",
		"EXPLAIN SELECT * FROM items",
		"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=0.99999, kappa=2) page, ANON_COUNT(*), ANON_SUM(secs CLAMPED BETWEEN 0 AND 100) FROM visits GROUP BY page",
		"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=0.99999, kappa=2) note, ANON_COUNT(DISTINCT uid) AS n FROM visits GROUP BY note ORDER BY n LIMIT 2",
		"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=0.99999, kappa=2) i.category, ANON_SUM(b.amount) FROM buys b JOIN items i USING (item) GROUP BY i.category",
		"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=0.99999, kappa=2) v.page, ANON_AVG(b.amount, 0, 10) FROM visits v JOIN buys b USING (uid) GROUP BY v.page",
		"SELECT page FROM pages WHERE page IN (SELECT page FROM visits)",
		"WITH v AS (SELECT * FROM pages) SELECT * FROM v",
	} {
		f.Add(s)
	}
	files, _ := filepath.Glob("../conformance/testdata/*.test")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, block := range strings.Split(string(b), "\n\n") {
			lines := strings.Split(strings.TrimSpace(block), "\n")
			for len(lines) > 0 && strings.HasPrefix(lines[0], "#") {
				lines = lines[1:]
			}
			if len(lines) < 2 || !strings.HasPrefix(lines[0], "query") {
				continue
			}
			sql, _, _ := strings.Cut(strings.Join(lines[1:], "\n"), "\n----")
			f.Add(sql)
		}
	}
	f.Fuzz(func(t *testing.T, src string) {
		ea, eb := engines.get(t)
		engines.mu.Lock()
		defer engines.mu.Unlock()
		resA, errA := run(t, ea, src)
		resB, errB := run(t, eb, src)
		var seA, seB *sqlerr.Error
		if errA != nil {
			seA = checkError(t, src, errA)
		}
		if errB != nil {
			seB = checkError(t, src, errB)
		}
		// Results of statements that are not anonymized queries.
		literal := strings.Contains(src, marker)
		for i, r := range resA {
			if isAnonymized(r.Statement) {
				continue
			}
			if !literal {
				for _, row := range r.Rows {
					for _, v := range row {
						if strings.Contains(cell(v), marker) {
							t.Fatalf("%q: statement %q, not anonymized, returned private value %v", src, r.Statement, v)
						}
					}
				}
			}
			if isShowBudget(r.Statement) {
				// The ledger, not the data (and it may differ: whether an anonymized query
				// is charged can depend on the data, see below).
				continue
			}
			if i < len(resB) && render(r) != render(resB[i]) {
				t.Fatalf("%q: statement %q, not anonymized, differs between databases with different private data:\n%s\nvs\n%s",
					src, r.Statement, render(r), render(resB[i]))
			}
		}
		// A statement that fails on one database only must be an anonymized query (its
		// failure may depend on the data, e.g. implicit bounds without enough data).
		if len(resA) != len(resB) || (errA == nil) != (errB == nil) || (seA != nil && seB != nil && seA.Code != seB.Code) {
			stmts, err := parser.Parse(src)
			n := min(len(resA), len(resB))
			if err != nil || n >= len(stmts) {
				t.Fatalf("%q: outcomes differ between the databases: %v / %v", src, errA, errB)
			}
			if text := src[stmts[n].Span().Start.Offset:stmts[n].Span().End.Offset]; !isAnonymized(text) {
				t.Fatalf("%q: statement %q, not anonymized, has an outcome that depends on private data: %v / %v",
					src, text, errA, errB)
			}
		}
	})
}
