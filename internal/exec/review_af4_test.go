package exec_test

// Fourth outside review of 175e65a/78fdf4f (unit-and-keys-compared-exactly from DuckDB's
// json_serialize_plan of the grouping): false refusals.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/exec"
	"github.com/dpsql/dpsql/internal/testmode"
)

// reviewRunsExactly checks that query passes the check and releases want (noiseless).
func reviewRunsExactly(t *testing.T, db backend.Backend, query, want string, rels ...*catalog.Relation) {
	t.Helper()
	p := planFor(t, query, rels...)
	p.Seed = 1
	pr, err := exec.Prepare(p, testmode.Noiseless{}, backend.DuckDB)
	if err != nil {
		t.Fatal(err)
	}
	if err := pr.Check(context.Background(), db); err != nil {
		t.Fatalf("an ordinary query is refused: %v", err)
	}
	res, err := pr.Run(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res.Rows); got != want {
		t.Errorf("released %s, want %s", got, want)
	}
}

// TestReviewIntervalAndTimeTZKeysFalselyRefused: DuckDB binds a "collation" function around
// every INTERVAL (normalized_interval) and TIMETZ (timetz_byte_comparable) it groups by,
// whatever the owner's settings (collation_binding.cpp registers them next to VARCHAR's). The
// grouping's plan then shows a BOUND_FUNCTION for such a key and InexactGroups refuses it as
// "compared by a collation", although no collation is involved: the INTERVAL key is already
// normalized_interval(...) in _dp_rows (NormaliseKey), and TIMETZ '12:00+01' and '11:00+00'
// are two groups to DuckDB and two hashes. engine's TestGroupIdentity/duckdb/
// equal_values_that_print_differently (GROUP BY an INTERVAL) fails since 175e65a for this.
func TestReviewIntervalAndTimeTZKeysFalselyRefused(t *testing.T) {
	for _, c := range []struct{ col, want string }{
		{"iv", "[[1 day 20000]]"},
		// Two groups (the driver prints both offsets as UTC times: a display oddity apart).
		{"tz", "[[0001-01-01 11:00:00 +0000 UTC 10000] [0001-01-01 11:00:00 +0000 UTC 10000]]"},
	} {
		t.Run(c.col, func(t *testing.T) {
			db := ownerDB(t, `CREATE TABLE t (uid BIGINT, iv INTERVAL, tz TIMETZ, v DOUBLE);
				INSERT INTO t SELECT i, CASE WHEN i % 2 = 0 THEN INTERVAL '24 hours' ELSE INTERVAL '1 day' END,
					CASE WHEN i % 2 = 0 THEN TIMETZ '12:00:00+01' ELSE TIMETZ '11:00:00+00' END, 100 FROM range(200) r(i)`)
			rel := &catalog.Relation{Name: "t", Kind: catalog.Private, PrivacyUnit: "uid",
				Columns: []catalog.Column{{Name: "uid"}, {Name: "iv"}, {Name: "tz"}, {Name: "v"}}}
			query := `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e6, delta=1e-5, kappa=1) ` + c.col +
				`, ANON_SUM(v CLAMPED BETWEEN 0 AND 100) AS s FROM t GROUP BY ` + c.col + ` ORDER BY 1`
			reviewRunsExactly(t, db, query, c.want, rel)
		})
	}
}

// TestReviewPublicCSVJoinFalselyRefused: json_serialize_plan cannot serialize some scans
// ("CSVReaderSerialize not implemented", "JSONScan Serialize not implemented"), and
// InexactGroups turns that into an error before the charge. A public relation over a CSV
// file, which the owner may declare with a detected format (leaks' TestLeakViewTypesFromRows
// accepts CREATE VIEW pub OPTIONS(public=true) AS SELECT * FROM read_csv(...)), then makes
// every query that joins it (or filters by IN (SELECT ... FROM pub), or takes it as the public
// groups) fail, although its stage runs.
func TestReviewPublicCSVJoinFalselyRefused(t *testing.T) {
	ctx := context.Background()
	csv := filepath.Join(t.TempDir(), "pub.csv")
	if err := os.WriteFile(csv, []byte("k2,c\nk1,1\nk2,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Exec(ctx, `CREATE TABLE t (uid BIGINT, k VARCHAR, v DOUBLE);
		INSERT INTO t SELECT i, 'k1', 100 FROM range(200) r(i);
		CREATE VIEW pub AS SELECT * FROM read_csv('`+csv+`')`); err != nil {
		t.Fatal(err)
	}
	rel := spelledRel
	pub := &catalog.Relation{Name: "pub", Kind: catalog.Public, Columns: []catalog.Column{{Name: "k2"}, {Name: "c"}}}
	const query = `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e6, delta=1e-5, kappa=1) k, ANON_SUM(v CLAMPED BETWEEN 0 AND 100) AS s
		FROM t JOIN pub ON pub.k2 = t.k GROUP BY k`
	reviewRunsExactly(t, db, query, "[[k1 20000]]", rel, pub)
}
