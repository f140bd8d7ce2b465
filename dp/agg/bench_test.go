package agg

import (
	"math"
	"math/big"
	"testing"

	"github.com/dpsql/dpsql/dp/noise"
)

func benchOpts() SumOptions {
	return SumOptions{Epsilon: math.Log(3), MaxPartitionsContributed: 1, Lower: -50, Upper: 50}
}

// BenchmarkAdd measures one accumulator update (ns/op); the per-million
// figure is ns/op * 1e6.
func BenchmarkAdd(b *testing.B) {
	s, _ := NewBoundedSum(benchOpts())
	m, _ := NewBoundedMean(MeanOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: -50, Upper: 50})
	v, _ := NewBoundedVariance(VarianceOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: -50, Upper: 50})
	q, _ := NewQuantiles(QuantilesOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: -50, Upper: 50})
	ab, _ := NewApproxBounds(BoundsOptions{Epsilon: 1, MaxContributions: 1})
	c, _ := NewCount(CountOptions{Epsilon: 1, MaxPartitionsContributed: 1})
	vals := make([]float64, 1024)
	for i := range vals {
		vals[i] = math.Sin(float64(i)) * 60
	}
	for _, bc := range []struct {
		name string
		add  func(float64) error
	}{
		{"Count", func(float64) error { return c.Increment() }},
		{"BoundedSum", s.Add},
		{"BoundedMean", m.Add},
		{"BoundedVariance", v.Add},
		{"Quantiles", q.Add},
		{"ApproxBounds", ab.Add},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				_ = bc.add(vals[i&1023])
			}
		})
	}
}

// BenchmarkMerge measures merging one partition's summary (as the SQL
// backend returns it) into an accumulator.
func BenchmarkMerge(b *testing.B) {
	s, _ := NewBoundedSum(benchOpts())
	units := new(big.Int).Lsh(big.NewInt(1), 70)
	b.Run("BoundedSum", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_ = s.Merge(SumSummary{Count: 1 << 40, Units: units})
		}
	})
	v, _ := NewBoundedVariance(VarianceOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: -50, Upper: 50})
	b.Run("BoundedVariance", func(b *testing.B) {
		sq := new(big.Int).Lsh(big.NewInt(1), 80)
		for i := 0; i < b.N; i++ {
			_ = v.Merge(VarianceSummary{Count: 1 << 40, Units: units, SquareUnits: sq})
		}
	})
	q, _ := NewQuantiles(QuantilesOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: -50, Upper: 50})
	leaves := map[int]int64{}
	for i := 0; i < 1000; i++ {
		leaves[i*61] = int64(i)
	}
	b.Run("Quantiles1000Leaves", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_ = q.Merge(QuantileSummary{LeafCounts: leaves})
		}
	})
}

// BenchmarkResult measures creating an accumulator with Fresh, adding one
// value and taking the noisy result: the cost of one sample in the
// statistical tests, and of one released partition.
func BenchmarkResult(b *testing.B) {
	for _, kind := range []noise.Kind{noise.Laplace, noise.Gaussian} {
		delta := benchDelta(kind)
		s, _ := NewBoundedSum(SumOptions{Epsilon: 1, Delta: delta, MaxPartitionsContributed: 1, Lower: 0, Upper: 1, NoiseKind: kind})
		b.Run("BoundedSum/"+kind.String(), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				a := s.Fresh()
				_ = a.Add(0.5)
				_, _ = a.Result()
			}
		})
		m, _ := NewBoundedMean(MeanOptions{Epsilon: 1, Delta: delta, MaxPartitionsContributed: 1, Lower: 0, Upper: 1, NoiseKind: kind})
		b.Run("BoundedMean/"+kind.String(), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				a := m.Fresh()
				_ = a.Add(0.5)
				_, _ = a.Result()
			}
		})
		v, _ := NewBoundedStdDev(VarianceOptions{Epsilon: 1, Delta: delta, MaxPartitionsContributed: 1, Lower: 0, Upper: 1, NoiseKind: kind})
		b.Run("BoundedStdDev/"+kind.String(), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				a := v.Fresh()
				_ = a.Add(0.5)
				_, _ = a.Result()
			}
		})
		q, _ := NewQuantiles(QuantilesOptions{Epsilon: 1, Delta: delta, MaxPartitionsContributed: 1, Lower: 0, Upper: 1, TreeHeight: 2, BranchingFactor: 5, NoiseKind: kind})
		ranks := []float64{0.0, 0.01, 0.05, 0.45, 0.49, 0.5, 0.51, 0.55, 0.95, 0.99, 1.0}
		b.Run("Quantiles11Ranks/"+kind.String(), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				a := q.Fresh()
				_ = a.Add(0.5)
				_, _ = a.Result(ranks...)
			}
		})
	}
	ab, _ := NewApproxBounds(BoundsOptions{Epsilon: 1, MaxContributions: 1, Scale: 1, NumBins: 5})
	b.Run("ApproxBounds5Bins", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			a := ab.Fresh()
			_ = a.Add(9)
			_, _, _ = a.Result()
		}
	})
	b.Run("NewBoundedSum/gaussian", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_, _ = NewBoundedSum(SumOptions{Epsilon: 1, Delta: 1e-5, MaxPartitionsContributed: 1, Lower: 0, Upper: 1, NoiseKind: noise.Gaussian})
		}
	})
}

// benchDelta is the delta the benchmarks use with a noise kind: 1e-5 for
// Gaussian noise, 0 for Laplace.
func benchDelta(kind noise.Kind) float64 {
	if kind == noise.Gaussian {
		return 1e-5
	}
	return 0
}

// BenchmarkQuantileInterval measures ResultWithCI for the median of 2000
// values (uniform on [10, 90], default tree on [0, 100]): the search and
// the rank test's two descents.
func BenchmarkQuantileInterval(b *testing.B) {
	for _, kind := range []noise.Kind{noise.Laplace, noise.Gaussian} {
		delta := benchDelta(kind)
		q, _ := NewQuantiles(QuantilesOptions{Epsilon: 1, Delta: delta, MaxPartitionsContributed: 1, Lower: 0, Upper: 100, NoiseKind: kind})
		s, _ := quantileCase(q, uniformData(2000, 10, 90), []float64{0.5})
		b.Run("Median/"+kind.String(), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				a := q.Fresh()
				_ = a.Merge(s)
				_, _, _, _ = a.ResultWithCI(0.9, 0.5)
			}
		})
	}
}

// BenchmarkMillionAdds measures one million updates per op (ms/op is the
// cost per million values), for the sum and the quantile tree.
func BenchmarkMillionAdds(b *testing.B) {
	vals := make([]float64, 1<<20)
	for i := range vals {
		vals[i] = math.Sin(float64(i)) * 60
	}
	s, _ := NewBoundedSum(benchOpts())
	q, _ := NewQuantiles(QuantilesOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: -50, Upper: 50})
	b.Run("BoundedSum", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			a := s.Fresh()
			for _, v := range vals[:1000000] {
				_ = a.Add(v)
			}
		}
	})
	b.Run("Quantiles", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			a := q.Fresh()
			for _, v := range vals[:1000000] {
				_ = a.Add(v)
			}
		}
	})
}
