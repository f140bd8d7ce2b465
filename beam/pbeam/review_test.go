package pbeam

import (
	"math"
	"math/big"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// Regression tests for the findings of the outside review of pbeam
// (docs/design/beam-reviews-and-tests.md, "pbeam: the outside review"): each was a way to break the guarantee, the
// budget or the construction-time errors.

func reviewPcol(t *testing.T, params PrivacySpecParams) (beam.Scope, PrivatePCollection, *PrivacySpec) {
	t.Helper()
	spec, err := NewPrivacySpec(params)
	if err != nil {
		t.Fatal(err)
	}
	p := beam.NewPipeline()
	s := p.Root()
	col := beam.CreateList(s, []visit{{User: 1, Day: 1, Euros: 1}})
	return s, ParDo(s, dayEuros, MakePrivateFromStruct(s, col, spec, "User")), spec
}

// F1: MaxPartitionsContributed times the joint release's coordinates
// wrapped around int64 to a tiny L0, and with it the noise.
func TestReviewJointL0Overflow(t *testing.T) {
	s, pcol, _ := reviewPcol(t, PrivacySpecParams{AggregationEpsilon: 1, AggregationDelta: 1e-5})
	ctMustFail(t, func() {
		AggregatePerKey(s, pcol, AggregateParams{AggregationEpsilon: 1, AggregationDelta: 1e-5, PublicPartitions: []int{1},
			MaxPartitionsContributed: 6148914691236517206, MaxContributionsPerPartition: 1, MinValue: -1, MaxValue: 1, Sum: true, Mean: true})
	}, "MaxPartitionsContributed", "overflows")
}

// F2: an aggregation taking the rest of the budget while another was built
// concurrently used the remainder it saw first, so the spec spent more than
// it accounted. The mechanisms now use exactly what consume took.
func TestReviewConcurrentRemainder(t *testing.T) {
	_, pcol, spec := reviewPcol(t, PrivacySpecParams{AggregationEpsilon: 1, PartitionSelectionEpsilon: 1, PartitionSelectionDelta: 1e-5})
	ag := &aggregation{op: "test", pcol: pcol, public: []int{1}}
	ag.consumeBudget(0, 0, PartitionSelectionParams{})
	if ag.part.Epsilon != 1 {
		t.Fatalf("peeked epsilon %v, want 1", ag.part.Epsilon)
	}
	// Another aggregation takes half in between.
	if _, _, err := spec.aggregation.consume("other", 0.5, 0); err != nil {
		t.Fatal(err)
	}
	ag.takeBudget()
	if ag.part.Epsilon != 0.5 {
		t.Errorf("the mechanism uses epsilon %v; the spec gave it 0.5", ag.part.Epsilon)
	}
	if eps, _ := spec.Consumed(); math.Abs(eps-1) > 1e-12 {
		t.Errorf("spec consumed %v, want 1", eps)
	}
}

// F3: an exact joint total beyond MaxFloat64 became +Inf and failed the
// worker, so one more user decided whether the pipeline failed.
func TestReviewJointScaledIsFinite(t *testing.T) {
	huge := new(big.Int).Lsh(big.NewInt(1), 2000)
	for _, x := range []*big.Int{huge, new(big.Int).Neg(huge)} {
		if v := scaled(x, 1); math.IsInf(v, 0) || math.IsNaN(v) {
			t.Errorf("scaled(±2^2000) = %v, want ±MaxFloat64", v)
		}
	}
}

// F4: misleading or missing construction errors.
func TestReviewConstructionMessages(t *testing.T) {
	newInts := func(params PrivacySpecParams) (beam.Scope, PrivatePCollection) {
		spec, err := NewPrivacySpec(params)
		if err != nil {
			t.Fatal(err)
		}
		p := beam.NewPipeline()
		s := p.Root()
		col := beam.CreateList(s, []ctRow{{ID: 1, Key: 1, I: 1}})
		return s, MakePrivateFromStruct(s, col, spec, "ID")
	}
	full := PrivacySpecParams{AggregationEpsilon: 1, PartitionSelectionEpsilon: 1, PartitionSelectionDelta: 1e-5}

	// Integer bounds of 2^63 wrapped to MinInt64 in the message.
	s, pcol := newInts(full)
	ctMustFail(t, func() {
		SumPerKey(s, ParDo(s, ctKeyInt, pcol), SumParams{MaxPartitionsContributed: 1, MinValue: 0, MaxValue: math.MaxInt64})
	}, "within int64")
	ctMustFail(t, func() {
		Count(s, ParDo(s, ctKey, pcol), CountParams{MaxPartitionsContributed: 1, MaxValue: math.MaxInt64})
	}, "within int64")

	// A typed nil noise kind is a kind, not a runtime panic.
	s, pcol = newInts(PrivacySpecParams{AggregationEpsilon: 1, AggregationDelta: 1e-5, PartitionSelectionEpsilon: 1, PartitionSelectionDelta: 1e-5})
	Count(s, ParDo(s, ctKey, pcol), CountParams{NoiseKind: (*GaussianNoise)(nil), MaxPartitionsContributed: 1, MaxValue: 1})

	// Laplace taking the rest of a budget that has a delta.
	s, pcol = newInts(PrivacySpecParams{AggregationEpsilon: 1, AggregationDelta: 1e-5, PartitionSelectionEpsilon: 1, PartitionSelectionDelta: 1e-5})
	ctMustFail(t, func() {
		Count(s, ParDo(s, ctKey, pcol), CountParams{MaxPartitionsContributed: 1, MaxValue: 1})
	}, "Laplace noise cannot use", "explicit share")
}
