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
	"github.com/dpsql/dpsql/internal/plan"
	"github.com/dpsql/dpsql/internal/sqlgen"
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
// easyRows: each unit's rows in at most 2 keys (aggregate first), plus unit 0 in 40 keys.
const (
	hardRows = `SELECT i % 10000 AS uid, CAST(hash(i) % 1000 AS INTEGER) AS k, CAST(i % 97 AS DOUBLE) AS v FROM range(100000) r(i)`
	easyRows = `SELECT i % 10000 AS uid, CAST(hash(i % 10000, i % 2) % 10 AS INTEGER) AS k, CAST(i % 97 AS DOUBLE) AS v FROM range(100000) r(i)
		UNION ALL SELECT 0, i, 100 FROM range(40) r(i)`
)

// runShaped runs query on a new database holding rows as t, with the given cache and seed,
// and returns the released rows (sorted) and whether the stage aggregated first.
func runShaped(t *testing.T, rows, query string, shapes *exec.ShapeCache, seed int64) (out []string, first bool, samples int) {
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
	return out, p.AggregateFirst, b.samples
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
// aggregate first) changes only the form of the stage, never what is released: the same
// seed gives the same exact rows either way, crafted unit 0 (40 keys, kappa 4) included.
func TestShapeCacheStaleDecisionSameRelease(t *testing.T) {
	fresh, freshFirst, _ := runShaped(t, easyRows, shapeQuery, exec.NewShapeCache(), 7)
	stale := exec.NewShapeCache()
	if _, w, _ := runShaped(t, hardRows, shapeQuery, stale, 1); w {
		t.Fatal("the hard shape chose to aggregate first; the test needs the prefilter there")
	}
	got, gotFirst, n := runShaped(t, easyRows, shapeQuery, stale, 7)
	if !freshFirst || gotFirst || n != 0 {
		t.Fatalf("forms: fresh aggregate first %v, stale %v (%d samples); want true, false, 0", freshFirst, gotFirst, n)
	}
	if len(fresh) == 0 || !reflect.DeepEqual(got, fresh) {
		t.Errorf("released rows differ with a stale decision:\n%v\nwant\n%v", got, fresh)
	}
}

// TestBoundingFormsAgree runs queries with DuckDB's forms of contribution bounding, the
// prefilter (ranking the rows in a window) and aggregate-first (plan.Plan.AggregateFirst),
// under several seeds and checks
// that they release the same exact rows (the executor picks the form from statistics of all
// units' data, so a unit's contribution must not depend on it), and that neither lets a unit
// into more than kappa groups. The data mixes units within kappa, units over it, units with
// exactly kappa groups, repeated (unit, group) rows, NULL keys and NULL values; the queries
// cover explicit and implicit bounds (the binned stage), per-row aggregates and two keys.
func TestBoundingFormsAgree(t *testing.T) {
	ctx := context.Background()
	db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Units 0-299: 1 to 3 groups, 5 rows each on average; 300-499: 10 groups; 500-599: exactly
	// 4 groups (kappa) with repeats; unit 7 also in 40 groups.
	if err := db.Exec(ctx, `CREATE TABLE t AS
		SELECT i % 300 AS uid, CASE WHEN i % 53 = 0 THEN NULL ELSE 'k' || (hash(i % 300, i % (1 + i % 3)) % 12) END AS k,
			CAST(i % 2 AS INTEGER) AS j, CASE WHEN i % 17 = 0 THEN NULL ELSE CAST(i % 97 AS DOUBLE) END AS v FROM range(1500) r(i)
		UNION ALL SELECT 300 + i % 200, 'k' || (hash(i) % 12), CAST(i % 2 AS INTEGER), CAST(i % 41 AS DOUBLE) FROM range(2000) r(i)
		UNION ALL SELECT 500 + i % 100, 'k' || ((i // 100) % 4), 0, CAST(i % 7 AS DOUBLE) FROM range(1200) r(i)
		UNION ALL SELECT 7, 'k' || i, 1, 100 FROM range(40) r(i)`); err != nil {
		t.Fatal(err)
	}
	rel := &catalog.Relation{Name: "t", Kind: catalog.Private, PrivacyUnit: "uid",
		Columns: []catalog.Column{{Name: "uid"}, {Name: "k"}, {Name: "j"}, {Name: "v"}}}
	const opts = "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=4)"
	for _, query := range []string{
		opts + " k, ANON_SUM(v CLAMPED BETWEEN 0 AND 100) AS s, ANON_COUNT(*) AS n FROM t GROUP BY k",
		opts + " k, j, ANON_AVG(v CLAMPED BETWEEN 0 AND 50) AS a, ANON_COUNT(v CLAMPED BETWEEN 0 AND 3) AS c FROM t GROUP BY k, j",
		opts + " k, ANON_VAR_POP(v CLAMPED BETWEEN 0 AND 50) AS var, ANON_MEDIAN(v CLAMPED BETWEEN 0 AND 100) AS m FROM t GROUP BY k",
		opts + " k, ANON_SUM(v) AS s, ANON_AVG(v) AS a FROM t WHERE j = 0 GROUP BY k",
		strings.Replace(opts, "kappa=4", "kappa=1", 1) + " k, ANON_COUNT(*) AS n FROM t GROUP BY k",
	} {
		for _, seed := range []int64{1, -2, 77777777777, -9223372036854775807} {
			forms := []bool{false, true} // aggregate first
			released := make([][]string, len(forms))
			for i, first := range forms {
				p, pr := checkedPrepare(t, db, query, rel, seed) // the statistics query follows the types
				exec.DecideBounding(pr, first)
				res, err := pr.Run(ctx, db)
				if err != nil {
					t.Fatalf("%s (aggregate first %v): %v", query, first, err)
				}
				if ranked := strings.Contains(pr.StageSQL, "dense_rank() OVER (PARTITION BY _dp_uid ORDER BY _dp_h"); p.AggregateFirst != first || ranked == first {
					t.Fatalf("the stage used aggregate first = %v, ranked = %v, want aggregate first %v", p.AggregateFirst, ranked, first)
				}
				for _, r := range res.Rows {
					released[i] = append(released[i], fmt.Sprint(r...))
				}
				sort.Strings(released[i])
				// The bound: the kept (unit, group) pairs, counted from the stage's unit
				// counts, are at most kappa per unit (601 units).
				rows, err := db.Query(ctx, "SELECT CAST(SUM("+sqlgen.UnitsColumn+") AS BIGINT) FROM ("+pr.StageSQL+")")
				if err != nil {
					t.Fatalf("%v\n%s", err, pr.StageSQL)
				}
				if n := rows.Values[0][0].(int64); n > 601*p.Kappa || n == 0 {
					t.Errorf("%s\nseed %d, aggregate first %v: %d unit-group pairs kept, kappa = %d for 601 units", query, seed, first, n, p.Kappa)
				}
			}
			if len(released[0]) == 0 || !reflect.DeepEqual(released[0], released[1]) {
				t.Errorf("%s\nseed %d: the prefilter and aggregate-first release different rows:\n%v\n%v", query, seed, released[0], released[1])
			}
		}
	}
}

// TestBoundingRowsThatDifferAtEveryRead: rows that could differ between two reads (a Parquet
// file replaced, an owner's view drawing at random, as here) must still leave every unit
// within kappa groups in both forms of contribution bounding: each reads the rows once (the
// prefilter ranks them in a window, aggregate-first materializes the per-unit rows it reads
// three times). An earlier form read the rows twice, once for each unit's chosen priorities
// and once for the rows kept, and had to keep rows by membership in the first read's choice
// rather than by a threshold, or about one unit in six here reached two groups. 2,000 units
// of 2 rows; the rows of units 1,000 and above are in a random one of the unit's own 1,000
// groups (uid * 1000 + a random number) at every read, the others in one fixed group; kappa
// 1: no unit may reach two groups, in any form, in any run, and the fixed units are all kept.
func TestBoundingRowsThatDifferAtEveryRead(t *testing.T) {
	ctx := context.Background()
	db := ownerDB(t, `CREATE TABLE base AS SELECT i % 2000 AS uid FROM range(4000) r(i);
		CREATE VIEW v AS SELECT uid, uid * 1000 + CASE WHEN uid < 1000 THEN uid % 7 ELSE CAST(floor(random() * 1000) AS BIGINT) END AS k FROM base`)
	rel := &catalog.Relation{Name: "v", Kind: catalog.Private, PrivacyUnit: "uid",
		Columns: []catalog.Column{{Name: "uid"}, {Name: "k"}}}
	for _, query := range []string{
		"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) k, ANON_COUNT(*) AS n FROM v GROUP BY k",
		"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) k, ANON_COUNT(*) AS n, ANON_SUM(uid CLAMPED BETWEEN 0 AND 9) AS s FROM v GROUP BY k",
	} {
		for _, first := range []bool{false, true} {
			_, pr := checkedPrepare(t, db, query, rel, 0)
			exec.DecideBounding(pr, first)
			if _, err := pr.Run(ctx, db); err != nil {
				t.Fatalf("aggregate first %v: %v", first, err)
			}
			// The stage returns one row per group with its number of units; a group
			// belongs to one unit (k // 1000).
			check := "SELECT COUNT(*), CAST(COALESCE(MAX(n), 0) AS BIGINT) FROM (SELECT _dp_k0 // 1000, COUNT(*) AS n FROM (" + pr.StageSQL + ") WHERE " + sqlgen.UnitsColumn + " > 0 GROUP BY 1)"
			for run := 0; run < 5; run++ {
				rows, err := db.Query(ctx, check)
				if err != nil {
					t.Fatalf("%v\n%s", err, pr.StageSQL)
				}
				units, most := rows.Values[0][0].(int64), rows.Values[0][1].(int64)
				if most != 1 || units < 1000 {
					t.Fatalf("%s\naggregate first %v, run %d: %d units kept, one of them in %d groups; want every unit in at most 1 (kappa)\n%s", query, first, run, units, most, pr.StageSQL)
				}
			}
		}
	}
}

// TestBoundingFormsAgreeOnSampledView: the executor chooses the form of contribution bounding
// from a sample of the data, where one person's rows can tip the choice, so on rows that
// differ at every read (an owner's view with USING SAMPLE) both forms must still keep the
// same share of units: the prefilter then reads the rows once, as aggregate-first does. An
// outside review found the prefilter reading such a view twice kept a unit with probability
// 0.44 against 0.88 (3 rows per unit, half sampled at each read, kappa 1), which one heavy
// person in the sample turned into a doubled release.
func TestBoundingFormsAgreeOnSampledView(t *testing.T) {
	ctx := context.Background()
	db := ownerDB(t, `CREATE TABLE ev AS SELECT i AS uid, CAST((i * 7 + j * 331) % 1000 AS INTEGER) AS k FROM range(20000) r(i), range(3) s(j);
		CREATE VIEW sv AS SELECT uid, k FROM ev USING SAMPLE 50 PERCENT (bernoulli)`)
	rel := &catalog.Relation{Name: "sv", Kind: catalog.Private, PrivacyUnit: "uid",
		Columns: []catalog.Column{{Name: "uid"}, {Name: "k"}}}
	const query = "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) k % 10 AS g, ANON_COUNT(*) AS n FROM sv GROUP BY g"
	var kept [2]int64
	for i, first := range []bool{false, true} {
		_, pr := checkedPrepare(t, db, query, rel, 0)
		exec.DecideBounding(pr, first)
		if _, err := pr.Run(ctx, db); err != nil {
			t.Fatal(err)
		}
		for run := 0; run < 3; run++ {
			rows, err := db.Query(ctx, "SELECT CAST(SUM("+sqlgen.UnitsColumn+") AS BIGINT) FROM ("+pr.StageSQL+")")
			if err != nil {
				t.Fatal(err)
			}
			kept[i] += rows.Values[0][0].(int64)
		}
	}
	// 60,000 units' worth of draws per form: 0.875 of them kept, a standard deviation of
	// about 0.2% of that.
	if r := float64(kept[0]) / float64(kept[1]); r < 0.97 || r > 1.03 {
		t.Errorf("units kept over three runs: prefilter %d, aggregate first %d (ratio %.3f); the form must not change them", kept[0], kept[1], r)
	}
}

// checkedPrepare plans query over rel, prepares it without noise and checks it against db
// (which reads no row): the plan the executor then decides the bounding form of.
func checkedPrepare(t *testing.T, db backend.Backend, query string, rel *catalog.Relation, seed int64) (*plan.Plan, *exec.Prepared) {
	t.Helper()
	p := planFor(t, query, rel)
	if seed != 0 {
		p.Seed = seed
	}
	pr, err := exec.Prepare(p, testmode.Noiseless{}, backend.DuckDB)
	if err != nil {
		t.Fatal(err)
	}
	if err := pr.Check(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return p, pr
}

// TestBoundingUnderASmallMemoryLimit: the prefilter's window spills to disk, so a table
// whose per-unit lists of priorities would not fit DuckDB's memory limit (1,000,000 rows
// under 100 MB: the lists form that was removed ran out of memory there) is bounded all the
// same, and releases the same exact rows as without a limit.
func TestBoundingUnderASmallMemoryLimit(t *testing.T) {
	ctx := context.Background()
	rel := &catalog.Relation{Name: "t", Kind: catalog.Private, PrivacyUnit: "uid",
		Columns: []catalog.Column{{Name: "uid"}, {Name: "k"}, {Name: "v"}}}
	var released [2][]string
	for i, limit := range []string{"", "100MB"} {
		db := ownerDB(t, `CREATE TABLE t AS SELECT i % 100000 AS uid, CAST(hash(i) % 1000 AS INTEGER) AS k, CAST(i % 97 AS DOUBLE) AS v FROM range(1000000) r(i)`)
		if limit != "" {
			if err := db.Exec(ctx, "SET memory_limit = '"+limit+"'"); err != nil {
				t.Fatal(err)
			}
		}
		p := planFor(t, shapeQuery, rel)
		p.Seed = 11
		pr, err := exec.Prepare(p, testmode.Noiseless{}, backend.DuckDB)
		if err != nil {
			t.Fatal(err)
		}
		res, err := pr.Run(ctx, db)
		if err != nil {
			t.Fatalf("memory limit %q: %v", limit, err)
		}
		if ranked := strings.Contains(pr.StageSQL, "dense_rank() OVER (PARTITION BY _dp_uid ORDER BY _dp_h"); p.AggregateFirst || !ranked {
			t.Fatalf("memory limit %q: aggregate first %v, ranked %v; want the prefilter's window", limit, p.AggregateFirst, ranked)
		}
		for _, r := range res.Rows {
			released[i] = append(released[i], fmt.Sprint(r...))
		}
		sort.Strings(released[i])
	}
	if len(released[0]) == 0 || !reflect.DeepEqual(released[0], released[1]) {
		t.Errorf("the stages with and without a memory limit release different rows:\n%v\n%v", released[0], released[1])
	}
}
