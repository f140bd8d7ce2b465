package zetasql

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/backend/postgres"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/internal/exec"
	"github.com/dpsql/dpsql/internal/pgtest"
	"github.com/dpsql/dpsql/sqlerr"
)

var update = flag.Bool("update", false, "rewrite testdata/status.txt with the outcomes of this run")

const statusFile = "testdata/status.txt"

// notPrivacy are rules whose refusals are limits of dpsql rather than of differential privacy:
// a query refused by them counts as a failure, not as a documented privacy refusal.
var notPrivacy = map[string]bool{"allowed-functions-only": true, "distributed-stage": true, "no-nested-anonymization": true}

// outcome is what one test gave in one role.
type outcome struct {
	class  string // "pass", "refused <rule>", "n/a", "fail"
	reason string
}

// run executes one test and classifies the result.
func run(ctx context.Context, e *engine.Engine, t *Test) outcome {
	o := runTest(ctx, e, t)
	if len(t.Forbidden) > 0 && o.class != "pass" {
		// ZetaSQL's answer without a language feature dpsql always has: not applicable,
		// unless dpsql gives the same answer anyway.
		return outcome{"n/a", "ZetaSQL without " + strings.Join(t.Forbidden, ",") + "; dpsql always has it"}
	}
	return o
}

func runTest(ctx context.Context, e *engine.Engine, t *Test) outcome {
	res, err := execTest(ctx, e, t)
	if t.WantsError() {
		if err != nil {
			return outcome{"pass", ""}
		}
		return outcome{"fail", "answers where ZetaSQL fails with " + firstLine(t.Expected)}
	}
	if err != nil {
		var se *sqlerr.Error
		if errors.As(err, &se) && se.Rule != "" && !notPrivacy[se.Rule] {
			return outcome{"refused " + se.Rule, firstLine(se.Msg)}
		}
		return outcome{"fail", "error: " + firstLine(err.Error())}
	}
	want, perr := ParseExpected(t.Expected)
	if perr != nil {
		return outcome{"fail", "cannot read the reference result: " + perr.Error()}
	}
	if ok, why := want.Match(res.Rows); !ok {
		return outcome{"fail", why}
	}
	return outcome{"pass", ""}
}

func execTest(ctx context.Context, e *engine.Engine, t *Test) (*engine.Result, error) {
	var args []any
	for name, lit := range t.Params {
		v, err := paramValue(lit)
		if err != nil {
			return nil, err
		}
		args = append(args, sql.Named(name, v))
	}
	res, err := e.Exec(ctx, t.SQL, args...)
	if err != nil {
		return nil, err
	}
	return res[len(res)-1], nil
}

// paramValue reads a [parameters=...] literal: an integer, a float or a quoted string.
func paramValue(lit string) (any, error) {
	if i, err := strconv.ParseInt(lit, 10, 64); err == nil {
		return i, nil
	}
	if f, err := strconv.ParseFloat(lit, 64); err == nil {
		return f, nil
	}
	if s, err := strconv.Unquote(lit); err == nil {
		return s, nil
	}
	return nil, fmt.Errorf("unsupported parameter literal %q", lit)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	return s
}

// openDuckDB opens a fresh in-memory DuckDB database as its owner.
func openDuckDB(t *testing.T) backend.Backend {
	b, err := duckdb.Open(context.Background(), "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// openFile builds a database with the file's tables, budget lifted, in the given role.
func openFile(t *testing.T, b backend.Backend, f *File, analyst bool) *engine.Engine {
	ctx := context.Background()
	e, err := engine.New(ctx, engine.Options{Backend: b, Mechanisms: exec.Secure{}, Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	for _, stmt := range f.Prepare {
		sql, ok := OwnerSQL(stmt, b.Dialect() == backend.Postgres)
		if !ok {
			t.Logf("skipped a statement dpsql has no equivalent of: %s", firstLine(stmt))
			continue
		}
		if _, err := e.Exec(ctx, sql); err != nil {
			t.Fatalf("preparing %s: %v", firstLine(stmt), err)
		}
	}
	if _, err := e.Exec(ctx, "SET BUDGET UNLIMITED"); err != nil {
		t.Fatal(err)
	}
	if analyst {
		if err := e.BecomeAnalyst(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// TestZetaSQL runs every test of ZetaSQL's differential-privacy compliance files as an analyst
// and as the owner (production noise: the tests' epsilon of 1e20 makes it negligible), and
// compares each outcome with testdata/status.txt.
func TestZetaSQL(t *testing.T) {
	ctx := context.Background()
	var lines []string
	got := map[string][2]outcome{}
	for _, path := range compliancePaths(t) {
		f, err := ParseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		analyst, owner := openFile(t, openDuckDB(t), f, true), openFile(t, openDuckDB(t), f, false)
		file := strings.TrimSuffix(filepath.Base(path), ".test")
		for i := range f.Tests {
			tc := &f.Tests[i]
			key := file + ":" + tc.Name
			a, o := run(ctx, analyst, tc), run(ctx, owner, tc)
			got[key] = [2]outcome{a, o}
			line := key + "\t" + a.class + "\t" + o.class
			if a.reason != "" {
				line += "\t# " + a.reason
			} else if o.reason != "" {
				line += "\t# owner: " + o.reason
			}
			lines = append(lines, line)
		}
	}
	summary := summarize(got)
	t.Log(summary)
	if *update {
		header := "# Outcomes of ZetaSQL's compliance tests on dpsql: test, as an analyst, as the owner.\n" +
			"# Regenerate with: go test ./internal/conformance/zetasql -run TestZetaSQL -update\n# " +
			strings.ReplaceAll(summary, "\n", "\n# ") + "\n"
		if err := os.WriteFile(statusFile, []byte(header+strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	recorded, err := readStatus()
	if err != nil {
		t.Fatalf("%v (create it with -update)", err)
	}
	for _, key := range sortedKeys(got) {
		g, r := got[key], recorded[key]
		if g[0].class != r[0] || g[1].class != r[1] {
			t.Errorf("%s: analyst %q owner %q, recorded %q %q (%s%s)", key, g[0].class, g[1].class, r[0], r[1], g[0].reason, g[1].reason)
		}
	}
	for key := range recorded {
		if _, ok := got[key]; !ok {
			t.Errorf("%s: recorded but no longer in the files", key)
		}
	}
	// Every test an analyst does not get ZetaSQL's answer for is listed, with its reason, in
	// the users' documentation.
	doc, err := os.ReadFile(docFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range sortedKeys(got) {
		if c := got[key][0].class; c != "pass" && !strings.Contains(string(doc), "`"+key+"`") {
			t.Errorf("%s (%s as an analyst) is not listed in %s", key, c, docFile)
		}
	}
}

// docFile is where users read which compliance tests dpsql answers differently, and why.
const docFile = "../../../docs/zetasql.md"

func compliancePaths(t *testing.T) []string {
	paths, err := filepath.Glob("testdata/*.test")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no compliance files: %v", err)
	}
	return paths
}

var pg pgtest.Shared

func TestMain(m *testing.M) { pgtest.Main(m, &pg) }

// TestZetaSQLPostgres runs the tests as an analyst on PostgreSQL: every outcome must be the
// one recorded for DuckDB (the same answers, refusals and failures on both backends).
func TestZetaSQLPostgres(t *testing.T) {
	cluster := pg.Cluster(t)
	recorded, err := readStatus()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, path := range compliancePaths(t) {
		f, err := ParseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b, err := postgres.Open(ctx, cluster.NewDatabase(t), postgres.Options{Mode: backend.Owner})
		if err != nil {
			t.Fatal(err)
		}
		analyst := openFile(t, b, f, true)
		file := strings.TrimSuffix(filepath.Base(path), ".test")
		for i := range f.Tests {
			tc := &f.Tests[i]
			key := file + ":" + tc.Name
			if o := run(ctx, analyst, tc); o.class != recorded[key][0] {
				t.Errorf("%s: %q on PostgreSQL, %q on DuckDB (%s)", key, o.class, recorded[key][0], o.reason)
			}
		}
	}
}

// summarize counts the outcomes: the share of tests an analyst gets ZetaSQL's answer for or
// a documented privacy refusal, among the tests that apply to dpsql.
func summarize(got map[string][2]outcome) string {
	var b strings.Builder
	for role, name := range []string{"analyst", "owner"} {
		counts := map[string]int{}
		applicable, good := 0, 0
		for _, o := range got {
			class := o[role].class
			if strings.HasPrefix(class, "refused") {
				class = "refused"
			}
			counts[class]++
			if class != "n/a" {
				applicable++
				if class != "fail" {
					good++
				}
			}
		}
		fmt.Fprintf(&b, "%s: %d tests, %d pass, %d refused for privacy, %d n/a, %d fail: %.1f%% of %d applicable answered or refused for privacy\n",
			name, len(got), counts["pass"], counts["refused"], counts["n/a"], counts["fail"], 100*float64(good)/float64(applicable), applicable)
	}
	return strings.TrimSpace(b.String())
}

func readStatus() (map[string][2]string, error) {
	f, err := os.Open(statusFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string][2]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) < 3 {
			return nil, fmt.Errorf("%s: malformed line %q", statusFile, line)
		}
		out[fields[0]] = [2]string{fields[1], fields[2]}
	}
	return out, sc.Err()
}

func sortedKeys(m map[string][2]outcome) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
