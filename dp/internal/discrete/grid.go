package discrete

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
)

// gridBits is how much finer than the noise scale the grid is: the grid is
// the largest power of two at most scale/2^40, as in Google's secure noise
// generation. Rounding the input to it changes the result by at most 2^-41
// of the scale, and the sampled scale in grid units is about 2^40.
const gridBits = 40

// minGridExp keeps the grid a normal float64, so that every multiple of it
// that a float64 can hold is exact.
const minGridExp = -1022

// Grid is the lattice of multiples of 2^Exp on which noise is added.
type Grid struct {
	Exp int
}

// ErrUnrepresentable reports a noise scale that no float64 grid can carry.
var ErrUnrepresentable = errors.New("noise scale cannot be represented")

// GridFor returns the grid for a noise of the given scale (Laplace b or
// Gaussian sigma): 2^(floor(log2 scale) - 40).
func GridFor(scale float64) (Grid, error) {
	if math.IsNaN(scale) || math.IsInf(scale, 0) || scale <= 0 {
		return Grid{}, fmt.Errorf("%w: scale %v is not a positive finite number", ErrUnrepresentable, scale)
	}
	_, e := math.Frexp(scale) // scale in [2^(e-1), 2^e)
	exp := e - 1 - gridBits
	if exp < minGridExp {
		return Grid{}, fmt.Errorf("%w: scale %v is below 2^-982, the smallest a float64 grid supports", ErrUnrepresentable, scale)
	}
	return Grid{Exp: exp}, nil
}

// Size returns 2^Exp.
func (g Grid) Size() float64 { return math.Ldexp(1, g.Exp) }

// Steps returns ceil(v / 2^Exp) for v >= 0: how many grid steps a change of
// size v can move a value after rounding (the result is exact as a float64,
// and may exceed 2^53).
func (g Grid) Steps(v float64) float64 { return math.Ceil(math.Ldexp(v, -g.Exp)) }

// Round returns round(x / 2^Exp), rounding halves up (floor(v + 1/2)), which
// is monotone and commutes with integer shifts, so two values at distance d
// round to points at most ceil(d / 2^Exp) steps apart. The result is an
// int64 when it fits in 62 bits, and otherwise a *big.Int (big != nil).
func (g Grid) Round(x float64) (n int64, bn *big.Int) {
	if x == 0 {
		return 0, nil
	}
	frac, e := math.Frexp(x)
	mant := int64(math.Ldexp(frac, 53)) // exact; |mant| in [2^52, 2^53)
	shift := e - 53 - g.Exp             // x / 2^Exp = mant * 2^shift
	switch {
	case shift >= 0 && shift <= 9:
		return mant << uint(shift), nil
	case shift > 9:
		b := big.NewInt(mant)
		return 0, b.Lsh(b, uint(shift))
	case shift < -54:
		// |x / 2^Exp| < 2^53 / 2^55 = 1/4: rounds to 0.
		return 0, nil
	default:
		k := uint(-shift)
		return (mant + 1<<(k-1)) >> k, nil // arithmetic shift = floor
	}
}

// ErrOverflow reports a noisy result beyond the range of float64 or int64.
var ErrOverflow = errors.New("noisy value overflows")

// Float returns (n + y) * 2^Exp as a float64, where n is given as an int64
// (big == nil) or as a *big.Int. The exact sum is rounded to the nearest
// float64 once; since that rounding depends only on the exact noisy value, it
// is post-processing and keeps the privacy guarantee.
func (g Grid) Float(n int64, bn *big.Int, y int64) (float64, error) {
	if bn == nil {
		s, overflow := addInt64(n, y)
		if !overflow {
			v := math.Ldexp(float64(s), g.Exp)
			if math.IsInf(v, 0) {
				return 0, fmt.Errorf("%w float64", ErrOverflow)
			}
			return v, nil
		}
		bn = big.NewInt(n)
	}
	sum := new(big.Int).Add(bn, big.NewInt(y))
	f := new(big.Float).SetInt(sum) // exact: precision = bit length
	f.SetMantExp(f, g.Exp)
	v, _ := f.Float64() // nearest, ties to even
	if math.IsInf(v, 0) {
		return 0, fmt.Errorf("%w float64", ErrOverflow)
	}
	return v, nil
}

// RoundInt returns round(x / 2^Exp) for a grid with Exp >= 0, rounding
// halves up like Round.
func (g Grid) RoundInt(x int64) int64 {
	if g.Exp <= 0 {
		return x
	}
	if g.Exp >= 64 {
		return 0
	}
	k := uint(g.Exp)
	q := x >> k // floor
	if (x>>(k-1))&1 == 1 {
		q++
	}
	return q
}

// Int returns (n + y) * 2^Exp for a grid with Exp >= 0, saturating at the
// int64 range; saturation depends only on the exact noisy value, so it is
// post-processing.
func (g Grid) Int(n, y int64) int64 {
	s, overflow := addInt64(n, y)
	if overflow {
		if y > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	if g.Exp <= 0 || s == 0 {
		return s
	}
	k := uint(g.Exp)
	if k >= 63 || bits.Len64(absU(s)) > 63-int(k) {
		if s > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return s << k
}

func absU(x int64) uint64 {
	if x < 0 {
		return uint64(-x)
	}
	return uint64(x)
}

func addInt64(a, b int64) (int64, bool) {
	s := a + b
	overflow := (a > 0 && b > 0 && s < 0) || (a < 0 && b < 0 && s >= 0)
	return s, overflow
}
