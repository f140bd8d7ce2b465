package exec_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/exec"
	"github.com/dpsql/dpsql/internal/testmode"
)

// reviewBounded cuts stage SQL right after its _dp_bounded CTE, so that a query over the
// per-unit rows the stage keeps can follow.
func reviewBounded(t *testing.T, sql string) string {
	t.Helper()
	i := strings.Index(sql, "_dp_bounded AS (")
	if i < 0 {
		t.Fatalf("no _dp_bounded in\n%s", sql)
	}
	depth := 0
	for j := i + len("_dp_bounded AS "); j < len(sql); j++ {
		switch sql[j] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return sql[:j+1]
			}
		}
	}
	t.Fatalf("unbalanced _dp_bounded in\n%s", sql)
	return ""
}

// TestReviewCollatedUnitOneRowPerGroup (review of 2b911c8): a text privacy unit compared by
// a collation (a NOCASE column here; SET default_collation='nocase' does the same to every
// VARCHAR unit) is one unit to the stage's GROUP BY _dp_uid, but hash(_dp_uid, keys, seed)
// hashes its bytes, so every spelling of the unit gets its own priority _dp_h. Both DuckDB
// forms group per-unit rows by (_dp_uid, _dp_h), so the unit 'abcd', written in 16 cases,
// keeps 16 per-unit rows in the one group k1: it counts as 16 units and adds 16 times the
// clamp bound to the sum (the distributed stage folds such units with lower(); PostgreSQL
// refuses CITEXT for the same reason; the window form this commit replaced grouped by
// (keys, unit) and kept one row). Under Laplace noise the L1 bound kappa*C still holds, but
// GAUSSIAN noise assumes L2 = sqrt(kappa)*C and gets kappa*C, and per-group bounds
// (one row per unit and group) no longer hold.
func TestReviewCollatedUnitOneRowPerGroup(t *testing.T) {
	ctx := context.Background()
	db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Exec(ctx, `CREATE TABLE t (uid VARCHAR COLLATE NOCASE, k VARCHAR, v DOUBLE);
		INSERT INTO t SELECT 'u' || i, 'k1', 100 FROM range(200) r(i);
		INSERT INTO t SELECT CASE WHEN i & 1 = 1 THEN 'A' ELSE 'a' END || CASE WHEN i & 2 = 2 THEN 'B' ELSE 'b' END ||
			CASE WHEN i & 4 = 4 THEN 'C' ELSE 'c' END || CASE WHEN i & 8 = 8 THEN 'D' ELSE 'd' END, 'k1', 100 FROM range(16) r(i)`); err != nil {
		t.Fatal(err)
	}
	if r, err := db.Query(ctx, "SELECT COUNT(*) FROM (SELECT uid FROM t GROUP BY uid)"); err != nil || fmt.Sprint(r.Values[0][0]) != "201" {
		t.Fatalf("the database should see 201 units: %v %v", r, err)
	}
	rel := &catalog.Relation{Name: "t", Kind: catalog.Private, PrivacyUnit: "uid",
		Columns: []catalog.Column{{Name: "uid"}, {Name: "k"}, {Name: "v"}}}
	const query = `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e6, delta=1e-5, kappa=16) k, ANON_SUM(v CLAMPED BETWEEN 0 AND 100) AS s FROM t GROUP BY k`
	for _, first := range []bool{false, true} {
		p := planFor(t, query, rel)
		p.Seed = 1
		pr, err := exec.Prepare(p, testmode.Noiseless{}, backend.DuckDB)
		if err != nil {
			t.Fatal(err)
		}
		if err := pr.Check(ctx, db); err != nil {
			t.Fatal(err)
		}
		exec.DecideBounding(pr, first)
		res, err := pr.Run(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := db.Query(ctx, reviewBounded(t, pr.StageSQL)+
			"\nSELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(*) AS n FROM _dp_bounded GROUP BY _dp_uid, _dp_k0)")
		if err != nil {
			t.Fatal(err)
		}
		if n := fmt.Sprint(rows.Values[0][0]); n != "1" {
			t.Errorf("aggregate first %v: a unit keeps %s per-unit rows in one group, want 1", first, n)
		}
		if len(res.Rows) != 1 || fmt.Sprint(res.Rows[0]...) != "k120100" {
			t.Errorf("aggregate first %v: released %v, want k1 20100 (201 units, 100 each)", first, res.Rows)
		}
	}
}
