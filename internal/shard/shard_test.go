package shard_test

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
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/internal/plan"
	"github.com/dpsql/dpsql/internal/shard"
	"github.com/dpsql/dpsql/internal/sqlgen"
	"github.com/dpsql/dpsql/internal/testmode"
	"github.com/dpsql/dpsql/sqlerr"
)

// checking is a Stager that runs every stage and histogram both distributed (shard.Local over
// the files) and as the stage SQL on the coordinator, and fails the test unless the rows are
// equal: the distributed stage must be exactly the stage.
type checking struct {
	t     *testing.T
	inner *shard.Stager
	runs  int
}

func (c *checking) Check(ctx context.Context, p *plan.Plan) error { return c.inner.Check(ctx, p) }

func (c *checking) Histogram(ctx context.Context, p *plan.Plan, j, scaleExp, numBins int) (*backend.Rows, error) {
	got, err := c.inner.Histogram(ctx, p, j, scaleExp, numBins)
	if err != nil {
		return nil, err
	}
	sql, err := sqlgen.BoundsStage(p, backend.DuckDB, j, scaleExp, numBins)
	if err != nil {
		return nil, err
	}
	want, err := c.inner.Coordinator.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	c.compare("histogram", got, want)
	return got, nil
}

func (c *checking) Stage(ctx context.Context, p *plan.Plan, b backend.Backend) (*backend.Rows, error) {
	got, err := c.inner.Stage(ctx, p, b)
	if err != nil {
		return nil, err
	}
	sql, err := sqlgen.Stage(p, backend.DuckDB)
	if err != nil {
		return nil, err
	}
	want, err := b.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	if !reflect.DeepEqual(got.Types, want.Types) {
		c.t.Errorf("stage types %v, want %v", got.Types, want.Types)
	}
	c.compare("stage", got, want)
	c.runs++
	return got, nil
}

func (c *checking) compare(what string, got, want *backend.Rows) {
	c.t.Helper()
	g, w := rowStrings(got), rowStrings(want)
	if !reflect.DeepEqual(g, w) {
		c.t.Errorf("%s rows differ:\ndistributed %v\nstage       %v", what, g, w)
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

// fixture writes the test data as Parquet files, each private relation split over three files
// by row number (so a unit's rows are spread over files), and returns an engine whose
// private relations are views over them, with the checking stager, as an analyst.
func fixture(t *testing.T) (*engine.Engine, *checking) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	src, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	root, _ := filepath.Abs("../..")
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
		for i := 0; i < 3; i++ {
			if err := src.Exec(ctx, fmt.Sprintf("COPY (SELECT * FROM %s WHERE rowid %% 3 = %d) TO '%s/%s-%d.parquet'", rel, i, dir, rel, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	coord, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner, AllowedDirectories: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	st := &checking{t: t, inner: &shard.Stager{Coordinator: coord, Runner: shard.Local{Threads: 1}, Dir: dir}}
	e, err := engine.New(ctx, engine.Options{Backend: coord, Mechanisms: testmode.Noiseless{}, Owner: true, Stager: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
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

// TestDistributedStageIsTheStage runs queries of every kind through the distributed stage and
// checks its rows (and histograms) against the stage SQL's on the same plan and seed.
func TestDistributedStageIsTheStage(t *testing.T) {
	e, st := fixture(t)
	const eps = "epsilon=1e20, delta=0.99999"
	queries := []string{
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
	}
	ctx := context.Background()
	for _, q := range queries {
		res, err := e.Exec(ctx, q)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		if len(res) != 1 || len(res[0].Rows) == 0 {
			t.Errorf("%s: no rows", q)
		}
	}
	if st.runs != len(queries) {
		t.Errorf("%d distributed stages ran, want %d", st.runs, len(queries))
	}
}

// TestDistributedRefusals: what the distributed stage cannot run is refused before it is
// charged, naming the construct.
func TestDistributedRefusals(t *testing.T) {
	e, _ := fixture(t)
	ctx := context.Background()
	for q, want := range map[string]string{
		`SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) ANON_COUNT(*) FROM purchases p JOIN s ON p.customer_id = s.uid`: "several private relations (purchases, s)",
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-5, max_rows_contributed=2) COUNT(*) FROM s`:                          "max_rows_contributed",
	} {
		_, err := e.Exec(ctx, q)
		se, ok := sqlerr.As(err)
		if !ok || !strings.Contains(se.Msg, want) || se.Rule != shard.RuleDistributed {
			t.Errorf("%s: got %v, want the %s rule and %q", q, err, shard.RuleDistributed, want)
		}
	}
}

// TestCodecRoundTrips: the binary states decode to what was encoded, and malformed bytes are
// errors, never panics.
func TestCodecRoundTrips(t *testing.T) {
	u := &shard.Unit{Pairs: []shard.Pair{{Priority: 7, Group: "\x01\x01a", Parts: []shard.Part{{Null: true}, {I: -3, F: 2.5, U: 1 << 63}}}}}
	got, err := shard.DecodeUnit(shard.EncodeUnit(u))
	if err != nil || !reflect.DeepEqual(got, u) {
		t.Fatalf("unit %+v %v, want %+v", got, err, u)
	}
	b := shard.EncodeUnit(u)
	for i := 0; i < len(b); i++ {
		if _, err := shard.DecodeUnit(b[:i]); err == nil {
			t.Fatalf("truncated unit of %d bytes decoded", i)
		}
	}
	g := shard.Group{N: 3, Aggs: []shard.GroupAgg{{C: 2, CountSum: 4, Leaves: map[int64]int64{3: 1}}}}
	g.Aggs[0].S = g.Aggs[0].S.AddInt64(-5)
	gg, err := shard.DecodeGroup(shard.EncodeGroup(g))
	if err != nil || !reflect.DeepEqual(gg, g) {
		t.Fatalf("group %+v %v, want %+v", gg, err, g)
	}
	if _, err := shard.DecodeGroup([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}); err == nil {
		t.Fatal("malformed group decoded")
	}
	_ = os.Getpid
}
