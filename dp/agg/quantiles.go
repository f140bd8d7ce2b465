package agg

import (
	"fmt"
	"math"

	"github.com/dpsql/dpsql/dp/noise"
)

// Default quantile tree shape (Google's): 16^4 = 65536 leaves.
const (
	DefaultTreeHeight      = 4
	DefaultBranchingFactor = 16
)

// maxLeaves bounds the number of leaves, so that leaf indices stay exact in
// float64 arithmetic and in int.
const maxLeaves = 1 << 40

// QuantilesOptions configures a Quantiles.
type QuantilesOptions struct {
	// Epsilon is the privacy budget of the whole tree: any number of ranks
	// can then be read from it. Required: positive, finite.
	Epsilon float64
	// Delta is required with Gaussian noise (in (0, 1)) and must be 0 with
	// Laplace noise.
	Delta float64
	// MaxPartitionsContributed (kappa) is how many partitions one privacy
	// unit may contribute to. Required: at least 1.
	MaxPartitionsContributed int64
	// MaxContributionsPerPartition is how many values (rows) one privacy
	// unit may add to one partition. Default 1.
	MaxContributionsPerPartition int64
	// Lower and Upper bound the search space: values are clamped into
	// [Lower, Upper]. Required: finite, with Lower < Upper.
	Lower, Upper float64
	// TreeHeight is the number of noisy levels below the root. Default 4.
	TreeHeight int
	// BranchingFactor is the number of children of each node. Default 16.
	// BranchingFactor^TreeHeight (the number of leaves) must not exceed 2^40.
	BranchingFactor int
	// NoiseKind is noise.Laplace (the default) or noise.Gaussian.
	NoiseKind noise.Kind
}

// QuantileSummary is the exact, un-noised state of a Quantiles: how many
// values fell into each leaf.
type QuantileSummary struct {
	// LeafCounts maps a leaf index (see Quantiles.LeafIndex) to the number of
	// values in that leaf; absent leaves are empty. Indices must be in
	// [0, NumLeaves()) and counts must not be negative.
	LeafCounts map[int]int64
}

// Quantiles computes differentially private quantiles with Google's quantile
// tree: [Lower, Upper] is cut into BranchingFactor^TreeHeight equal-width
// leaves; every node of the tree below the root holds the number of values
// in its range; every node's count gets independent noise; a quantile is
// found by walking from the root to a leaf, at each node choosing the child
// whose cumulative noisy count reaches the rank, and interpolating linearly
// inside the last node. It is not safe for concurrent use.
type Quantiles struct {
	priv         privacy
	lower, upper float64
	mech         noise.Mechanism
	tree         *countTree
	noisy        []map[int64]float64 // noisy counts drawn so far, by level and index
	st           state
}

// NewQuantiles validates the options and returns an empty Quantiles.
func NewQuantiles(opts QuantilesOptions) (*Quantiles, error) {
	const fn = "NewQuantiles"
	p, err := checkPrivacy(fn, opts.Epsilon, opts.Delta, opts.MaxPartitionsContributed, opts.MaxContributionsPerPartition, opts.NoiseKind)
	if err != nil {
		return nil, err
	}
	if err := checkBounds(fn, opts.Lower, opts.Upper); err != nil {
		return nil, err
	}
	h, b := opts.TreeHeight, opts.BranchingFactor
	if h == 0 {
		h = DefaultTreeHeight
	}
	if b == 0 {
		b = DefaultBranchingFactor
	}
	if h < 1 {
		return nil, &OptionError{fn, "TreeHeight", h, "must be at least 1 (0 means the default 4)"}
	}
	if b < 2 {
		return nil, &OptionError{fn, "BranchingFactor", b, "must be at least 2 (0 means the default 16)"}
	}
	leaves := 1.0
	for i := 0; i < h; i++ {
		leaves *= float64(b)
	}
	if leaves > maxLeaves {
		return nil, &OptionError{fn, "TreeHeight", h, fmt.Sprintf("BranchingFactor^TreeHeight = %d^%d exceeds 2^40 leaves", b, h)}
	}
	if p.kappa > math.MaxInt64/int64(h) {
		return nil, &OptionError{fn, "MaxPartitionsContributed", p.kappa, "times TreeHeight overflows int64"}
	}
	q := &Quantiles{priv: p, lower: opts.Lower, upper: opts.Upper, tree: newCountTree(h, b)}
	q.mech, err = p.mechanism(fn, "tree counts", p.epsilon, p.delta, p.kappa*int64(h), float64(p.perPartition))
	if err != nil {
		return nil, err
	}
	return q, nil
}

// Fresh returns a new, empty Quantiles with the same options, sharing the
// noise mechanism (see BoundedSum.Fresh).
func (q *Quantiles) Fresh() *Quantiles {
	return &Quantiles{priv: q.priv, lower: q.lower, upper: q.upper, mech: q.mech,
		tree: newCountTree(q.tree.height, q.tree.branching)}
}

// NumLeaves returns BranchingFactor^TreeHeight.
func (q *Quantiles) NumLeaves() int { return int(q.tree.numLeaves) }

// Sensitivity returns the noise's L0 (MaxPartitionsContributed *
// TreeHeight: one unit changes one node per level in each of its
// partitions) and L∞ (MaxContributionsPerPartition) sensitivities.
func (q *Quantiles) Sensitivity() (l0 int64, lInf float64) {
	return q.priv.kappa * int64(q.tree.height), float64(q.priv.perPartition)
}

// LeafIndex returns the leaf of v, as the SQL backend must compute it:
//
//	LEAST(FLOOR(((LEAST(GREATEST(v, Lower), Upper) - Lower) / (Upper - Lower)) * NumLeaves), NumLeaves - 1)
//
// in float64 (DOUBLE) arithmetic, in that order of operations. ok is false
// for NaN, which is ignored.
func (q *Quantiles) LeafIndex(v float64) (leaf int, ok bool) {
	if math.IsNaN(v) {
		return 0, false
	}
	return int(leafIndex(v, q.lower, q.upper, q.tree.numLeaves)), true
}

// Add clamps v into [Lower, Upper] and counts it in its leaf and the leaf's
// ancestors. NaN is ignored.
func (q *Quantiles) Add(v float64) error {
	if err := q.st.check("Quantiles.Add"); err != nil {
		return err
	}
	if math.IsNaN(v) {
		return nil
	}
	q.tree.addLeaf(leafIndex(v, q.lower, q.upper, q.tree.numLeaves), 1)
	return nil
}

// Merge adds leaf counts (another Quantiles' Summary, or the SQL backend's
// COUNT(*) ... GROUP BY leaf for one partition).
func (q *Quantiles) Merge(s QuantileSummary) error {
	const fn = "Quantiles.Merge"
	if err := q.st.check(fn); err != nil {
		return err
	}
	for leaf, c := range s.LeafCounts {
		if leaf < 0 || int64(leaf) >= q.tree.numLeaves {
			return fmt.Errorf("agg: %s: leaf index %d is outside [0, %d)", fn, leaf, q.tree.numLeaves)
		}
		if c < 0 {
			return fmt.Errorf("agg: %s: leaf %d has a negative count %d", fn, leaf, c)
		}
	}
	if len(q.tree.leaves) == 0 {
		q.tree.leaves = make(map[int64]int64, len(s.LeafCounts)) // no growth while filling
	}
	for leaf, c := range s.LeafCounts {
		if c > 0 {
			q.tree.addLeaf(int64(leaf), c)
		}
	}
	return nil
}

// Summary returns the exact leaf counts, for merging into another Quantiles.
func (q *Quantiles) Summary() (QuantileSummary, error) {
	if err := q.st.check("Quantiles.Summary"); err != nil {
		return QuantileSummary{}, err
	}
	return QuantileSummary{LeafCounts: q.tree.leafCounts()}, nil
}

// Result returns the noisy quantiles at the given ranks, in order: rank 0.5 is
// the median, 0 the minimum and 1 the maximum (ranks are clamped into
// [0.005, 0.995], where the tree is accurate), k/n the k-th n-tile. Every
// node's count is noised once (lazily, when the search first reads it, which
// has the same distribution as noising all nodes up front); any number of
// ranks are then post-processing of the same noisy tree. The result can be
// taken once, so ask for all ranks in one call.
func (q *Quantiles) Result(ranks ...float64) ([]float64, error) {
	v, _, _, err := q.result("Quantiles.Result", 0, ranks)
	return v, err
}

// ResultWithCI returns the noisy quantiles at the given ranks and, for each,
// an interval [lo, hi] that contains the exact quantile of the clamped
// values with probability about level (0.88-0.92 at 0.9 on continuous data,
// 0.90 on average; more in tiny groups and on integer data, whose repeated
// values make the quantile a step): it inverts a rank test on the noisy
// tree and contains the released value (see quantile_ci.go). It takes the
// result, like Result.
func (q *Quantiles) ResultWithCI(level float64, ranks ...float64) (values, lo, hi []float64, err error) {
	if err := checkLevel("Quantiles.ResultWithCI", level); err != nil {
		return nil, nil, nil, err
	}
	return q.result("Quantiles.ResultWithCI", level, ranks)
}

// ExactLeaves runs Result's search on the exact counts, without noise, and returns for
// each rank the leaf where it ends (-1 when there is no value: the search then stops at
// the root). It is NOT differentially private: it is for noiseless tests, whose exact
// results must follow the same search as the noisy ones (rank clamping, tolerance, ties
// going to the lower leaf). Result's value is then within that leaf: at rank r inside
// it, (1-r)*lo + r*hi. It neither draws noise nor takes the result.
func (q *Quantiles) ExactLeaves(ranks ...float64) ([]int, error) {
	const fn = "Quantiles.ExactLeaves"
	if err := q.st.check(fn); err != nil {
		return nil, err
	}
	exact := func(n treeNode) (float64, error) { return float64(q.tree.count(n.level, n.index)), nil }
	out := make([]int, len(ranks))
	for i, r := range ranks {
		if math.IsNaN(r) || r < 0 || r > 1 {
			return nil, fmt.Errorf("agg: %s: rank %v must be in [0, 1]", fn, r)
		}
		n, _, err := q.tree.descend(r, 0, exact)
		if err != nil {
			return nil, err
		}
		out[i] = -1
		if n.level == q.tree.height {
			out[i] = int(n.index)
		}
	}
	return out, nil
}

func (q *Quantiles) result(fn string, level float64, ranks []float64) (values, lo, hi []float64, err error) {
	if len(ranks) == 0 {
		return nil, nil, nil, fmt.Errorf("agg: %s: no ranks given; ask for every rank in one call (the result can be taken once)", fn)
	}
	for _, r := range ranks {
		if math.IsNaN(r) || r < 0 || r > 1 {
			return nil, nil, nil, fmt.Errorf("agg: %s: rank %v must be in [0, 1]", fn, r)
		}
	}
	if err := q.st.take(fn); err != nil {
		return nil, nil, nil, err
	}
	// By level, then index: a map keyed by the int64 index alone hashes several times faster
	// than one keyed by the node, and a quantile's interval reads thousands of nodes.
	q.noisy = make([]map[int64]float64, q.tree.height+1)
	for l := range q.noisy {
		q.noisy[l] = make(map[int64]float64)
	}
	noisy := func(n treeNode) (float64, error) {
		if c, ok := q.noisy[n.level][n.index]; ok {
			return c, nil
		}
		c, err := q.mech.AddNoiseFloat(float64(q.tree.count(n.level, n.index)))
		if err != nil {
			return 0, fmt.Errorf("agg: %s: %w", fn, err)
		}
		q.noisy[n.level][n.index] = c
		return c, nil
	}
	clamp := func(v float64) float64 { return math.Min(math.Max(v, q.lower), q.upper) } // interpolation rounding
	values = make([]float64, len(ranks))
	for i, r := range ranks {
		v, err := q.tree.search(r, q.lower, q.upper, q.mech.Scale(), noisy)
		if err != nil {
			return nil, nil, nil, err
		}
		values[i] = clamp(v)
	}
	if level == 0 {
		return values, nil, nil, nil
	}
	lo, hi = make([]float64, len(ranks)), make([]float64, len(ranks))
	for i, r := range ranks {
		l, h, err := q.tree.rankInterval(r, level, q.lower, q.upper, q.mech, noisy)
		if err != nil {
			return nil, nil, nil, err // noisy's errors, and within's, name their origin
		}
		lo[i], hi[i] = math.Min(clamp(l), values[i]), math.Max(clamp(h), values[i])
	}
	return values, lo, hi, nil
}
