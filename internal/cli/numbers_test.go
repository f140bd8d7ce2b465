package cli

import (
	"bytes"
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/ledger"
)

func TestNoisyTexts(t *testing.T) {
	for _, c := range []struct {
		name string
		vals []float64
		sd   float64
		want []string
	}{
		// A tenth of the noise: sd 3.2 keeps one decimal, one notation for the column.
		{"decimals", []float64{1234567.891234, 12.345678, -0.04}, 3.2, []string{"1234567.9", "12.3", "0.0"}},
		// Large noise rounds to hundreds, and a value of 10^6 stays in plain notation.
		{"hundreds", []float64{2345678.9, 98765.4}, 4000, []string{"2345700", "98800"}},
		// Unknown noise: six significant digits of the largest value (the same decimals for the
		// column), no trailing zeros.
		{"unknown", []float64{17.689255420738867, 6, 0.123456789}, math.NaN(), []string{"17.6893", "6", "0.1235"}},
		// Magnitudes that need e-notation get it for the whole column.
		{"huge", []float64{1.23456789e17, 5e15}, math.NaN(), []string{"1.23457e+17", "5.000e+15"}},
		{"tiny", []float64{1.23456789e-9, 5e-10}, math.NaN(), []string{"1.23457e-09", "5.0000e-10"}},
		// Known noise in e-notation: digits down to a tenth of the noise.
		{"huge known", []float64{1.23456789e17, -5e15}, 1e13, []string{"1.23457e+17", "-5.000e+15"}},
		// Noise far below the float64's precision (epsilon=1e20 on test data): the value's
		// own digits, no made-up zeros.
		{"noise-free", []float64{17.25, 3}, 1e-19, []string{"17.25", "3"}},
		{"noise-free e", []float64{1.5e20, 2.5e16}, 1e-19, []string{"1.5e+20", "2.5e+16"}},
		{"specials", []float64{math.NaN(), math.Inf(1), 2.5}, 0.5, []string{"NaN", "Infinity", "2.50"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := noisyTexts(c.vals, c.sd); !reflect.DeepEqual(got, c.want) {
				t.Errorf("noisyTexts(%v, %g) = %q, want %q", c.vals, c.sd, got, c.want)
			}
		})
	}
}

// noisyResult is a release: a key, a noisy sum of known noise, a noisy average of unknown
// noise and an integer count.
func noisyResult() *dpsql.Result {
	return &dpsql.Result{
		Columns: []dpsql.Column{col("item", "VARCHAR"), col("k", "DOUBLE"), col("s", "DOUBLE"), col("a", "DOUBLE"), col("n", "BIGINT")},
		Rows: [][]any{
			{"pen", 0.1234567, 1234567.891234, 17.689255420738867, int64(12)},
			{"ink", 2.5, 98.76543, 6.5, int64(-3)},
		},
		Noise:  []float64{0, 0, 3.2, math.NaN(), 1.4},
		Charge: &ledger.Budget{Epsilon: 1},
		Tag:    "SELECT 2",
	}
}

// TestNoisyColumnsPrinted: table and CSV print noisy values with the digits their noise
// leaves; keys and exact columns keep every digit; JSON and --full-precision keep them all.
func TestNoisyColumnsPrinted(t *testing.T) {
	r := noisyResult()
	var b bytes.Buffer
	if err := writeResult(&b, FormatTable, r); err != nil {
		t.Fatal(err)
	}
	want := " item |     k     |     s     |    a    | n\n" +
		"------+-----------+-----------+---------+----\n" +
		" pen  | 0.1234567 | 1234567.9 | 17.6893 | 12\n" +
		" ink  |       2.5 |      98.8 |     6.5 | -3\n" +
		"(2 rows)\n\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := writeResult(&b, FormatCSV, r); err != nil {
		t.Fatal(err)
	}
	if want := "item,k,s,a,n\npen,0.1234567,1234567.9,17.6893,12\nink,2.5,98.8,6.5,-3\n"; b.String() != want {
		t.Errorf("csv = %q, want %q", b.String(), want)
	}
	b.Reset()
	if err := writeResult(&b, FormatJSON, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"s":1234567.891234,"a":17.689255420738867`) {
		t.Errorf("json lost digits: %s", b.String())
	}
	b.Reset()
	d := plainDisplay(FormatCSV)
	d.full = true
	if err := d.write(&b, r, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "pen,0.1234567,1234567.891234,17.689255420738867,12") {
		t.Errorf("full precision csv = %q", b.String())
	}
	// A charged result without Noise (a query with anonymized parts) is noisy throughout.
	r.Noise = nil
	b.Reset()
	if err := writeResult(&b, FormatCSV, r); err != nil {
		t.Fatal(err)
	}
	if want := "item,k,s,a,n\npen,0.12346,1234570,17.6893,12\nink,2.5,100,6.5,-3\n"; b.String() != want {
		t.Errorf("csv without Noise = %q, want %q", b.String(), want)
	}
}

func TestExpandedAndUnaligned(t *testing.T) {
	r := noisyResult()
	d := plainDisplay(FormatTable)
	d.expanded = "on"
	var b bytes.Buffer
	if err := d.write(&b, r, 0); err != nil {
		t.Fatal(err)
	}
	want := "-[ RECORD 1 ]---\nitem | pen\nk    | 0.1234567\ns    | 1234567.9\na    | 17.6893\nn    | 12\n" +
		"-[ RECORD 2 ]---\nitem | ink\nk    | 2.5\ns    | 98.8\na    | 6.5\nn    | -3\n\n"
	if b.String() != want {
		t.Errorf("expanded:\n%q\nwant\n%q", b.String(), want)
	}
	// auto: expanded only when the table is wider than the terminal.
	d.expanded = "auto"
	b.Reset()
	_ = d.write(&b, r, 200)
	if strings.Contains(b.String(), "RECORD") {
		t.Errorf("auto expanded a narrow table:\n%s", b.String())
	}
	b.Reset()
	_ = d.write(&b, r, 20)
	if !strings.Contains(b.String(), "-[ RECORD 1 ]") {
		t.Errorf("auto did not expand a wide table:\n%s", b.String())
	}
	d = plainDisplay(FormatUnaligned)
	d.null = "(null)"
	b.Reset()
	r.Rows[1][0] = nil
	_ = d.write(&b, r, 0)
	if want := "item|k|s|a|n\npen|0.1234567|1234567.9|17.6893|12\n(null)|2.5|98.8|6.5|-3\n(2 rows)\n\n"; b.String() != want {
		t.Errorf("unaligned = %q, want %q", b.String(), want)
	}
}

// listerFake is a fakeEngine that lists relations, for \d and completion.
type listerFake struct{ *fakeEngine }

func (listerFake) Relations(context.Context) ([]dpsql.Relation, error) {
	return []dpsql.Relation{
		{Name: "purchases", Kind: "private", PrivacyUnit: "customer_id", Columns: []dpsql.Column{col("customer_id", "BIGINT"), col("price", "DOUBLE")}},
		{Name: "items", Kind: "public", Columns: []dpsql.Column{col("item", "VARCHAR")}},
	}, nil
}

func TestCompleteWord(t *testing.T) {
	s := newTestSession(listerFake{newFake()}, &bytes.Buffer{}, &bytes.Buffer{})
	for _, c := range []struct {
		line       string
		head, tail string
		want       []string
	}{
		{"SELECT WITH ANON", "SELECT WITH ", "", []string{"ANONYMIZATION", "ANON_AVG", "ANON_COUNT", "ANON_PERCENTILE_CONT", "ANON_QUANTILES", "ANON_STDDEV_POP", "ANON_SUM", "ANON_VAR_POP"}},
		{"select x from pur", "select x from ", "", []string{"purchases"}},
		{"select purchases.pr", "select ", "", []string{"purchases.price"}},
		{"select cust", "select ", "", []string{"customer_id"}},
		{"select ep", "select ", "", []string{"epsilon"}},
		{"select raw_", "select ", "", nil},
	} {
		head, got, tail := s.completeWord(c.line, len(c.line))
		if head != c.head || tail != c.tail || !reflect.DeepEqual(got, c.want) {
			t.Errorf("completeWord(%q) = %q, %q, %q; want %q, %q", c.line, head, got, tail, c.head, c.want)
		}
	}
}
