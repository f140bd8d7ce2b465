package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/cli"
)

// corpusSetup is the owner's database for the corpus: private and public relations with the
// names the fuzzers' inputs use, and a public relation in a schema (s.t), whose quoted
// dotted name "s.t" once made the analyzer panic.
const corpusSetup = `
CREATE TABLE raw_visits AS SELECT * FROM (VALUES (1, 'home', 10, 'p1'), (1, 'cart', 20, 'p2'), (2, 'home', 30, 'p3')) AS t(uid, page, secs, note);
CREATE VIEW visits OPTIONS(anonymization_userid_column='uid') AS SELECT * FROM raw_visits;
CREATE TABLE buys OPTIONS(anonymization_userid_column='uid') AS SELECT * FROM (VALUES (1, 'pen', 5), (2, 'pen', 6)) AS t(uid, item, amount);
CREATE TABLE people OPTIONS(anonymization_userid_column='uid') AS SELECT * FROM (VALUES (1, 'a', 3.5), (2, 'b', 4.5)) AS t(uid, grp, x);
CREATE TABLE items OPTIONS(public=TRUE) AS SELECT * FROM (VALUES ('pen', 'writing', 2)) AS t(item, category, price);
CREATE TABLE pages OPTIONS(public=TRUE) AS SELECT * FROM (VALUES ('home', 'main')) AS t(page, section);
CREATE SCHEMA s;
CREATE TABLE s.t(a INT);
ALTER TABLE s.t SET OPTIONS(public=true);
SET BUDGET UNLIMITED;
`

// shared is one analyst database for every run of the command; Close leaves it open.
type shared struct{ *dpsql.DB }

func (shared) Close() error { return nil }

// corpus collects the fuzzers' seed inputs: the saved corpora (testdata/fuzz of every
// package), the parser's golden inputs, the analyzer's accepted and refused queries and the
// conformance queries.
func corpus(t *testing.T) []string {
	t.Helper()
	var out []string
	saved, _ := filepath.Glob("../*/testdata/fuzz/*/*")
	for _, file := range saved {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if lit, ok := strings.CutPrefix(line, "string("); ok {
				s, err := strconv.Unquote(strings.TrimSuffix(lit, ")"))
				if err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				out = append(out, s)
			}
		}
	}
	if len(saved) == 0 {
		t.Fatal("no saved fuzz corpus found")
	}
	blocks := func(pattern, sep string) {
		files, _ := filepath.Glob(pattern)
		if len(files) == 0 {
			t.Fatalf("no files match %s", pattern)
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, block := range strings.Split(string(b), sep) {
				lines := strings.Split(strings.TrimSpace(block), "\n")
				for len(lines) > 0 && strings.HasPrefix(lines[0], "#") {
					lines = lines[1:]
				}
				if sep == "\n\n" && len(lines) > 0 && (strings.HasPrefix(lines[0], "query") || strings.HasPrefix(lines[0], "statement")) {
					lines = lines[1:] // a conformance record's header
				}
				in, _, _ := strings.Cut(strings.Join(lines, "\n"), "\n----")
				if in = strings.TrimSpace(in); in != "" && in != "----" {
					out = append(out, in)
				}
			}
		}
	}
	blocks("../parser/testdata/*.txt", "\n\n")
	blocks("../analyzer/testdata/*.sql", "\n----\n")
	blocks("../conformance/testdata/*.test", "\n\n")
	return append(out, `SELECT a FROM "s.t"`, `SELECT a FROM s.t`)
}

// The command never panics and exits 0 or 1 on every input of the fuzzers' corpora, run as
// an analyst through its entry point (cli.Run) on a real engine: a statement that fails
// prints an error, never a Go trace.
func TestCorpusThroughCommand(t *testing.T) {
	ctx := context.Background()
	db, err := dpsql.Open(ctx, dpsql.Config{Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(ctx, corpusSetup); err != nil {
		t.Fatal(err)
	}
	if err := db.BecomeAnalyst(ctx); err != nil {
		t.Fatal(err)
	}
	inputs := corpus(t)
	internal := 0
	for _, in := range inputs {
		var stdout, stderr bytes.Buffer
		var code int
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%q: panic escaped the command: %v", in, r)
					code = -1
				}
			}()
			err := cli.Run(ctx, []string{"--format", "json", "-c", in}, cli.Options{
				Stdin:    strings.NewReader(""),
				Stdout:   &stdout,
				Stderr:   &stderr,
				Open:     func(context.Context, dpsql.Config) (cli.Engine, error) { return shared{db}, nil },
				Complete: dpsql.Complete,
			})
			code = cli.ExitCode(err)
		}()
		msg := stderr.String()
		switch {
		case code != 0 && code != 1:
			t.Errorf("%q: exit status %d\n%s", in, code, msg)
		case code == 1 && !strings.HasPrefix(msg, "ERROR: "):
			t.Errorf("%q: failed without an error message: %q", in, msg)
		case strings.Contains(msg, "goroutine ") || strings.Contains(msg, "panic("):
			t.Errorf("%q: printed a Go trace:\n%s", in, msg)
		}
		if strings.Contains(msg, "(SQLSTATE XX000)") {
			internal++
			t.Logf("%q: internal error (a bug, recovered): %s", in, strings.SplitN(msg, "\n", 2)[0])
		}
	}
	t.Logf("%d inputs, %d internal errors", len(inputs), internal)
}
