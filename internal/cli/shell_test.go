package cli_test

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/cli"
)

// shellSetup is a small shop: a private relation over a hidden raw table, and a public one.
const shellSetup = `
CREATE TABLE raw_buys AS SELECT * FROM (VALUES (1, 'pen', 5.25), (2, 'pen', 6.5), (3, 'ink', 1.75)) AS t(uid, item, amount);
CREATE VIEW buys OPTIONS(anonymization_userid_column='uid') AS SELECT * FROM raw_buys;
CREATE TABLE items OPTIONS(public=TRUE) AS SELECT * FROM (VALUES ('pen', 2)) AS t(item, price);
SET BUDGET UNLIMITED;
`

// shell runs the command on an in-memory database set up by shellSetup, with stdin as a
// piped script.
func shell(t *testing.T, stdin string, args ...string) (stdout, stderr string, exit int) {
	t.Helper()
	setup := filepath.Join(t.TempDir(), "setup.sql")
	if err := os.WriteFile(setup, []byte(shellSetup), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errw bytes.Buffer
	err := cli.Run(context.Background(), append([]string{"--init", setup}, args...), cli.Options{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errw,
		Open: func(ctx context.Context, cfg dpsql.Config) (cli.Engine, error) {
			db, err := dpsql.Open(ctx, cfg)
			if err != nil {
				return nil, err
			}
			return db, nil
		},
		Complete: dpsql.Complete,
	})
	return out.String(), errw.String(), cli.ExitCode(err)
}

// TestDescribeFromPipe: \dt, \d and \d NAME work from a pipe as at the prompt and show the
// schema an analyst may see: the hidden raw table is not listed, and \d of it says the
// same as of a relation that does not exist.
func TestDescribeFromPipe(t *testing.T) {
	out, errw, exit := shell(t, "\\?\n\\dt\n\\d+ buys\n\\d items\n\\d raw_buys\n\\d nosuch\nSHOW TABLES;\n\\q\nSELECT never;\n")
	if exit != 1 {
		t.Errorf("exit = %d, want 1 (two \\d failed)", exit)
	}
	for _, want := range []string{
		"Meta-commands",
		" buys  | private | uid          |       3\n",
		" items | public  | NULL         |       2\n",
		"Private relation \"buys\" (privacy unit uid)\n",
		" uid    | INTEGER      | yes\n",
		" amount | DECIMAL(3,2) |\n",
		"Public relation \"items\"\n",
		" buys  | private | uid          | uid    | INTEGER\n       |         |              | item   | VARCHAR\n",
		" items | public  | NULL         | item   | VARCHAR\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "raw_buys") {
		t.Errorf("the hidden table is shown:\n%s", out)
	}
	hidden := regexp.MustCompile(`\\d: relation "raw_buys" does not exist or is not one you may query`)
	missing := regexp.MustCompile(`\\d: relation "nosuch" does not exist or is not one you may query`)
	if !hidden.MatchString(errw) || !missing.MatchString(errw) {
		t.Errorf("stderr = %q", errw)
	}
}

// TestNoisyDigitsThroughEngine: a released sum prints with the digits its noise leaves (its
// noise is known from the options: no digit below a tenth of its standard deviation), JSON
// keeps every digit.
func TestNoisyDigitsThroughEngine(t *testing.T) {
	q := "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1, kappa=1) ANON_SUM(amount CLAMPED BETWEEN 0 AND 10) AS s, ANON_AVG(amount CLAMPED BETWEEN 0 AND 10) AS a FROM buys;"
	out, errw, exit := shell(t, "", "--format", "csv", "-c", q)
	if exit != 0 {
		t.Fatalf("exit %d: %s", exit, errw)
	}
	// delta=1 releases every group. Laplace noise of scale kappa*10/(epsilon/3) = 30: standard deviation 42, so whole
	// numbers (a tenth of it is 4.2, rounded down to a power of ten: 1). The average's noise is
	// unknown: it prints with at most six significant digits (format.go's significantDigits), however small it is
	// (0.403056 has six).
	lines := strings.Split(strings.TrimSpace(out), "\n")
	cells := regexp.MustCompile(`^(-?\d+),(-?\d+(\.\d+)?)$`).FindStringSubmatch(lines[len(lines)-1])
	if len(lines) != 2 || cells == nil || significant(cells[2]) > 6 {
		t.Errorf("csv = %q", out)
	}
	out, _, _ = shell(t, "", "--format", "csv", "--full-precision", "-c", q)
	if !regexp.MustCompile(`\n-?\d+\.\d{6,}`).MatchString(out) {
		t.Logf("full precision csv = %q (a noisy sum with few digits is possible but rare)", out)
	}

	db, err := dpsql.Open(context.Background(), dpsql.Config{Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(context.Background(), shellSetup); err != nil {
		t.Fatal(err)
	}
	res, err := db.Exec(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	noise := res[0].Noise
	if len(noise) != 2 || math.Abs(noise[0]-30*math.Sqrt2) > 1 || !math.IsNaN(noise[1]) {
		t.Errorf("Noise = %v, want [%g NaN]", noise, 30*math.Sqrt2)
	}
}

// TestNoiseDoesNotDependOnData is the paired-neighbour attempt on the digits: the same
// queries on a database with and without one extra person (with extreme values) report the
// same Noise per column, so how many digits a noisy value prints with reveals nothing of
// that person (the noise of averages is unknown, NaN, on both).
func TestNoiseDoesNotDependOnData(t *testing.T) {
	queries := []string{
		"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1, kappa=1) item, ANON_SUM(amount CLAMPED BETWEEN 0 AND 10) AS s, ANON_COUNT(DISTINCT uid) AS n, ANON_AVG(amount CLAMPED BETWEEN 0 AND 10) AS a FROM buys GROUP BY item ORDER BY item;",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=2, delta=1, max_groups_contributed=2, privacy_unit_column=uid) SUM(amount, contribution_bounds_per_group => (0, 5)) AS s FROM buys;",
	}
	noise := func(extra string) [][]float64 {
		db, err := dpsql.Open(context.Background(), dpsql.Config{Owner: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(context.Background(), shellSetup+extra); err != nil {
			t.Fatal(err)
		}
		var out [][]float64
		for _, q := range queries {
			res, err := db.Exec(context.Background(), q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			out = append(out, res[0].Noise)
		}
		return out
	}
	without := noise("")
	with := noise("INSERT INTO raw_buys VALUES (99, 'pen', 9.75), (99, 'glue', 9.75);")
	same := func(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }
	for i := range queries {
		if len(with[i]) != len(without[i]) {
			t.Fatalf("query %d: Noise %v with the person, %v without", i, with[i], without[i])
		}
		for j := range with[i] {
			if !same(with[i][j], without[i][j]) {
				t.Errorf("query %d column %d: Noise %v with the person, %v without", i, j, with[i][j], without[i][j])
			}
		}
	}
	if w := without[0]; w[0] != 0 || !(w[1] > 0) || !(w[2] > 0) || !math.IsNaN(w[3]) {
		t.Errorf("Noise = %v, want [0 >0 >0 NaN]", w)
	}
}

// TestDescribePatterns: \d and \dt take psql's name patterns: a quoted or qualified name
// ("main"."buys", as the review wrote it), * and ? wildcards; unquoted parts match in any
// case, quoted ones in their own.
func TestDescribePatterns(t *testing.T) {
	out, errw, exit := shell(t, `\d "main"."buys"
\echo ====
\d *
\echo ====
\dt *
\echo ====
\dt i?ems
\echo ====
\d BUYS
\echo ====
\d public.items
\echo ====
\d "BUYS"
\d other.buys
\d "buys
\d a b
`)
	if exit != 1 {
		t.Errorf("exit = %d, want 1", exit)
	}
	sections := strings.Split(out, "====\n")
	if len(sections) != 7 {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", out, errw)
	}
	buys := "Private relation \"buys\" (privacy unit uid)\n"
	items := "Public relation \"items\"\n"
	for i, c := range []struct{ has, hasNot []string }{
		{[]string{buys, " uid    | INTEGER      | yes\n"}, []string{items}},
		{[]string{buys, items, " price  | INTEGER"}, nil},
		{[]string{" buys  | private", " items | public", "(2 rows)"}, nil},
		{[]string{" items | public", "(1 row)"}, []string{"buys"}},
		{[]string{buys}, []string{items}},
		{[]string{items}, []string{buys}},
	} {
		for _, want := range c.has {
			if !strings.Contains(sections[i], want) {
				t.Errorf("section %d lacks %q:\n%s", i, want, sections[i])
			}
		}
		for _, not := range c.hasNot {
			if strings.Contains(sections[i], not) {
				t.Errorf("section %d has %q:\n%s", i, not, sections[i])
			}
		}
	}
	if sections[6] != "" {
		t.Errorf("the failing commands printed %q", sections[6])
	}
	for _, want := range []string{
		`\d: relation "BUYS" does not exist`,
		`\d: relation "other.buys" does not exist`,
		`\d: "buys: unterminated quoted name`,
		`\d: want at most one pattern`,
	} {
		if !strings.Contains(errw, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errw)
		}
	}
}

// significant counts the significant digits of a printed decimal number: its digits without
// the sign, the point and the leading zeros.
func significant(s string) int {
	return len(strings.TrimLeft(strings.NewReplacer("-", "", ".", "").Replace(s), "0"))
}
