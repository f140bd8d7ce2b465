package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it)\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

func col(name, typ string) dpsql.Column { return dpsql.Column{Name: name, Type: typ} }

func bigInt(s string) *big.Int {
	b, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return b
}

// sampleResults cover every kind of value the printers must handle.
func sampleResults() []*dpsql.Result {
	day := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
	return []*dpsql.Result{
		{
			Statement: "SELECT WITH ANONYMIZATION item, ANON_COUNT(*) ...",
			Columns:   []dpsql.Column{col("item", "VARCHAR"), col("n", "BIGINT"), col("avg_q", "DOUBLE"), col("ok", "BOOLEAN")},
			Rows: [][]any{
				{"pen", int64(3), 2.5, true},
				{"ink", int64(12), nil, false},
				{nil, int64(-7), 1234567.0, nil},
			},
			Tag:     "SELECT 3",
			Notices: []string{"charged epsilon=1; 2 left"},
		},
		{
			Statement: "SELECT numbers",
			Columns:   []dpsql.Column{col("big", "HUGEINT"), col("f", "DOUBLE"), col("label", "VARCHAR")},
			Rows: [][]any{
				{bigInt("170141183460469231731687303715884105727"), 0.1, "shortest"},
				{bigInt("-18446744073709551616"), 1e21, "exponent"},
				{int64(math.MaxInt64), 1.5e-7, "tiny"},
				{int64(0), math.NaN(), "nan"},
				{int64(1), math.Inf(1), "inf"},
				{int64(2), math.Inf(-1), "-inf"},
				{int64(3), 1e300 * 7, "huge"},
			},
			Tag: "SELECT 7",
		},
		{
			Statement: "SELECT unicode",
			Columns:   []dpsql.Column{col("名前", "VARCHAR"), col("note", "VARCHAR"), col("day", "DATE"), col("tags", "VARCHAR[]")},
			Rows: [][]any{
				{"日本語", "wide", day, []any{"a", nil, int64(2)}},
				{"café", "combining e\u0301", day.Add(24 * time.Hour), []any{}},
				{"🙂 ok", "line one\nline two\nthree", nil, nil},
				{"tab\there", "esc \x1b[31mred\x1b[0m and \u202eevil", day, []any{1.5}},
				{"", "quote \" and, comma", day, []any{"x,y"}},
			},
			Tag: "SELECT 5",
		},
		{Statement: "SELECT nothing", Columns: []dpsql.Column{col("a", "BIGINT"), col("b", "VARCHAR")}, Tag: "SELECT 0"},
		{Statement: "CREATE VIEW v", Tag: "CREATE VIEW"},
		{Statement: "SELECT one", Columns: []dpsql.Column{col("x", "BIGINT")}, Rows: [][]any{{int64(42)}}, Tag: "SELECT 1"},
	}
}

func render(t *testing.T, f Format) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, r := range sampleResults() {
		if err := writeResult(&b, f, r); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func TestFormatGolden(t *testing.T) {
	for _, f := range []Format{FormatTable, FormatCSV, FormatJSON} {
		t.Run(string(f), func(t *testing.T) {
			golden(t, "results."+string(f), render(t, f))
		})
	}
}

// TestJSONOneValidLinePerResult checks that each result with columns is one line of valid
// JSON, that keys keep the column order and that big integers survive exactly.
func TestJSONOneValidLinePerResult(t *testing.T) {
	results := sampleResults()
	withRows := 0
	for _, r := range results {
		if len(r.Columns) > 0 {
			withRows++
		}
	}
	lines := strings.Split(strings.TrimSuffix(string(render(t, FormatJSON)), "\n"), "\n")
	if len(lines) != withRows {
		t.Fatalf("got %d lines, want one per result with columns (%d):\n%s", len(lines), withRows, strings.Join(lines, "\n"))
	}
	for i, line := range lines {
		if !json.Valid([]byte(line)) {
			t.Errorf("line %d is not valid JSON: %s", i+1, line)
		}
	}
	dec := json.NewDecoder(strings.NewReader(lines[1]))
	dec.UseNumber()
	var rows []map[string]any
	if err := dec.Decode(&rows); err != nil {
		t.Fatal(err)
	}
	if got := rows[0]["big"].(json.Number).String(); got != "170141183460469231731687303715884105727" {
		t.Errorf("big int = %s", got)
	}
	if got := rows[3]["f"]; got != "NaN" {
		t.Errorf("NaN = %#v, want the string NaN", got)
	}
	if !strings.HasPrefix(lines[0], `[{"item":"pen","n":3,"avg_q":2.5,"ok":true}`) {
		t.Errorf("keys not in column order: %s", lines[0])
	}
	if lines[3] != "[]" {
		t.Errorf("empty result = %s, want []", lines[3])
	}
}

func TestFormatFloat(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string
	}{
		{0.1, "0.1"},
		{2.5, "2.5"},
		{3, "3"},
		{1234567, "1234567"},
		{-1e20, "-100000000000000000000"},
		{1e21, "1e+21"},
		{1234567.25, "1234567.25"},
		{0.00012, "0.00012"},
		{1.5e-7, "1.5e-07"},
		{math.NaN(), "NaN"},
		{math.Inf(-1), "-Infinity"},
	} {
		if got := formatFloat(c.f); got != c.want {
			t.Errorf("formatFloat(%v) = %q, want %q", c.f, got, c.want)
		}
	}
}

func TestTableWidthsAreAligned(t *testing.T) {
	var b bytes.Buffer
	if err := writeTable(&b, sampleResults()[2]); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	// Every '|' of the body sits in the same display column as in the header.
	want := barColumns(lines[0])
	for _, l := range lines[2 : len(lines)-1] {
		if got := barColumns(l); len(got) != len(want) || got[0] != want[0] || got[len(got)-1] != want[len(want)-1] {
			t.Errorf("misaligned line %q: bars at %v, header at %v", l, got, want)
		}
	}
}

func barColumns(line string) []int {
	var cols []int
	col := 0
	for _, r := range line {
		if r == '|' {
			cols = append(cols, col)
		}
		col += width(string(r))
	}
	return cols
}

// A JSON object keeps one value per key in most parsers, so repeated column names (SELECT
// q.s, r.s) get unique keys in JSON; table and CSV headers keep the names.
func TestJSONDuplicateColumnNames(t *testing.T) {
	r := &dpsql.Result{
		Columns: []dpsql.Column{col("s", "BIGINT"), col("s", "BIGINT"), col("s_2", "BIGINT"), col("s", "BIGINT"), col("t", "BIGINT")},
		Rows:    [][]any{{int64(1), int64(2), int64(3), int64(4), int64(5)}},
		Tag:     "SELECT 1",
	}
	var b bytes.Buffer
	if err := writeResult(&b, FormatJSON, r); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), `[{"s":1,"s_3":2,"s_2":3,"s_4":4,"t":5}]`+"\n"; got != want {
		t.Errorf("JSON %s, want %s", got, want)
	}
	var rows []map[string]int
	if err := json.Unmarshal(b.Bytes(), &rows); err != nil || len(rows[0]) != 5 {
		t.Errorf("decoded %v, %v: want 5 keys", rows, err)
	}
	b.Reset()
	if err := writeResult(&b, FormatCSV, r); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "s,s,s_2,s,t\n") {
		t.Errorf("CSV header %q", b.String())
	}
}

func TestUniqueKeys(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"s", "s"}, []string{"s", "s_2"}},
		{[]string{"a", "b"}, []string{"a", "b"}},
		{[]string{"s", "s", "s", "s_2"}, []string{"s", "s_3", "s_4", "s_2"}},
		{[]string{"s_2", "s", "s"}, []string{"s_2", "s", "s_3"}},
		{[]string{"", ""}, []string{"", "_2"}},
	} {
		if got := uniqueKeys(c.in); strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("uniqueKeys(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// DECIMAL values print exactly, with their scale, in every format: right-aligned in tables,
// numbers in JSON.
func TestDecimalsPrintExactly(t *testing.T) {
	r := &dpsql.Result{
		Columns: []dpsql.Column{col("k", "DECIMAL(38,2)"), col("label", "VARCHAR")},
		Rows: [][]any{
			{dpsql.Decimal{Unscaled: bigInt("1234567890123456789"), Scale: 2}, "x"},
			{dpsql.Decimal{Unscaled: bigInt("-5"), Scale: 2}, "y"},
		},
		Tag: "SELECT 2",
	}
	for _, c := range []struct {
		f    Format
		want string
	}{
		{FormatTable, "          k           | label\n----------------------+-------\n 12345678901234567.89 | x\n                -0.05 | y\n(2 rows)\n\n"},
		{FormatCSV, "k,label\n12345678901234567.89,x\n-0.05,y\n"},
		{FormatJSON, `[{"k":12345678901234567.89,"label":"x"},{"k":-0.05,"label":"y"}]` + "\n"},
	} {
		var b bytes.Buffer
		if err := writeResult(&b, c.f, r); err != nil {
			t.Fatal(err)
		}
		if b.String() != c.want {
			t.Errorf("%s:\n%s\nwant\n%s", c.f, b.String(), c.want)
		}
	}
}

// Timestamps print every fractional digit they hold: TIMESTAMP_NS keeps its nanoseconds.
func TestNanosecondsPrint(t *testing.T) {
	ns := time.Date(2020, 1, 1, 0, 0, 0, 123456789, time.UTC)
	for _, c := range []struct {
		typ  string
		v    time.Time
		want string
	}{
		{"TIMESTAMP_NS", ns, "2020-01-01 00:00:00.123456789"},
		{"TIMESTAMP", ns.Truncate(time.Microsecond), "2020-01-01 00:00:00.123456"},
		{"TIMESTAMP", ns.Truncate(time.Second), "2020-01-01 00:00:00"},
	} {
		if got := text(c.v, c.typ); got != c.want {
			t.Errorf("%s %v: %q, want %q", c.typ, c.v, got, c.want)
		}
	}
}

// STRUCT and MAP values print as DuckDB prints them (fields in the type's order, a MAP's
// entries sorted by key), and as JSON objects: before, they printed in Go's syntax
// (map[a:x b:1]), in JSON too, as a string.
func TestNestedValuesPrint(t *testing.T) {
	r := &dpsql.Result{
		Columns: []dpsql.Column{col("s", `STRUCT("b" INTEGER, "we""ird" VARCHAR)`), col("m", "MAP(VARCHAR, DECIMAL(2,1))"),
			col("l", `STRUCT("d" DECIMAL(3,2))[]`)},
		Rows: [][]any{{
			map[string]any{"b": int64(1), `we"ird`: "x"},
			dpsql.Map{{Key: "k", Value: dpsql.Decimal{Unscaled: bigInt("15"), Scale: 1}}, {Key: "a", Value: dpsql.Decimal{Unscaled: bigInt("20"), Scale: 1}}},
			[]any{map[string]any{"d": dpsql.Decimal{Unscaled: bigInt("5"), Scale: 2}}},
		}},
		Tag: "SELECT 1",
	}
	for _, c := range []struct {
		f    Format
		want string
	}{
		{FormatCSV, "s,m,l\n\"{'b': 1, 'we\"\"ird': x}\",\"{k=1.5, a=2.0}\",[{'d': 0.05}]\n"},
		{FormatJSON, `[{"s":{"b":1,"we\"ird":"x"},"m":{"k":1.5,"a":2.0},"l":[{"d":0.05}]}]` + "\n"},
	} {
		var b bytes.Buffer
		if err := writeResult(&b, c.f, r); err != nil {
			t.Fatal(err)
		}
		if b.String() != c.want {
			t.Errorf("%s:\n%s\nwant\n%s", c.f, b.String(), c.want)
		}
	}
}

// TestTimeTZText: a TIMETZ value prints with its offset, as DuckDB prints it; without it,
// 10:00:00+02 and 10:00:00+03, two groups, printed alike (an outside review).
func TestTimeTZText(t *testing.T) {
	for _, c := range []struct {
		off  int
		want string
	}{{2 * 3600, "10:00:00+02"}, {3 * 3600, "10:00:00+03"}, {-(5*3600 + 30*60), "10:00:00-05:30"}} {
		v := time.Date(1, 1, 1, 10, 0, 0, 0, time.FixedZone("", c.off))
		if got := text(v, "TIMETZ"); got != c.want {
			t.Errorf("TIMETZ at offset %d: %s, want %s", c.off, got, c.want)
		}
	}
}

// TestJSONTextAsString: a JSON value given as its text (a group key) is a JSON string holding
// that text, so that the keys "1" and 1, {"a": 1} and {"a":1}, null and NULL, stay apart (an
// outside review saw embedded or compacted texts merge) and a post-processed key, whose
// column is text, prints the same.
func TestJSONTextAsString(t *testing.T) {
	r := &dpsql.Result{Columns: []dpsql.Column{col("j", "JSON")}, Rows: [][]any{{`"1"`}, {"1"}, {`{"a": 1}`}, {`{"a":1}`}, {"null"}, {nil}, {"NaN"}}, Tag: "SELECT 7"}
	var b bytes.Buffer
	if err := writeResult(&b, FormatJSON, r); err != nil {
		t.Fatal(err)
	}
	if want := `[{"j":"\"1\""},{"j":"1"},{"j":"{\"a\": 1}"},{"j":"{\"a\":1}"},{"j":"null"},{"j":null},{"j":"NaN"}]` + "\n"; b.String() != want {
		t.Errorf("got %s want %s", b.String(), want)
	}
}
