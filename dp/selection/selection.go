package selection

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/dpsql/dpsql/dp/internal/securerand"
)

// Strategy decides, partition by partition, whether a partition may be
// released. Implementations are safe for concurrent use.
type Strategy interface {
	// Keep decides for one partition with n distinct privacy units (the
	// exact count, n >= 0).
	Keep(n int64) (bool, error)
	// ProbabilityOfKeep returns the probability that Keep(n) is true.
	ProbabilityOfKeep(n int64) float64
	// UnitsForProbability returns the smallest n with ProbabilityOfKeep(n)
	// >= p, or math.MaxInt64 if no count reaches p.
	UnitsForProbability(p float64) int64
	// Cost returns the privacy budget the selection spends.
	Cost() (epsilon, delta float64)
	// Name returns "laplace-threshold", "gaussian-threshold",
	// "truncated-geometric" or "public".
	Name() string
	// Describe returns a one-line explanation for EXPLAIN.
	Describe() string
}

// Params are the privacy parameters of a selection rule.
type Params struct {
	// Epsilon is the selection's share of the budget. Required: positive
	// and finite.
	Epsilon float64
	// Delta bounds the probability that any partition of one privacy unit is
	// released because of that unit alone. Required: in (0, 1).
	Delta float64
	// L0 is the number of partitions a unit contributes to (kappa,
	// max_groups_contributed). Required: at least 1.
	L0 int64
}

// ErrInvalidParams is wrapped by every parameter error of this package.
var ErrInvalidParams = errors.New("invalid selection parameters")

func paramErr(format string, args ...any) error {
	return fmt.Errorf("selection: %w: "+format, append([]any{ErrInvalidParams}, args...)...)
}

func checkEpsilon(eps float64) error {
	if math.IsNaN(eps) || math.IsInf(eps, 0) || eps <= 0 {
		return paramErr("epsilon is %v; it must be a positive finite number", eps)
	}
	return nil
}

func checkL0(l0 int64) error {
	if l0 < 1 {
		return paramErr("L0 (kappa, partitions per privacy unit) is %d; it must be at least 1", l0)
	}
	return nil
}

// Validate checks the parameters.
func (p Params) Validate() error {
	if err := checkEpsilon(p.Epsilon); err != nil {
		return err
	}
	if math.IsNaN(p.Delta) || p.Delta <= 0 || p.Delta >= 1 {
		return paramErr("delta is %v; partition selection needs delta in (0, 1)", p.Delta)
	}
	return checkL0(p.L0)
}

// perPartitionDelta returns 1 - (1-delta)^(1/kappa), the largest probability
// with which each of a lone unit's kappa partitions may be kept, computed
// without cancellation as -expm1(log1p(-delta)/kappa).
func perPartitionDelta(delta float64, kappa int64) float64 {
	return -math.Expm1(math.Log1p(-delta) / float64(kappa))
}

// checkCount refuses negative counts.
func checkCount(n int64) error {
	if n < 0 {
		return fmt.Errorf("selection: the unit count is %d; it cannot be negative", n)
	}
	return nil
}

// smallestUnits returns the smallest n in [0, MaxInt64) with prob(n) >= p
// for a non-decreasing prob, or math.MaxInt64 if none.
func smallestUnits(prob func(int64) float64, p float64) int64 {
	if prob(0) >= p {
		return 0
	}
	hi := int64(1)
	for prob(hi) < p {
		if hi > math.MaxInt64/2 {
			return math.MaxInt64
		}
		hi *= 2
	}
	lo := hi / 2 // prob(lo) < p <= prob(hi)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if prob(mid) >= p {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// locked is a random source guarded by a mutex.
type locked struct {
	mu  sync.Mutex
	src *securerand.Source
}

func (l *locked) do(f func(*securerand.Source)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(l.src)
}

// describeUnits is the shared tail of Describe: the counts kept with
// probability 0.5 and 0.99.
func describeUnits(s Strategy) string {
	return fmt.Sprintf("kept with probability 0.5 at %s units, 0.99 at %s units",
		units(s.UnitsForProbability(0.5)), units(s.UnitsForProbability(0.99)))
}

func units(n int64) string {
	if n == math.MaxInt64 {
		return "no count of"
	}
	return fmt.Sprint(n)
}

// public keeps every partition it is given.
type public struct{}

// Public returns the strategy for public partitions: the data owner declared
// the keys public, so every declared key is released (each with its own
// noise, even when empty) and selection spends no budget. Keys outside the
// declared list must be dropped by the caller before selection.
func Public() Strategy { return public{} }

func (public) Keep(n int64) (bool, error) {
	if err := checkCount(n); err != nil {
		return false, err
	}
	return true, nil
}
func (public) ProbabilityOfKeep(int64) float64   { return 1 }
func (public) UnitsForProbability(float64) int64 { return 0 }
func (public) Cost() (epsilon, delta float64)    { return 0, 0 }
func (public) Name() string                      { return "public" }
func (public) Describe() string {
	return "public partitions: every declared key is released; no budget spent"
}

// keepAll keeps every partition it is given.
type keepAll struct{ eps, delta float64 }

// KeepAll returns the rule for delta = 1 (ZetaSQL accepts delta in [0, 1]): with delta = 1
// nothing protects the existence of a partition, so every partition is released, including
// an empty one (a query without GROUP BY over no rows). The caller charges (eps, 1).
func KeepAll(eps, delta float64) Strategy { return keepAll{eps, delta} }

func (k keepAll) Keep(n int64) (bool, error) {
	if err := checkCount(n); err != nil {
		return false, err
	}
	return true, nil
}
func (keepAll) ProbabilityOfKeep(int64) float64   { return 1 }
func (keepAll) UnitsForProbability(float64) int64 { return 0 }
func (k keepAll) Cost() (epsilon, delta float64)  { return k.eps, k.delta }
func (keepAll) Name() string                      { return "keep-all" }
func (k keepAll) Describe() string {
	return fmt.Sprintf("delta=%g: every group is released (nothing protects a group's existence)", k.delta)
}
