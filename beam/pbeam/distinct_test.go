package pbeam

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/dpsql/dpsql/beam/internal/dofn"

	"github.com/dpsql/dpsql/dp/noise"
	"github.com/dpsql/dpsql/dp/selection"
)

type kvInt struct {
	K int
	V int64
}

type page struct {
	User int
	Day  int
	Page string
}

func toKVInt(k int, v int64) kvInt     { return kvInt{k, v} }
func dropIntKey(_ int, v int64) int64  { return v }
func intKey(k int, _ int64) int        { return k }
func addInt64(a, b int64) int64        { return a + b }
func visitDay(v visit) int             { return v.Day }
func pageDayPage(p page) (int, string) { return p.Day, p.Page }
func pageDay(p page) int               { return p.Day }
func pageDayUser(p page) (int, int)    { return p.Day, p.User }
func kvIntList(m map[int]int64) []any {
	var out []any
	for k, v := range m {
		out = append(out, kvInt{k, v})
	}
	return out
}

// countFn counts the elements it sees in a Beam counter, and adds their
// int64 values' deviation from Center (and its square) to two more.
type countFn struct {
	Name   string
	Center int64
}

func (fn *countFn) ProcessElement(ctx context.Context, _ beam.W, v int64) {
	beam.NewCounter("pbeamtest", fn.Name).Inc(ctx, 1)
	d := v - fn.Center
	beam.NewCounter("pbeamtest", fn.Name+".dev").Inc(ctx, d)
	beam.NewCounter("pbeamtest", fn.Name+".sq").Inc(ctx, d*d)
}

type countKeysFn struct{ Name string }

func (fn *countKeysFn) ProcessElement(ctx context.Context, _ beam.W) {
	beam.NewCounter("pbeamtest", fn.Name).Inc(ctx, 1)
}

func init() {
	register.Function2x1(toKVInt)
	register.Function2x1(dropIntKey)
	register.Function2x1(intKey)
	register.Function2x1(addInt64)
	register.Function1x1(visitDay)
	register.Function1x2(pageDayPage)
	register.Function1x1(pageDay)
	register.Function1x2(pageDayUser)
	dofn.DoFn3x0[context.Context, beam.W, int64](&countFn{})
	dofn.DoFn2x0[context.Context, beam.W](&countKeysFn{})
	beam.RegisterType(reflectTypeOf[page]())
	beam.RegisterType(reflectTypeOf[kvInt]())
}

// counter reads a counter of a pipeline run (0 if it never counted).
func counter(t *testing.T, res beam.PipelineResult, name string) int64 {
	t.Helper()
	var total int64
	q := res.Metrics().Query(func(r metrics.SingleResult) bool { return r.Name() == name })
	for _, c := range q.Counters() {
		total += c.Result()
	}
	return total
}

// total is the sum of the values of a PCollection<int, int64>, with a 0
// so that it has one element even when empty.
func total(s beam.Scope, col beam.PCollection) beam.PCollection {
	vals := beam.ParDo(s, dropIntKey, col)
	return beam.Combine(s, addInt64, beam.Flatten(s, vals, beam.Create(s, int64(0))))
}

// wantConstructionError runs f and checks that it fails construction with
// a message containing want.
func wantConstructionError(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		ce, ok := r.(*constructionError)
		if !ok {
			t.Errorf("want a construction error about %q, got %v", want, r)
			return
		}
		if !strings.Contains(ce.msg, want) {
			t.Errorf("construction error %q does not mention %q", ce.msg, want)
		}
	}()
	f()
}

var pageVisits = []visit{
	// User 1 visits day 1 twice and days 2, 3; user 2 days 1, 2; user 3 day 1.
	{User: 1, Day: 1}, {User: 1, Day: 1}, {User: 1, Day: 2}, {User: 1, Day: 3},
	{User: 2, Day: 1}, {User: 2, Day: 2},
	{User: 3, Day: 1},
}

func TestDistinctPrivacyIDTestMode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mode   TestMode
		public func(s beam.Scope) any
		want   map[int]int64 // nil: check the total only
		total  int64
	}{
		{name: "unbounded", mode: TestModeWithoutContributionBounding, want: map[int]int64{1: 3, 2: 2, 3: 1}},
		{name: "bounded", mode: TestModeWithContributionBounding, total: 3}, // one day per user
		{name: "public slice", mode: TestModeWithoutContributionBounding, public: func(beam.Scope) any { return []int{1, 3, 4} },
			want: map[int]int64{1: 3, 3: 1, 4: 0}},
		{name: "public PCollection", mode: TestModeWithoutContributionBounding, public: func(s beam.Scope) any { return beam.CreateList(s, []int{2, 5}) },
			want: map[int]int64{2: 2, 5: 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, s, col := ptest.CreateList(pageVisits)
			pcol := MakePrivateFromStruct(s, col, testSpec(t, tc.mode), "User")
			days := ParDo(s, visitDay, pcol)
			params := DistinctPrivacyIDParams{MaxPartitionsContributed: 1}
			if tc.public != nil {
				params.PublicPartitions = tc.public(s)
			}
			counts := DistinctPrivacyID(s, days, params)
			if tc.want != nil {
				passert.Equals(s, beam.ParDo(s, toKVInt, counts), kvIntList(tc.want)...)
			} else {
				passert.Equals(s, total(s, counts), tc.total)
			}
			ptest.RunAndValidate(t, p)
		})
	}
}

func TestDistinctPerKeyTestMode(t *testing.T) {
	pages := []page{
		// Day 1: pages a, b (user 1; a twice), a, c (user 2): 3 distinct.
		{1, 1, "a"}, {1, 1, "a"}, {1, 1, "b"}, {1, 2, "a"},
		{2, 1, "a"}, {2, 1, "c"}, {2, 3, "x"},
		// User 3 visits five pages on day 4: bounded to 2.
		{3, 4, "p"}, {3, 4, "q"}, {3, 4, "r"}, {3, 4, "s"}, {3, 4, "t"},
	}
	for _, tc := range []struct {
		name   string
		mode   TestMode
		public []int
		want   map[int]int64
	}{
		{name: "unbounded", mode: TestModeWithoutContributionBounding, want: map[int]int64{1: 3, 2: 1, 3: 1, 4: 5}},
		{name: "bounded", mode: TestModeWithContributionBounding, want: map[int]int64{1: 3, 2: 1, 3: 1, 4: 2}},
		{name: "public", mode: TestModeWithContributionBounding, public: []int{1, 4, 9}, want: map[int]int64{1: 3, 4: 2, 9: 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, s, col := ptest.CreateList(pages)
			pcol := MakePrivateFromStruct(s, col, testSpec(t, tc.mode), "User")
			pairs := ParDo(s, pageDayPage, pcol)
			params := DistinctPerKeyParams{MaxPartitionsContributed: 2, MaxContributionsPerPartition: 2}
			if tc.public != nil {
				params.PublicPartitions = tc.public
			}
			counts := DistinctPerKey(s, pairs, params)
			passert.Equals(s, beam.ParDo(s, toKVInt, counts), kvIntList(tc.want)...)
			ptest.RunAndValidate(t, p)
		})
	}
}

func TestSelectPartitionsTestMode(t *testing.T) {
	// Unbounded: every day with data, from a PrivatePCollection<V> and <K,V>.
	p, s, col := ptest.CreateList(pageVisits)
	pcol := MakePrivateFromStruct(s, col, testSpec(t, TestModeWithoutContributionBounding), "User")
	days := SelectPartitions(s, ParDo(s, visitDay, pcol), SelectPartitionsParams{MaxPartitionsContributed: 1})
	passert.Equals(s, days, 1, 2, 3)
	pcol2 := MakePrivateFromStruct(s, col, testSpec(t, TestModeWithoutContributionBounding), "User")
	pairDays := SelectPartitions(s, ParDo(s, dayCount, pcol2), SelectPartitionsParams{MaxPartitionsContributed: 1})
	passert.Equals(s, pairDays, 1, 2, 3)
	ptest.RunAndValidate(t, p)

	// Bounded: user 1 alone keeps one of its three days.
	p, s, col = ptest.CreateList(pageVisits[:4])
	pcol = MakePrivateFromStruct(s, col, testSpec(t, TestModeWithContributionBounding), "User")
	days = SelectPartitions(s, ParDo(s, visitDay, pcol), SelectPartitionsParams{MaxPartitionsContributed: 1})
	passert.Count(s, days, "days", 1)
	ptest.RunAndValidate(t, p)
}

func TestCountMaxContributionsTestMode(t *testing.T) {
	for _, tc := range []struct {
		mode  TestMode
		want  map[int]int64
		total int64
	}{
		{mode: TestModeWithoutContributionBounding, want: map[int]int64{1: 4, 2: 2, 3: 1}},
		// Two rows per user: user 1 keeps 2 of its 4, users 2 and 3 all theirs.
		{mode: TestModeWithContributionBounding, total: 5},
	} {
		p, s, col := ptest.CreateList(pageVisits)
		pcol := MakePrivateFromStruct(s, col, testSpec(t, tc.mode), "User")
		counts := Count(s, ParDo(s, visitDay, pcol), CountParams{MaxContributions: 2})
		if tc.want != nil {
			passert.Equals(s, beam.ParDo(s, toKVInt, counts), kvIntList(tc.want)...)
		} else {
			passert.Equals(s, total(s, counts), tc.total)
		}
		ptest.RunAndValidate(t, p)
	}
}

func TestDistinctConstructionErrors(t *testing.T) {
	_, s, col := ptest.CreateList(pageVisits)
	mk := func(p PrivacySpecParams) PrivatePCollection {
		spec, err := NewPrivacySpec(p)
		if err != nil {
			t.Fatal(err)
		}
		return ParDo(s, visitDay, MakePrivateFromStruct(s, col, spec, "User"))
	}
	full := PrivacySpecParams{AggregationEpsilon: 1, PartitionSelectionEpsilon: 1, PartitionSelectionDelta: 1e-5}
	pairs := func() PrivatePCollection {
		spec, _ := NewPrivacySpec(full)
		return ParDo(s, dayCount, MakePrivateFromStruct(s, col, spec, "User"))
	}
	for _, c := range []struct {
		want string
		f    func()
	}{
		{"MaxPartitionsContributed", func() { DistinctPrivacyID(s, mk(full), DistinctPrivacyIDParams{}) }},
		{"key-value pairs", func() { DistinctPrivacyID(s, pairs(), DistinctPrivacyIDParams{MaxPartitionsContributed: 1}) }},
		{"PartitionSelectionDelta", func() {
			DistinctPrivacyID(s, mk(full), DistinctPrivacyIDParams{MaxPartitionsContributed: 1, PartitionSelectionDelta: 1e-6, PublicPartitions: []int{1}})
		}},
		{"AggregationDelta", func() {
			DistinctPrivacyID(s, mk(full), DistinctPrivacyIDParams{MaxPartitionsContributed: 1, AggregationDelta: 1e-5})
		}},
		{"Delta", func() {
			DistinctPrivacyID(s, mk(full), DistinctPrivacyIDParams{MaxPartitionsContributed: 1, NoiseKind: GaussianNoise{}})
		}},
		{"partition selection", func() {
			DistinctPrivacyID(s, mk(PrivacySpecParams{AggregationEpsilon: 1}), DistinctPrivacyIDParams{MaxPartitionsContributed: 1})
		}},
		{"left", func() {
			DistinctPrivacyID(s, mk(full), DistinctPrivacyIDParams{MaxPartitionsContributed: 1, PartitionSelectionDelta: 1e-3})
		}},
		{"PublicPartitions holds", func() {
			DistinctPrivacyID(s, mk(full), DistinctPrivacyIDParams{MaxPartitionsContributed: 1, PublicPartitions: []string{"a"}})
		}},
		{"PrivatePCollection<K,V>", func() {
			DistinctPerKey(s, mk(full), DistinctPerKeyParams{MaxPartitionsContributed: 1, MaxContributionsPerPartition: 1})
		}},
		{"MaxContributionsPerPartition", func() {
			DistinctPerKey(s, pairs(), DistinctPerKeyParams{MaxPartitionsContributed: 1})
		}},
		{"only SelectPartitions", func() {
			DistinctPerKey(s, pairs(), DistinctPerKeyParams{MaxPartitionsContributed: 1, MaxContributionsPerPartition: 1,
				PartitionSelectionParams: PartitionSelectionParams{MaxPartitionsContributed: 2}})
		}},
		{"MaxPartitionsContributed", func() { SelectPartitions(s, mk(full), SelectPartitionsParams{}) }},
		{"PartitionSelectionEpsilon", func() {
			SelectPartitions(s, mk(PrivacySpecParams{AggregationEpsilon: 1, PartitionSelectionDelta: 1e-5}), SelectPartitionsParams{MaxPartitionsContributed: 1})
		}},
		{"MaxContributions (2) is set together", func() {
			Count(s, mk(full), CountParams{MaxContributions: 2, MaxValue: 1})
		}},
		{"no contribution bound", func() { Count(s, mk(full), CountParams{}) }},
		{"MaxContributions is -1", func() { Count(s, mk(full), CountParams{MaxContributions: -1}) }},
	} {
		wantConstructionError(t, c.want, c.f)
	}
	// SelectPartitions spends no aggregation budget; DistinctPrivacyID no
	// partition selection epsilon.
	spec, err := NewPrivacySpec(PrivacySpecParams{AggregationEpsilon: 1, PartitionSelectionEpsilon: 1, PartitionSelectionDelta: 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	days := ParDo(s, visitDay, MakePrivateFromStruct(s, col, spec, "User"))
	SelectPartitions(s, days, SelectPartitionsParams{Epsilon: 0.5, Delta: 1e-6, MaxPartitionsContributed: 1})
	DistinctPrivacyID(s, days, DistinctPrivacyIDParams{MaxPartitionsContributed: 1, PartitionSelectionDelta: 4e-6})
	if spec.aggregation.epsilon != 0 || spec.partitionSelection.epsilon != 0.5 || math.Abs(spec.partitionSelection.delta-5e-6) > 1e-18 {
		t.Errorf("budget left: aggregation %v, selection %v/%v; want 0, 0.5/5e-6", spec.aggregation.epsilon, spec.partitionSelection.epsilon, spec.partitionSelection.delta)
	}
	// A PrivacySpec with only a partition selection delta serves
	// DistinctPrivacyID, as in Privacy on Beam.
	spec, err = NewPrivacySpec(PrivacySpecParams{AggregationEpsilon: 1, PartitionSelectionDelta: 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	DistinctPrivacyID(s, ParDo(s, visitDay, MakePrivateFromStruct(s, col, spec, "User")), DistinctPrivacyIDParams{MaxPartitionsContributed: 1})
}

// loneUnits are n privacy units, each alone in its own partition (day).
func loneUnits(n int) []page {
	out := make([]page, n)
	for i := range out {
		out[i] = page{User: i, Day: i, Page: fmt.Sprint("p", i)}
	}
	return out
}

// TestLoneUnitsNotReleased checks the guarantee empirically: 2000 partitions
// of one unit each, partition selection delta 1e-3 with one partition per
// unit, so each is released with probability at most 1e-3 (about 2 in all);
// more than 12 has probability below 1e-6.
func TestLoneUnitsNotReleased(t *testing.T) {
	const n = 2000
	const delta = 1e-3
	spec := func() *PrivacySpec {
		spec, err := NewPrivacySpec(PrivacySpecParams{AggregationEpsilon: 1, AggregationDelta: 1e-5, PartitionSelectionEpsilon: 1, PartitionSelectionDelta: delta})
		if err != nil {
			t.Fatal(err)
		}
		return spec
	}
	p, s, col := ptest.CreateList(loneUnits(n))
	mk := func() PrivatePCollection { return MakePrivateFromStruct(s, col, spec(), "User") }
	outs := map[string]beam.PCollection{
		"DistinctPrivacyID-laplace": DistinctPrivacyID(s, ParDo(s, pageDay, mk()), DistinctPrivacyIDParams{MaxPartitionsContributed: 1, AggregationEpsilon: 1}),
		"DistinctPrivacyID-gaussian": DistinctPrivacyID(s, ParDo(s, pageDay, mk()), DistinctPrivacyIDParams{MaxPartitionsContributed: 1,
			NoiseKind: GaussianNoise{}, AggregationEpsilon: 1, AggregationDelta: 1e-5}),
		"DistinctPerKey": DistinctPerKey(s, ParDo(s, pageDayPage, mk()), DistinctPerKeyParams{MaxPartitionsContributed: 1, MaxContributionsPerPartition: 1,
			NoiseKind: GaussianNoise{}, AggregationEpsilon: 1, AggregationDelta: 1e-5}),
		"Count-MaxContributions": Count(s, ParDo(s, pageDay, mk()), CountParams{MaxContributions: 1,
			NoiseKind: GaussianNoise{}, AggregationEpsilon: 1, AggregationDelta: 1e-5}),
	}
	for name, out := range outs {
		beam.ParDo0(s, &countFn{Name: name}, out)
	}
	beam.ParDo0(s, &countKeysFn{Name: "SelectPartitions"}, SelectPartitions(s, ParDo(s, pageDay, mk()), SelectPartitionsParams{MaxPartitionsContributed: 1}))
	res, err := ptest.RunWithMetrics(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"DistinctPrivacyID-laplace", "DistinctPrivacyID-gaussian", "DistinctPerKey", "Count-MaxContributions", "SelectPartitions"} {
		if got := counter(t, res, name); got > 12 {
			t.Errorf("%s: %d of %d lone units' partitions released; at most %g expected", name, got, n, delta*n)
		} else {
			t.Logf("%s: %d of %d lone units' partitions released", name, got, n)
		}
	}
}

// TestDistinctPrivacyIDNoise checks the spread of the released counts: 400
// partitions of 80 units, each unit in two partitions (kappa = 2); the
// deviations from 80 must have mean 0 and the variance of the integer noise
// of a count with that epsilon and kappa (Laplace: 2p/(1-p)^2, p =
// exp(-1/b); Gaussian: about sigma^2). Every partition passes the threshold:
// with 40 units, 4 Gaussian sigmas (5.3) above the threshold (19), one of the
// 400 partitions missed it in about 1.4% of runs; with 80, 11.6 sigmas.
func TestDistinctPrivacyIDNoise(t *testing.T) {
	const parts, units = 400, 80
	var rows []page
	for d := 0; d < parts; d++ {
		for j := 0; j < units; j++ {
			rows = append(rows, page{User: (d/2)*units + j, Day: d})
		}
	}
	p, s, col := ptest.CreateList(rows)
	type mech struct {
		name   string
		params DistinctPrivacyIDParams
		kind   noise.Kind
		delta  float64
	}
	mechs := []mech{
		{"laplace", DistinctPrivacyIDParams{MaxPartitionsContributed: 2, AggregationEpsilon: 1}, noise.Laplace, 0},
		{"gaussian", DistinctPrivacyIDParams{MaxPartitionsContributed: 2, AggregationEpsilon: 1, AggregationDelta: 1e-5, NoiseKind: GaussianNoise{}}, noise.Gaussian, 1e-5},
	}
	for _, m := range mechs {
		spec, err := NewPrivacySpec(PrivacySpecParams{AggregationEpsilon: 1, AggregationDelta: m.delta, PartitionSelectionDelta: 1e-3})
		if err != nil {
			t.Fatal(err)
		}
		counts := DistinctPrivacyID(s, ParDo(s, pageDay, MakePrivateFromStruct(s, col, spec, "User")), m.params)
		beam.ParDo0(s, &countFn{Name: m.name, Center: units}, counts)
	}
	res, err := ptest.RunWithMetrics(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mechs {
		c, err := selection.NewThresholdedCount(selection.ThresholdedCountParams{Kind: m.kind, Epsilon: 1, NoiseDelta: m.delta, ThresholdDelta: 1e-3, L0: 2})
		if err != nil {
			t.Fatal(err)
		}
		b := c.Scale()
		want := b * b
		if m.kind == noise.Laplace {
			q := math.Exp(-1 / b)
			want = 2 * q / ((1 - q) * (1 - q))
		}
		n := counter(t, res, m.name)
		if n != parts {
			t.Errorf("%s: %d partitions released, want all %d (threshold %d)", m.name, n, parts, c.Threshold())
			continue
		}
		mean := float64(counter(t, res, m.name+".dev")) / parts
		variance := float64(counter(t, res, m.name+".sq"))/parts - mean*mean
		t.Logf("%s: noise mean %.3f, variance %.3f (mechanism: %.3f)", m.name, mean, variance, want)
		if math.Abs(mean) > 5*math.Sqrt(want/parts) {
			t.Errorf("%s: noise mean %.3f, want 0 (± %.3f)", m.name, mean, 5*math.Sqrt(want/parts))
		}
		// Standard error of a variance: var * sqrt((kurtosis-1)/n), kurtosis <= 6.
		if tol := 5 * want * math.Sqrt(5.0/parts); math.Abs(variance-want) > tol {
			t.Errorf("%s: noise variance %.3f, want %.3f ± %.3f", m.name, variance, want, tol)
		}
	}
}

// TestDistinctPrivacyIDPreThreshold: partitions with fewer units than the
// PrivacySpec's PreThreshold are never released, however large the noise;
// a partition with many units is.
func TestDistinctPrivacyIDPreThreshold(t *testing.T) {
	var rows []page
	for d := 0; d < 50; d++ {
		for j := 0; j < 9; j++ {
			rows = append(rows, page{User: d*9 + j, Day: d})
		}
	}
	for j := 0; j < 300; j++ {
		rows = append(rows, page{User: 10000 + j, Day: 100})
	}
	spec, err := NewPrivacySpec(PrivacySpecParams{AggregationEpsilon: 1, PartitionSelectionDelta: 0.5, PreThreshold: 10})
	if err != nil {
		t.Fatal(err)
	}
	p, s, col := ptest.CreateList(rows)
	counts := DistinctPrivacyID(s, ParDo(s, pageDay, MakePrivateFromStruct(s, col, spec, "User")), DistinctPrivacyIDParams{MaxPartitionsContributed: 1})
	passert.Equals(s, beam.ParDo(s, intKey, counts), 100)
	ptest.RunAndValidate(t, p)
}
