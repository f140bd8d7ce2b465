package conformance_test

import (
	"bufio"
	"context"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/backend/postgres"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/internal/pgtest"
	"github.com/dpsql/dpsql/internal/testmode"
	"github.com/dpsql/dpsql/sqlerr"
)

type record struct {
	kind   string // "statement", "query"
	arg    string // "ok", "error <code>", "nosort"
	sql    string
	expect []string
	// alts are other acceptable results, for queries whose result depends on the random
	// choice of each unit's kappa groups: each "----" after the first starts one.
	alts [][]string
	line int
}

func parseFile(t *testing.T, path string) []record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []record
	var cur *record
	inResult := false
	sc := bufio.NewScanner(f)
	n := 0
	flush := func() {
		if cur != nil {
			recs = append(recs, *cur)
		}
		cur, inResult = nil, false
	}
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			flush()
		case cur == nil && strings.HasPrefix(line, "#"):
		case cur == nil:
			fields := strings.SplitN(line, " ", 2)
			cur = &record{kind: fields[0], line: n}
			if len(fields) > 1 {
				cur.arg = fields[1]
			}
			if cur.kind != "statement" && cur.kind != "query" {
				t.Fatalf("%s:%d: unknown record %q", path, n, line)
			}
		case line == "----":
			if inResult {
				cur.alts = append(cur.alts, cur.expect)
				cur.expect = nil
			}
			inResult = true
		case inResult:
			cur.expect = append(cur.expect, line)
		default:
			cur.sql += line + "\n"
		}
	}
	flush()
	return recs
}

func format(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case float64:
		return strconv.FormatFloat(x, 'g', 12, 64)
	case *big.Int:
		return x.String()
	case time.Time:
		if x.Hour() == 0 && x.Minute() == 0 && x.Second() == 0 && x.Nanosecond() == 0 {
			return x.Format("2006-01-02")
		}
		return x.Format("2006-01-02 15:04:05")
	}
	return fmt.Sprint(v)
}

// backendFactory opens a fresh, empty database as its owner.
type backendFactory func(t *testing.T) backend.Backend

func runFile(t *testing.T, path string, open backendFactory) {
	ctx := context.Background()
	e, err := engine.New(ctx, engine.Options{Backend: open(t), Mechanisms: testmode.Noiseless{}, Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	owner := true
	for _, r := range parseFile(t, path) {
		where := fmt.Sprintf("%s:%d", filepath.Base(path), r.line)
		if r.kind == "query" && owner {
			if err := e.BecomeAnalyst(ctx); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			owner = false
		}
		if r.kind == "statement" && !owner {
			t.Fatalf("%s: statements must come before the first query", where)
		}
		res, err := e.Exec(ctx, r.sql)
		if want, ok := strings.CutPrefix(r.arg, "error "); ok {
			if err == nil {
				t.Errorf("%s: succeeded, want error %s\n%s", where, want, r.sql)
				continue
			}
			se, isSQL := sqlerr.As(err)
			if !isSQL || (se.Code != want && se.Rule != want) {
				t.Errorf("%s: got error %v, want %s", where, err, want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %s", where, sqlerr.Render(err, r.sql))
			continue
		}
		if r.kind != "query" {
			continue
		}
		last := res[len(res)-1]
		var got []string
		for _, row := range last.Rows {
			var vals []string
			for _, v := range row {
				vals = append(vals, format(v))
			}
			got = append(got, strings.Join(vals, " | "))
		}
		if r.arg != "nosort" {
			sort.Strings(got)
		}
		var wants []string
		matched := false
		for _, alt := range append(r.alts, r.expect) {
			want := append([]string(nil), alt...)
			if r.arg != "nosort" {
				sort.Strings(want)
			}
			wants = append(wants, strings.Join(want, "\n"))
			matched = matched || strings.Join(got, "\n") == wants[len(wants)-1]
		}
		if !matched {
			t.Errorf("%s: result differs\nquery:\n%s\ngot:\n%s\nwant:\n%s", where, r.sql, strings.Join(got, "\n"), strings.Join(wants, "\n----\n"))
		}
	}
}

func files(t *testing.T) []string {
	fs, err := filepath.Glob("testdata/*.test")
	if err != nil || len(fs) == 0 {
		t.Fatalf("no conformance files: %v", err)
	}
	return fs
}

func TestDuckDB(t *testing.T) {
	for _, f := range files(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			runFile(t, f, func(t *testing.T) backend.Backend {
				b, err := duckdb.Open(context.Background(), "", duckdb.Options{Mode: backend.Owner})
				if err != nil {
					t.Fatal(err)
				}
				return b
			})
		})
	}
}

var pg pgtest.Shared

func TestMain(m *testing.M) { pgtest.Main(m, &pg) }

// TestPostgres runs every conformance file on a fresh PostgreSQL database with the same
// expected results. It skips, saying why, when no PostgreSQL binaries exist (never in CI).
func TestPostgres(t *testing.T) {
	cluster := pg.Cluster(t)
	for _, f := range files(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			runFile(t, f, func(t *testing.T) backend.Backend {
				b, err := postgres.Open(context.Background(), cluster.NewDatabase(t), postgres.Options{Mode: backend.Owner})
				if err != nil {
					t.Fatal(err)
				}
				return b
			})
		})
	}
}
