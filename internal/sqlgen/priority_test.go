package sqlgen_test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/postgres"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/exec"
	"github.com/dpsql/dpsql/internal/parser"
	"github.com/dpsql/dpsql/internal/plan"
	"github.com/dpsql/dpsql/internal/rewrite"
	"github.com/dpsql/dpsql/internal/sqlgen"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/internal/testmode"
)

// seedMark stands for the seed in printed priorities; the uniformity test replaces it with a
// column so that one query draws thousands of seeds.
const seedMark = "8070450532247928831"

// TestPostgresPriorityUniform checks, on PostgreSQL, that the priorities the stage ranks each
// unit's groups by choose every kappa-subset of a unit's groups equally often: for one unit
// over 20,000 seeds, and for 20,000 units under one seed (independence across units). Six
// groups and kappa 3 give 20 subsets; the chi-square statistic (19 degrees of freedom) must
// stay below 43.8, its 0.001 critical value. The unit and key types take the typed hashes of
// the prefilter, a NULL key included; "text row" is the fallback for other types.
//
// Lookup3 chained through its seed, without the final hash with the seed, fails this
// (chi-square 350 to 430 for hashint4extended(key, hashint8extended(uid, seed)), and 1,668 for
// unit 0 with the former hashtextextended(CAST(ROW(uid, key) AS TEXT), seed)).
func TestPostgresPriorityUniform(t *testing.T) {
	if testing.Short() {
		t.Skip("statistical test")
	}
	db := openPG(t)
	ctx := context.Background()
	// keys: the key columns' SQL over generate_series k in 1..6 (_dp_k0, _dp_k1, ...).
	cases := []struct {
		name     string
		unitType string
		keyTypes []string
		unit     string   // the unit's SQL (u numbers the units)
		keys     []string // SQL of each key column over k
	}{
		{"bigint unit, integer key", "BIGINT", []string{"INTEGER"}, "CAST(u AS BIGINT)", []string{"CAST(k AS INTEGER)"}},
		{"integer unit, bigint key", "INTEGER", []string{"BIGINT"}, "CAST(u AS INTEGER)", []string{"CAST(k * 1000003 AS BIGINT)"}},
		{"text unit, text and integer keys with a NULL", "TEXT", []string{"TEXT", "INTEGER"}, "'user ' || u",
			[]string{`(CASE WHEN k = 3 THEN NULL ELSE 'key ' || (k % 2) END) COLLATE "C"`, "CAST(k / 2 AS INTEGER)"}},
		{"numeric unit, double key", "NUMERIC", []string{"DOUBLE PRECISION"}, "CAST(u AS NUMERIC) / 10", []string{"CAST(k AS DOUBLE PRECISION) / 3"}},
		{"text row (fallback)", "", []string{"DATE"}, "CAST(u AS BIGINT)", []string{"DATE '2024-01-01' + k"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &plan.Plan{UnitType: c.unitType, KeyTypes: c.keyTypes}
			p.Seed = 8070450532247928831
			var names []string
			for i := range c.keys {
				names = append(names, analyzer.KeyColumn(i))
			}
			h, ok := sqlgen.PgPriority(p, names)
			if !ok {
				if c.unitType != "" {
					t.Fatalf("no typed priority for %s", c.name)
				}
				h = sqlgen.Priority(backend.Postgres, names, p.Seed)
			}
			var cols []string
			for i, k := range c.keys {
				cols = append(cols, fmt.Sprintf("%s AS %s", k, names[i]))
			}
			order := strings.Join(append([]string{"_dp_h"}, names...), ", ")
			for _, over := range []struct {
				name, draws string // draws: u and seed, one row per draw
			}{
				// The seeds are fixed (spread over the 64 bits by a hash of the draw), so
				// that the test passes or fails the same at every run: with random() it failed
				// about one run in a hundred, as a 0.001 critical value over ten checks does.
				{"one unit, many seeds", "SELECT 0 AS u, s AS draw, hashint8extended(CAST(s AS BIGINT), 7) AS seed FROM generate_series(1, 20000) AS s"},
				{"many units, one seed", "SELECT s AS u, s AS draw, CAST(-3141592653589793238 AS BIGINT) AS seed FROM generate_series(1, 20000) AS s"},
			} {
				prio := strings.ReplaceAll(h, seedMark, "seed")
				sql := fmt.Sprintf(`WITH d AS (%s),
rows AS (SELECT draw, seed, %s AS _dp_uid, %s FROM d, generate_series(1, 6) AS g(k)),
hashed AS (SELECT *, %s AS _dp_h FROM rows),
ranked AS (SELECT *, row_number() OVER (PARTITION BY draw ORDER BY %s) AS r FROM hashed),
subsets AS (SELECT draw, string_agg(CAST(ROW(%s) AS TEXT), ';' ORDER BY CAST(ROW(%s) AS TEXT)) AS s FROM ranked WHERE r <= 3 GROUP BY draw)
SELECT s, COUNT(*) FROM subsets GROUP BY s`, over.draws, c.unit, strings.Join(cols, ", "), prio, order,
					strings.Join(names, ", "), strings.Join(names, ", "))
				rows, err := db.Query(ctx, sql)
				if err != nil {
					t.Fatalf("%v\n%s", err, sql)
				}
				const draws, subsets = 20000, 20
				if len(rows.Values) != subsets {
					t.Fatalf("%s: %d distinct subsets, want %d", over.name, len(rows.Values), subsets)
				}
				chi := 0.0
				want := float64(draws) / subsets
				for _, r := range rows.Values {
					n := float64(r[1].(int64))
					chi += (n - want) * (n - want) / want
				}
				t.Logf("%s: chi-square %.1f", over.name, chi)
				if chi > 43.8 {
					t.Errorf("%s: chi-square %.1f over %d subsets, want below 43.8 (uniform)", over.name, chi, subsets)
				}
			}
		})
	}
}

// TestPostgresBoundingFormsAgree runs the stage of a query with both PostgreSQL forms of
// contribution bounding, the prefilter (dense_rank over the rows) and the window over
// per-unit rows, under several seeds, and checks that they keep the same groups and sums:
// the executor picks the form from statistics of all units' data, so a unit's choice must not
// depend on it. It also checks the bound itself: no unit is in more than kappa groups.
func TestPostgresBoundingFormsAgree(t *testing.T) {
	db := openPG(t)
	ctx := context.Background()
	if err := db.Exec(ctx, `CREATE TABLE visits AS SELECT CAST(i % 300 AS BIGINT) AS uid,
		CASE WHEN i % 11 = 0 THEN NULL ELSE 'k' || (i * 7919 % 13) END AS k,
		CAST(i % 5 AS INTEGER) AS j, CAST(i % 97 AS DOUBLE PRECISION) AS v
		FROM generate_series(0, 5999) AS s(i)`); err != nil {
		t.Fatal(err)
	}
	cat := catalog.New(&catalog.Relation{Name: "visits", Kind: catalog.Private, PrivacyUnit: "uid",
		Columns: []catalog.Column{{Name: "uid", Type: "BIGINT"}, {Name: "k", Type: "TEXT"}, {Name: "j", Type: "INTEGER"}, {Name: "v", Type: "DOUBLE PRECISION"}}})
	for _, query := range []string{
		`SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=3) k, j, ANON_SUM(v CLAMPED BETWEEN 0 AND 50) AS s FROM visits GROUP BY k, j`,
		`SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=2) k, ANON_AVG(v CLAMPED BETWEEN 0 AND 50) AS a, ANON_VAR_POP(v CLAMPED BETWEEN 0 AND 50) AS var FROM visits GROUP BY k`,
	} {
		p := pgPlan(t, query, cat)
		p.UnitType = "BIGINT"
		p.KeyTypes = []string{"TEXT", "INTEGER"}[:len(p.Query.Keys)]
		for _, seed := range []int64{1, -2, 77777777777, -9223372036854775807} {
			p.Seed = seed
			var results [2][]string
			for i, window := range []bool{false, true} {
				p.AggregateFirst = window
				if got := sqlgen.UsesPrefilter(p, backend.Postgres); got == window {
					t.Fatalf("UsesPrefilter = %v with AggregateFirst %v", got, window)
				}
				sql, err := sqlgen.Stage(p, backend.Postgres)
				if err != nil {
					t.Fatal(err)
				}
				rows, err := db.Query(ctx, sql)
				if err != nil {
					t.Fatalf("%v\n%s", err, sql)
				}
				for _, r := range rows.Values {
					results[i] = append(results[i], fmt.Sprint(r...))
				}
				sort.Strings(results[i])
				// The bound: the units' groups, counted from the kept groups' unit counts,
				// never exceed kappa per unit (300 units).
				total := int64(0)
				for _, r := range rows.Values {
					total += r[len(p.Query.Keys)].(int64)
				}
				if total > 300*p.Kappa {
					t.Errorf("seed %d window %v: %d unit-group pairs kept, more than kappa = %d per unit", seed, window, total, p.Kappa)
				}
			}
			if !reflect.DeepEqual(results[0], results[1]) {
				t.Errorf("%s\nseed %d: the prefilter and the window keep different groups:\n%v\n%v", query, seed, results[0], results[1])
			}
		}
	}
}

// openPG opens a fresh database of the package's cluster as the owner.
func openPG(t *testing.T) *postgres.DB {
	t.Helper()
	url := pg.Cluster(t).NewDatabase(t)
	db, err := postgres.Open(context.Background(), url, postgres.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// The total helpers (dpsql.cast_float8, ...) the stage calls.
	if err := store.Init(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestPostgresPrefilterCrafted tries to get one unit into more groups than kappa, or into
// one group twice, through the prefilter's priorities: BIGINT keys 0 and 2^32 + 1 hash alike
// under every seed (hashint8extended folds the two halves of its argument), so they tie on the
// priority; and a NUMERIC unit written 1.0 in some rows and 1.00 in others is one unit, which
// a hash of its text would split. Each case must keep at most kappa groups for the unit, and
// the unit at most once per group, under the prefilter and the window form alike.
func TestPostgresPrefilterCrafted(t *testing.T) {
	db := openPG(t)
	ctx := context.Background()
	for _, c := range []struct {
		name, table, unitType, keyType string
		kappa                          int64
	}{
		{"colliding keys", `SELECT CAST(5 AS BIGINT) AS uid, CAST(k AS BIGINT) AS k, CAST(1 AS DOUBLE PRECISION) AS v
			FROM (VALUES (0), (4294967297), (0), (4294967297)) AS x(k)`, "BIGINT", "BIGINT", 1},
		{"one unit, two spellings", `SELECT u AS uid, k, CAST(1 AS DOUBLE PRECISION) AS v
			FROM (VALUES (CAST('1.0' AS NUMERIC), 1), (CAST('1.00' AS NUMERIC), 1), (CAST('1.000' AS NUMERIC), 2),
			(CAST('1.0' AS NUMERIC), 3), (CAST('1.00' AS NUMERIC), 3), (CAST('1' AS NUMERIC), 4)) AS x(u, k)`, "NUMERIC", "INTEGER", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := db.Exec(ctx, "DROP TABLE IF EXISTS crafted"); err != nil {
				t.Fatal(err)
			}
			if err := db.Exec(ctx, "CREATE TABLE crafted AS "+c.table); err != nil {
				t.Fatal(err)
			}
			if c.name == "colliding keys" {
				// The premise: the two keys' priorities tie under any seed.
				rows, err := db.Query(ctx, `SELECT COUNT(DISTINCT hashint8extended(CAST(k AS BIGINT), 12345)) FROM (VALUES (0), (4294967297)) AS x(k)`)
				if err != nil || rows.Values[0][0].(int64) != 1 {
					t.Fatalf("the keys do not collide: %v %v", rows, err)
				}
			}
			cat := catalog.New(&catalog.Relation{Name: "crafted", Kind: catalog.Private, PrivacyUnit: "uid",
				Columns: []catalog.Column{{Name: "uid", Type: c.unitType}, {Name: "k", Type: c.keyType}, {Name: "v", Type: "DOUBLE PRECISION"}}})
			p := pgPlan(t, fmt.Sprintf(`SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=%d) k, ANON_SUM(v CLAMPED BETWEEN 0 AND 5) AS s FROM crafted GROUP BY k`, c.kappa), cat)
			p.UnitType, p.KeyTypes = c.unitType, []string{c.keyType}
			for seed := int64(-50); seed < 50; seed++ {
				p.Seed = seed * 1000003
				for _, window := range []bool{false, true} {
					p.AggregateFirst = window
					sql, err := sqlgen.Stage(p, backend.Postgres)
					if err != nil {
						t.Fatal(err)
					}
					rows, err := db.Query(ctx, sql)
					if err != nil {
						t.Fatalf("%v\n%s", err, sql)
					}
					total := int64(0)
					for _, r := range rows.Values {
						n := r[1].(int64)
						if n > 1 {
							t.Fatalf("seed %d window %v: group %v counts the one unit %d times", p.Seed, window, r[0], n)
						}
						total += n
					}
					if total > c.kappa {
						t.Fatalf("seed %d window %v: the unit is in %d groups, kappa = %d\n%s", p.Seed, window, total, c.kappa, sql)
					}
				}
			}
		})
	}
}

// pgPlan parses, analyzes and rewrites query over cat, and prepares it for PostgreSQL with
// the noiseless mechanisms (which fill in the encodings the stage SQL needs).
func pgPlan(t *testing.T, query string, cat *catalog.Catalog) *plan.Plan {
	t.Helper()
	q, err := parser.ParseQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	aq, err := analyzer.Analyze(q, cat)
	if err != nil {
		t.Fatal(err)
	}
	p, err := rewrite.Rewrite(aq.(*analyzer.Query))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.Prepare(p, testmode.Noiseless{}, backend.Postgres); err != nil {
		t.Fatal(err)
	}
	return p
}
