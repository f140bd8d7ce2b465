package pbeam

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

// Contribution bounding at scale: a unit with 10^6 rows, in one partition
// and across 1000 partitions, goes through boundFn in O(kappa·k) memory,
// keeps exactly the kappa partitions of smallest priority with all their
// rows, and gives the same result whatever the order of merges.

func ctUnitRows(seed uint64, unit string, n, partitions int) []unitRow {
	rng := rand.New(rand.NewPCG(seed, 1))
	rows := make([]unitRow, n)
	for i := range rows {
		part := fmt.Sprint("p", i%partitions)
		rows[i] = unitRow{Partition: part, Pri: priority(seed, []byte(unit), []byte(part)), VPri: rng.Uint64(), F: float64(i % 7), I: int64(i % 7)}
	}
	return rows
}

func TestBoundFnMillionRowsOnePartition(t *testing.T) {
	const n = 1_000_000
	fn := &boundFn{MaxPartitions: 3, KeepValues: true, MaxValues: 5}
	a := fn.CreateAccumulator()
	rng := rand.New(rand.NewPCG(1, 2))
	var wantVPris []uint64
	start := time.Now()
	for i := 0; i < n; i++ {
		r := unitRow{Partition: "p", Pri: 7, VPri: rng.Uint64(), F: 1, I: 1}
		wantVPris = append(wantVPris, r.VPri)
		a = fn.addRow(a, r)
	}
	if len(a.E) != 1 {
		t.Fatalf("%d entries for one partition", len(a.E))
	}
	e := a.E[0]
	if e.Rows != n || e.I != n || e.F != n {
		t.Errorf("entry rows %d, int sum %d, float sum %v; want %d each", e.Rows, e.I, e.F, n)
	}
	// The values kept are the 5 of smallest random priority.
	sort.Slice(wantVPris, func(i, j int) bool { return wantVPris[i] < wantVPris[j] })
	got := append([]uint64(nil), e.VPris...)
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	if len(got) != 5 || len(e.Vals) != 5 || fmt.Sprint(got) != fmt.Sprint(wantVPris[:5]) {
		t.Errorf("kept value priorities %v; want the 5 smallest %v", got, wantVPris[:5])
	}
	t.Logf("10^6 rows in one partition: %v", time.Since(start))
}

func TestBoundFnMillionRowsThousandPartitions(t *testing.T) {
	const n, parts, kappa = 1_000_000, 1000, 3
	names := make([]string, parts)
	pris := make([]uint64, parts)
	for i := range names {
		names[i] = fmt.Sprint("p", i)
		pris[i] = priority(11, []byte("unit"), []byte(names[i]))
	}
	fn := &boundFn{MaxPartitions: kappa}
	start := time.Now()
	a := fn.CreateAccumulator()
	for i := 0; i < n; i++ {
		a = fn.addRow(a, unitRow{Partition: names[i%parts], Pri: pris[i%parts], I: 1, F: 1})
		if len(a.E) > kappa {
			t.Fatalf("the accumulator grew to %d entries", len(a.E))
		}
	}
	elapsed := time.Since(start)
	// Expected: the kappa partitions of smallest priority, each with all its rows.
	type pp struct {
		part string
		pri  uint64
	}
	var all []pp
	for i := 0; i < parts; i++ {
		p := fmt.Sprint("p", i)
		all = append(all, pp{p, priority(11, []byte("unit"), []byte(p))})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].pri < all[j].pri })
	got := map[string]int64{}
	for _, e := range a.E {
		got[e.Partition] = e.Rows
	}
	for _, w := range all[:kappa] {
		if got[w.part] != n/parts {
			t.Errorf("kept %v; want partitions %v with %d rows each", got, all[:kappa], n/parts)
			break
		}
	}
	t.Logf("10^6 rows across %d partitions: %v", parts, elapsed)
}

// TestBoundFnMergeOrder: splitting a unit's rows among bundles and merging
// the partial accumulators in any order gives the same kept partitions,
// sums and values.
func TestBoundFnMergeOrder(t *testing.T) {
	rows := ctUnitRows(5, "u", 100_000, 200)
	fn := &boundFn{MaxPartitions: 4, KeepValues: true, MaxValues: 3}
	summary := func(a unitAcc) string {
		es := append([]unitEntry(nil), a.E...)
		sort.Slice(es, func(i, j int) bool { return es[i].Partition < es[j].Partition })
		out := ""
		for _, e := range es {
			v := append([]float64(nil), e.Vals...)
			sort.Float64s(v)
			out += fmt.Sprintf("%s:%d:%d:%v:%v;", e.Partition, e.Rows, e.I, e.F, v)
		}
		return out
	}
	whole := fn.CreateAccumulator()
	for _, r := range rows {
		whole = fn.addRow(whole, r)
	}
	want := summary(whole)
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 5; trial++ {
		perm := rng.Perm(len(rows))
		chunks := make([]unitAcc, 7)
		for i, j := range perm {
			c := i % len(chunks)
			chunks[c] = fn.addRow(chunks[c], rows[j])
		}
		rng.Shuffle(len(chunks), func(i, j int) { chunks[i], chunks[j] = chunks[j], chunks[i] })
		acc := fn.CreateAccumulator()
		for _, c := range chunks {
			acc = fn.MergeAccumulators(c, acc)
		}
		if got := summary(fn.ExtractOutput(acc)); got != want {
			t.Fatalf("trial %d: merged result\n%s\nwant\n%s", trial, got, want)
		}
	}
}

func init() { register.Function1x1(ctHeavyRow) }

// ctHeavyRow makes row i of the heavy unit 1: 1000 partitions.
func ctHeavyRow(i int) ctRow { return ctRow{ID: 1, Key: i % 1000, I: 1, F: 1} }

// TestBoundingHeavyUnitPipeline: one unit with 2·10^5 rows across 1000
// partitions, through a whole Count on the test runner, contributes to
// exactly MaxPartitionsContributed partitions with its MaxValue.
func TestBoundingHeavyUnitPipeline(t *testing.T) {
	const n = 200_000
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	p, s := beam.NewPipelineWithRoot()
	spec := ctSpec(t, PrivacySpecParams{AggregationEpsilon: 1, PartitionSelectionEpsilon: 1, PartitionSelectionDelta: 1e-5, TestMode: TestModeWithContributionBounding})
	rows := beam.ParDo(s, ctHeavyRow, beam.CreateList(s, idx))
	pcol := MakePrivateFromStruct(s, rows, spec, "ID")
	c := newCollector(t)
	c.kv(s, Count(s, ParDo(s, ctKey, pcol), CountParams{MaxPartitionsContributed: 3, MaxValue: 150}))
	start := time.Now()
	ctRun(t, p)
	got := c.floats(t)
	if len(got) != 3 {
		t.Fatalf("released %d partitions: %v; want 3", len(got), got)
	}
	for k, v := range got {
		if v != 150 {
			t.Errorf("partition %s: count %v; want MaxValue 150 (the unit has 200 rows there)", k, v)
		}
	}
	t.Logf("2·10^5 rows of one unit: %v", time.Since(start))
}
