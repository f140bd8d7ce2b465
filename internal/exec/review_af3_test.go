package exec_test

// Third outside review of 175e65a (unit-and-keys-compared-exactly from DuckDB's plan).

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/exec"
	"github.com/dpsql/dpsql/internal/testmode"
)

// TestReviewMaterializedCTEHidesCollatedKey: store.InexactGroups takes the first "groups" of
// a depth-first walk, children in order. When the stage's _dp_rows contains an aggregate (an
// analyst's subquery with GROUP BY, or a private view that aggregates), DuckDB materializes
// the CTE: the plan's root is LOGICAL_MATERIALIZED_CTE whose FIRST child is the CTE's
// definition, so the walk checks the inner GROUP BY (here uid, w: plain) and never the
// grouping by (_dp_uid, _dp_k0). TestReviewJSONKeyDefaultCollation's collated JSON key then
// passes the check, and a unit writing 16 spellings of the key keeps 16 per-unit rows in
// the one released group.
func TestReviewMaterializedCTEHidesCollatedKey(t *testing.T) {
	ctx := context.Background()
	db := ownerDB(t, `SET default_collation = 'nocase';
		CREATE TABLE t (uid BIGINT, k JSON, v DOUBLE, w BIGINT);
		INSERT INTO t SELECT i, '"k1xyz"', 100, i FROM range(200) r(i);
		INSERT INTO t SELECT 1000, '"' || CASE WHEN i & 1 = 1 THEN 'K' ELSE 'k' END || '1' ||
			CASE WHEN i & 2 = 2 THEN 'X' ELSE 'x' END || CASE WHEN i & 4 = 4 THEN 'Y' ELSE 'y' END || CASE WHEN i & 8 = 8 THEN 'Z' ELSE 'z' END || '"', 100, i FROM range(16) r(i)`)
	rel := &catalog.Relation{Name: "t", Kind: catalog.Private, PrivacyUnit: "uid",
		Columns: []catalog.Column{{Name: "uid"}, {Name: "k"}, {Name: "v"}, {Name: "w"}}}
	// Without the subquery the check refuses (TestReviewJSONKeyDefaultCollation); with it:
	const query = `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e6, delta=1e-5, kappa=16) k, ANON_SUM(v CLAMPED BETWEEN 0 AND 100) AS s
		FROM (SELECT uid, w, MIN(k) AS k, MIN(v) AS v FROM t GROUP BY uid, w) GROUP BY k`
	p := planFor(t, query, rel)
	p.Seed = 1
	pr, err := exec.Prepare(p, testmode.Noiseless{}, backend.DuckDB)
	if err != nil {
		t.Fatal(err)
	}
	err = pr.Check(ctx, db)
	if err != nil && strings.Contains(err.Error(), "unit-and-keys-compared-exactly") {
		return // refused, as the plain query is
	}
	if err != nil {
		t.Fatal(err)
	}
	res, most := runForm(t, db, pr, false)
	t.Errorf("check passed a key compared by a collation; a unit keeps %v per-unit rows in one group; released %v (201 units of 100 would be 20100)",
		most, fmt.Sprint(res.Rows))
}

// TestReviewGroupedSubqueryFalselyRefused: the same walk refuses an ordinary query whose
// FROM aggregates per unit by an expression (monthly sums per user; or a private view that
// does so): the inner GROUP BY date_trunc(...) is a BOUND_FUNCTION, which InexactGroups reads
// as the outer grouping's first key "compared by a collation". There is no collation here.
func TestReviewGroupedSubqueryFalselyRefused(t *testing.T) {
	ctx := context.Background()
	db := ownerDB(t, `CREATE TABLE t AS SELECT 'u' || (i % 50) AS uid, DATE '2020-01-01' + CAST(i % 90 AS INT) AS d, CAST(i % 7 AS DOUBLE) AS v FROM range(1000) r(i)`)
	rel := &catalog.Relation{Name: "t", Kind: catalog.Private, PrivacyUnit: "uid",
		Columns: []catalog.Column{{Name: "uid"}, {Name: "d"}, {Name: "v"}}}
	const query = `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e6, delta=1e-5, kappa=3) m, ANON_SUM(s CLAMPED BETWEEN 0 AND 100) AS s
		FROM (SELECT uid, date_trunc('month', d) AS m, SUM(v) AS s FROM t GROUP BY uid, date_trunc('month', d)) GROUP BY m`
	pr, err := exec.Prepare(planFor(t, query, rel), testmode.Noiseless{}, backend.DuckDB)
	if err != nil {
		t.Fatal(err)
	}
	if err := pr.Check(ctx, db); err != nil {
		t.Errorf("an ordinary query is refused: %v", err)
	}
}
