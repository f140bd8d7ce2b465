package utility

import (
	"fmt"
	"io"
	"strings"
)

// Report writes the cells as Markdown tables: groups released, then the relative errors of
// counts, sums and medians.
func Report(w io.Writer, cells []Cell) {
	fmt.Fprintln(w, "Groups released (share of runs x groups, by exact group size in users); n50: smallest size from which")
	fmt.Fprintln(w, "every group was released in at least half of the runs, measured and as EXPLAIN predicts:")
	fmt.Fprintln(w)
	rows := [][]string{append(append([]string{"ε", "rule"}, BucketNames[:]...), "n50", "n50 (EXPLAIN)")}
	for _, c := range cells {
		r := []string{num(c.Epsilon), c.Rule}
		for _, s := range c.Released {
			r = append(r, share(s))
		}
		n50 := size(c.N50)
		if c.N50All {
			n50 = "all (" + n50 + ")"
		}
		r = append(r, n50, size(c.N50Theory))
		rows = append(rows, r)
	}
	table(w, rows)
	for _, c := range cells {
		if c.Extra > 0 {
			fmt.Fprintf(w, "\nε=%s, %s: %d releases of public keys with no users (not counted above)\n", num(c.Epsilon), c.Rule, c.Extra)
		}
	}
	for _, m := range []struct {
		name string
		get  func(Cell) [NumBuckets]Quantiles
	}{
		{"counts (ANON_COUNT(DISTINCT uid))", func(c Cell) [NumBuckets]Quantiles { return c.Count }},
		{"sums (ANON_SUM)", func(c Cell) [NumBuckets]Quantiles { return c.Sum }},
		{"medians (ANON_MEDIAN)", func(c Cell) [NumBuckets]Quantiles { return c.Median }},
	} {
		fmt.Fprintf(w, "\nRelative error of %s over released groups: median (90th percentile), n= when fewer than 20 releases:\n\n", m.name)
		rows := [][]string{append([]string{"ε", "rule"}, BucketNames[:]...)}
		for _, c := range cells {
			r := []string{num(c.Epsilon), c.Rule}
			for _, q := range m.get(c) {
				if q.N == 0 {
					r = append(r, "-")
				} else {
					cell := fmt.Sprintf("%s (%s)", pct(q.Median), pct(q.P90))
					if q.N < 20 {
						cell += fmt.Sprintf(" n=%d", q.N)
					}
					r = append(r, cell)
				}
			}
			rows = append(rows, r)
		}
		table(w, rows)
	}
}

func share(s float64) string {
	if s < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*s)
}

func size(n int64) string {
	if n <= 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// table writes an aligned Markdown table; the first row is the header.
func table(w io.Writer, rows [][]string) {
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, s := range r {
			width[i] = max(width[i], len([]rune(s)))
		}
	}
	line := func(r []string) {
		var b strings.Builder
		b.WriteString("|")
		for i, s := range r {
			b.WriteString(" " + s + strings.Repeat(" ", width[i]-len([]rune(s))) + " |")
		}
		fmt.Fprintln(w, b.String())
	}
	line(rows[0])
	sep := make([]string, len(width))
	for i, n := range width {
		sep[i] = strings.Repeat("-", n)
	}
	line(sep)
	for _, r := range rows[1:] {
		line(r)
	}
}
