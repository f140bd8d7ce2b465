// Package shardtest checks runners of distributed stages (internal/shard.Local, beam/sqlbeam)
// against the stage SQL: a Stager that runs every stage both ways and compares the rows, a
// fixture of private relations split over Parquet files, and the engine's conformance files
// turned into views over files. For tests only: it uses the noiseless test mode.
package shardtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/conformance"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/internal/plan"
	"github.com/dpsql/dpsql/internal/shard"
	"github.com/dpsql/dpsql/internal/sqlgen"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/internal/testmode"
	"github.com/dpsql/dpsql/sqlerr"
)

// Checking is a Stager that runs every stage and histogram both distributed (Inner) and as
// the stage SQL on the coordinator, and fails the test unless the rows are equal: a
// distributed stage must be exactly the stage.
type Checking struct {
	T     testing.TB
	Inner *shard.Stager
	// Stages counts the stages that ran and matched or not.
	Stages int
}

// Check implements exec.Stager.
func (c *Checking) Check(ctx context.Context, p *plan.Plan) error { return c.Inner.Check(ctx, p) }

// Explain implements exec.Stager.
func (c *Checking) Explain(ctx context.Context, p *plan.Plan) ([]string, error) {
	return c.Inner.Explain(ctx, p)
}

// Histogram implements exec.Stager.
func (c *Checking) Histogram(ctx context.Context, p *plan.Plan, j, scaleExp, numBins int) (*backend.Rows, error) {
	got, err := c.Inner.Histogram(ctx, p, j, scaleExp, numBins)
	if err != nil {
		c.T.Logf("distributed histogram: %v", err) // the engine withholds it from analysts
		return nil, err
	}
	sql, err := sqlgen.BoundsStage(inFileOrder(p), backend.DuckDB, j, scaleExp, numBins)
	if err != nil {
		return nil, err
	}
	want, err := c.Inner.Coordinator.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	c.compare("histogram", got, want)
	return got, nil
}

// Stage implements exec.Stager.
func (c *Checking) Stage(ctx context.Context, p *plan.Plan, b backend.Backend) (*backend.Rows, error) {
	got, err := c.Inner.Stage(ctx, p, b)
	if err != nil {
		c.T.Logf("distributed stage: %v", err) // the engine withholds it from analysts
		return nil, err
	}
	sql, err := sqlgen.Stage(inFileOrder(p), backend.DuckDB)
	if err != nil {
		return nil, err
	}
	want, err := b.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	if !reflect.DeepEqual(got.Types, want.Types) {
		c.T.Errorf("stage types %v, want %v", got.Types, want.Types)
	}
	c.compare("stage", got, want)
	c.Stages++
	return got, nil
}

// inFileOrder is p with DuckDB's stage aggregating per unit first (plan.Plan.AggregateFirst)
// rather than ranking the rows in a window, which the engine may do: both keep the same rows,
// but a unit's DOUBLE partial sum follows the order of its terms, and the window sorts them by
// priority, where the aggregation per unit first, like each worker's, reads them in the
// files' order (single-threaded here). The comparison stays exact, bit for bit, against the
// form that sums in that order.
func inFileOrder(p *plan.Plan) *plan.Plan {
	q := *p
	q.AggregateFirst = true
	return &q
}

func (c *Checking) compare(what string, got, want *backend.Rows) {
	c.T.Helper()
	g, w := rowStrings(got), rowStrings(want)
	if !reflect.DeepEqual(g, w) {
		c.T.Errorf("%s rows differ:\ndistributed %v\nstage       %v", what, g, w)
	}
}

func rowStrings(r *backend.Rows) []string {
	var out []string
	for _, row := range r.Values {
		out = append(out, fmt.Sprint(row...))
	}
	sort.Strings(out)
	return out
}

// Coordinator opens the coordinator's database (in memory, owner) and an owner's engine on it
// whose stages run on runner, checked against the stage SQL; dir holds the data files and the
// group rows.
func Coordinator(t testing.TB, runner shard.Runner, dir string) (*engine.Engine, *Checking) {
	t.Helper()
	ctx := context.Background()
	coord, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner, AllowedDirectories: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	st := &Checking{T: t, Inner: &shard.Stager{Coordinator: coord, Runner: runner, Dir: dir}}
	e, err := engine.New(ctx, engine.Options{Backend: coord, Mechanisms: testmode.Noiseless{}, Owner: true, Stager: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, st
}

// Fixture writes the test data (the example shop's purchases, and a table of edge cases:
// NULL and NaN values, infinities, -0, NULL keys, dates) as Parquet files, each private
// relation split over three files by row number (so a unit's rows are spread over files), and
// returns an analyst's engine whose private relations are views over them.
func Fixture(t testing.TB, runner shard.Runner) (*engine.Engine, *Checking) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	src, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	root := repoRoot(t)
	setup := []string{
		fmt.Sprintf("CREATE TABLE purchases AS SELECT * FROM read_csv('%s/examples/shop/purchases.csv')", root),
		`CREATE TABLE s (uid INTEGER, grp VARCHAR, x DOUBLE, d DATE, f DOUBLE)`,
		`INSERT INTO s VALUES
		  (1, 'a', 4, DATE '2024-01-01', 0.5), (1, 'a', 6, DATE '2024-01-02', -0.0), (1, 'a', 8, NULL, 0.0), (2, 'a', 1, DATE '2024-01-01', 1.5),
		  (3, 'a', NULL, NULL, NULL), (3, 'a', 3, NULL, 2.5), (4, 'a', NULL, NULL, 0.5), (5, 'a', 'NaN', NULL, 0.5), (5, 'a', 2, NULL, 0.5),
		  (1, 'b', 20, NULL, 0.5), (6, 'b', -5, NULL, 0.5), (6, 'b', 15, NULL, 0.5), (7, 'b', 30, NULL, 0.5), (NULL, 'b', 1000, NULL, 0.5),
		  (15, 'i', 'Infinity', NULL, 0.5), (16, 'i', '-Infinity', NULL, 0.5), (16, 'i', 'Infinity', NULL, 0.5), (17, 'i', 1e300, NULL, 0.5),
		  (19, NULL, NULL, NULL, 0.5), (20, NULL, 7, NULL, 0.5), (20, 'c', 0.1, NULL, 0.5), (20, 'c', 0.2, NULL, 0.5), (20, 'c', 0.7, NULL, 0.5)`,
	}
	for _, s := range setup {
		if err := src.Exec(ctx, s); err != nil {
			t.Fatal(s, err)
		}
	}
	for _, rel := range []string{"purchases", "s"} {
		if _, err := split(ctx, src, rel, dir, 3); err != nil {
			t.Fatal(err)
		}
	}
	e, st := Coordinator(t, runner, dir)
	init := fmt.Sprintf(`
CREATE VIEW purchases OPTIONS(anonymization_userid_column='customer_id') AS (SELECT * FROM read_parquet('%[1]s/purchases-*.parquet'));
CREATE VIEW s OPTIONS(anonymization_userid_column='uid') AS SELECT uid, grp, x, d, f FROM read_parquet(['%[1]s/s-0.parquet', '%[1]s/s-1.parquet', '%[1]s/s-2.parquet']) WHERE true;
CREATE VIEW items OPTIONS(public=true) AS (SELECT * FROM read_csv('%[2]s/examples/shop/items.csv'));
CREATE VIEW grps OPTIONS(public=true) AS (SELECT * FROM (VALUES ('a'), ('b'), ('z')) AS t(grp));
SET BUDGET UNLIMITED;`, dir, root)
	if _, err := e.Exec(ctx, init); err != nil {
		t.Fatal(err)
	}
	if err := e.BecomeAnalyst(ctx); err != nil {
		t.Fatal(err)
	}
	return e, st
}

// split writes relation rel of db to n Parquet files dir/rel-<i>.parquet, row i going to file
// i mod n, and returns their paths.
func split(ctx context.Context, db backend.Backend, rel, dir string, n int) ([]string, error) {
	var files []string
	for i := 0; i < n; i++ {
		f := filepath.Join(dir, fmt.Sprintf("%s-%d.parquet", strings.ToLower(rel), i))
		sql := fmt.Sprintf("COPY (SELECT * EXCLUDE (_dp_row) FROM (SELECT *, row_number() OVER () AS _dp_row FROM %s) WHERE _dp_row %% %d = %d) TO '%s' (FORMAT parquet)",
			ast.QuoteIdent(rel), n, i, f)
		if err := db.Exec(ctx, sql); err != nil {
			return nil, fmt.Errorf("%s: %w", sql, err)
		}
		files = append(files, f)
	}
	return files, nil
}

func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		if m, _ := filepath.Glob(filepath.Join(d, "examples/shop/purchases.csv")); len(m) > 0 {
			return d
		}
	}
	t.Fatalf("no repository root above %s", dir)
	return ""
}

// Queries are anonymized queries of every kind the distributed stage runs, over Fixture's
// relations, all noise-free (epsilon 1e20), each with at least one released row.
var Queries = func() []string {
	const eps = "epsilon=1e20, delta=0.99999"
	return []string{
		`SELECT WITH ANONYMIZATION OPTIONS(` + eps + `, kappa=3) item, ANON_COUNT(DISTINCT customer_id), ANON_COUNT(*), ANON_AVG(quantity CLAMPED BETWEEN 1 AND 10), ANON_SUM(price CLAMPED BETWEEN 0 AND 100) FROM purchases GROUP BY item`,
		`SELECT WITH ANONYMIZATION OPTIONS(` + eps + `, kappa=1) item, ANON_COUNT(*), ANON_SUM(price CLAMPED BETWEEN 0 AND 50) FROM purchases GROUP BY item`,
		`SELECT WITH ANONYMIZATION OPTIONS(` + eps + `, kappa=2) EXTRACT(MONTH FROM day) AS m, ANON_VAR_POP(quantity CLAMPED BETWEEN 0 AND 10), ANON_STDDEV_POP(price CLAMPED BETWEEN 0 AND 50) FROM purchases WHERE quantity > 1 GROUP BY m`,
		`SELECT WITH ANONYMIZATION OPTIONS(` + eps + `, kappa=2) item, ANON_PERCENTILE_CONT(price, 0.5 CLAMPED BETWEEN 0 AND 100), ANON_QUANTILES(quantity, 4 CLAMPED BETWEEN 0 AND 10) FROM purchases GROUP BY item`,
		`SELECT WITH ANONYMIZATION OPTIONS(` + eps + `, kappa=4) item, ANON_SUM(price), ANON_COUNT(*), ANON_AVG(quantity) FROM purchases GROUP BY item`,
		`SELECT WITH ANONYMIZATION OPTIONS(` + eps + `, kappa=2) i.category, ANON_COUNT(*), ANON_SUM(p.quantity * i.list_price CLAMPED BETWEEN 0 AND 100) FROM purchases p JOIN items i ON p.item = i.item GROUP BY i.category`,
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(` + eps + `, max_groups_contributed=2, group_selection_strategy=PUBLIC_GROUPS) grps.grp, COUNT(*) AS n, SUM(x, contribution_bounds_per_group => (0, 10)) AS s FROM s JOIN grps ON s.grp = grps.grp GROUP BY grps.grp`,
		`SELECT WITH ANONYMIZATION OPTIONS(` + eps + `, kappa=5) grp, ANON_SUM(x CLAMPED BETWEEN -10 AND 10), ANON_AVG(x CLAMPED BETWEEN 0 AND 10), ANON_COUNT(x), ANON_VAR_POP(x CLAMPED BETWEEN 0 AND 10) FROM s GROUP BY grp`,
		`SELECT WITH ANONYMIZATION OPTIONS(` + eps + `, kappa=5) f, d, ANON_COUNT(*) FROM s GROUP BY f, d`,
		`SELECT WITH ANONYMIZATION OPTIONS(` + eps + `, kappa=5) ANON_SUM(x CLAMPED BETWEEN 0 AND 1e6), ANON_COUNT(*) FROM s`,
		`SELECT WITH ANONYMIZATION OPTIONS(` + eps + `, kappa=5) grp, ANON_VAR_POP(x), ANON_SUM(x) FROM s WHERE grp IN ('a', 'b') GROUP BY grp HAVING ANON_COUNT(*) > 0 ORDER BY grp`,
		`SELECT WITH ANONYMIZATION OPTIONS(` + eps + `, max_rows_contributed=2) item, ANON_COUNT(*) AS n, ANON_COUNT(DISTINCT customer_id) AS u, ANON_SUM(price CLAMPED BETWEEN 0 AND 50) AS s, ANON_AVG(quantity CLAMPED BETWEEN 1 AND 10) AS a, ANON_VAR_POP(price CLAMPED BETWEEN 0 AND 50) AS v FROM purchases GROUP BY item`,
		`SELECT WITH ANONYMIZATION OPTIONS(` + eps + `, max_rows_contributed=3) grp, ANON_COUNT(x) AS n, ANON_SUM(x CLAMPED BETWEEN -5 AND 10) AS s, ANON_PERCENTILE_CONT(x, 0.5 CLAMPED BETWEEN 0 AND 10) AS m FROM s GROUP BY grp`,
		`SELECT WITH ANONYMIZATION OPTIONS(` + eps + `, max_rows_contributed=1) ANON_COUNT(*) AS n, ANON_SUM(x CLAMPED BETWEEN 0 AND 10) AS s FROM s WHERE x > 1e301`,
	}
}()

// Conformance runs a conformance file (internal/conformance/testdata) through the
// distributed stage: its owner statements run on a scratch database, every private and
// public relation is written to Parquet (private ones split over three files) and declared as
// a view over its files on a coordinator whose stages run on runner, then each query runs as
// an analyst and must give the file's result (with DPSQL_SHARDTEST_OWNER=1, as the owner, who
// sees the cause of a failure after the data were read). Queries the distributed stage refuses by design
// (shard.RuleDistributed) are skipped and counted.
func Conformance(t *testing.T, path string, runner shard.Runner) (ran, skipped int) {
	t.Helper()
	ctx := context.Background()
	recs, err := conformance.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	scratch, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	defer scratch.Close()
	se, err := engine.New(ctx, engine.Options{Backend: scratch, Mechanisms: testmode.Noiseless{}, Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	var policy []string
	for _, r := range recs {
		if r.Kind != "statement" {
			break
		}
		if _, err := se.Exec(ctx, r.SQL); err != nil {
			t.Fatalf("%s:%d: %v", filepath.Base(path), r.Line, err)
		}
		if u := strings.ToUpper(strings.TrimSpace(r.SQL)); strings.HasPrefix(u, "SET BUDGET") || strings.HasPrefix(u, "SET LIMITS") {
			policy = append(policy, r.SQL)
		}
	}
	cat, err := store.LoadCatalog(ctx, scratch)
	if err != nil {
		t.Fatal(err)
	}
	var init []string
	for _, rel := range cat.Relations() {
		n := 1
		opt := "public=true"
		if rel.Kind == catalog.Private {
			n, opt = 3, fmt.Sprintf("anonymization_userid_column='%s'", strings.ReplaceAll(rel.PrivacyUnit, "'", "''"))
		}
		files, err := split(ctx, scratch, rel.Name, dir, n)
		if err != nil {
			t.Fatal(err)
		}
		init = append(init, fmt.Sprintf("CREATE VIEW %s OPTIONS(%s) AS (SELECT * FROM read_parquet(['%s']))",
			ast.QuoteIdent(rel.Name), opt, strings.Join(files, "', '")))
	}
	for _, rel := range cat.Relations() {
		var cols []string
		for c := range rel.Domains {
			cols = append(cols, c)
		}
		sort.Strings(cols)
		for _, c := range cols {
			init = append(init, fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s SET OPTIONS(public_domain = %s)", ast.QuoteIdent(rel.Name), ast.QuoteIdent(c), rel.Domains[c]))
		}
	}
	init = append(init, policy...)
	e, st := Coordinator(t, runner, dir)
	for _, s := range init {
		if _, err := e.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %s: %v", filepath.Base(path), s, err)
		}
	}
	if os.Getenv("DPSQL_SHARDTEST_OWNER") == "" {
		if err := e.BecomeAnalyst(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range recs {
		if r.Kind != "query" {
			continue
		}
		where := fmt.Sprintf("%s:%d", filepath.Base(path), r.Line)
		before := st.Stages
		args, err := r.Args()
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		res, err := e.Exec(ctx, r.SQL, args...)
		if se, ok := sqlerr.As(err); ok && se.Rule == shard.RuleDistributed {
			skipped++
			continue
		}
		ran++
		if want, ok := r.WantError(); ok {
			se, isSQL := sqlerr.As(err)
			if err == nil || !isSQL || (se.Code != want && se.Rule != want) {
				t.Errorf("%s: got error %v, want %s", where, err, want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %s", where, sqlerr.Render(err, r.SQL))
			continue
		}
		if ok, got, want := r.Match(res[len(res)-1].Rows); !ok {
			t.Errorf("%s: result differs (distributed stages run: %d)\nquery:\n%s\ngot:\n%s\nwant:\n%s", where, st.Stages-before, r.SQL, got, want)
		}
	}
	return ran, skipped
}

// RunQueries runs Queries over Fixture with its stages on runner: each must release rows, and
// each stage's rows must be the stage SQL's.
func RunQueries(t *testing.T, runner shard.Runner) {
	e, st := Fixture(t, runner)
	ctx := context.Background()
	for _, q := range Queries {
		res, err := e.Exec(ctx, q)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		if len(res) != 1 || len(res[0].Rows) == 0 {
			t.Errorf("%s: no rows", q)
		}
	}
	if st.Stages != len(Queries) {
		t.Errorf("%d distributed stages ran, want %d", st.Stages, len(Queries))
	}
}

// RunConformanceFiles runs Conformance for every file of dir (the engine's
// internal/conformance/testdata), one subtest each.
func RunConformanceFiles(t *testing.T, dir string, runner func() shard.Runner) {
	files, err := filepath.Glob(filepath.Join(dir, "*.test"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no conformance files in %s: %v", dir, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			ran, skipped := Conformance(t, f, runner())
			t.Logf("%d queries ran, %d refused by the distributed stage", ran, skipped)
		})
	}
}
