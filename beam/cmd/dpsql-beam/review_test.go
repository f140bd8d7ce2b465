package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The outside review of dpsql-beam (issue 13) found these; each test keeps the attack.

// writeFiles writes files under a new directory and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// csvPeople is a CSV file of people uid lo..hi-1, with age(i) as the age column.
func csvPeople(lo, hi int, age func(int) string) string {
	var b strings.Builder
	b.WriteString("uid,city,age\n")
	for i := lo; i < hi; i++ {
		fmt.Fprintf(&b, "%d,c%d,%s\n", i, i%3, age(i))
	}
	return b.String()
}

// TestReviewNoRowInLogs: a private view over CSV files, whose rows Beam's workers would parse
// (and whose runners log workers' errors, quoting the line), is refused when it is declared
// (rule private-views-fixed-file-format: DuckDB parses such files again from everyone's rows
// at every read), in dpsql-beam as in dpsql: no line reaches the logs, nothing is charged.
func TestReviewNoRowInLogs(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"v0.csv": csvPeople(0, 300, func(i int) string {
			if i == 255 {
				return "SECRET-VALUE"
			}
			return fmt.Sprint(20 + i%50)
		}),
		"v1.csv":    csvPeople(300, 400, func(i int) string { return fmt.Sprint(20 + i%50) }),
		"setup.sql": "",
	})
	setup := filepath.Join(dir, "setup.sql")
	os.WriteFile(setup, []byte("CREATE VIEW people OPTIONS(anonymization_userid_column='uid') AS (SELECT * FROM read_csv('"+dir+"/v*.csv'));\nSET BUDGET OPTIONS(epsilon=10, delta=1e-3);"), 0o600)
	refusedCSVView(t, setup, "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) city, ANON_SUM(age CLAMPED BETWEEN 0 AND 100) AS n FROM people GROUP BY city")
}

// refusedCSVView runs q after setup, which declares a private view over CSV files, in
// dpsql-beam and dpsql: both must refuse the declaration with the rule, and print no row.
func refusedCSVView(t *testing.T, setup, q string) {
	t.Helper()
	for name, run := range map[string]func(*testing.T, ...string) (int, string, string){"dpsql-beam": beamRun, "dpsql": dpsqlRun} {
		code, out, errs := run(t, "-q", "--init", setup, "-c", q)
		if code == 0 || !strings.Contains(errs, "private-views-fixed-file-format") || strings.Contains(out+errs, "SECRET") {
			t.Errorf("%s: %s: exit %d, stdout %q, stderr:\n%s", name, q, code, out, errs)
		}
	}
}

// TestReviewUnitTypedDifferentlyPerFile: files that type the unit (and a key) differently
// (BIGINT, DOUBLE, DECIMAL) were read as one unit, each shard casting the view's columns to
// the coordinator's types. But DuckDB first converts every file to the types of the first file
// of the scan, and DOUBLE to BIGINT can fail on one value: such files are now refused by both
// commands (a later review, TestReviewParquetFilesOfTwoTypes).
func TestReviewUnitTypedDifferentlyPerFile(t *testing.T) {
	dir := t.TempDir()
	types := []string{"BIGINT", "DOUBLE", "DECIMAL(9,2)", "DECIMAL(9,3)"}
	var copies []string
	for i, typ := range types {
		copies = append(copies, fmt.Sprintf(`COPY (SELECT CAST(uid AS %s) AS uid, CAST(g AS %s) AS g, 10 AS x FROM (VALUES (7, 1), (%d, 1), (%d, 2)) AS t(uid, g)) TO '%s/p%d.parquet'`,
			typ, typ, 100+i, 200+i, dir, i))
	}
	setup := filepath.Join(dir, "setup.sql")
	if code, _, errs := dpsqlRun(t, "--owner", "-c", strings.Join(copies, ";")); code != 0 {
		t.Fatal(errs)
	}
	os.WriteFile(setup, []byte("CREATE VIEW t OPTIONS(anonymization_userid_column='uid') AS (SELECT * FROM read_parquet('"+dir+"/p*.parquet'));\nSET BUDGET UNLIMITED;"), 0o600)
	q := "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=0.99999, kappa=1) ANON_COUNT(DISTINCT uid) AS units, ANON_SUM(x CLAMPED BETWEEN 0 AND 10) AS s FROM t"
	for name, run := range map[string]func(*testing.T, ...string) (int, string, string){"dpsql-beam": beamRun, "dpsql": dpsqlRun} {
		if code, out, errs := run(t, "--init", setup, "--format", "csv", "-q", "-c", q); code == 0 || !strings.Contains(errs, "private-views-total") {
			t.Errorf("%s: exit %d, %q, %s", name, code, out, errs)
		}
	}
}

// TestReviewParquetFilesOfTwoTypes: a later file storing salary as INT64 where the first file
// of the glob stores INT32 failed the query only when the analyst's WHERE (pushed into the
// scan) kept the target's 3·10^10, in dpsql-beam and in dpsql: one exact bit per query at any
// epsilon (outside review, 2026-11-29). dpsql now refuses a view whose files' types do not
// widen to the view's (store.checkParquetFiles); dpsql-beam refuses files that do not all
// have one schema, since a shard's first file is not the coordinator's: with the INT64 file
// first, dpsql reads the INT32 file widened, but a shard starting with it would narrow the
// next. Whoever is in the files, the outcome is the same.
func TestReviewParquetFilesOfTwoTypes(t *testing.T) {
	q := "SELECT WITH ANONYMIZATION OPTIONS(epsilon=0.01, delta=1e-7, kappa=1) ANON_SUM(salary CLAMPED BETWEEN 0 AND 100) AS s FROM people WHERE uid = 7 AND d >= DATE '2021-05-01'"
	for _, first := range []string{"INTEGER", "BIGINT"} {
		var outcomes []string
		for _, target := range []string{"", "UNION ALL SELECT 7, CAST(30000000000 AS BIGINT), DATE '2021-05-05'"} {
			dir := t.TempDir()
			copies := []string{
				fmt.Sprintf(`COPY (SELECT CAST(i AS BIGINT) AS uid, CAST(i %% 90 AS %s) AS salary, DATE '2021-01-01' + CAST(i %% 300 AS INTEGER) AS d FROM range(100, 300) r(i)) TO '%s/p-0.parquet'`, first, dir),
				fmt.Sprintf(`COPY (SELECT CAST(i AS BIGINT) AS uid, CAST(i %% 90 AS INTEGER) AS salary, DATE '2021-01-01' + CAST(i %% 300 AS INTEGER) AS d FROM range(300, 400) r(i)) TO '%s/p-1.parquet'`, dir),
				fmt.Sprintf(`COPY (SELECT CAST(i AS BIGINT) AS uid, CAST(i %% 90 AS BIGINT) AS salary, DATE '2021-01-01' + CAST(i %% 300 AS INTEGER) AS d FROM range(400, 500) r(i) %s) TO '%s/p-2.parquet'`, target, dir),
			}
			if code, _, errs := dpsqlRun(t, "--owner", "-c", strings.Join(copies, ";")); code != 0 {
				t.Fatal(errs)
			}
			setup := filepath.Join(dir, "setup.sql")
			os.WriteFile(setup, []byte("CREATE VIEW people OPTIONS(anonymization_userid_column='uid') AS (SELECT * FROM read_parquet('"+dir+"/p-*.parquet'));\nSET BUDGET UNLIMITED;"), 0o600)
			bcode, bout, berrs := beamRun(t, "--init", setup, "--format", "csv", "-q", "-c", q)
			dcode, dout, derrs := dpsqlRun(t, "--init", setup, "--format", "csv", "-q", "-c", q)
			want := map[string]string{"INTEGER": "private-views-total", "BIGINT": "distributed-stage"}[first]
			if bcode == 0 || !strings.Contains(berrs, want) || strings.Contains(berrs, "2P003") {
				t.Errorf("first file %s, dpsql-beam: exit %d, %q, %s", first, bcode, bout, berrs)
			}
			if first == "INTEGER" && (dcode == 0 || !strings.Contains(derrs, want)) || first == "BIGINT" && dcode != 0 {
				t.Errorf("first file %s, dpsql: exit %d, %q, %s", first, dcode, dout, derrs)
			}
			outcomes = append(outcomes, strings.ReplaceAll(fmt.Sprint(bcode, bout, berrs, dcode, dout, derrs), dir, "DIR"))
		}
		if outcomes[0] != outcomes[1] {
			t.Errorf("first file %s: without the target %s, with it %s", first, outcomes[0], outcomes[1])
		}
	}
}

// TestReviewParquetTextNotUTF8: a Parquet file whose text holds the target's name in bytes
// that are not UTF-8 failed a query only when its WHERE kept the target's row (DuckDB decodes
// the other columns only for the rows the filter kept). The coordinator reads every text value
// once, so both commands refuse every query over such files before the charge, whatever its
// WHERE, and answer over the files without that row.
func TestReviewParquetTextNotUTF8(t *testing.T) {
	const q = "SELECT WITH ANONYMIZATION OPTIONS(epsilon=0.01, delta=1e-7, kappa=1) ANON_SUM(salary CLAMPED BETWEEN 0 AND 100) AS s FROM people WHERE uid = 7 AND salary %s 50 AND nm <> ''"
	for _, target := range []string{"", "UNION ALL SELECT 7, 77, 'zzMARK'"} {
		dir := t.TempDir()
		copies := []string{
			fmt.Sprintf(`COPY (SELECT CAST(i AS BIGINT) AS uid, CAST(i %% 90 AS INTEGER) AS salary, 'n' || i AS nm FROM range(100, 300) r(i)) TO '%s/p-0.parquet'`, dir),
			fmt.Sprintf(`COPY (SELECT * FROM (SELECT CAST(i AS BIGINT) AS uid, CAST(i %% 90 AS INTEGER) AS salary, 'n' || i AS nm FROM range(300, 500) r(i) %s) ORDER BY uid) TO '%s/p-1.parquet' (FORMAT parquet, COMPRESSION uncompressed)`, target, dir),
		}
		if code, _, errs := dpsqlRun(t, "--owner", "-c", strings.Join(copies, ";")); code != 0 {
			t.Fatal(errs)
		}
		p1 := filepath.Join(dir, "p-1.parquet")
		b, err := os.ReadFile(p1)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p1, bytes.ReplaceAll(b, []byte("zzMARK"), []byte("\xFF\xFEMARK")), 0o600); err != nil {
			t.Fatal(err)
		}
		setup := filepath.Join(dir, "setup.sql")
		os.WriteFile(setup, []byte("CREATE VIEW people OPTIONS(anonymization_userid_column='uid') AS (SELECT * FROM read_parquet('"+dir+"/p-*.parquet'));\nSET BUDGET UNLIMITED;"), 0o600)
		if target == "" {
			// The view is declared over the files before the target's file arrives.
			os.Rename(p1, p1+".later")
		}
		var outcomes []string
		for _, op := range []string{">=", "<"} {
			bcode, bout, berrs := beamRun(t, "--init", setup, "--format", "csv", "-q", "-c", fmt.Sprintf(q, op))
			dcode, dout, derrs := dpsqlRun(t, "--init", setup, "--format", "csv", "-q", "-c", fmt.Sprintf(q, op))
			for _, r := range []struct {
				cmd, errs string
				code      int
			}{{"dpsql-beam", berrs, bcode}, {"dpsql", derrs, dcode}} {
				refused := r.code != 0 && strings.Contains(r.errs, "private-views-total") && strings.Contains(r.errs, "not UTF-8")
				if refused != (target != "") || strings.Contains(r.errs, "2P003") || strings.Contains(r.errs, "MARK") {
					t.Errorf("%s, salary %s 50, target %t: exit %d, %s", r.cmd, op, target != "", r.code, r.errs)
				}
			}
			outcomes = append(outcomes, strings.ReplaceAll(fmt.Sprint(bcode, bout, berrs, dcode, dout, derrs), dir, "DIR"))
		}
		if target != "" && outcomes[0] != outcomes[1] {
			t.Errorf("with the target: salary >= 50 gave %s, salary < 50 gave %s", outcomes[0], outcomes[1])
		}
	}
}

// TestReviewNoFreeOracle: whether a query fails before its charge does not depend on one
// person's row: neighbouring CSV data sets (one person's age a number or text; one person's
// line malformed) get the same answer. A private view over CSV files is now refused when it is
// declared (rule private-views-fixed-file-format), whatever the rows, in both commands.
func TestReviewNoFreeOracle(t *testing.T) {
	num := func(i int) string { return fmt.Sprint(20 + i%50) }
	na := func(i int) string {
		if i%50 == 3 {
			return "n/a"
		}
		return num(i)
	}
	sets := map[string]map[string]string{
		"A":  {"v0.csv": csvPeople(0, 50, na), "v1.csv": csvPeople(50, 100, na), "v2.csv": csvPeople(100, 150, num)},
		"A2": {"v0.csv": csvPeople(0, 50, na), "v1.csv": csvPeople(50, 100, na), "v2.csv": csvPeople(100, 150, func(i int) string { return map[bool]string{true: "n/a", false: num(i)}[i == 107] })},
		"B0": {"v0.csv": csvPeople(0, 50, num), "v1.csv": csvPeople(50, 100, num), "v2.csv": csvPeople(100, 150, num)},
		"B":  {"v0.csv": csvPeople(0, 50, num), "v1.csv": csvPeople(50, 100, num), "v2.csv": strings.Replace(csvPeople(100, 150, num), "107,c2,27\n", "107,c2,27,oops\n", 1)},
	}
	for _, files := range sets {
		dir := writeFiles(t, files)
		setup := filepath.Join(dir, "setup.sql")
		os.WriteFile(setup, []byte("CREATE VIEW people OPTIONS(anonymization_userid_column='uid') AS (SELECT * FROM read_csv('"+dir+"/v*.csv'));\nSET BUDGET OPTIONS(epsilon=0.001, delta=1e-5);"), 0o600)
		refusedCSVView(t, setup, "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) city, ANON_COUNT(DISTINCT uid) AS n FROM people GROUP BY city")
	}
}

// TestReviewSelfJoinRefused: reading the private relation twice would join only rows of the
// same file: refused before the charge.
func TestReviewSelfJoinRefused(t *testing.T) {
	for _, q := range []string{
		"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=3) ANON_COUNT(*) FROM purchases a JOIN purchases b USING (customer_id)",
		"WITH c AS (SELECT customer_id, item FROM purchases) SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=3) ANON_COUNT(*) FROM c JOIN purchases p USING (customer_id)",
		"WITH c AS (SELECT customer_id, item FROM purchases) SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=3) ANON_COUNT(*) FROM c a JOIN c b USING (customer_id)",
	} {
		code, _, errs := beamRun(t, "--init", "../examples/shop/beam-setup.sql", "-c", q)
		if code == 0 || !strings.Contains(errs, "2 times") || !strings.Contains(errs, "distributed-stage") || strings.Contains(errs, "charged") {
			t.Errorf("%s: exit %d:\n%s", q, code, errs)
		}
	}
}

// TestReviewOwnerSettings: the owner's SET TimeZone applies on the workers as on the
// coordinator; a view with casts is read (TRY(TRY_CAST(...)): a cast that can fail on a value
// is refused in a private view, rule private-views-total, and so is a TRY_CAST between date
// and time types outside TRY); --ledger "" is refused.
func TestReviewOwnerSettingsAndViews(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := dpsqlRun(t, "--owner", "-c", fmt.Sprintf(`COPY (SELECT i AS uid, TIMESTAMPTZ '2024-01-10 20:00:00+00' + (i %% 60) * INTERVAL 1 HOUR AS ts FROM range(1200) r(i)) TO '%s/p.parquet'`, dir)); code != 0 {
		t.Fatal(errs)
	}
	setup := filepath.Join(dir, "setup.sql")
	os.WriteFile(setup, []byte("SET TimeZone = 'Asia/Tokyo';\nCREATE VIEW t OPTIONS(anonymization_userid_column='uid') AS (SELECT *, TRY(TRY_CAST(ts AS DATE)) AS day, TRY(TRY_CAST(ts AS TIME)) AS tod FROM read_parquet('"+dir+"/p.parquet'));\nSET BUDGET UNLIMITED;"), 0o600)
	q := "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=0.99999, kappa=1) day, hour(ts) AS h, ANON_COUNT(DISTINCT uid) AS u FROM t GROUP BY day, h ORDER BY day, h"
	bcode, bout, berrs := beamRun(t, "--init", setup, "--format", "csv", "-q", "-c", q)
	_, dout, _ := dpsqlRun(t, "--init", setup, "--format", "csv", "-q", "-c", q)
	if bcode != 0 || bout != dout {
		t.Errorf("dpsql-beam (exit %d) %q %s\ndpsql %q", bcode, bout, berrs, dout)
	}
	if code, _, errs := beamRun(t, "--ledger", "", "--init", setup, "-c", "SHOW BUDGET"); code != 2 || !strings.Contains(errs, "--ledger needs") {
		t.Errorf("--ledger \"\": exit %d: %s", code, errs)
	}
}

// The second review (after max_rows_contributed) found these.

// sameAsDpsql runs each query with dpsql-beam and dpsql on setup and fails unless the CSV
// outputs are equal.
func sameAsDpsql(t *testing.T, setup string, queries ...string) {
	t.Helper()
	for _, q := range queries {
		bcode, bout, berrs := beamRun(t, "--init", setup, "--format", "csv", "-q", "-c", q)
		_, dout, _ := dpsqlRun(t, "--init", setup, "--format", "csv", "-q", "-c", q)
		if bcode != 0 || bout != dout {
			t.Errorf("%s:\ndpsql-beam (exit %d) %q %s\ndpsql %q", q, bcode, bout, berrs, dout)
		}
	}
}

// TestReviewCSVSniffedPerFile: a CSV file whose own rows would sniff a column differently
// (numbers where the first file has text) could make its shard read other types than the
// coordinator's: a private view over CSV files is refused when it is declared (rule
// private-views-fixed-file-format), in both commands; the owner loads CSV data into Parquet.
func TestReviewCSVSniffedPerFile(t *testing.T) {
	var a, b strings.Builder
	a.WriteString("uid,price,v\n")
	b.WriteString("uid,price,v\n")
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&a, "A%d,1.50,5\n", i)
		fmt.Fprintf(&b, "%d,1.50,5\n", i)
	}
	a.WriteString("7,n/a,5\n")
	dir := writeFiles(t, map[string]string{"part-1.csv": a.String(), "part-2.csv": b.String()})
	setup := filepath.Join(dir, "setup.sql")
	os.WriteFile(setup, []byte("CREATE VIEW t OPTIONS(anonymization_userid_column='uid') AS (SELECT * FROM read_csv('"+dir+"/part-*.csv'));\nSET BUDGET UNLIMITED;"), 0o600)
	refusedCSVView(t, setup, "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=0.99999, kappa=1) ANON_SUM(v CLAMPED BETWEEN 0 AND 10) AS s, ANON_COUNT(DISTINCT uid) AS u FROM t")
}

// TestReviewUnitsAsTheDatabaseComparesThem: a text unit under the owner's NOCASE collation is
// refused when declared, by both commands (the stage bounds units by a hash of their bytes,
// which a collation's equality does not follow: rule unit-and-keys-compared-exactly); the
// owner's fix, no default collation and a view of the unit lowered, makes one person spelled
// in three cases in three files one unit, and NaN and -NaN units and keys one unit and one
// group, as in dpsql; a list unit is refused.
func TestReviewUnitsAsTheDatabaseComparesThem(t *testing.T) {
	dir := t.TempDir()
	copies := []string{}
	for i, spelling := range []string{"alice@example.com", "Alice@Example.com", "ALICE@EXAMPLE.COM"} {
		copies = append(copies, fmt.Sprintf(`COPY (SELECT * FROM (VALUES ('%s', 5, CAST('NaN' AS DOUBLE), %s)) AS t(email, v, f, k) UNION ALL SELECT 'u' || i, 5, i, CAST(%s AS DOUBLE) FROM range(10) r(i)) TO '%s/p%d.parquet'`,
			spelling, map[bool]string{true: "CAST('NaN' AS DOUBLE)", false: "-CAST('NaN' AS DOUBLE)"}[i == 0],
			map[bool]string{true: "'NaN'", false: "'-NaN'"}[i == 1], dir, i))
	}
	if code, _, errs := dpsqlRun(t, "--owner", "-c", strings.Join(copies, ";")); code != 0 {
		t.Fatal(errs)
	}
	files := "read_parquet('" + dir + "/p*.parquet')"
	collated := filepath.Join(dir, "collated.sql")
	os.WriteFile(collated, []byte("SET default_collation = 'nocase';\nCREATE VIEW t OPTIONS(anonymization_userid_column='email') AS (SELECT * FROM "+files+");\n"), 0o600)
	for name, run := range map[string]func(*testing.T, ...string) (int, string, string){"dpsql-beam": beamRun, "dpsql": dpsqlRun} {
		if code, out, errs := run(t, "-q", "--init", collated, "-c", "SELECT 1"); code == 0 || !strings.Contains(errs, "unit-and-keys-compared-exactly") {
			t.Errorf("%s: a NOCASE unit declared: exit %d, stdout %q, stderr:\n%s", name, code, out, errs)
		}
	}
	setup := filepath.Join(dir, "setup.sql")
	os.WriteFile(setup, []byte("CREATE VIEW t OPTIONS(anonymization_userid_column='email') AS (SELECT lower(email) AS email, v, f, k FROM "+files+");\n"+
		"CREATE VIEW tf OPTIONS(anonymization_userid_column='f') AS (SELECT * FROM "+files+");\n"+
		"CREATE VIEW tl OPTIONS(anonymization_userid_column='l') AS (SELECT [email] AS l, v FROM "+files+");\nSET BUDGET UNLIMITED;"), 0o600)
	sameAsDpsql(t, setup,
		"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=0.99999, max_rows_contributed=1) ANON_COUNT(*) AS n, ANON_SUM(v CLAMPED BETWEEN 0 AND 10) AS s FROM t",
		"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=0.99999, kappa=1) ANON_SUM(v CLAMPED BETWEEN 0 AND 10) AS s, ANON_COUNT(DISTINCT email) AS u FROM t",
		"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=0.99999, kappa=1) ANON_SUM(v CLAMPED BETWEEN 0 AND 10) AS s FROM tf")
	// Alice's three rows (three spellings) are one unit's: her sum 15 clamps to 10, like each
	// of the ten others'. The NaN and -NaN keys are one group.
	for q, want := range map[string]string{
		"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=0.99999, kappa=1) ANON_SUM(v CLAMPED BETWEEN 0 AND 10) AS s, ANON_COUNT(DISTINCT email) AS u FROM t": "s,u\n110,11\n",
		"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=0.99999, kappa=1) k, ANON_COUNT(*) AS n FROM t GROUP BY k":                                           "k,n\nNaN,33\n",
	} {
		if code, out, errs := beamRun(t, "--init", setup, "--format", "csv", "-q", "-c", q); code != 0 || out != want {
			t.Errorf("%s: exit %d %q %s, want %q", q, code, out, errs, want)
		}
	}
	code, _, errs := beamRun(t, "--init", setup, "-c", "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) ANON_COUNT(*) FROM tl")
	if code == 0 || !strings.Contains(errs, "a privacy unit of type") || strings.Contains(errs, "charged") {
		t.Errorf("list unit: exit %d: %s", code, errs)
	}
}
