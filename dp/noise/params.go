package noise

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Kind names a noise distribution.
type Kind int

// The noise kinds. The zero Kind is invalid, so that a forgotten field is an
// error rather than a silent choice.
const (
	Laplace Kind = iota + 1
	Gaussian
)

// String returns "laplace" or "gaussian".
func (k Kind) String() string {
	switch k {
	case Laplace:
		return "laplace"
	case Gaussian:
		return "gaussian"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// ParseKind parses "laplace" or "gaussian" (any case, surrounding spaces
// ignored).
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "laplace":
		return Laplace, nil
	case "gaussian":
		return Gaussian, nil
	}
	return 0, fmt.Errorf("noise: unknown noise kind %q: want \"laplace\" or \"gaussian\"", s)
}

// Params are the privacy parameters and sensitivities of one noisy release.
type Params struct {
	// Epsilon is the privacy loss bound. Required: positive and finite.
	Epsilon float64
	// Delta is the Gaussian mechanism's delta, in (0, 1). It must be 0 for
	// Laplace noise, which is pure epsilon-DP.
	Delta float64
	// L0 is the number of partitions a privacy unit may contribute to
	// (kappa, max_groups_contributed). Required: at least 1.
	L0 int64
	// LInf is the most one privacy unit can change the value in one
	// partition. Required: positive and finite.
	LInf float64
}

// ErrInvalidParams is wrapped by every parameter error of this package.
var ErrInvalidParams = errors.New("invalid noise parameters")

func paramErr(format string, args ...any) error {
	return fmt.Errorf("noise: %w: "+format, append([]any{ErrInvalidParams}, args...)...)
}

// positiveFinite checks that a named value is a positive finite number.
func positiveFinite(name string, v float64) error {
	switch {
	case math.IsNaN(v):
		return paramErr("%s is NaN; it must be a positive finite number", name)
	case math.IsInf(v, 0):
		return paramErr("%s is %v; it must be a positive finite number", name, v)
	case v <= 0:
		return paramErr("%s is %v; it must be greater than 0", name, v)
	}
	return nil
}

// Validate checks the parameters for the given kind.
func (p Params) Validate(kind Kind) error {
	if kind != Laplace && kind != Gaussian {
		return paramErr("kind is %v; it must be Laplace or Gaussian", kind)
	}
	if err := positiveFinite("epsilon", p.Epsilon); err != nil {
		return err
	}
	if p.L0 < 1 {
		return paramErr("L0 (partitions per privacy unit) is %d; it must be at least 1", p.L0)
	}
	if err := positiveFinite("LInf (per-partition sensitivity)", p.LInf); err != nil {
		return err
	}
	switch kind {
	case Laplace:
		if p.Delta != 0 {
			return paramErr("delta is %v; Laplace noise is pure epsilon-DP and takes delta = 0", p.Delta)
		}
	case Gaussian:
		if math.IsNaN(p.Delta) || p.Delta <= 0 || p.Delta >= 1 {
			return paramErr("delta is %v; Gaussian noise needs delta in (0, 1)", p.Delta)
		}
	}
	return nil
}

// L1 returns the L1 sensitivity L0 * LInf.
func (p Params) L1() float64 { return float64(p.L0) * p.LInf }

// L2 returns the L2 sensitivity sqrt(L0) * LInf.
func (p Params) L2() float64 { return math.Sqrt(float64(p.L0)) * p.LInf }
