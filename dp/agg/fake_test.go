package agg

import (
	"math"

	"github.com/dpsql/dpsql/dp/noise"
)

// zeroNoise is a test-only mechanism that adds no noise. It is reachable only
// from this package's internal tests, by overwriting an accumulator's
// unexported mechanism fields: production code has no way to build one.
// Its scale is 0, so intervals collapse to the exact value, except for
// ApproxBounds, whose threshold needs a positive scale (1).
type zeroNoise struct {
	noise.Mechanism
	scale float64
}

func (zeroNoise) AddNoiseFloat(x float64) (float64, error) { return x, nil }
func (zeroNoise) AddNoiseInt(x int64) (int64, error)       { return x, nil }
func (z zeroNoise) Scale() float64                         { return z.scale }
func (zeroNoise) IntScale() float64                        { return 0 }
func (zeroNoise) Kind() noise.Kind                         { return noise.Laplace }
func (zeroNoise) ConfidenceInterval(x, _ float64) (float64, float64, error) {
	return x, x, nil
}
func (zeroNoise) ConfidenceIntervalInt(x int64, _ float64) (int64, int64, error) {
	return x, x, nil
}

// noiseless strips the noise from an accumulator (tests only).
func noiseless[T any](acc T) T {
	z := zeroNoise{}
	switch a := any(acc).(type) {
	case *Count:
		a.mech = z
	case *BoundedSum:
		a.mech = z
	case *BoundedSumInt:
		a.mech = z
	case *BoundedMean:
		a.countMech, a.sumMech = z, z
	case *BoundedVariance:
		a.countMech, a.sumMech, a.sqMch = z, z, z
	case *BoundedStdDev:
		a.countMech, a.sumMech, a.sqMch = z, z, z
	case *Quantiles:
		a.mech = z
	case *ApproxBounds:
		a.mech = zeroNoise{scale: 1}
	default:
		panic("noiseless: unknown accumulator")
	}
	return acc
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }
