package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	blog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/cli"
)

// TestMain runs the pipelines on Beam's Prism runner; pass --runner=direct for the direct
// runner.
func TestMain(m *testing.M) {
	blog.LogLevel = "warn"
	blog.SetLogger(&blog.Standard{Level: blog.SevWarn})
	ptest.Main(m)
}

// beamDir and rootDir are the beam/ directory and the repository's root.
var beamDir, _ = filepath.Abs("../..")
var rootDir = filepath.Dir(beamDir)

func testExecute(_ context.Context, p *beam.Pipeline) error { return ptest.Run(p) }

// beamRun runs dpsql-beam with args from the beam/ directory (where the example setup's paths
// are relative to) and returns its exit status, standard output and standard error.
func beamRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	t.Chdir(beamDir)
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(""), &out, &errb, testExecute)
	return code, out.String(), errb.String()
}

// dpsqlRun runs the dpsql command in this process from the repository root.
func dpsqlRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	t.Chdir(rootDir)
	var out, errb bytes.Buffer
	err := cli.Run(context.Background(), args, cli.Options{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Open:     func(ctx context.Context, cfg dpsql.Config) (cli.Engine, error) { return dpsql.Open(ctx, cfg) },
		Complete: dpsql.Complete})
	return cli.ExitCode(err), out.String(), errb.String()
}

const readmeQuery = "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=3) item, ANON_COUNT(DISTINCT customer_id) AS buyers, ANON_AVG(quantity CLAMPED BETWEEN 1 AND 10) AS avg_quantity FROM purchases GROUP BY item ORDER BY item"

// TestReadmeExample runs the README's dpsql-beam command.
func TestReadmeExample(t *testing.T) {
	code, out, errs := beamRun(t, "--init", "../examples/shop/beam-setup.sql", "-c", readmeQuery)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	code, explain, errs2 := beamRun(t, "--init", "../examples/shop/beam-setup.sql", "-c", "EXPLAIN "+readmeQuery)
	if code != 0 || !strings.Contains(explain, "Distributed stage: private relation purchases, 8 files in") || strings.Contains(errs2, "charged") {
		t.Errorf("EXPLAIN: exit %d:\n%s\n%s", code, explain, errs2)
	}
	if !strings.Contains(out, "(10 rows)") || !strings.Contains(out, "stapler") || !strings.Contains(errs, "charged epsilon=1, delta=1e-05; remaining epsilon=19") {
		t.Errorf("output:\n%s\n%s", out, errs)
	}
}

// unlimited writes a copy of setup with the budget lifted (SET BUDGET UNLIMITED: noise-free
// test queries at epsilon 1e20) and every relative path made absolute against dir.
func unlimited(t *testing.T, setup, dir string) string {
	t.Helper()
	b, err := os.ReadFile(setup)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), "SET BUDGET OPTIONS(epsilon=20, delta=1e-4);", "SET BUDGET UNLIMITED;")
	s = strings.ReplaceAll(s, "'../examples/", "'"+dir+"/examples/")
	s = strings.ReplaceAll(s, "'examples/", "'"+dir+"/examples/")
	f := filepath.Join(t.TempDir(), filepath.Base(setup))
	if err := os.WriteFile(f, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestSameAnswersAsDpsql: at epsilon 1e20 (noise-free) and a kappa no customer exceeds,
// dpsql-beam over the Parquet files returns exactly the rows dpsql returns over the CSV.
func TestSameAnswersAsDpsql(t *testing.T) {
	root := rootDir
	beamSetup := unlimited(t, filepath.Join(root, "examples/shop/beam-setup.sql"), root)
	dpsqlSetup := unlimited(t, filepath.Join(root, "examples/shop/setup.sql"), root)
	for i, q := range []string{
		// Implicit bounds (ANON_COUNT(*), ANON_SUM(price)): dpsql estimates them in the stage's
		// own pass and sums the values exactly, a distributed stage with the histogram query
		// first and values rounded to 2^-40 of the bound, so sums may differ in their last
		// digits (compared below within 1e-9 of the column's largest value).
		"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=1e-5, kappa=10) item, ANON_COUNT(DISTINCT customer_id) AS buyers, ANON_COUNT(*) AS n, ANON_AVG(quantity CLAMPED BETWEEN 1 AND 10) AS avg_quantity, ANON_SUM(price) AS revenue FROM purchases GROUP BY item ORDER BY item",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1e20, delta=1e-5, max_groups_contributed=12) EXTRACT(MONTH FROM day) AS month, COUNT(*) AS n, SUM(quantity, contribution_bounds_per_group => (0, 30)) AS q FROM purchases WHERE price > 2 GROUP BY month ORDER BY month",
		"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=1e-5, kappa=10) i.category, ANON_COUNT(*) AS n, ROUND(ANON_AVG(p.quantity * i.list_price CLAMPED BETWEEN 0 AND 100), 6) AS spend FROM purchases p JOIN items i ON p.item = i.item GROUP BY i.category HAVING ANON_COUNT(*) > 100 ORDER BY n DESC",
		// VAR_POP keeps up to 5 rows per unit and group, chosen by the query's random seed: over
		// purchases (units with more rows per item) the answers differ from run to run, so it
		// is compared over customers, one row per unit.
		"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=1e-5, kappa=1) city, ANON_COUNT(*) AS customers, ANON_AVG(age CLAMPED BETWEEN 0 AND 100) AS age, ANON_VAR_POP(age CLAMPED BETWEEN 0 AND 100) AS v FROM customers GROUP BY city ORDER BY city",
	} {
		bc, bout, berr := beamRun(t, "--init", beamSetup, "--format", "json", "-q", "-c", q)
		dc, dout, derr := dpsqlRun(t, "--init", dpsqlSetup, "--format", "json", "-q", "-c", q)
		if bc != 0 || dc != 0 {
			t.Fatalf("%s:\ndpsql-beam exit %d: %s\ndpsql exit %d: %s", q, bc, berr, dc, derr)
		}
		same := bout == dout
		if i == 0 {
			same = sameJSONRows(t, bout, dout, 1e-9)
		}
		if !same || !strings.Contains(bout, "{") {
			t.Errorf("%s:\ndpsql-beam: %s\ndpsql:      %s", q, bout, dout)
		}
	}
	// Confidence intervals, and a table: the same too.
	q := "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=1e-5, kappa=10) item, ANON_SUM(price CLAMPED BETWEEN 0 AND 20) AS s FROM purchases GROUP BY item ORDER BY item"
	_, bout, _ := beamRun(t, "--init", beamSetup, "--confidence", "0.9", "-q", "-c", q)
	_, dout, _ := dpsqlRun(t, "--init", dpsqlSetup, "--confidence", "0.9", "-q", "-c", q)
	if bout != dout || !strings.Contains(bout, "s_lo") {
		t.Errorf("with --confidence:\ndpsql-beam: %s\ndpsql:      %s", bout, dout)
	}
}

// TestSameDistribution: at a finite epsilon, the released counts of dpsql-beam and of
// dpsql have the same distribution (two-sample Kolmogorov-Smirnov test of the noise, 0.1%
// level; the stages are exactly equal, so this checks that the release is the same too).
// Each run releases the 100 groups of (item, month), every one of at least 64 customers, so
// that a few runs of each give hundreds of independent noise draws.
func TestSameDistribution(t *testing.T) {
	root := rootDir
	beamSetup := unlimited(t, filepath.Join(root, "examples/shop/beam-setup.sql"), root)
	dpsqlSetup := unlimited(t, filepath.Join(root, "examples/shop/setup.sql"), root)
	const q = "SELECT WITH ANONYMIZATION OPTIONS(epsilon=20, delta=1e-3, kappa=27) item, EXTRACT(MONTH FROM day) AS month, ANON_COUNT(*) AS n FROM purchases GROUP BY item, month"
	exact := releasedCounts(t, 1, func() (int, string, string) {
		return dpsqlRun(t, "--init", dpsqlSetup, "--format", "json", "-q", "-c", strings.Replace(q, "epsilon=20", "epsilon=1e20", 1))
	})[0]
	const runs = 5
	errorsOf := func(f func() (int, string, string)) []float64 {
		var out []float64
		for _, r := range releasedCounts(t, runs, f) {
			for group, n := range r {
				out = append(out, n-exact[group])
			}
		}
		return out
	}
	b := errorsOf(func() (int, string, string) {
		return beamRun(t, "--init", beamSetup, "--format", "json", "-q", "-c", q)
	})
	d := errorsOf(func() (int, string, string) {
		return dpsqlRun(t, "--init", dpsqlSetup, "--format", "json", "-q", "-c", q)
	})
	if len(b) < runs*100 || len(d) < runs*100 {
		t.Fatalf("%d and %d released counts", len(b), len(d))
	}
	ks := ksStatistic(b, d)
	crit := 1.95 * math.Sqrt(float64(len(b)+len(d))/float64(len(b)*len(d)))
	t.Logf("%d and %d noise draws: KS statistic %.3f (critical %.3f), standard deviations %.2f and %.2f", len(b), len(d), ks, crit, stddev(b), stddev(d))
	if ks > crit {
		t.Errorf("KS statistic %.3f > %.3f: dpsql-beam's noise differs from dpsql's", ks, crit)
	}
	if sd := stddev(b); sd < 1 {
		t.Errorf("dpsql-beam's noise has standard deviation %.3f: no noise?", sd)
	}
}

func releasedCounts(t *testing.T, runs int, f func() (int, string, string)) []map[string]float64 {
	t.Helper()
	var out []map[string]float64
	for i := 0; i < runs; i++ {
		code, stdout, stderr := f()
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var rows []map[string]any
		if err := json.Unmarshal([]byte(stdout), &rows); err != nil {
			t.Fatalf("%v: %s", err, stdout)
		}
		m := map[string]float64{}
		for _, r := range rows {
			m[fmt.Sprint(r["item"], "/", r["month"])] = r["n"].(float64)
		}
		out = append(out, m)
	}
	return out
}

func ksStatistic(a, b []float64) float64 {
	a, b = append([]float64(nil), a...), append([]float64(nil), b...)
	sort.Float64s(a)
	sort.Float64s(b)
	var i, j int
	d := 0.0
	for i < len(a) && j < len(b) {
		x := math.Min(a[i], b[j])
		for i < len(a) && a[i] <= x {
			i++
		}
		for j < len(b) && b[j] <= x {
			j++
		}
		d = math.Max(d, math.Abs(float64(i)/float64(len(a))-float64(j)/float64(len(b))))
	}
	return d
}

func stddev(xs []float64) float64 {
	var s, s2 float64
	for _, x := range xs {
		s += x
		s2 += x * x
	}
	n := float64(len(xs))
	return math.Sqrt(s2/n - (s/n)*(s/n))
}

// TestErrors: what dpsql-beam cannot do fails clearly, before anything is charged.
func TestErrors(t *testing.T) {
	dir := t.TempDir()
	setup := filepath.Join(dir, "setup.sql")
	os.WriteFile(setup, []byte(`
CREATE VIEW purchases OPTIONS(anonymization_userid_column='customer_id') AS (SELECT * FROM read_parquet('../examples/shop/parquet/purchases-*.parquet'));
CREATE VIEW customers OPTIONS(anonymization_userid_column='customer_id') AS (SELECT * FROM read_parquet('../examples/shop/parquet/customers-*.parquet'));
CREATE VIEW gone OPTIONS(anonymization_userid_column='customer_id') AS (SELECT * FROM read_parquet('../examples/shop/parquet/purchases-*.parquet'));
CREATE TABLE copied OPTIONS(anonymization_userid_column='customer_id') AS SELECT * FROM read_parquet('../examples/shop/parquet/purchases-0.parquet');
CREATE VIEW agg OPTIONS(anonymization_userid_column='customer_id') AS (SELECT customer_id, SUM(price) AS total FROM read_parquet('../examples/shop/parquet/purchases-*.parquet') GROUP BY customer_id);
SET BUDGET OPTIONS(epsilon=5, delta=1e-5);`), 0o600)
	for _, c := range []struct{ args, want []string }{
		{[]string{"-c", "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-6, kappa=2) ANON_COUNT(*) FROM purchases p JOIN customers c USING (customer_id)"},
			[]string{"several private relations (customers, purchases)", "distributed-stage"}},
		{[]string{"-c", "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-6, kappa=2) ANON_COUNT(*) FROM copied"},
			[]string{"private relation copied is not a view over files", "CREATE VIEW copied OPTIONS"}},
		{[]string{"-c", "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-6, kappa=2) ANON_COUNT(*) FROM agg"},
			[]string{"private relation agg is not a view over files", "GROUP BY"}},
		{[]string{"-c", "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-6, kappa=2) n, ANON_COUNT(*) FROM (SELECT customer_id, COUNT(*) AS n FROM purchases GROUP BY customer_id) GROUP BY n"},
			[]string{"GROUP BY over private rows", "distributed-stage"}},
		{[]string{"-c", "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-6, kappa=2) ANON_COUNT(*) FROM nosuch"},
			[]string{`relation "nosuch" does not exist`}},
		{[]string{"shop.duckdb", "-c", "SELECT 1"}, []string{"takes no DATABASE argument"}},
	} {
		code, out, errs := beamRun(t, append([]string{"--init", setup}, c.args...)...)
		if code == 0 {
			t.Errorf("%v: succeeded: %s", c.args, out)
		}
		for _, w := range c.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%v: error does not say %q:\n%s", c.args, w, errs)
			}
		}
		if strings.Contains(errs, "charged") {
			t.Errorf("%v: charged:\n%s", c.args, errs)
		}
	}
	// A file that is gone by the time the query runs is named, and nothing is charged.
	missing := filepath.Join(dir, "missing.sql")
	os.WriteFile(missing, []byte(`CREATE VIEW v OPTIONS(anonymization_userid_column='customer_id') AS (SELECT * FROM read_parquet('`+dir+`/nothing-*.parquet'));
SET BUDGET OPTIONS(epsilon=5, delta=1e-5);`), 0o600)
	code, _, errs := beamRun(t, "--init", missing, "-c", "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-6, kappa=2) ANON_COUNT(*) FROM v")
	if code == 0 || !strings.Contains(errs, "nothing-*.parquet") || strings.Contains(errs, "charged") {
		t.Errorf("missing files: exit %d:\n%s", code, errs)
	}
}

// TestLedger: with --ledger, queries are charged to the shared budget of another database,
// which an --init script cannot change.
func TestLedger(t *testing.T) {
	dir := t.TempDir()
	ledgerDB := filepath.Join(dir, "ledger.duckdb")
	if code, _, errs := dpsqlRun(t, "--owner", ledgerDB, "-c", "SET BUDGET OPTIONS(epsilon=3, delta=1e-5)"); code != 0 {
		t.Fatal(errs)
	}
	setup := filepath.Join(dir, "setup.sql")
	views := `CREATE VIEW purchases OPTIONS(anonymization_userid_column='customer_id') AS (SELECT * FROM read_parquet('` + rootDir + `/examples/shop/parquet/purchases-*.parquet'));`
	os.WriteFile(setup, []byte(views), 0o600)
	q := "SELECT WITH ANONYMIZATION OPTIONS(epsilon=2, delta=1e-6, kappa=3) item, ANON_COUNT(*) FROM purchases GROUP BY item"
	code, _, errs := beamRun(t, "--ledger", ledgerDB, "--init", setup, "-c", q)
	if code != 0 || !strings.Contains(errs, "charged epsilon=2, delta=1e-06; remaining epsilon=1") {
		t.Fatalf("first query: exit %d: %s", code, errs)
	}
	// The second would overspend the shared budget: refused, nothing read.
	code, _, errs = beamRun(t, "--ledger="+ledgerDB, "--init", setup, "-c", q)
	if code == 0 || !strings.Contains(errs, "2P001") {
		t.Errorf("second query: exit %d: %s", code, errs)
	}
	// An --init script cannot raise it.
	raise := filepath.Join(dir, "raise.sql")
	os.WriteFile(raise, []byte(views+"\nSET BUDGET UNLIMITED;"), 0o600)
	code, _, errs = beamRun(t, "--ledger", ledgerDB, "--init", raise, "-c", q)
	if code == 0 || !strings.Contains(errs, "the budget is the shared ledger's") {
		t.Errorf("SET BUDGET with --ledger: exit %d: %s", code, errs)
	}
	code, out, errs := dpsqlRun(t, ledgerDB, "--format", "csv", "-c", "SHOW BUDGET")
	if code != 0 || !strings.Contains(out, "spent,2,") {
		t.Errorf("SHOW BUDGET: exit %d: %s %s", code, out, errs)
	}
}

// TestRunnerConfiguration: a runner configuration that could only fail at submission is
// refused at start, before anything is charged.
func TestRunnerConfiguration(t *testing.T) {
	for _, c := range []struct {
		runner, endpoint, env, bin string
		want                       string
	}{
		{"prism", "", "", "", ""},
		{"direct", "", "", "", ""},
		{"flink", "", "", "", "needs --endpoint"},
		{"spark", "localhost:8099", "", "", "--worker_binary"},
		{"flink", "localhost:8099", "LOOPBACK", "", ""},
		{"dataflow", "", "", "", "--worker_binary"},
		{"dataflow", "", "", "/bin/dpsql-beam", ""},
	} {
		err := checkRunner(c.runner, c.endpoint, c.env, c.bin)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// sameJSONRows compares two JSON arrays of rows: numbers within tol of their column's largest
// magnitude, everything else exactly.
func sameJSONRows(t *testing.T, a, b string, tol float64) bool {
	t.Helper()
	var x, y []map[string]any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("%v: %s", err, a)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if len(x) != len(y) {
		return false
	}
	scale := map[string]float64{}
	for _, rows := range [][]map[string]any{x, y} {
		for _, r := range rows {
			for k, v := range r {
				if f, ok := v.(float64); ok {
					scale[k] = math.Max(scale[k], math.Abs(f))
				}
			}
		}
	}
	for i := range x {
		if len(x[i]) != len(y[i]) {
			return false
		}
		for k, v := range x[i] {
			f, fok := v.(float64)
			g, gok := y[i][k].(float64)
			if fok && gok {
				if math.Abs(f-g) > tol*scale[k] {
					return false
				}
			} else if fmt.Sprint(v) != fmt.Sprint(y[i][k]) {
				return false
			}
		}
	}
	return true
}
