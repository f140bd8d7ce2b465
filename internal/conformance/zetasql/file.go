// Package zetasql measures dpsql against ZetaSQL's own compliance tests for differential
// privacy (testdata/*.test, copied unchanged from github.com/google/zetasql,
// zetasql/compliance/testdata, Apache License 2.0, testdata/LICENSE): it reads their records,
// declares their tables' privacy units as dpsql's owner would, runs each query as an analyst
// and as the owner, and compares the answers with ZetaSQL's reference results.
//
// The outcome of every test is recorded in testdata/status.txt, the list users read in
// docs/zetasql.md: "pass" (ZetaSQL's answer, or an error where ZetaSQL gives one), "refused
// RULE" (a documented privacy refusal: the query would not be differentially private for an
// analyst), "n/a" (the test runs ZetaSQL with a language feature switched off that dpsql
// always has on) or "fail" with the difference. TestZetaSQL fails when an outcome changes, so
// a regression is seen and an improvement is recorded (go test -run TestZetaSQL -update).
package zetasql

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Test is one named record of a compliance file.
type Test struct {
	Name     string
	Line     int
	SQL      string
	Expected string // the text after "--": a typed value or "ERROR: ..."
	// Params are the [parameters=...] values, as name → SQL literal.
	Params    map[string]string
	Required  []string // [required_features=...], including the file's default
	Forbidden []string // [forbidden_features=...]
}

// WantsError reports whether ZetaSQL's reference implementation fails on the query.
func (t *Test) WantsError() bool { return strings.HasPrefix(t.Expected, "ERROR") }

// File is a compliance file: the statements that prepare its database, and its tests.
type File struct {
	Prepare []string
	Tests   []Test
}

// ParseFile reads a ZetaSQL compliance file: records separated by "==" lines, each with
// optional "#" comments and "[option]" lines, then SQL, then "--" and the expected result.
func ParseFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f := &File{}
	var defaultRequired []string
	line := 1
	for _, rec := range splitRecords(string(data)) {
		start := line
		line += strings.Count(rec, "\n") + 1
		var t Test
		prepare := false
		var sql, expected []string
		inExpected := false
		sc := bufio.NewScanner(strings.NewReader(rec))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			l := sc.Text()
			switch {
			case inExpected:
				expected = append(expected, l)
			case l == "--":
				inExpected = true
			case len(sql) == 0 && strings.HasPrefix(l, "#"):
			case len(sql) == 0 && strings.HasPrefix(l, "["):
				key, val, _ := strings.Cut(strings.Trim(l, "[]"), "=")
				switch key {
				case "prepare_database":
					prepare = true
				case "name":
					t.Name = val
				case "default required_features":
					defaultRequired = strings.Split(val, ",")
				case "required_features":
					t.Required = strings.Split(val, ",")
				case "forbidden_features":
					t.Forbidden = strings.Split(val, ",")
				case "parameters":
					t.Params, err = parseParams(val)
					if err != nil {
						return nil, fmt.Errorf("%s:%d: %v", path, start, err)
					}
				}
			case len(sql) == 0 && strings.TrimSpace(l) == "":
			default:
				sql = append(sql, l)
			}
		}
		if len(sql) == 0 {
			continue
		}
		text := strings.TrimSuffix(strings.TrimSpace(strings.Join(sql, "\n")), ";")
		if prepare {
			f.Prepare = append(f.Prepare, text)
			continue
		}
		if t.Name == "" {
			return nil, fmt.Errorf("%s:%d: a test without [name=...]", path, start)
		}
		t.Line = start
		t.SQL = text
		t.Expected = strings.TrimSpace(strings.Join(expected, "\n"))
		t.Required = append(append([]string(nil), defaultRequired...), t.Required...)
		f.Tests = append(f.Tests, t)
	}
	return f, nil
}

// splitRecords cuts a file at its "==" lines.
func splitRecords(s string) []string {
	var recs []string
	var cur []string
	for _, l := range strings.Split(s, "\n") {
		if l == "==" {
			recs = append(recs, strings.Join(cur, "\n"))
			cur = nil
			continue
		}
		cur = append(cur, l)
	}
	return append(recs, strings.Join(cur, "\n"))
}

var paramRE = regexp.MustCompile(`^\s*(.+?)\s+as\s+(\w+)\s*$`)

// parseParams reads "1 as lower,3 as upper".
func parseParams(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range strings.Split(s, ",") {
		m := paramRE.FindStringSubmatch(p)
		if m == nil {
			return nil, fmt.Errorf("cannot read parameter %q", p)
		}
		out[m[2]] = m[1]
	}
	return out, nil
}

// userIDOption is ZetaSQL's declaration of a table's privacy unit column; createTable is the
// head of a CREATE TABLE statement without options (a public table in ZetaSQL).
var (
	userIDOption = regexp.MustCompile(`(?i)OPTIONS\s*\(\s*userid_column\s*=\s*(\w+)\s*\)`)
	createTable  = regexp.MustCompile(`(?i)^\s*CREATE\s+TABLE\s+(\w+)\s+AS\b`)
)

// pgTypes are the GoogleSQL type names of the files' CREATE TABLE bodies in PostgreSQL's
// spelling (the owner's statement body is the backend's own SQL).
var pgTypes = strings.NewReplacer(" as int64)", " as bigint)", " as double)", " as double precision)")

// OwnerSQL turns a prepare_database statement into dpsql's owner statement: the privacy unit
// is declared with dpsql's option name, and a table without one is declared public (in dpsql a
// relation the owner has not declared is invisible to analysts; this is the change the
// compliance issue allows users: "adding the privacy unit declaration to the tables"), and for
// PostgreSQL the body's type names are
// PostgreSQL's. Statements dpsql has no equivalent of (ZetaSQL's CREATE CONSTANT) are reported
// as unsupported.
func OwnerSQL(stmt string, postgres bool) (string, bool) {
	if !strings.HasPrefix(strings.ToUpper(strings.TrimSpace(stmt)), "CREATE TABLE") {
		return "", false
	}
	if postgres {
		stmt = pgTypes.Replace(stmt)
	}
	if createTable.MatchString(stmt) {
		return createTable.ReplaceAllString(stmt, "CREATE TABLE $1 OPTIONS(public=true) AS"), true
	}
	return userIDOption.ReplaceAllString(stmt, "OPTIONS(anonymization_userid_column='$1')"), true
}
