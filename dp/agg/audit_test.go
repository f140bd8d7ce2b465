package agg

import (
	"errors"
	"math"
	"testing"
)

// Empirical privacy audits: each aggregation runs many times on an input D
// and on two neighbours, D plus one privacy unit whose value sits at the
// clamping bound (the worst case the sensitivity allows) and D plus one unit
// whose value is far outside the bounds (which clamping must reduce to the
// same thing). The outputs are discretised into bins, and for every bin with
// at least auditMinCount samples on both sides the privacy loss
// |ln(P_D(bin) / P_D'(bin))| gets a lower confidence bound at auditZ standard
// deviations of each count. With Laplace noise (pure epsilon-DP, so no delta
// allowance is needed) no such bound may exceed epsilon. A bound above
// epsilon happens by chance with probability about 3e-7 per bin and
// direction, under 1e-4 per audit (at most a few hundred bins).
// TestAuditDetectsBrokenNoise shows the audit rejects noise calibrated for
// twice the epsilon it claims.
const (
	auditSamples  = 100000
	auditMinCount = 500
	auditZ        = 5.0
)

var auditEps = math.Log(3)

// lossBound returns the largest lower confidence bound on the privacy loss
// between the two samples' distributions over bins, the largest point
// estimate, and the number of bins compared.
func lossBound(a, b map[float64]int) (bound, point float64, bins int) {
	one := func(ca, cb int) (float64, float64) {
		fa, fb := float64(ca), float64(cb)
		lo := math.Log((fa - auditZ*math.Sqrt(fa)) / (fb + auditZ*math.Sqrt(fb)))
		return lo, math.Log(fa / fb)
	}
	for k, ca := range a {
		cb := b[k]
		if ca < auditMinCount || cb < auditMinCount {
			continue
		}
		bins++
		l1, p1 := one(ca, cb)
		l2, p2 := one(cb, ca)
		bound = math.Max(bound, math.Max(l1, l2))
		point = math.Max(point, math.Max(p1, p2))
	}
	return bound, point, bins
}

// sampleKeys draws n discretised outputs.
func sampleKeys(t *testing.T, n int, sample func() (float64, error)) map[float64]int {
	t.Helper()
	h := map[float64]int{}
	for i := 0; i < n; i++ {
		x, err := sample()
		if err != nil {
			t.Fatal(err)
		}
		h[x]++
	}
	return h
}

// audit compares D with each neighbour; build returns a sampler for a list
// of values. minPoint > 0 also requires the largest point estimate of the
// loss to reach minPoint*epsilon against the neighbour at the bound (the
// neighbours are worst cases, so the audit must see most of the loss).
func audit(t *testing.T, n int, eps float64, d []float64, atBound, outside float64, minPoint float64, build func([]float64) func() (float64, error)) {
	t.Helper()
	base := sampleKeys(t, n, build(d))
	for _, nb := range []struct {
		name string
		v    float64
	}{{"at the bound", atBound}, {"far outside", outside}} {
		other := sampleKeys(t, n, build(append(append([]float64(nil), d...), nb.v)))
		bound, point, bins := lossBound(base, other)
		t.Logf("neighbour %s (%v): %d bins, max loss estimate %.3f, max lower bound %.3f, epsilon %.3f", nb.name, nb.v, bins, point, bound, eps)
		if bins == 0 {
			t.Fatalf("neighbour %s: no bin has %d samples on both sides; the audit is vacuous", nb.name, auditMinCount)
		}
		if bound > eps {
			t.Errorf("neighbour %s: privacy loss lower bound %.3f exceeds epsilon %.3f", nb.name, bound, eps)
		}
		if minPoint > 0 && nb.name == "at the bound" && point < minPoint*eps {
			t.Errorf("neighbour %s: the largest loss estimate %.3f is below %.2f*epsilon: the audit does not see the worst case", nb.name, point, minPoint)
		}
	}
}

func grid(x, w float64) float64 { return math.Round(x / w) }

func TestAuditCount(t *testing.T) {
	c, err := NewCount(CountOptions{Epsilon: auditEps, MaxPartitionsContributed: 1})
	if err != nil {
		t.Fatal(err)
	}
	audit(t, auditSamples, auditEps, make([]float64, 10), 1, 1e9, 0.9, func(units []float64) func() (float64, error) {
		return func() (float64, error) {
			a := c.Fresh()
			for _, u := range units {
				// u is the unit's row count; IncrementBy clamps it to 1.
				if err := a.IncrementBy(int64(math.Max(u, 1))); err != nil {
					return 0, err
				}
			}
			v, err := a.Result()
			return float64(v), err
		}
	})
}

func TestAuditBoundedSum(t *testing.T) {
	s, err := NewBoundedSum(SumOptions{Epsilon: auditEps, MaxPartitionsContributed: 1, Lower: -2, Upper: 10})
	if err != nil {
		t.Fatal(err)
	}
	w := 10 / auditEps / 4 // a quarter of the Laplace scale
	audit(t, auditSamples, auditEps, []float64{1, 5, -2, 7}, 10, 1e9, 0.9, func(vals []float64) func() (float64, error) {
		return func() (float64, error) {
			a := s.Fresh()
			for _, v := range vals {
				if err := a.Add(v); err != nil {
					return 0, err
				}
			}
			v, err := a.Result()
			return grid(v, w), err
		}
	})
}

func TestAuditBoundedSumInt(t *testing.T) {
	s, err := NewBoundedSumInt(IntSumOptions{Epsilon: auditEps, MaxPartitionsContributed: 2, Lower: -20, Upper: 5})
	if err != nil {
		t.Fatal(err)
	}
	w := 40 / auditEps / 4
	audit(t, auditSamples, auditEps, []float64{1, 5, -2, 7}, -20, -1e15, 0, func(vals []float64) func() (float64, error) {
		return func() (float64, error) {
			a := s.Fresh()
			for _, v := range vals {
				if err := a.Add(int64(v)); err != nil {
					return 0, err
				}
			}
			v, err := a.Result()
			return grid(float64(v), w), err
		}
	})
}

func TestAuditBoundedMean(t *testing.T) {
	m, err := NewBoundedMean(MeanOptions{Epsilon: auditEps, MaxPartitionsContributed: 1, Lower: 0, Upper: 10})
	if err != nil {
		t.Fatal(err)
	}
	d := []float64{1, 2, 2, 3, 4, 4, 5, 6, 9, 0}
	audit(t, auditSamples, auditEps, d, 10, 1e9, 0, func(vals []float64) func() (float64, error) {
		return func() (float64, error) {
			a := m.Fresh()
			for _, v := range vals {
				if err := a.Add(v); err != nil {
					return 0, err
				}
			}
			v, err := a.Result()
			return grid(v, 0.5), err
		}
	})
}

func TestAuditBoundedVariance(t *testing.T) {
	v, err := NewBoundedVariance(VarianceOptions{Epsilon: auditEps, MaxPartitionsContributed: 1, Lower: 0, Upper: 4})
	if err != nil {
		t.Fatal(err)
	}
	d := []float64{1, 2, 2, 3, 0.5, 4, 1.5, 3.5, 2.5, 0}
	audit(t, auditSamples, auditEps, d, 4, -1e9, 0, func(vals []float64) func() (float64, error) {
		return func() (float64, error) {
			a := v.Fresh()
			for _, x := range vals {
				if err := a.Add(x); err != nil {
					return 0, err
				}
			}
			r, err := a.Result()
			return grid(r, 0.25), err
		}
	})
}

func TestAuditQuantiles(t *testing.T) {
	q, err := NewQuantiles(QuantilesOptions{Epsilon: auditEps, MaxPartitionsContributed: 1, Lower: 0, Upper: 1, TreeHeight: 3, BranchingFactor: 4})
	if err != nil {
		t.Fatal(err)
	}
	d := make([]float64, 20)
	for i := range d {
		d[i] = float64(i) / 20
	}
	n := auditSamples / 2
	if testing.Short() {
		n /= 2
	}
	for _, rank := range []float64{0.1, 0.5, 0.9} {
		t.Run("rank", func(t *testing.T) {
			audit(t, n, auditEps, d, 1, 1e9, 0, func(vals []float64) func() (float64, error) {
				return func() (float64, error) {
					a := q.Fresh()
					for _, v := range vals {
						if err := a.Add(v); err != nil {
							return 0, err
						}
					}
					r, err := a.Result(rank)
					if err != nil {
						return 0, err
					}
					return bucketize(r[0], 0, 1, 16), nil
				}
			})
		})
	}
}

func TestAuditApproxBounds(t *testing.T) {
	b, err := NewApproxBounds(BoundsOptions{Epsilon: auditEps, MaxContributions: 1, Scale: 1, NumBins: 6})
	if err != nil {
		t.Fatal(err)
	}
	// 14 values in the top bin (16, 32] sit near the threshold (about 14.9
	// here), so one more unit there changes how often U = 32 is found.
	var d []float64
	for i := 0; i < 16; i++ {
		d = append(d, 3, -9)
	}
	for i := 0; i < 14; i++ {
		d = append(d, 20)
	}
	audit(t, auditSamples, auditEps, d, 32, math.Inf(1), 0.5, func(vals []float64) func() (float64, error) {
		return func() (float64, error) {
			a := b.Fresh()
			for _, v := range vals {
				if err := a.Add(v); err != nil {
					return 0, err
				}
			}
			lo, hi, err := a.Result()
			if errors.Is(err, ErrNotEnoughData) {
				return math.Inf(1), nil
			}
			return lo*4096 + hi, err
		}
	})
}

// TestAuditDetectsBrokenNoise runs the audit on a sum whose noise is
// calibrated for twice the epsilon the audit checks: the audit must reject
// it, or it could not catch a mechanism that underestimates its sensitivity
// by a factor of 2.
func TestAuditDetectsBrokenNoise(t *testing.T) {
	s, err := NewBoundedSum(SumOptions{Epsilon: 2 * auditEps, MaxPartitionsContributed: 1, Lower: 0, Upper: 10})
	if err != nil {
		t.Fatal(err)
	}
	w := 10 / (2 * auditEps) / 4
	sampler := func(vals []float64) func() (float64, error) {
		return func() (float64, error) {
			a := s.Fresh()
			for _, v := range vals {
				if err := a.Add(v); err != nil {
					return 0, err
				}
			}
			v, err := a.Result()
			return grid(v, w), err
		}
	}
	base := sampleKeys(t, auditSamples, sampler([]float64{5}))
	other := sampleKeys(t, auditSamples, sampler([]float64{5, 1e9}))
	bound, point, bins := lossBound(base, other)
	t.Logf("noise for epsilon %.3f audited at %.3f: %d bins, max estimate %.3f, max lower bound %.3f", 2*auditEps, auditEps, bins, point, bound)
	if bound <= auditEps {
		t.Errorf("the audit accepted noise for twice its epsilon (lower bound %.3f <= %.3f)", bound, auditEps)
	}
}
