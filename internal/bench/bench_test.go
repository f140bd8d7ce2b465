package bench

import (
	"context"
	"database/sql"
	"fmt"
	"math/bits"
	"testing"
	"time"
)

func openTest(t testing.TB) *sql.DB {
	t.Helper()
	db, err := Open(2, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustExec(t testing.TB, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%v\n%s", err, q)
	}
}

// testCase is a small table and a query over it.
type testCase struct {
	name  string
	setup func(t *testing.T, db *sql.DB)
	spec  Spec
}

func testCases() []testCase {
	gen := func(sh Shape) func(t *testing.T, db *sql.DB) {
		return func(t *testing.T, db *sql.DB) {
			if err := Generate(context.Background(), db, "t", sh); err != nil {
				t.Fatal(err)
			}
		}
	}
	hard := Shape{Kind: Hard, Rows: 20000, Users: 2000, Keys: 40, Values: "quarters", UIDType: "sparse", Seed: 1}
	easy := Shape{Kind: Easy, Rows: 20000, Users: 4000, Keys: 40, Values: "quarters", UIDType: "bigint", Seed: 2}
	strs := Shape{Kind: Hard, Rows: 20000, Users: 1000, Keys: 30, Values: "quarters", UIDType: "varchar", NullKeyFrac: 0.1, Seed: 3}
	multi := DefaultSpec("t2", 3)
	multi.Keys = []string{"k1", "k2"}
	multi.Aggs = []Agg{{Kind: Sum, Expr: "v", Lo: 2, Hi: 30}, {Kind: Count, Lo: 0, Hi: 2}, {Kind: Sum, Expr: "v - 50", Lo: -10, Hi: 10}}
	fixed := DefaultSpec("t", 3)
	fixed.FixedPartials = true
	fixed.Aggs = append(fixed.Aggs, Agg{Kind: Sum, Expr: "v - 50", Lo: -7.5, Hi: 12})
	return []testCase{
		{"hard_sparse_k4", gen(hard), DefaultSpec("t", 4)},
		{"hard_fixed_partials_k3", gen(hard), fixed},
		{"hard_sparse_k1", gen(hard), DefaultSpec("t", 1)},
		{"easy_dense_k2", gen(easy), DefaultSpec("t", 2)},
		{"easy_dense_k4", gen(easy), DefaultSpec("t", 4)},
		{"varchar_nullkeys_k3", gen(strs), DefaultSpec("t", 3)},
		{"null_uids_k2", func(t *testing.T, db *sql.DB) {
			gen(strs)(t, db)
			mustExec(t, db, "UPDATE t SET uid = NULL WHERE hash(uid, v) % 10 = 0")
		}, DefaultSpec("t", 2)},
		{"two_keys_three_aggs_k3", func(t *testing.T, db *sql.DB) {
			gen(strs)(t, db)
			// two key columns, both sometimes NULL, from the varchar table
			mustExec(t, db, `CREATE OR REPLACE TABLE t2 AS SELECT uid, k % 5 AS k1,
  CASE WHEN k % 7 = 0 THEN NULL ELSE k // 5 END AS k2, v FROM t`)
		}, multi},
	}
}

// TestExactStrategiesMatchReference checks every exact strategy against a reference computed
// in Go: per user the min(n, kappa) keys with the smallest hash (so no user in more than kappa
// keys, and users with at most kappa keys keep all of them), clamped, fixed point, summed.
func TestExactStrategiesMatchReference(t *testing.T) {
	ctx := context.Background()
	for _, tc := range testCases() {
		t.Run(tc.name, func(t *testing.T) {
			db := openTest(t)
			tc.setup(t, db)
			for _, seed := range []uint64{1, NewSeed()} {
				want, maxKept, err := Reference(ctx, db, tc.spec, seed)
				if err != nil {
					t.Fatal(err)
				}
				if maxKept > tc.spec.Kappa {
					t.Fatalf("reference kept %d keys for a user", maxKept)
				}
				for _, st := range Strategies() {
					if !st.Exact {
						continue
					}
					q := st.SQL(tc.spec, seed)
					got, err := Collect(ctx, db, q, len(tc.spec.Keys))
					if err != nil {
						t.Fatalf("%s: %v\n%s", st.Name, err, q)
					}
					if d := Diff(want, got); d != "" {
						t.Errorf("%s seed %d differs from the reference:\n%s\n%s", st.Name, seed, d, q)
					}
				}
			}
		})
	}
}

// TestKeptPerUser counts, with the stage-2 rows of the recommended strategy exposed, how many
// keys each user kept: never more than kappa, and all of them when the user has at most kappa.
func TestKeptPerUser(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	sh := Shape{Kind: Hard, Rows: 50000, Users: 10000, Keys: 20, Values: "quarters", UIDType: "sparse", Seed: 5}
	if err := Generate(ctx, db, "t", sh); err != nil {
		t.Fatal(err)
	}
	for _, kappa := range []int{1, 3, 5, 8} {
		s := DefaultSpec("t", kappa)
		kept := KeptPairsSQL(s, NewSeed())
		q := fmt.Sprintf(`SELECT count(*) FILTER (WHERE kept > %[1]d),
  count(*) FILTER (WHERE kept <> least(n, %[1]d)), count(*)
FROM (SELECT u, count(*) AS kept FROM (%[2]s) GROUP BY u) a
JOIN (SELECT uid AS u, count(DISTINCT k) AS n FROM t GROUP BY uid) b USING (u)`, kappa, kept)
		var over, wrong, users int64
		if err := db.QueryRowContext(ctx, q).Scan(&over, &wrong, &users); err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
		if over != 0 || wrong != 0 || users != sh.Users {
			t.Errorf("kappa %d: %d users over kappa, %d users with kept != min(n, kappa), %d users seen of %d", kappa, over, wrong, users, sh.Users)
		}
	}
}

func TestSameSeedSameResult(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	var tc testCase
	for _, c := range testCases() {
		if c.name == "varchar_nullkeys_k3" { // users over kappa, so the seed matters
			tc = c
		}
	}
	tc.setup(t, db)
	seed := NewSeed()
	for _, st := range Strategies() {
		if !st.Exact {
			continue
		}
		a, err := Collect(ctx, db, st.SQL(tc.spec, seed), 1)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Collect(ctx, db, st.SQL(tc.spec, seed), 1)
		if err != nil {
			t.Fatal(err)
		}
		if d := Diff(a, b); d != "" {
			t.Errorf("%s: same seed, different result:\n%s", st.Name, d)
		}
		c, err := Collect(ctx, db, st.SQL(tc.spec, seed+1), 1)
		if err != nil {
			t.Fatal(err)
		}
		if Diff(a, c) == "" {
			t.Errorf("%s: a different seed gave the same result", st.Name)
		}
	}
}

// TestUniformity checks that, over many seeds, a user with n > kappa keys keeps each key with
// frequency kappa/n and each kappa-subset equally often (chi-square at alpha = 0.001), for
// integer and string user ids; and shows that the one-level hash(uid, key, seed) fails.
func TestUniformity(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	n, kappa, seeds := 6, 3, 20000
	subsets := 20 // C(6,3)
	check := func(name, expr string, user any) (keyStat, subStat float64, ok bool) {
		perKey, perSubset, err := KeptFrequencies(ctx, db, expr, user, n, kappa, seeds)
		if err != nil {
			t.Fatal(err)
		}
		keyStat, df := ChiSquare(perKey, n)
		counts := make([]int, 0, subsets)
		for mask, c := range perSubset {
			if bits.OnesCount64(mask) != kappa {
				t.Fatalf("%s: a seed kept %d keys", name, bits.OnesCount64(mask))
			}
			counts = append(counts, c)
		}
		subStat, sdf := ChiSquare(counts, subsets)
		ok = keyStat < ChiSquareCritical(df, 3.09) && subStat < ChiSquareCritical(sdf, 3.09)
		t.Logf("%-28s user %-8v per key %v chi2=%.1f (crit %.1f); subsets seen %d chi2=%.1f (crit %.1f)",
			name, user, perKey, keyStat, ChiSquareCritical(df, 3.09), len(perSubset), subStat, ChiSquareCritical(sdf, 3.09))
		return keyStat, subStat, ok
	}
	for _, user := range []any{int64(12345), int64(-7), "alice"} {
		if _, _, ok := check("hash(hash(u, g0, s))", HashSQL("u", "g0", "s::UBIGINT"), user); !ok {
			t.Errorf("hash(hash(u, g0, s)) is not uniform for user %v", user)
		}
	}
	n, kappa, seeds, subsets = 10, 4, 60000, 210 // C(10,4)
	if _, _, ok := check("hash(hash(u, g0, s)) n=10", HashSQL("u", "g0", "s::UBIGINT"), int64(99)); !ok {
		t.Errorf("hash(hash(u, g0, s)) is not uniform with 10 keys")
	}
	n, kappa, seeds, subsets = 6, 3, 20000, 20
	// The one-level hash XORs hash(seed) into a per-(user,key) value: the order of x XOR c
	// over random c follows the binary trie of the x, so some subsets never occur.
	badUsers := 0
	for _, user := range []any{int64(12345), int64(-7), "alice"} {
		if _, _, ok := check("hash(u, g0, s) [biased]", HashSQLXor("u", "g0", "s::UBIGINT"), user); !ok {
			badUsers++
		}
	}
	if badUsers == 0 {
		t.Error("the one-level hash passed: the demonstration of its bias no longer holds")
	}
}

// TestUniformityEndToEnd runs the recommended SQL itself with many seeds on a one-user table.
func TestUniformityEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the query a thousand times")
	}
	ctx := context.Background()
	db := openTest(t)
	const n, kappa, seeds = 6, 2, 1200
	mustExec(t, db, fmt.Sprintf("CREATE TABLE one AS SELECT 'bob' AS uid, CAST(i AS INTEGER) AS k, 1.0 AS v FROM range(%d) r(i), range(3)", n))
	s := DefaultSpec("one", kappa)
	st, _ := StrategyByName(Recommended)
	perKey := make([]int, n)
	for i := 0; i < seeds; i++ {
		got, err := Collect(ctx, db, st.SQL(s, NewSeed()), 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != kappa {
			t.Fatalf("kept %d keys", len(got))
		}
		for k := range got {
			var g int
			fmt.Sscan(k, &g)
			perKey[g]++
		}
	}
	stat, df := ChiSquare(perKey, n)
	t.Logf("per key %v chi2=%.1f crit %.1f", perKey, stat, ChiSquareCritical(df, 3.09))
	if stat >= ChiSquareCritical(df, 3.09) {
		t.Errorf("not uniform: %v", perKey)
	}
}

// benchShape times every strategy on a small table and reports each one's time relative to
// the floor measured in the same process (metric x_floor). Absolute ns/op are not comparable
// between machines or runs; the ratio is what docs/benchmarks.md tracks.
func benchShape(b *testing.B, kind ShapeKind) {
	ctx := context.Background()
	db := openTest(b)
	sh := DefaultShape(kind, 200000)
	if err := Generate(ctx, db, "t", sh); err != nil {
		b.Fatal(err)
	}
	spec := DefaultSpec("t", 4)
	floorQ := StrategyQuery(Strategies()[0], spec)
	floorTime := func() time.Duration {
		best := time.Duration(1 << 62)
		for i := 0; i < 5; i++ {
			t0 := time.Now()
			if err := floorQ.Run(ctx, db); err != nil {
				b.Fatal(err)
			}
			best = min(best, time.Since(t0))
		}
		return best
	}
	floor := floorTime()
	for _, st := range Strategies() {
		if st.Name == "window_random" {
			continue
		}
		q := StrategyQuery(st, spec)
		b.Run(st.Name, func(b *testing.B) {
			if err := q.Run(ctx, db); err != nil { // warm-up
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := q.Run(ctx, db); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(floor), "x_floor")
		})
	}
}

func BenchmarkHardShape(b *testing.B) { benchShape(b, Hard) }
func BenchmarkEasyShape(b *testing.B) { benchShape(b, Easy) }

// DuckDB's hash() for BIGINT arguments, replicated to construct collisions (see
// duckdb/common/types/hash.hpp: murmurhash64, and CombineHashScalar).
const murmurC = 0xd6e8feb86659fd93

func murmur64(x uint64) uint64 {
	x ^= x >> 32
	x *= murmurC
	x ^= x >> 32
	x *= murmurC
	x ^= x >> 32
	return x
}

func unmurmur64(x uint64) uint64 {
	inv := uint64(murmurC) // Newton: inverse of an odd number mod 2^64
	for i := 0; i < 6; i++ {
		inv *= 2 - murmurC*inv
	}
	x ^= x >> 32
	x *= inv
	x ^= x >> 32
	x *= inv
	x ^= x >> 32
	return x
}

func combine(a, b uint64) uint64 {
	a ^= a >> 32
	a *= murmurC
	return a ^ b
}

// collidingKey returns k2b such that hash(u, k1, k2) = hash(u, k1b, k2b) in DuckDB for BIGINT
// arguments, whatever comes after (the seed): a user who knows its own id can make two
// different key tuples hash alike for every seed.
func collidingKey(u, k1, k2, k1b int64) int64 {
	c := combine(murmur64(uint64(u)), murmur64(uint64(k1)))
	cb := combine(murmur64(uint64(u)), murmur64(uint64(k1b)))
	want := combine(c, murmur64(uint64(k2))) // = mix(c) ^ H(k2)
	hk2b := want ^ combine(cb, 0)            // mix(cb) ^ H(k2b) = want
	return int64(unmurmur64(hk2b))
}

// TestHashTies shows that rank ties are craftable with two key columns, that the plain
// threshold strategies then keep more than kappa keys for that user, and that the tie-safe
// ones do not.
func TestHashTies(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	var got uint64
	if err := db.QueryRow("SELECT hash(7::BIGINT, -3::BIGINT, 11::BIGINT, 5::UBIGINT)").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := combine(combine(combine(murmur64(7), murmur64(uint64(1<<64-3))), murmur64(11)), murmur64(5)); got != want {
		t.Fatalf("hash replication: duckdb %d, go %d", got, want)
	}
	const u, k1, k2, k1b = 42, 1, 2, 3
	k2b := collidingKey(u, k1, k2, k1b)
	mustExec(t, db, fmt.Sprintf(`CREATE TABLE tie AS SELECT * FROM (VALUES
  (%[1]d::BIGINT, %[2]d::BIGINT, %[3]d::BIGINT, 1.0), (%[1]d, %[4]d, %[5]d, 1.0)) v(uid, k1, k2, v)`, u, k1, k2, k1b, k2b))
	s := DefaultSpec("tie", 1)
	s.Keys = []string{"k1", "k2"}
	var h1, h2 uint64
	if err := db.QueryRow(fmt.Sprintf("SELECT min(%[1]s), max(%[1]s) FROM tie", HashSQL("uid", "k1, k2", "99::UBIGINT"))).Scan(&h1, &h2); err != nil {
		t.Fatal(err)
	}
	if h1 != h2 {
		t.Fatalf("no collision: %d %d", h1, h2)
	}
	for _, st := range Strategies() {
		if !st.Exact {
			continue
		}
		rows, err := Collect(ctx, db, st.SQL(s, NewSeed()), 2)
		if err != nil {
			t.Fatal(err)
		}
		kept := len(rows)
		switch {
		case kept > s.Kappa && st.TieSafe:
			t.Errorf("%s kept %d keys for one user with kappa %d", st.Name, kept, s.Kappa)
		case kept > s.Kappa:
			t.Logf("%s kept %d keys with kappa %d: not tie-safe (as documented)", st.Name, kept, s.Kappa)
		case !st.TieSafe:
			t.Errorf("%s is marked not tie-safe but kept %d keys", st.Name, kept)
		}
	}
}

// TestLargeKappaPlans guards against plans whose size grows exponentially with kappa: each min
// pass references the previous list twice, so a filter on m pushed down the chain of passes
// (as a LEFT JOIN with "WHERE m IS NOT NULL" did) expands to 2^kappa list operations. With the
// recommended shape nothing is pushed into the chain and kappa = 40 runs instantly.
func TestLargeKappaPlans(t *testing.T) {
	db := openTest(t)
	if err := Generate(context.Background(), db, "t", Shape{Kind: Hard, Rows: 4000, Users: 50, Keys: 200, Seed: 9}); err != nil {
		t.Fatal(err)
	}
	for _, st := range Strategies() {
		if !st.Exact {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		_, err := Collect(ctx, db, st.SQL(DefaultSpec("t", 40), NewSeed()), 1)
		cancel()
		if err != nil {
			t.Errorf("%s with kappa 40: %v", st.Name, err)
		}
	}
}

func TestChoose(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	for _, c := range []struct {
		sh   Shape
		want string
	}{
		{Shape{Kind: Hard, Rows: 200000, Users: 20000, Keys: 1000, Seed: 1}, "prefilter_join"},
		{Shape{Kind: Easy, Rows: 200000, Users: 20000, Keys: 1000, Seed: 1}, "post_heavy"},
		{Shape{Kind: Easy, Rows: 600000, Users: 20000, Keys: 1000, MaxKeysPerUser: 12, Seed: 1}, "post_thr_leftjoin"},
	} {
		if err := Generate(ctx, db, "t", c.sh); err != nil {
			t.Fatal(err)
		}
		st, err := ReadSampleStats(ctx, db, DefaultSpec("t", 4))
		if err != nil {
			t.Fatal(err)
		}
		if got := Choose(st); got != c.want {
			t.Errorf("%v: stats %+v: chose %s, want %s", c.sh, st, got, c.want)
		}
		q := &AdaptiveQuery{Spec: DefaultSpec("t", 4)}
		if err := q.Run(ctx, db); err != nil || q.Chosen != c.want || q.ResultRows() != int(c.sh.Keys) {
			t.Errorf("adaptive: %v, chose %s, %d rows", err, q.Chosen, q.ResultRows())
		}
	}
}
