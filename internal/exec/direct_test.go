package exec_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/exec"
)

// TestDirectResultIsThePostProcessedOne: a query whose outputs are exactly keys and
// aggregates is answered from the released table in Go, with confidence intervals or without;
// its columns, types, rows and noise are exactly those of the database's post-processing query
// over the same released table (withIntervals), which the engine runs for any other query.
// Every aggregate and report kind, keys of several types (a NULL key among them), outputs in
// another order than the keys, and one aggregate output twice.
func TestDirectResultIsThePostProcessedOne(t *testing.T) {
	ctx := context.Background()
	const create = `CREATE TABLE t AS SELECT i // 3 AS uid, ['a', 'b', NULL][i % 3 + 1] AS k,
		DATE '2024-01-01' + CAST(i % 2 AS INTEGER) AS d, CAST(i % 5 AS DECIMAL(9, 2)) AS x,
		CAST(i % 7 AS BIGINT) AS n, (i % 11) / 3.0 AS v FROM range(3000) r(i)`
	aggs := []string{
		"ANON_COUNT(*) AS c",
		"ANON_COUNT(v CLAMPED BETWEEN 0 AND 2) AS cv",
		"ANON_COUNT(DISTINCT uid) AS u",
		"ANON_SUM(n CLAMPED BETWEEN 0 AND 6) AS si",
		"ANON_SUM(v CLAMPED BETWEEN 0 AND 4) AS sf",
		"ANON_AVG(v CLAMPED BETWEEN 0 AND 4) AS a",
		"ANON_VAR_POP(v CLAMPED BETWEEN 0 AND 4) AS var",
		"ANON_STDDEV_POP(v CLAMPED BETWEEN 0 AND 4) AS sd",
		"ANON_PERCENTILE_CONT(v, 0.5 CLAMPED BETWEEN 0 AND 4) AS med",
		"ANON_QUANTILES(v, 3 CLAMPED BETWEEN 0 AND 4) AS qs",
		"ANON_SUM(n CLAMPED BETWEEN 0 AND 6 WITH REPORT(FORMAT=JSON)) AS rj",
		"ANON_QUANTILES(v, 2 CLAMPED BETWEEN 0 AND 4 WITH REPORT(FORMAT=PROTO)) AS rp",
	}
	var queries []string
	for _, level := range []string{"", ", confidence_level=0.9"} {
		for _, keys := range [][2]string{{"k, d, x", "k, d, x"}, {"", ""}} {
			sel, group := "", ""
			if keys[0] != "" {
				sel, group = keys[0]+", ", " GROUP BY "+keys[1]
			}
			for _, a := range aggs {
				queries = append(queries, fmt.Sprintf("SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e3, delta=1e-5, kappa=2%s) %s%s FROM t%s", level, sel, a, group))
			}
		}
		// Keys after the aggregates, one aggregate twice, every kind at once.
		queries = append(queries, fmt.Sprintf(`SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e3, delta=1e-5, kappa=2%s)
			ANON_SUM(v CLAMPED BETWEEN 0 AND 4) AS s, d, ANON_COUNT(*) AS c, ANON_SUM(v CLAMPED BETWEEN 0 AND 4) AS s2, k,
			ANON_QUANTILES(v, 2 CLAMPED BETWEEN 0 AND 4) AS q, ANON_AVG(v CLAMPED BETWEEN 0 AND 4 WITH REPORT(FORMAT=JSON)) AS r
			FROM t GROUP BY k, d`, level))
	}
	for _, q := range queries {
		pr, b := prepare(t, create, q, "uid", "k", "d", "x", "n", "v")
		st, err := pr.Stage(ctx, b)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		for range 2 {
			got, want, err := exec.ReleaseBothWays(ctx, pr, b, st)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if len(got.Rows) == 0 {
				t.Fatalf("%s: no group released", q)
			}
			// The database's query shows a JSON report as its text (sqlgen.Release), typed
			// VARCHAR; picked in Go it keeps the released table's type, JSON, as without
			// intervals. The values are the same text.
			types := append([]string(nil), got.Types...)
			for i, typ := range types {
				types[i] = strings.Replace(typ, "JSON", "VARCHAR", 1)
			}
			if !reflect.DeepEqual(got.Columns, want.Columns) || !reflect.DeepEqual(types, want.Types) {
				t.Errorf("%s:\ncolumns %v %v\nagainst %v %v", q, got.Columns, got.Types, want.Columns, want.Types)
				continue
			}
			if !sameCells(got.Rows, want.Rows) {
				t.Errorf("%s:\nrows %v\nagainst %v", q, got.Rows, want.Rows)
			}
			if !sameCells([][]float64{got.Noise}, [][]float64{want.Noise}) {
				t.Errorf("%s: noise %v against %v", q, got.Noise, want.Noise)
			}
		}
	}
}

// sameCells compares rows cell by cell, NaN equal to NaN, in any order of the rows.
func sameCells[T any](a, b [][]T) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(r []T) string {
		s := ""
		for _, c := range r {
			s += fmt.Sprintf("%T %v|", c, c) // %v: a DECIMAL's *big.Int by its value
		}
		return s
	}
	count := map[string]int{}
	for _, r := range a {
		count[key(r)]++
	}
	for _, r := range b {
		count[key(r)]--
	}
	for _, n := range count {
		if n != 0 {
			return false
		}
	}
	return true
}
