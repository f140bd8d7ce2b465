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
ALTER VIEW visits ALTER COLUMN page SET OPTIONS(public_domain = pages.page);
SET BUDGET UNLIMITED;
`

// neighbourSecret is in the note of the one user that the neighbour database "N" adds to "A"
// (neighbourRows); no other value holds it.
const neighbourSecret = "secret31337"

// neighbourRows add to A's data one crafted user, 77, in every private relation.
const neighbourRows = `
INSERT INTO raw_visits VALUES (77, 'home', 77, '` + neighbourSecret + `'), (77, 'cart', 78, '` + neighbourSecret + `');
INSERT INTO buys VALUES (77, 'ruler', 79);
`

// fuzzEngines holds the two analyst engines, opened once per process: opening DuckDB for
// every input would make fuzzing a hundred times slower, and analysts cannot change the
// databases (the budget is unlimited, so the ledger never refuses).
type fuzzEngines struct {
	once    sync.Once
	mu      sync.Mutex
	a, b, n *engine.Engine
	err     error
}

var engines fuzzEngines

func openAnalyst(ctx context.Context, private, extra string) (*engine.Engine, error) {
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
	if _, err := e.Exec(ctx, fmt.Sprintf(fuzzSetup, private)+extra); err != nil {
		e.Close()
		return nil, err
	}
	if err := e.BecomeAnalyst(ctx); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

func (f *fuzzEngines) get(t testing.TB) (a, b, n *engine.Engine) {
	f.once.Do(func() {
		ctx := context.Background()
		if f.a, f.err = openAnalyst(ctx, marker, ""); f.err != nil {
			return
		}
		if f.b, f.err = openAnalyst(ctx, "55500", ""); f.err != nil {
			return
		}
		f.n, f.err = openAnalyst(ctx, marker, neighbourRows)
	})
	if f.err != nil {
		t.Fatal(f.err)
	}
	return f.a, f.b, f.n
}

// anonClause parses a statement's text again and returns its anonymization clause: nil
// unless it is an anonymized query (or its EXPLAIN).
func anonClause(text string) *ast.AnonClause {
	stmts, err := parser.Parse(text)
	if err != nil || len(stmts) != 1 {
		return nil
	}
	var q *ast.Query
	switch s := stmts[0].(type) {
	case *ast.QueryStmt:
		q = s.Query
	case *ast.ExplainStmt:
		q = s.Query
	default:
		return nil
	}
	if sel, ok := q.Body.(*ast.Select); ok {
		return sel.Anon
	}
	return nil
}

// isAnonymized reports whether a statement's text is an anonymized query (or its EXPLAIN).
func isAnonymized(text string) bool { return anonClause(text) != nil }

// smallDelta reports whether text is an anonymized query whose options make the release of a
// group of one unit improbable: a literal delta of at most 1e-3 and no k_threshold (whose tau
// may be as low as 1). In noiseless mode such a group is then never released, so a released
// value holding the neighbour's secret is a leak.
func smallDelta(text string) bool {
	anon := anonClause(text)
	if anon == nil {
		return false
	}
	small := false
	for _, o := range anon.Options {
		name := strings.ToLower(o.Name.Name)
		switch name {
		case "k_threshold", "min_privacy_units_per_group":
			return false
		case "delta":
			lit, ok := o.Value.(*ast.Literal)
			var d float64
			if !ok || (lit.Kind != ast.IntLit && lit.Kind != ast.FloatLit) {
				return false
			}
			if _, err := fmt.Sscan(lit.Text, &d); err != nil || d > 1e-3 {
				return false
			}
			small = true
		}
	}
	return small
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

// shadowSeeds generates queries whose CTEs are named like what the engine resolves or
// generates itself: the catalog's relations (private, hidden, public, and pages, the public
// domain of visits.page) and the relations of the generated stage SQL. Each CTE holds private
// rows with their notes in every column a query may group by, so a query that reads the CTE
// where the engine meant its own relation releases the notes.
func shadowSeeds() []string {
	const body = `(SELECT uid, note AS page, note AS item, note AS section, note AS category, secs, secs AS amount FROM visits)`
	const anon = "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=1e-6, kappa=2)"
	var seeds []string
	for _, name := range []string{"pages", "items", "visits", "buys", "raw_visits",
		"_dp_rows", "_dp_per_unit", "_dp_bounded", "_dp_hashed", "_dp_lists", "_dp_m1", "_dp_kept", "_dp_pairs", "_dp_heavy",
		"_dp_domain", "_dp_groups", "_dp_values", "_dp_release", "_dp_ranked", "_dp_leaves"} {
		with := "WITH " + name + " AS " + body + " "
		seeds = append(seeds,
			with+anon+" page, ANON_COUNT(*) AS n FROM visits GROUP BY page",
			with+anon+" p.section, ANON_COUNT(*) AS n FROM visits v JOIN pages p USING (page) GROUP BY p.section",
			with+anon+" i.category, ANON_SUM(b.amount CLAMPED BETWEEN 0 AND 10) AS s FROM buys b JOIN items i USING (item) GROUP BY i.category",
			with+anon+" page, ANON_MEDIAN(secs CLAMPED BETWEEN 0 AND 100) AS m FROM visits GROUP BY page",
			with+"SELECT * FROM pages",
		)
	}
	return seeds
}

// duplicateNameSeeds generates private subqueries with two output columns of one name, the
// privacy unit's among them, or named like the stage's generated columns: the analyzer and
// the database must not bind the name to different columns.
func duplicateNameSeeds() []string {
	const anon = "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=1e-6, kappa=2)"
	return []string{
		anon + " t.note, ANON_COUNT(*) AS n FROM (SELECT a.page || b.page AS uid, visits.* FROM visits, pages a, pages b) t GROUP BY t.note",
		anon + " t.note, ANON_COUNT(*) AS n FROM (SELECT a.page || b.page AS x, visits.* FROM visits, pages a, pages b) AS t(uid) GROUP BY t.note",
		"WITH t AS (SELECT a.page || b.page AS uid, visits.* FROM visits, pages a, pages b) " + anon + " t.note, ANON_COUNT(*) AS n FROM t GROUP BY t.note",
		anon + " t.note, ANON_COUNT(*) AS n FROM (SELECT visits.*, a.page || b.page AS uid FROM visits, pages a, pages b) t GROUP BY t.note",
		anon + " t.note, ANON_COUNT(*) AS n FROM (SELECT a.page || b.page AS _dp_uid, visits.* FROM visits, pages a, pages b) t GROUP BY t.note",
		anon + " t.note, ANON_COUNT(*) AS n FROM (SELECT uid, a.page || b.page AS _dp_k0, note FROM visits, pages a, pages b) t GROUP BY t.note",
		anon + " t.note, ANON_COUNT(*) AS n FROM (SELECT visits.*, visits.* FROM visits) t GROUP BY t.note",
		anon + " t.page, ANON_COUNT(*) AS n FROM (SELECT uid, note AS page, page FROM visits) t GROUP BY t.page",
		anon + " t.note, ANON_SUM(t.amount CLAMPED BETWEEN 0 AND 100) AS s FROM (SELECT b.item || a.page AS uid, b.*, v.note FROM buys b JOIN visits v USING (uid), pages a) t GROUP BY t.note",
	}
}

// FuzzEngine runs arbitrary text as an analyst on three databases: B differs from A only in
// its private and hidden data, and N is A with one more, crafted user (neighbourRows).
// Nothing may panic or hang, every error is an *sqlerr.Error, and:
//
//   - a statement that is not an anonymized query must never see private data: no value of
//     its result holds the marker of database A's private values, and its result (or its
//     failure) is the same on all three databases;
//   - neighbours end the same way: every statement succeeds on A and N, or fails on both
//     with the same SQLSTATE (except 2P002, the documented failure of implicit bounds with
//     too few data, which is charged);
//   - nothing N shows holds the crafted user's secret: no error message, no result of a
//     statement that is not an anonymized query, and no release of an anonymized query
//     whose options keep groups of one unit unreleased (smallDelta).
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
	for _, s := range append(shadowSeeds(), duplicateNameSeeds()...) {
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
		ea, eb, en := engines.get(t)
		engines.mu.Lock()
		defer engines.mu.Unlock()
		resA, errA := run(t, ea, src)
		resB, errB := run(t, eb, src)
		resN, errN := run(t, en, src)
		var seA, seB, seN *sqlerr.Error
		if errA != nil {
			seA = checkError(t, src, errA)
		}
		if errB != nil {
			seB = checkError(t, src, errB)
		}
		if errN != nil {
			seN = checkError(t, src, errN)
		}
		checkNeighbour(t, src, resA, resN, seA, seN)
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

// checkNeighbour checks the properties of FuzzEngine between A and its neighbour N.
func checkNeighbour(t *testing.T, src string, resA, resN []*engine.Result, seA, seN *sqlerr.Error) {
	t.Helper()
	literal := strings.Contains(strings.ToLower(src), neighbourSecret)
	if !literal && seN != nil && strings.Contains(seN.Msg+seN.Hint, neighbourSecret) {
		t.Fatalf("%q: an error shows the neighbour's secret: %v", src, seN)
	}
	for i, r := range resN {
		anonymized := isAnonymized(r.Statement)
		if !literal && (!anonymized || smallDelta(r.Statement)) {
			for _, row := range r.Rows {
				for _, v := range row {
					if strings.Contains(cell(v), neighbourSecret) {
						t.Fatalf("%q: statement %q released the neighbour's secret %v:\n%s", src, r.Statement, v, render(r))
					}
				}
			}
		}
		if !anonymized && !isShowBudget(r.Statement) && i < len(resA) && render(r) != render(resA[i]) {
			t.Fatalf("%q: statement %q, not anonymized, differs with one more user:\n%s\nvs\n%s",
				src, r.Statement, render(resA[i]), render(r))
		}
	}
	insufficient := func(se *sqlerr.Error) bool { return se != nil && se.Code == sqlerr.InsufficientData }
	if insufficient(seA) || insufficient(seN) {
		return
	}
	codeA, codeN := "", ""
	if seA != nil {
		codeA = seA.Code
	}
	if seN != nil {
		codeN = seN.Code
	}
	if len(resA) != len(resN) || codeA != codeN {
		t.Fatalf("%q: the outcome depends on one user: %d statements then %v without it, %d then %v with it",
			src, len(resA), seA, len(resN), seN)
	}
}
