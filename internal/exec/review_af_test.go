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
	"github.com/dpsql/dpsql/internal/store"
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
	db := ownerDB(t, `CREATE TABLE t (uid VARCHAR COLLATE NOCASE, k VARCHAR, v DOUBLE);
		INSERT INTO t SELECT 'u' || i, 'k1', 100 FROM range(200) r(i);
		INSERT INTO t SELECT CASE WHEN i & 1 = 1 THEN 'A' ELSE 'a' END || CASE WHEN i & 2 = 2 THEN 'B' ELSE 'b' END ||
			CASE WHEN i & 4 = 4 THEN 'C' ELSE 'c' END || CASE WHEN i & 8 = 8 THEN 'D' ELSE 'd' END, 'k1', 100 FROM range(16) r(i)`)
	refusedSpellings(t, db, "uid", 201)
}

// spelledRel and spelledQuery are the relation t (uid, k, v) of the reviews' databases, where
// 200 units and one spelled several ways are in group k1 with 100 each, and their query.
var spelledRel = &catalog.Relation{Name: "t", Kind: catalog.Private, PrivacyUnit: "uid",
	Columns: []catalog.Column{{Name: "uid"}, {Name: "k"}, {Name: "v"}}}

const spelledQuery = `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e6, delta=1e-5, kappa=16) k, ANON_SUM(v CLAMPED BETWEEN 0 AND 100) AS s FROM t GROUP BY k`

// ownerDB opens an in-memory DuckDB as the owner, closed with the test, and runs setup.
func ownerDB(t *testing.T, setup string) backend.Backend {
	t.Helper()
	db, err := duckdb.Open(context.Background(), "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Exec(context.Background(), setup); err != nil {
		t.Fatal(err)
	}
	return db
}

// refusedSpellings checks that the database groups t's rows by column into want groups (the
// spellings a collation makes one), then that spelledQuery over spelledRel is refused for the
// collation before any data is read.
func refusedSpellings(t *testing.T, db backend.Backend, column string, want int) {
	t.Helper()
	r, err := db.Query(context.Background(), "SELECT COUNT(*) FROM (SELECT "+column+" FROM t GROUP BY "+column+")")
	if err != nil || fmt.Sprint(r.Values[0][0]) != fmt.Sprint(want) {
		t.Fatalf("the database should see %d groups of %s: %v %v", want, column, r, err)
	}
	refusedForCollation(t, db, spelledRel, spelledQuery)
}

// refusedForCollation checks that query is refused before any data is read, by the rule
// unit-and-keys-compared-exactly.
func refusedForCollation(t *testing.T, db backend.Backend, rel *catalog.Relation, query string) {
	t.Helper()
	pr, err := exec.Prepare(planFor(t, query, rel), testmode.Noiseless{}, backend.DuckDB)
	if err != nil {
		t.Fatal(err)
	}
	if err := pr.Check(context.Background(), db); err == nil || !strings.Contains(err.Error(), store.RuleUnitCollation) {
		t.Fatalf("check: %v, want the rule %s", err, store.RuleUnitCollation)
	}
}

// oneRowPerGroup runs query (over 201 units in group k1, 100 each) with both forms of
// contribution bounding and checks that no unit keeps two per-unit rows in a group and that
// the exact release is 201 units' worth.
func oneRowPerGroup(t *testing.T, db backend.Backend, rel *catalog.Relation, query string) {
	t.Helper()
	ctx := context.Background()
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
		res, most := runForm(t, db, pr, first)
		if n := fmt.Sprint(most); n != "1" {
			t.Errorf("aggregate first %v: a unit keeps %s per-unit rows in one group, want 1", first, n)
		}
		if len(res.Rows) != 1 || fmt.Sprint(res.Rows[0]...) != "k120100" {
			t.Errorf("aggregate first %v: released %v, want k1 20100 (201 units, 100 each)", first, res.Rows)
		}
	}
}

// runForm runs pr with the given form of contribution bounding (aggregate first or not) and
// returns its release and the most per-unit rows a unit keeps in one group of its stage.
func runForm(t *testing.T, db backend.Backend, pr *exec.Prepared, first bool) (*exec.Result, any) {
	t.Helper()
	ctx := context.Background()
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
	return res, rows.Values[0][0]
}

// reviewMurmur, reviewUnmurmur and reviewCombine replicate DuckDB's hash() of BIGINT
// arguments (internal/bench's TestHashTies checks the replication against DuckDB).
const reviewMurmurC = 0xd6e8feb86659fd93

func reviewMurmur(x uint64) uint64 {
	x ^= x >> 32
	x *= reviewMurmurC
	x ^= x >> 32
	x *= reviewMurmurC
	x ^= x >> 32
	return x
}

func reviewUnmurmur(x uint64) uint64 {
	inv := uint64(reviewMurmurC)
	for i := 0; i < 6; i++ {
		inv *= 2 - reviewMurmurC*inv
	}
	x ^= x >> 32
	x *= inv
	x ^= x >> 32
	x *= inv
	x ^= x >> 32
	return x
}

func reviewCombine(a, b uint64) uint64 {
	a ^= a >> 32
	a *= reviewMurmurC
	return a ^ b
}

// reviewColliding returns k2b with hash(u, k1, k2, ...) = hash(u, k1b, k2b, ...) for BIGINT
// arguments, whatever follows (the seed).
func reviewColliding(u, k1, k2, k1b int64) int64 {
	c := reviewCombine(reviewMurmur(uint64(u)), reviewMurmur(uint64(k1)))
	cb := reviewCombine(reviewMurmur(uint64(u)), reviewMurmur(uint64(k1b)))
	want := reviewCombine(c, reviewMurmur(uint64(k2)))
	return int64(reviewUnmurmur(want ^ reviewCombine(cb, 0)))
}

// TestReviewCraftedTiesStackOneGroup (review of 2b911c8): docs/design/bounding-on-duckdb.md
// §5.2 shows that a unit who knows its id can make two key tuples tie on h for every seed, and
// relies on grouping by (unit, h) with min() of each key. With two keys, min() of a tied pair
// {(c, 0), (1, K)} with c > 1 and K > 0 is (1, 0), a group of its own: a unit with 3 such
// pairs and a row in (1, 0) holds 4 distinct h (kappa = 4, all kept) and 4 per-unit rows in
// the released group (1, 0), in both DuckDB forms. It then counts as 4 units there and adds
// 4 times the clamp bound (PostgreSQL's prefilter groups by (unit, h, keys) and its rank
// counts distinct key tuples; the window form this commit replaced grouped by (keys, unit)).
// Laplace's L1 bound kappa*C holds, but GAUSSIAN noise's L2 = sqrt(kappa)*C does not (here
// 4C in one group: L2 4C, assumed 2C). Both DuckDB forms now order a unit's groups by (h,
// keys) and aggregate per (unit, keys), as PostgreSQL does: tied groups are distinct groups.
func TestReviewCraftedTiesStackOneGroup(t *testing.T) {
	ctx := context.Background()
	db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const u = 42
	vals := []string{fmt.Sprintf("(%d::BIGINT, 1::BIGINT, 0::BIGINT, 100.0::DOUBLE)", u)}
	for c := int64(2); len(vals) < 7; c++ {
		k := reviewColliding(u, c, 0, 1) // hash(u, c, 0) = hash(u, 1, k)
		if k <= 0 {
			continue
		}
		vals = append(vals, fmt.Sprintf("(%d, %d, 0, 100.0)", u, c), fmt.Sprintf("(%d, 1, %d, 100.0)", u, k))
	}
	if err := db.Exec(ctx, `CREATE TABLE t AS SELECT * FROM (VALUES `+strings.Join(vals, ", ")+`) v(uid, k1, k2, v)
		UNION ALL SELECT 1000 + i, 1, 0, 100.0 FROM range(200) r(i)`); err != nil {
		t.Fatal(err)
	}
	if r, err := db.Query(ctx, fmt.Sprintf("SELECT COUNT(DISTINCT hash(uid, k1, k2, 1)) FROM t WHERE uid = %d", u)); err != nil || fmt.Sprint(r.Values[0][0]) != "4" {
		t.Fatalf("want 4 distinct priorities for the crafted unit (7 groups): %v %v", r, err)
	}
	rel := &catalog.Relation{Name: "t", Kind: catalog.Private, PrivacyUnit: "uid",
		Columns: []catalog.Column{{Name: "uid"}, {Name: "k1"}, {Name: "k2"}, {Name: "v"}}}
	const query = `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e6, delta=1e-5, kappa=4) k1, k2, ANON_SUM(v CLAMPED BETWEEN 0 AND 100) AS s FROM t GROUP BY k1, k2`
	for _, first := range []bool{false, true} {
		for _, seed := range []int64{1, -2, 77777777777} {
			p := planFor(t, query, rel)
			p.Seed = seed
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
				"\nSELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(*) AS n FROM _dp_bounded GROUP BY _dp_uid, _dp_k0, _dp_k1)")
			if err != nil {
				t.Fatal(err)
			}
			if n := fmt.Sprint(rows.Values[0][0]); n != "1" {
				t.Errorf("aggregate first %v, seed %d: unit %d keeps %s per-unit rows in one group, want 1 (released %v)", first, seed, u, n, res.Rows)
			}
		}
	}
}

// TestUnitCollations: a privacy unit that DuckDB compares by a collation (a column's NOCASE,
// NOACCENT, both, NFC with NOCASE, an ICU locale, or the owner's SET default_collation) is
// refused before any data is read, whatever the rows; the data owner's fix, a view that gives
// the unit a plain text type (lower(uid) COLLATE "binary"), makes every spelling one unit with
// one per-unit row per group, in both forms.
func TestUnitCollations(t *testing.T) {
	ctx := context.Background()
	rel := spelledRel
	query := spelledQuery
	setup := func(t *testing.T, col string) backend.Backend {
		db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if col == "default nocase" {
			if err := db.Exec(ctx, "SET default_collation = 'nocase'"); err != nil {
				t.Fatal(err)
			}
			col = "VARCHAR"
		}
		if err := db.Exec(ctx, "CREATE TABLE raw (uid "+col+", k VARCHAR, v DOUBLE);\n"+
			"INSERT INTO raw SELECT 'u' || i, 'k1', 100 FROM range(200) r(i);\n"+
			"INSERT INTO raw VALUES ('jose', 'k1', 100), ('JOSE', 'k1', 100), ('Jose', 'k1', 100)"); err != nil {
			t.Fatal(err)
		}
		return db
	}
	for _, c := range []string{"VARCHAR COLLATE NOCASE", "VARCHAR COLLATE NOACCENT", "VARCHAR COLLATE NOCASE.NOACCENT",
		`VARCHAR COLLATE "NFC.NOCASE"`, "VARCHAR COLLATE de", "VARCHAR COLLATE fa_af", "default nocase"} {
		t.Run(c, func(t *testing.T) {
			db := setup(t, c)
			if err := db.Exec(ctx, "CREATE VIEW t AS SELECT * FROM raw"); err != nil {
				t.Fatal(err)
			}
			refusedForCollation(t, db, rel, query)
			// The owner's fix: one unit whatever the case, compared by its bytes.
			if err := db.Exec(ctx, `CREATE OR REPLACE VIEW t AS SELECT CAST(lower(uid) AS VARCHAR) COLLATE "binary" AS uid, k, v FROM raw`); err != nil {
				t.Fatal(err)
			}
			oneRowPerGroup(t, db, rel, query)
		})
	}
}
