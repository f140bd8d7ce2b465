package agg

import (
	"fmt"
	"math"

	"github.com/dpsql/dpsql/dp/noise"
)

// CountOptions configures a Count.
type CountOptions struct {
	// Epsilon is the privacy budget of the count. Required: positive, finite.
	Epsilon float64
	// Delta is required with Gaussian noise (in (0, 1)) and must be 0 with
	// Laplace noise.
	Delta float64
	// MaxPartitionsContributed (kappa) is how many partitions one privacy
	// unit may contribute to. Required: at least 1.
	MaxPartitionsContributed int64
	// MaxContributionsPerPartition is the most one privacy unit may add to
	// this count: 1 (the default) for a count of privacy units, U for a
	// count of rows with each unit's row count clamped to [0, U].
	MaxContributionsPerPartition int64
	// NoiseKind is noise.Laplace (the default) or noise.Gaussian.
	NoiseKind noise.Kind
}

// CountSummary is the exact, un-noised state of a Count, as the SQL backend
// computes it or as Summary returns it.
type CountSummary struct {
	// Count is the sum over privacy units of their contributions, each
	// clamped to [0, MaxContributionsPerPartition]: COUNT(*) of the per-unit
	// rows for a count of units, SUM(LEAST(rows, U)) for a count of rows.
	// Must not be negative.
	Count int64
}

// Count is a differentially private count with per-partition sensitivity
// MaxContributionsPerPartition. It is not safe for concurrent use.
type Count struct {
	priv  privacy
	mech  noise.Mechanism
	count int64
	st    state
}

// NewCount validates the options and returns an empty Count.
func NewCount(opts CountOptions) (*Count, error) {
	const fn = "NewCount"
	p, err := checkPrivacy(fn, opts.Epsilon, opts.Delta, opts.MaxPartitionsContributed, opts.MaxContributionsPerPartition, opts.NoiseKind)
	if err != nil {
		return nil, err
	}
	m, err := p.mechanism(fn, "count", p.epsilon, p.delta, p.kappa, float64(p.perPartition))
	if err != nil {
		return nil, err
	}
	return &Count{priv: p, mech: m}, nil
}

// Fresh returns a new, empty Count with the same options. It shares the
// immutable, concurrency-safe noise mechanism, so it is much cheaper than
// NewCount when one count per partition is needed. Each Count still spends
// its own budget when its result is taken.
func (c *Count) Fresh() *Count { return &Count{priv: c.priv, mech: c.mech} }

// Sensitivity returns the per-partition L∞ sensitivity,
// MaxContributionsPerPartition.
func (c *Count) Sensitivity() float64 { return float64(c.priv.perPartition) }

// Increment counts one contribution (a row, or a privacy unit).
func (c *Count) Increment() error { return c.IncrementBy(1) }

// IncrementBy adds the contribution of one privacy unit, n, clamped to
// [0, MaxContributionsPerPartition].
func (c *Count) IncrementBy(n int64) error {
	if err := c.st.check("Count.IncrementBy"); err != nil {
		return err
	}
	n = min(max(n, 0), c.priv.perPartition)
	c.count = satAddInt(c.count, n)
	return nil
}

// Merge adds a summary computed elsewhere (another Count's Summary, or the SQL
// backend's per-partition total).
func (c *Count) Merge(s CountSummary) error {
	if err := c.st.check("Count.Merge"); err != nil {
		return err
	}
	if s.Count < 0 {
		return fmt.Errorf("agg: Count.Merge: CountSummary.Count = %d must not be negative", s.Count)
	}
	c.count = satAddInt(c.count, s.Count)
	return nil
}

// Summary returns the exact state, for merging into another Count.
func (c *Count) Summary() (CountSummary, error) {
	if err := c.st.check("Count.Summary"); err != nil {
		return CountSummary{}, err
	}
	return CountSummary{Count: c.count}, nil
}

// Result returns the noisy count, clamped at 0. It can be taken once.
func (c *Count) Result() (int64, error) {
	v, _, _, err := c.result("Count.Result", 0)
	return v, err
}

// ResultWithCI returns the noisy count and an interval [lo, hi] that contains
// the exact count with probability at least level (both clamped at 0, as the
// count is). It takes the result, like Result.
func (c *Count) ResultWithCI(level float64) (v, lo, hi int64, err error) {
	if err := checkLevel("Count.ResultWithCI", level); err != nil {
		return 0, 0, 0, err
	}
	return c.result("Count.ResultWithCI", level)
}

func (c *Count) result(fn string, level float64) (v, lo, hi int64, err error) {
	if err := c.st.take(fn); err != nil {
		return 0, 0, 0, err
	}
	raw, err := c.mech.AddNoiseInt(c.count)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("agg: %s: %w", fn, err)
	}
	if level > 0 {
		lo, hi, err = c.mech.ConfidenceIntervalInt(raw, level)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("agg: %s: %w", fn, err)
		}
	}
	return max(raw, 0), max(lo, 0), max(hi, 0), nil
}

// satAddInt returns a + b for b >= 0, saturating at MaxInt64.
func satAddInt(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
