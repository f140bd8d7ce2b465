package pbeam

import (
	"math"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

func TestNewPrivacySpecParams(t *testing.T) {
	for _, tc := range []struct {
		desc string
		p    PrivacySpecParams
		ok   bool
	}{
		{"both budgets", PrivacySpecParams{AggregationEpsilon: 1, PartitionSelectionEpsilon: 1, PartitionSelectionDelta: 1e-5}, true},
		{"aggregation only (public partitions)", PrivacySpecParams{AggregationEpsilon: 1}, true},
		{"selection only (SelectPartitions)", PrivacySpecParams{PartitionSelectionEpsilon: 1, PartitionSelectionDelta: 1e-5}, true},
		{"gaussian delta", PrivacySpecParams{AggregationEpsilon: 1, AggregationDelta: 1e-5}, true},
		{"pre-threshold with selection", PrivacySpecParams{AggregationEpsilon: 1, PartitionSelectionEpsilon: 1, PartitionSelectionDelta: 1e-5, PreThreshold: 10}, true},
		{"no budget", PrivacySpecParams{}, false},
		{"negative aggregation epsilon", PrivacySpecParams{AggregationEpsilon: -1}, false},
		{"NaN aggregation epsilon", PrivacySpecParams{AggregationEpsilon: math.NaN()}, false},
		{"infinite aggregation epsilon", PrivacySpecParams{AggregationEpsilon: math.Inf(1)}, false},
		{"negative aggregation delta", PrivacySpecParams{AggregationEpsilon: 1, AggregationDelta: -1e-5}, false},
		{"aggregation delta 1", PrivacySpecParams{AggregationEpsilon: 1, AggregationDelta: 1}, false},
		{"negative selection epsilon", PrivacySpecParams{PartitionSelectionEpsilon: -1, PartitionSelectionDelta: 1e-5}, false},
		{"selection epsilon without delta", PrivacySpecParams{PartitionSelectionEpsilon: 1}, false},
		{"selection delta without epsilon (DistinctPrivacyID, as in PoB)", PrivacySpecParams{AggregationEpsilon: 1, PartitionSelectionDelta: 1e-5}, true},
		{"negative selection delta", PrivacySpecParams{PartitionSelectionEpsilon: 1, PartitionSelectionDelta: -1e-5}, false},
		{"selection delta above 1", PrivacySpecParams{PartitionSelectionEpsilon: 1, PartitionSelectionDelta: 2}, false},
		{"negative pre-threshold", PrivacySpecParams{AggregationEpsilon: 1, PartitionSelectionEpsilon: 1, PartitionSelectionDelta: 1e-5, PreThreshold: -1}, false},
		{"pre-threshold without selection budget", PrivacySpecParams{AggregationEpsilon: 1, PreThreshold: 1}, false},
		{"unknown test mode", PrivacySpecParams{AggregationEpsilon: 1, TestMode: 7}, false},
	} {
		_, err := NewPrivacySpec(tc.p)
		if (err == nil) != tc.ok {
			t.Errorf("%s: NewPrivacySpec(%+v) error %v, want ok=%v", tc.desc, tc.p, err, tc.ok)
		}
	}
}

func TestBudgetShares(t *testing.T) {
	b := &budget{name: "aggregation", epsilon: 2, delta: 2e-10}
	for i := 0; i < 2; i++ {
		eps, delta, err := b.consume("op", 1, 1e-10)
		if err != nil || eps != 1 || delta != 1e-10 {
			t.Fatalf("share %d: got (%v, %v, %v), want (1, 1e-10, nil)", i, eps, delta, err)
		}
	}
	if _, _, err := b.consume("op", 0.01, 0); err == nil {
		t.Error("consumed 0.01 from an exhausted budget")
	}
	if _, _, err := b.consume("op", 0, 0); err == nil {
		t.Error("took the whole remainder of an exhausted budget")
	}
}

func TestBudgetWholeRemainder(t *testing.T) {
	b := &budget{name: "aggregation", epsilon: 2, delta: 2e-10}
	eps, delta, err := b.consume("op", 0, 0)
	if err != nil || eps != 2 || delta != 2e-10 {
		t.Fatalf("whole budget: got (%v, %v, %v), want (2, 2e-10, nil)", eps, delta, err)
	}
	if _, _, err := b.consume("op", 0, 0); err == nil {
		t.Error("a second whole-remainder request succeeded")
	}
	if _, _, err := b.consume("op", 1e-12, 0); err == nil {
		t.Error("an explicit share succeeded after the whole budget was taken")
	}

	// The last aggregation may take what the others left; after it nothing
	// is left, for a share or for another whole-remainder request.
	b = &budget{name: "aggregation", epsilon: 1, delta: 1e-6}
	if _, _, err := b.consume("op", 0.25, 0); err != nil {
		t.Fatal(err)
	}
	eps, delta, err = b.consume("op", 0, 0)
	if err != nil || eps != 0.75 || delta != 1e-6 {
		t.Fatalf("remainder: got (%v, %v, %v), want (0.75, 1e-6, nil)", eps, delta, err)
	}
	if _, _, err := b.consume("op", 0, 0); err == nil {
		t.Error("a second whole-remainder request succeeded")
	}
	if _, _, err := b.consume("op", 1e-12, 0); err == nil {
		t.Error("an explicit share succeeded after the remainder was taken")
	}
}

func TestBudgetRejectsInvalidShares(t *testing.T) {
	for _, tc := range []struct{ eps, delta float64 }{
		{-1, 0}, {math.NaN(), 0}, {math.Inf(1), 0}, {0.5, -1e-9}, {0.5, math.NaN()}, {0.5, 1},
	} {
		b := &budget{name: "aggregation", epsilon: 1, delta: 0.5}
		if _, _, err := b.consume("op", tc.eps, tc.delta); err == nil {
			t.Errorf("consume(%v, %v) succeeded", tc.eps, tc.delta)
		}
		if b.epsilon != 1 || b.delta != 0.5 || b.consumed {
			t.Errorf("a refused consume(%v, %v) changed the budget: %+v", tc.eps, tc.delta, b)
		}
	}
}

func TestBudgetRoundingTolerance(t *testing.T) {
	// Splitting the budget in n equal shares computed in floating point
	// always succeeds, and leaves nothing usable behind.
	for n := 1; n <= 10; n++ {
		b := &budget{name: "aggregation", epsilon: 1, delta: 1e-10}
		for i := 0; i < n; i++ {
			if _, _, err := b.consume("op", 1/float64(n), 1e-10/float64(n)); err != nil {
				t.Fatalf("%d shares: share %d: %v", n, i, err)
			}
		}
		if _, _, err := b.consume("op", 1e-15, 1e-40); err == nil {
			t.Errorf("%d shares: consumed more after the budget was split", n)
		}
	}
	// The tolerance is relative 1e-9 of what remains, no more.
	b := &budget{name: "aggregation", epsilon: 1}
	if eps, _, err := b.consume("op", 1+0.5e-9, 0); err != nil || eps != 1 {
		t.Errorf("1+0.5e-9 out of 1: got (%v, %v); want the whole 1", eps, err)
	}
	b = &budget{name: "aggregation", epsilon: 1}
	if _, _, err := b.consume("op", 1+2e-9, 0); err == nil {
		t.Error("1+2e-9 out of 1 was granted")
	}
	b = &budget{name: "aggregation", epsilon: 1, delta: 1e-6}
	if _, _, err := b.consume("op", 0.5, 1e-6*(1+3e-9)); err == nil {
		t.Error("delta 3e-9 (relative) over the remainder was granted")
	}
}

// TestBudgetRulesThroughAggregations checks the budget rules where pipeline
// authors meet them: at construction of the aggregations.
func TestBudgetRulesThroughAggregations(t *testing.T) {
	rows := []ctRow{{ID: 1, Key: 1, I: 1}}
	newPcol := func(spec *PrivacySpec) (beam.Scope, PrivatePCollection) {
		p := beam.NewPipeline()
		s := p.Root()
		col := beam.CreateList(s, rows)
		return s, ParDo(s, ctKeyInt, MakePrivateFromStruct(s, col, spec, "ID"))
	}
	sum := func(eps, selEps, selDelta float64) SumParams {
		return SumParams{AggregationEpsilon: eps, PartitionSelectionParams: PartitionSelectionParams{Epsilon: selEps, Delta: selDelta}, MaxPartitionsContributed: 1, MinValue: 0, MaxValue: 1}
	}
	full := PrivacySpecParams{AggregationEpsilon: 1, PartitionSelectionEpsilon: 1, PartitionSelectionDelta: 1e-5}

	// Explicit shares that add up to the budget.
	spec := ctSpec(t, full)
	s, pcol := newPcol(spec)
	SumPerKey(s, pcol, sum(0.25, 0.5, 5e-6))
	SumPerKey(s, pcol, sum(0.25, 0.25, 2.5e-6))
	// The last aggregation takes the remainder when it gives no share.
	SumPerKey(s, pcol, sum(0, 0, 0))
	want := []charge{
		{"pbeam.SumPerKey aggregation", 0.25, 0}, {"pbeam.SumPerKey partition selection", 0.5, 5e-6},
		{"pbeam.SumPerKey aggregation", 0.25, 0}, {"pbeam.SumPerKey partition selection", 0.25, 2.5e-6},
		{"pbeam.SumPerKey aggregation", 0.5, 0}, {"pbeam.SumPerKey partition selection", 0.25, 2.5e-6},
	}
	if len(spec.charges) != len(want) {
		t.Fatalf("charges %v, want %v", spec.charges, want)
	}
	for i, c := range spec.charges {
		if c.what != want[i].what || math.Abs(c.epsilon-want[i].epsilon) > 1e-15 || math.Abs(c.delta-want[i].delta) > 1e-20 {
			t.Errorf("charge %d: %+v, want %+v", i, c, want[i])
		}
	}
	// Nothing is left.
	ctMustFail(t, func() { SumPerKey(s, pcol, sum(0.01, 0, 0)) }, "pbeam.SumPerKey", "left")

	// A second whole-remainder aggregation is refused.
	s, pcol = newPcol(ctSpec(t, full))
	SumPerKey(s, pcol, sum(0, 0, 0))
	ctMustFail(t, func() { SumPerKey(s, pcol, sum(0, 0, 0)) }, "consumed all of it", "explicit share")

	// Overspending is refused, for either budget.
	s, pcol = newPcol(ctSpec(t, full))
	SumPerKey(s, pcol, sum(0.5, 0.5, 5e-6))
	ctMustFail(t, func() { SumPerKey(s, pcol, sum(0.6, 0.1, 1e-6)) }, "aggregation epsilon 0.6", "left")
	s, pcol = newPcol(ctSpec(t, full))
	ctMustFail(t, func() { SumPerKey(s, pcol, sum(0.5, 0.5, 2e-5)) }, "partition selection", "left")

	// Three aggregations of a third each fit, by the rounding tolerance.
	s, pcol = newPcol(ctSpec(t, full))
	for i := 0; i < 3; i++ {
		SumPerKey(s, pcol, sum(1.0/3, 1.0/3, 1e-5/3))
	}

	// Public partitions take no selection budget: a spec without one serves.
	s, pcol = newPcol(ctSpec(t, PrivacySpecParams{AggregationEpsilon: 1}))
	SumPerKey(s, pcol, SumParams{AggregationEpsilon: 0.5, PublicPartitions: []int{1}, MaxPartitionsContributed: 1, MaxValue: 1})
	SumPerKey(s, pcol, SumParams{AggregationEpsilon: 0.5, PublicPartitions: []int{1}, MaxPartitionsContributed: 1, MaxValue: 1})
	// ... but private partition selection needs one.
	s, pcol = newPcol(ctSpec(t, PrivacySpecParams{AggregationEpsilon: 1}))
	ctMustFail(t, func() { SumPerKey(s, pcol, sum(0, 0, 0)) }, "no partition selection budget")
	// Public partitions with a selection share are refused.
	s, pcol = newPcol(ctSpec(t, full))
	ctMustFail(t, func() {
		SumPerKey(s, pcol, SumParams{PublicPartitions: []int{1}, PartitionSelectionParams: PartitionSelectionParams{Epsilon: 1, Delta: 1e-5}, MaxPartitionsContributed: 1, MaxValue: 1})
	}, "PublicPartitions")
	// Laplace noise with a delta is refused.
	s, pcol = newPcol(ctSpec(t, PrivacySpecParams{AggregationEpsilon: 1, AggregationDelta: 1e-5, PartitionSelectionEpsilon: 1, PartitionSelectionDelta: 1e-5}))
	ctMustFail(t, func() {
		SumPerKey(s, pcol, SumParams{AggregationEpsilon: 1, AggregationDelta: 1e-5, MaxPartitionsContributed: 1, MaxValue: 1})
	}, "Laplace")
	// Gaussian noise without a delta is refused at construction.
	s, pcol = newPcol(ctSpec(t, full))
	ctMustFail(t, func() {
		SumPerKey(s, pcol, SumParams{NoiseKind: GaussianNoise{}, MaxPartitionsContributed: 1, MaxValue: 1})
	}, "pbeam.SumPerKey")
}

// TestTestModeSpecWithoutSelectionBudget: in test mode, a spec without a
// partition selection budget serves several aggregations with explicit
// aggregation shares (test mode releases every non-empty partition).
func TestTestModeSpecWithoutSelectionBudget(t *testing.T) {
	for _, mode := range []TestMode{TestModeWithContributionBounding, TestModeWithoutContributionBounding} {
		spec := ctSpec(t, PrivacySpecParams{AggregationEpsilon: 1, TestMode: mode})
		p := beam.NewPipeline()
		s := p.Root()
		pcol := ParDo(s, ctKeyInt, MakePrivateFromStruct(s, beam.CreateList(s, []ctRow{{ID: 1, Key: 1, I: 1}}), spec, "ID"))
		SumPerKey(s, pcol, SumParams{AggregationEpsilon: 0.5, MaxPartitionsContributed: 1, MaxValue: 1})
		SumPerKey(s, pcol, SumParams{AggregationEpsilon: 0.5, MaxPartitionsContributed: 1, MaxValue: 1})
	}
}
