package conformance

import (
	"bufio"
	"database/sql"
	"fmt"
	"math/big"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dpsql/dpsql/internal/parser"
)

// Record is one record of a conformance file (testdata/README.md).
type Record struct {
	Kind string // "statement", "query"
	Arg  string // "ok", "error <code>", "nosort"
	SQL  string
	// Expect is the expected result; Alts are other acceptable results, for queries whose
	// result depends on the random choice of each unit's kappa groups: each "----" after the
	// first starts one.
	Expect []string
	Alts   [][]string
	Line   int
	// Params are the record's "parameter NAME:TYPE:VALUE" lines (before its SQL): the
	// values of its @NAME query parameters.
	Params []string
}

// Args are the record's parameters as Exec takes them (sql.NamedArg values).
func (r *Record) Args() ([]any, error) {
	var args []any
	for _, p := range r.Params {
		name, rest, _ := strings.Cut(p, ":")
		typ, value, ok := strings.Cut(rest, ":")
		if !ok {
			return nil, fmt.Errorf("line %d: parameter %q: want NAME:TYPE:VALUE", r.Line, p)
		}
		v, err := parser.ParseParam(typ, value)
		if err != nil {
			return nil, fmt.Errorf("line %d: parameter %q: %v", r.Line, p, err)
		}
		args = append(args, sql.Named(name, v))
	}
	return args, nil
}

// ParseFile reads the records of a conformance file.
func ParseFile(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var recs []Record
	var cur *Record
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
			cur = &Record{Kind: fields[0], Line: n}
			if len(fields) > 1 {
				cur.Arg = fields[1]
			}
			if cur.Kind != "statement" && cur.Kind != "query" {
				return nil, fmt.Errorf("%s:%d: unknown record %q", path, n, line)
			}
		case line == "----":
			if inResult {
				cur.Alts = append(cur.Alts, cur.Expect)
				cur.Expect = nil
			}
			inResult = true
		case inResult:
			cur.Expect = append(cur.Expect, line)
		case cur.SQL == "" && strings.HasPrefix(line, "parameter "):
			cur.Params = append(cur.Params, strings.TrimPrefix(line, "parameter "))
		default:
			cur.SQL += line + "\n"
		}
	}
	flush()
	return recs, sc.Err()
}

// WantError is the SQLSTATE or rule a record expects its statement to fail with.
func (r *Record) WantError() (string, bool) { return strings.CutPrefix(r.Arg, "error ") }

// Match compares a query's rows with the record's expected results: ok when they equal one of
// them; got and want are printed for a failure message.
func (r *Record) Match(rows [][]any) (ok bool, got, want string) {
	var lines []string
	for _, row := range rows {
		var vals []string
		for _, v := range row {
			vals = append(vals, Format(v))
		}
		lines = append(lines, strings.Join(vals, " | "))
	}
	if r.Arg != "nosort" {
		sort.Strings(lines)
	}
	got = strings.Join(lines, "\n")
	var wants []string
	for _, alt := range append(r.Alts, r.Expect) {
		w := append([]string(nil), alt...)
		if r.Arg != "nosort" {
			sort.Strings(w)
		}
		wants = append(wants, strings.Join(w, "\n"))
		ok = ok || got == wants[len(wants)-1]
	}
	return ok, got, strings.Join(wants, "\n----\n")
}

// Format prints a value as the files do: NULL, integers, floats with up to 12 significant
// digits, dates without a time of day.
func Format(v any) string {
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
