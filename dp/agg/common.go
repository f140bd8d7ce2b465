package agg

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpsql/dpsql/dp/noise"
)

// ErrResultTaken is returned (wrapped) by every method called on an
// accumulator whose result has already been taken: a result spends the
// privacy budget, so it can be taken once.
var ErrResultTaken = errors.New("agg: the result has already been taken; an accumulator releases one result (create a new accumulator, and spend new budget, for another)")

// ErrNotEnoughData is returned (wrapped) by ApproxBounds.Result when no bin of
// the noisy histogram passes the threshold, i.e. when there are too few values
// to estimate bounds. It is an answer, not a failure: the budget is spent.
var ErrNotEnoughData = errors.New("agg: not enough data to estimate bounds")

// OptionError reports an invalid option of an accumulator constructor.
type OptionError struct {
	Func   string // the constructor, e.g. "NewBoundedSum"
	Option string // the option's field name, e.g. "Epsilon"
	Value  any    // the offending value
	Reason string // why it is invalid and what is expected
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("agg: %s: %s = %v: %s", e.Func, e.Option, e.Value, e.Reason)
}

// privacy gathers the options shared by all noisy accumulators, validated.
type privacy struct {
	epsilon, delta float64
	kappa          int64 // MaxPartitionsContributed
	perPartition   int64 // MaxContributionsPerPartition (1 when not applicable)
	kind           noise.Kind
}

// checkPrivacy validates and defaults the shared options. perPartition < 0 is
// an error; 0 means the default 1.
func checkPrivacy(fn string, eps, delta float64, kappa, perPartition int64, kind noise.Kind) (privacy, error) {
	p := privacy{epsilon: eps, delta: delta, kappa: kappa, perPartition: perPartition, kind: kind}
	if p.kind == 0 {
		p.kind = noise.Laplace
	}
	if p.kind != noise.Laplace && p.kind != noise.Gaussian {
		return p, &OptionError{fn, "NoiseKind", kind, "must be noise.Laplace (the default) or noise.Gaussian"}
	}
	if math.IsNaN(eps) || math.IsInf(eps, 0) || eps <= 0 {
		return p, &OptionError{fn, "Epsilon", eps, "required: a positive finite number"}
	}
	switch p.kind {
	case noise.Laplace:
		if delta != 0 {
			return p, &OptionError{fn, "Delta", delta, "must be 0 with Laplace noise (pure epsilon-DP); use NoiseKind noise.Gaussian for (epsilon, delta)-DP"}
		}
	case noise.Gaussian:
		if math.IsNaN(delta) || delta <= 0 || delta >= 1 {
			return p, &OptionError{fn, "Delta", delta, "required with Gaussian noise: a number in (0, 1)"}
		}
	}
	if kappa < 1 {
		return p, &OptionError{fn, "MaxPartitionsContributed", kappa, "required: the number of partitions one privacy unit may contribute to (kappa), at least 1"}
	}
	if perPartition < 0 {
		return p, &OptionError{fn, "MaxContributionsPerPartition", perPartition, "must be at least 1 (0 means the default 1)"}
	}
	if p.perPartition == 0 {
		p.perPartition = 1
	}
	return p, nil
}

// checkBounds validates clamping bounds: finite, Lower < Upper, and
// Upper - Lower finite (so that the midpoint and the leaf index formula do
// not overflow).
func checkBounds(fn string, lower, upper float64) error {
	if math.IsNaN(lower) || math.IsInf(lower, 0) {
		return &OptionError{fn, "Lower", lower, "required: a finite number (the clamping lower bound)"}
	}
	if math.IsNaN(upper) || math.IsInf(upper, 0) {
		return &OptionError{fn, "Upper", upper, "required: a finite number (the clamping upper bound)"}
	}
	if !(lower < upper) {
		return &OptionError{fn, "Upper", upper, fmt.Sprintf("must be greater than Lower = %v", lower)}
	}
	if math.IsInf(upper-lower, 0) {
		return &OptionError{fn, "Upper", upper, fmt.Sprintf("Upper - Lower overflows float64 (Lower = %v); narrow the bounds", lower)}
	}
	return nil
}

// split returns the (epsilon, delta) of one of n equal parts of the budget.
// The last part takes what rounding left over, so that the parts sum to the
// whole exactly as the accounting charges it.
func (p privacy) split(n, i int) (eps, delta float64) {
	eps = p.epsilon / float64(n)
	delta = p.delta / float64(n)
	if i == n-1 {
		eps = p.epsilon - eps*float64(n-1)
		delta = p.delta - delta*float64(n-1)
	}
	return eps, delta
}

// mechanism builds the noise for one release with per-partition sensitivity
// lInf and the given L0, spending (eps, delta).
func (p privacy) mechanism(fn, what string, eps, delta float64, l0 int64, lInf float64) (noise.Mechanism, error) {
	m, err := noise.New(p.kind, noise.Params{Epsilon: eps, Delta: delta, L0: l0, LInf: lInf})
	if err != nil {
		return nil, fmt.Errorf("agg: %s: noise for the %s (epsilon=%v, delta=%v, L0=%d, LInf=%v): %w", fn, what, eps, delta, l0, lInf, err)
	}
	return m, nil
}

// state tracks whether the result has been taken.
type state struct{ taken bool }

func (s *state) check(fn string) error {
	if s.taken {
		return fmt.Errorf("%s: %w", fn, ErrResultTaken)
	}
	return nil
}

// take marks the result taken, failing if it already was.
func (s *state) take(fn string) error {
	if err := s.check(fn); err != nil {
		return err
	}
	s.taken = true
	return nil
}

func checkLevel(fn string, level float64) error {
	if math.IsNaN(level) || level <= 0 || level >= 1 {
		return fmt.Errorf("agg: %s: confidence level %v must be in (0, 1)", fn, level)
	}
	return nil
}
