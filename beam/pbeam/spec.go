package pbeam

import (
	"fmt"
	"math"
	"sync"
)

// PrivacySpecParams are the privacy parameters of a PrivacySpec: the budget
// that the aggregations and partition selections made on its
// PrivatePCollections may spend in total, as in Privacy on Beam.
type PrivacySpecParams struct {
	// AggregationEpsilon is the epsilon available to the noise of all
	// aggregations together. Required unless the only aggregations are
	// SelectPartitions.
	AggregationEpsilon float64
	// AggregationDelta is the delta available to the noise of all
	// aggregations together. Only Gaussian noise needs it.
	AggregationDelta float64
	// PartitionSelectionEpsilon and PartitionSelectionDelta are the budget of
	// private partition selection (which partitions may appear in the
	// output). Required unless every aggregation uses public partitions.
	// DistinctPrivacyID spends only delta (its noisy count is thresholded),
	// so a PrivacySpec used only by it may have PartitionSelectionDelta
	// without PartitionSelectionEpsilon, as in Privacy on Beam.
	PartitionSelectionEpsilon float64
	PartitionSelectionDelta   float64
	// PreThreshold, if positive, additionally drops every partition with fewer
	// than PreThreshold distinct privacy units before private partition
	// selection. It needs a partition selection budget.
	PreThreshold int64
	// TestMode makes the pipeline release exact results, for tests only:
	// TestModeWithContributionBounding or TestModeWithoutContributionBounding.
	// The results are not differentially private.
	TestMode TestMode
}

// PrivacySpec holds the budget of a family of PrivatePCollections. Each
// aggregation consumes part of it when the pipeline is constructed; asking
// for more than remains is an error at construction.
type PrivacySpec struct {
	aggregation        *budget
	partitionSelection *budget
	preThreshold       int64
	testMode           TestMode
	// seed keys the hash that chooses which partitions (and values) of a
	// privacy unit are kept; drawn from crypto/rand for each spec.
	seed uint64

	mu      sync.Mutex
	charges []charge // what each aggregation consumed, for the ledger
	// ledger is the state of ChargeLedger: sealed once it was called (no
	// aggregation may consume budget after), charged once a charge committed.
	ledger struct{ sealed, charged bool }
}

// charge is one consumption of a PrivacySpec's budget.
type charge struct {
	what           string
	epsilon, delta float64
}

// NewPrivacySpec checks params and returns a PrivacySpec holding that budget.
func NewPrivacySpec(params PrivacySpecParams) (*PrivacySpec, error) {
	if err := checkEpsilonParam("AggregationEpsilon", params.AggregationEpsilon); err != nil {
		return nil, err
	}
	if err := checkDeltaParam("AggregationDelta", params.AggregationDelta); err != nil {
		return nil, err
	}
	if err := checkEpsilonParam("PartitionSelectionEpsilon", params.PartitionSelectionEpsilon); err != nil {
		return nil, err
	}
	if err := checkDeltaParam("PartitionSelectionDelta", params.PartitionSelectionDelta); err != nil {
		return nil, err
	}
	if params.AggregationEpsilon == 0 && params.PartitionSelectionEpsilon == 0 {
		return nil, fmt.Errorf("pbeam.NewPrivacySpec: AggregationEpsilon and PartitionSelectionEpsilon are both 0; set AggregationEpsilon (for the noise of aggregations) and PartitionSelectionEpsilon/Delta (to choose which partitions are released), or only PartitionSelectionEpsilon/Delta for a pipeline of SelectPartitions")
	}
	if params.PartitionSelectionEpsilon > 0 && params.PartitionSelectionDelta == 0 {
		return nil, fmt.Errorf("pbeam.NewPrivacySpec: PartitionSelectionDelta is 0 but PartitionSelectionEpsilon is %v; private partition selection needs a delta in (0, 1), for example 1e-5", params.PartitionSelectionEpsilon)
	}
	if params.PreThreshold < 0 {
		return nil, fmt.Errorf("pbeam.NewPrivacySpec: PreThreshold is %d; it must be 0 (none) or positive", params.PreThreshold)
	}
	if params.PreThreshold > 0 && params.PartitionSelectionDelta == 0 {
		return nil, fmt.Errorf("pbeam.NewPrivacySpec: PreThreshold is set but there is no partition selection budget; set PartitionSelectionEpsilon and PartitionSelectionDelta")
	}
	if params.TestMode < TestModeDisabled || params.TestMode > TestModeWithoutContributionBounding {
		return nil, fmt.Errorf("pbeam.NewPrivacySpec: unknown TestMode %d", params.TestMode)
	}
	return &PrivacySpec{
		aggregation:        &budget{name: "aggregation", epsilon: params.AggregationEpsilon, delta: params.AggregationDelta},
		partitionSelection: &budget{name: "partition selection", epsilon: params.PartitionSelectionEpsilon, delta: params.PartitionSelectionDelta},
		preThreshold:       params.PreThreshold,
		testMode:           params.TestMode,
		seed:               secureSeed(),
	}, nil
}

func checkEpsilonParam(name string, eps float64) error {
	if math.IsNaN(eps) || math.IsInf(eps, 0) || eps < 0 {
		return fmt.Errorf("pbeam: %s is %v; it must be a finite number >= 0", name, eps)
	}
	return nil
}

func checkDeltaParam(name string, delta float64) error {
	if math.IsNaN(delta) || delta < 0 || delta >= 1 {
		return fmt.Errorf("pbeam: %s is %v; it must be in [0, 1)", name, delta)
	}
	return nil
}

// budget is one of a PrivacySpec's two budgets (aggregation, partition
// selection). Consuming is explicit (a requested epsilon/delta) or the whole
// remainder (0, 0): for the PrivacySpec's only aggregation, as in Privacy on
// Beam, or for the last one after the others took explicit shares. Once the
// remainder is taken, nothing is left for another aggregation.
type budget struct {
	name           string
	mu             sync.Mutex
	epsilon, delta float64
	initial        float64 // epsilon before the first consumption
	consumed       bool
	// usedEpsilon and usedDelta add up what was taken: the exact sums of the
	// shares the aggregations' mechanisms use (ChargeLedger charges them).
	usedEpsilon, usedDelta float64
	// sealed refuses every further consume: the spec was charged to a
	// ledger, which did not pay for more.
	sealed bool
}

// relTolerance forgives a request that exceeds the remainder by a rounding
// error (0.1 + 0.2 out of 0.3), never more.
const relTolerance = 1e-9

// consume takes (eps, delta) from the budget, or all of it for (0, 0), and
// returns what was taken.
func (b *budget) consume(op string, eps, delta float64) (float64, float64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, d, err := b.share(op, eps, delta)
	if err != nil {
		return 0, 0, err
	}
	if !b.consumed {
		b.initial = b.epsilon
	}
	b.consumed = true
	if eps == 0 && delta == 0 {
		b.epsilon, b.delta = 0, 0 // exactly nothing left
	} else {
		b.epsilon -= e
		b.delta -= d
	}
	b.usedEpsilon += e
	b.usedDelta += d
	return e, d, nil
}

// peek returns what consume would take, and its error, taking nothing.
func (b *budget) peek(op string, eps, delta float64) (float64, float64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.share(op, eps, delta)
}

// share computes the share a request gets; the caller holds b.mu.
func (b *budget) share(op string, eps, delta float64) (float64, float64, error) {
	if b.sealed {
		return 0, 0, fmt.Errorf("%s: the PrivacySpec was charged to a budget ledger (ChargeLedger), which paid only for the aggregations constructed before; construct every aggregation before ChargeLedger, or use a new PrivacySpec (and a new charge) for more", op)
	}
	initial := b.initial
	if !b.consumed {
		initial = b.epsilon
	}
	if eps == 0 && delta == 0 {
		// A remainder within rounding of zero is nothing left (it would
		// drown the release in noise).
		if b.consumed && b.epsilon <= initial*relTolerance {
			return 0, 0, fmt.Errorf("%s: no %s budget given, so this aggregation asks for the rest of the PrivacySpec's %s budget, but other aggregations consumed all of it; give every aggregation but the last an explicit share (its Epsilon and Delta) that leaves some for this one", op, b.name, b.name)
		}
		return b.epsilon, b.delta, nil
	}
	if math.IsNaN(eps) || math.IsInf(eps, 0) || eps < 0 || math.IsNaN(delta) || delta < 0 || delta >= 1 {
		return 0, 0, fmt.Errorf("%s: %s budget (epsilon %v, delta %v) is invalid; epsilon must be finite and >= 0, delta in [0, 1)", op, b.name, eps, delta)
	}
	if eps > b.epsilon && eps-b.epsilon <= b.epsilon*relTolerance {
		eps = b.epsilon
	}
	if delta > b.delta && delta-b.delta <= b.delta*relTolerance {
		delta = b.delta
	}
	if eps > b.epsilon || delta > b.delta {
		return 0, 0, fmt.Errorf("%s: asks for %s epsilon %v and delta %v but the PrivacySpec has only epsilon %v and delta %v left; split the PrivacySpec's budget among its aggregations (the shares must add up to at most the total)", op, b.name, eps, delta, b.epsilon, b.delta)
	}
	return eps, delta, nil
}

// unset reports whether the budget was zero from the start.
func (b *budget) unset() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.epsilon == 0 && b.delta == 0 && !b.consumed
}

// record notes what an aggregation consumed (for ChargeLedger and reports).
func (s *PrivacySpec) record(what string, eps, delta float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.charges = append(s.charges, charge{what: what, epsilon: eps, delta: delta})
}

// PartitionSelectionParams is an aggregation's share of the partition
// selection budget, and for SelectPartitions its contribution bound.
type PartitionSelectionParams struct {
	// Epsilon and Delta are this operation's share of the PrivacySpec's
	// partition selection budget; both 0 takes all of it, which only the
	// spec's one partition selection may do.
	Epsilon, Delta float64
	// MaxPartitionsContributed bounds the partitions of one privacy unit.
	// Only SelectPartitions reads it (aggregations have their own); required
	// there.
	MaxPartitionsContributed int64
}
