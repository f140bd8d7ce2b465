package exec_test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/exec"
	"github.com/dpsql/dpsql/internal/testmode"
)

// counting counts the statistics queries (sqlgen.ShapeStats) sent to a backend.
type counting struct {
	backend.Backend
	samples int
}

func (c *counting) Query(ctx context.Context, sql string, args ...any) (*backend.Rows, error) {
	if strings.Contains(sql, "% 64 = 0") {
		c.samples++
	}
	return c.Backend.Query(ctx, sql, args...)
}

// hardRows: every row of 10000 units in a random one of 1000 keys (the prefilter's shape);
// easyRows: each unit's rows in at most 2 keys (the window's), plus unit 0 in 40 keys.
const (
	hardRows = `SELECT i % 10000 AS uid, CAST(hash(i) % 1000 AS INTEGER) AS k, CAST(i % 97 AS DOUBLE) AS v FROM range(100000) r(i)`
	easyRows = `SELECT i % 10000 AS uid, CAST(hash(i % 10000, i % 2) % 10 AS INTEGER) AS k, CAST(i % 97 AS DOUBLE) AS v FROM range(100000) r(i)
		UNION ALL SELECT 0, i, 100 FROM range(40) r(i)`
)

// runShaped runs query on a new database holding rows as t, with the given cache and seed,
// and returns the released rows (sorted) and whether the stage used the window form.
func runShaped(t *testing.T, rows, query string, shapes *exec.ShapeCache, seed int64) (out []string, window bool, samples int) {
	t.Helper()
	ctx := context.Background()
	db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Exec(ctx, "CREATE TABLE t AS "+rows); err != nil {
		t.Fatal(err)
	}
	rel := &catalog.Relation{Name: "t", Kind: catalog.Private, PrivacyUnit: "uid",
		Columns: []catalog.Column{{Name: "uid"}, {Name: "k"}, {Name: "v"}}}
	p := planFor(t, query, rel)
	p.Seed = seed
	pr, err := exec.Prepare(p, testmode.Noiseless{}, backend.DuckDB)
	if err != nil {
		t.Fatal(err)
	}
	pr.Shapes = shapes
	b := &counting{Backend: db}
	res, err := pr.Run(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rows {
		out = append(out, fmt.Sprint(r...))
	}
	sort.Strings(out)
	return out, p.Window, b.samples
}

const shapeQuery = `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=4) k, ANON_SUM(v CLAMPED BETWEEN 0 AND 100) AS s, ANON_COUNT(*) AS n FROM t GROUP BY k`

// TestShapeCacheReusesTheDecision: the second query of a session with the same statistics
// query reads no sample; another filter samples again, and so does a cleared cache.
func TestShapeCacheReusesTheDecision(t *testing.T) {
	shapes := exec.NewShapeCache()
	if _, _, n := runShaped(t, hardRows, shapeQuery, shapes, 1); n != 1 {
		t.Fatalf("first query read %d samples, want 1", n)
	}
	if _, _, n := runShaped(t, hardRows, shapeQuery, shapes, 2); n != 0 {
		t.Errorf("the same query again read %d samples, want 0", n)
	}
	other := strings.Replace(shapeQuery, "FROM t", "FROM t WHERE v > 3", 1)
	if _, _, n := runShaped(t, hardRows, other, shapes, 3); n != 1 {
		t.Errorf("another filter read %d samples, want 1", n)
	}
	shapes.Clear()
	if _, _, n := runShaped(t, hardRows, shapeQuery, shapes, 4); n != 1 {
		t.Errorf("after Clear: %d samples, want 1", n)
	}
	if _, _, n := runShaped(t, hardRows, shapeQuery, nil, 5); n != 1 {
		t.Errorf("without a cache: %d samples, want 1", n)
	}
}

// TestShapeCacheStaleDecisionSameRelease: a decision remembered from other data (here the
// opposite one: the prefilter, taken on the hard shape, used on data where the sample would
// choose the window) changes only the form of the stage, never what is released: the same
// seed gives the same exact rows either way, crafted unit 0 (40 keys, kappa 4) included.
func TestShapeCacheStaleDecisionSameRelease(t *testing.T) {
	fresh, freshWindow, _ := runShaped(t, easyRows, shapeQuery, exec.NewShapeCache(), 7)
	stale := exec.NewShapeCache()
	if _, w, _ := runShaped(t, hardRows, shapeQuery, stale, 1); w {
		t.Fatal("the hard shape chose the window form; the test needs the prefilter there")
	}
	got, gotWindow, n := runShaped(t, easyRows, shapeQuery, stale, 7)
	if !freshWindow || gotWindow || n != 0 {
		t.Fatalf("forms: fresh window %v, stale window %v (%d samples); want true, false, 0", freshWindow, gotWindow, n)
	}
	if len(fresh) == 0 || !reflect.DeepEqual(got, fresh) {
		t.Errorf("released rows differ with a stale decision:\n%v\nwant\n%v", got, fresh)
	}
}
