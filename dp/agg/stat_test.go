package agg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/dpsql/dpsql/dp/noise"
)

// Accuracy and confidence-interval tests through the public API with real
// noise. Each has a fixed number of trials and a stated failure probability.

// uniformData returns n reproducible values uniform in [lo, hi].
func uniformData(n int, lo, hi float64) []float64 {
	r := rand.New(rand.NewPCG(11, 12))
	out := make([]float64, n)
	for i := range out {
		out[i] = lo + (hi-lo)*r.Float64()
	}
	return out
}

// countWithin runs trials and counts those whose estimate is within tol of
// want.
func countWithin(t *testing.T, trials int, want, tol float64, est func() (float64, error)) (ok int, worst float64) {
	t.Helper()
	for i := 0; i < trials; i++ {
		v, err := est()
		if err != nil {
			t.Fatal(err)
		}
		e := math.Abs(v - want)
		worst = math.Max(worst, e)
		if e <= tol {
			ok++
		}
	}
	return ok, worst
}

// requireRate fails unless at least 99% of the trials succeeded.
func requireRate(t *testing.T, what string, ok, trials int, worst float64) {
	t.Helper()
	t.Logf("%s: %d/%d trials within tolerance, largest error %.4g", what, ok, trials, worst)
	if float64(ok) < 0.99*float64(trials) {
		t.Errorf("%s: only %d of %d trials within tolerance", what, ok, trials)
	}
}

// TestMeanAccuracy: 10^4 values uniform in [0, 100], epsilon 1, Laplace. The
// normalised sum gets Laplace noise of scale 50/0.5 = 100 and the count of
// scale 1/0.5 = 2; each exceeds 7.6 scales (ln 2000) with probability
// 5e-4, so with probability at least 1 - 1e-3 the error is below
// (760 + |mean - 50| * 15.2) / (10^4 - 15.2) < 0.1. At least 297 of 300
// trials must be within 0.1; a correct mechanism fails that with
// probability P(Binomial(300, 1e-3) >= 4) < 3e-4.
func TestMeanAccuracy(t *testing.T) {
	data := uniformData(10000, 0, 100)
	for _, kind := range []noise.Kind{noise.Laplace, noise.Gaussian} {
		opts := MeanOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: 0, Upper: 100, NoiseKind: kind}
		tol := 0.1
		if kind == noise.Gaussian {
			// sigma(0.5, 5e-6) = 8.1 per unit of L2 sensitivity: 405 for the
			// sum, 8.1 for the count; 4.42 sigma (two-sided 1e-5) bounds the
			// error by (1790 + 50*36)/(10^4 - 36) < 0.37 (the mean of the
			// normalised data is near 0, so 0.2 is still conservative).
			opts.Delta = 1e-5
			tol = 0.2
		}
		m, err := NewBoundedMean(opts)
		if err != nil {
			t.Fatal(err)
		}
		base := m.Fresh()
		sum := 0.0
		for _, v := range data {
			_ = base.Add(v)
			sum += v
		}
		s, _ := base.Summary()
		want := sum / float64(len(data))
		ok, worst := countWithin(t, 300, want, tol, func() (float64, error) {
			a := m.Fresh()
			if err := a.Merge(s); err != nil {
				return 0, err
			}
			return a.Result()
		})
		requireRate(t, "mean/"+kind.String(), ok, 300, worst)
	}
}

// TestVarianceAccuracy: the same data, epsilon 1, Laplace, each part gets
// epsilon/3: scales 3 (count), 150 (normalised sum) and 3750 (centred squares,
// d²/2 = 1250). Each exceeds 8 scales with probability 3.4e-4, so with
// probability at least 1 - 1e-3 the variance error is below
// 30000/10^4 + 417*24/10^4 + (1200/10^4)^2 < 4.1; at least 297 of 300 trials
// must be within 5 (failure probability < 3e-4).
func TestVarianceAccuracy(t *testing.T) {
	data := uniformData(10000, 0, 100)
	v, err := NewBoundedVariance(VarianceOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: 0, Upper: 100})
	if err != nil {
		t.Fatal(err)
	}
	base := v.Fresh()
	sum, sq := 0.0, 0.0
	for _, x := range data {
		_ = base.Add(x)
		sum += x
		sq += x * x
	}
	n := float64(len(data))
	want := sq/n - (sum/n)*(sum/n)
	s, _ := base.Summary()
	ok, worst := countWithin(t, 300, want, 5, func() (float64, error) {
		a := v.Fresh()
		if err := a.Merge(s); err != nil {
			return 0, err
		}
		return a.Result()
	})
	requireRate(t, "variance", ok, 300, worst)
}

// TestQuantileAccuracy: the integers 0..1000 (once, or ten times each), the
// default tree (16^4 leaves over [0, 1000]), epsilon 1, Laplace (scale 4 per
// node: L0 = height 4). Quantiles at ranks 0.1, 0.5 (the median) and 0.9
// must be within the tolerance of the true ones in at least 99% of 300
// trials. Measured over 2000 trials per setting: with 1001 values the 99th
// percentile of the error was 22 to 34 and the largest 48 (tolerance 50);
// with 10010 values the 99th percentile was below 4 and the largest seen in
// later runs 5.9 (tolerance 8). Far below 1% of trials exceed the
// tolerance, so a correct mechanism misses the 99% rate with probability
// well under 1e-3.
func TestQuantileAccuracy(t *testing.T) {
	q, err := NewQuantiles(QuantilesOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: 0, Upper: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		copies int
		tol    float64
	}{{1, 50}, {10, 8}} {
		base := q.Fresh()
		for k := 0; k < c.copies; k++ {
			for i := 0; i <= 1000; i++ {
				_ = base.Add(float64(i))
			}
		}
		s, _ := base.Summary()
		ranks := []float64{0.1, 0.5, 0.9}
		const trials = 300
		ok := make([]int, len(ranks))
		worst := make([]float64, len(ranks))
		for i := 0; i < trials; i++ {
			a := q.Fresh()
			if err := a.Merge(s); err != nil {
				t.Fatal(err)
			}
			got, err := a.Result(ranks...)
			if err != nil {
				t.Fatal(err)
			}
			for j, r := range ranks {
				e := math.Abs(got[j] - 1000*r)
				worst[j] = math.Max(worst[j], e)
				if e <= c.tol {
					ok[j]++
				}
			}
		}
		for j, r := range ranks {
			requireRate(t, fmt.Sprintf("%d values, rank %v, tolerance %v", 1001*c.copies, r, c.tol), ok[j], trials, worst[j])
		}
	}
}

// TestQuantileLargeGroupAccuracy: in a large group a first-level child can
// hold a real share of the values that is still below Google's relative cut
// (0.5% of its siblings' total); the search must not drop it. 200 values in
// [0, 62) (all in the first child of [0, 1000], 0.4% of 50 000) and 49 800
// spread evenly over [100, 900]: the 10th percentile is 177.1; dropping the
// child (as the relative cut alone did) moves it to 180.0 in every trial.
// The noise (Laplace of scale 4 per node) moves it by about 0.25 (standard
// deviation; largest of 3000 trials 0.96), so at least 99% of 300 trials
// must be within 1.5 of the truth.
func TestQuantileLargeGroupAccuracy(t *testing.T) {
	q, err := NewQuantiles(QuantilesOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: 0, Upper: 1000})
	if err != nil {
		t.Fatal(err)
	}
	base := q.Fresh()
	for i := 0; i < 200; i++ {
		_ = base.Add(62 * float64(i) / 200)
	}
	const spread = 49800
	for i := 0; i < spread; i++ {
		_ = base.Add(100 + 800*(float64(i)+0.5)/spread)
	}
	s, _ := base.Summary()
	want := 100 + 800*(5000-200)/float64(spread)
	const trials = 300
	ok, worst := countWithin(t, trials, want, 1.5, func() (float64, error) {
		a := q.Fresh()
		if err := a.Merge(s); err != nil {
			return 0, err
		}
		got, err := a.Result(0.1)
		if err != nil {
			return 0, err
		}
		return got[0], nil
	})
	requireRate(t, "10th percentile of 50 000 values with a thin first child", ok, trials, worst)
}

// coverage returns the fraction of trials whose interval contains want.
func coverage(t *testing.T, trials int, want float64, ci func() (lo, hi float64, err error)) (float64, float64) {
	t.Helper()
	in := 0
	var widths []float64
	for i := 0; i < trials; i++ {
		lo, hi, err := ci()
		if err != nil {
			t.Fatal(err)
		}
		if lo <= want && want <= hi {
			in++
		}
		widths = append(widths, hi-lo)
	}
	sort.Float64s(widths)
	return float64(in) / float64(trials), widths[len(widths)/2]
}

// TestConfidenceIntervalCoverage: 8000 intervals at level 0.9 for each
// aggregation. The coverage must be at least 0.873; for the sum, whose
// interval comes straight from the noise distribution, and the mean,
// variance and standard deviation, whose intervals invert a pivot
// (pivot.go), also at most 0.927 (not needlessly wide). The count's integer
// interval moves in steps of several percent at this scale, so it is only
// bounded below. The bounds are 8 standard errors (sqrt(0.09/8000)) from
// the level, and at least 7 from every coverage measured over 20,000
// intervals (0.898 to 0.906): with 2000 intervals they were 4 standard
// errors, and the nine bounds together failed about one run in 2,500.
func TestConfidenceIntervalCoverage(t *testing.T) {
	const trials, level = 8000, 0.9
	lower, upper := level-0.027, level+0.027
	data := uniformData(1000, 0, 10)

	check := func(name string, cov, width float64, exact bool) {
		t.Helper()
		t.Logf("%s: coverage %.4f at level %.2f, median width %.4g", name, cov, level, width)
		if cov < lower || (exact && cov > upper) {
			t.Errorf("%s: coverage %.4f outside [%.3f, %.3f]", name, cov, lower, upper)
		}
	}

	s, _ := NewBoundedSum(SumOptions{Epsilon: 0.5, MaxPartitionsContributed: 2, Lower: 0, Upper: 10})
	sb := s.Fresh()
	exactSum := 0.0
	for _, v := range data {
		_ = sb.Add(v)
	}
	exactSum = sb.exact()
	ss, _ := sb.Summary()
	cov, w := coverage(t, trials, exactSum, func() (float64, float64, error) {
		a := s.Fresh()
		_ = a.Merge(ss)
		_, lo, hi, err := a.ResultWithCI(level)
		return lo, hi, err
	})
	check("sum", cov, w, true)

	c, _ := NewCount(CountOptions{Epsilon: 0.5, MaxPartitionsContributed: 1})
	cov, w = coverage(t, trials, 1000, func() (float64, float64, error) {
		a := c.Fresh()
		_ = a.Merge(CountSummary{Count: 1000})
		_, lo, hi, err := a.ResultWithCI(level)
		return float64(lo), float64(hi), err
	})
	check("count", cov, w, false)

	m, _ := NewBoundedMean(MeanOptions{Epsilon: 0.5, MaxPartitionsContributed: 1, Lower: 0, Upper: 10})
	mb := m.Fresh()
	for _, v := range data[:50] { // few values: the count's noise matters
		_ = mb.Add(v)
	}
	ms, _ := mb.Summary()
	exactMean := toFloat(ms.Units, mb.enc.exp) / float64(ms.Count)
	cov, w = coverage(t, trials, exactMean, func() (float64, float64, error) {
		a := m.Fresh()
		_ = a.Merge(ms)
		_, lo, hi, err := a.ResultWithCI(level)
		return lo, hi, err
	})
	check("mean", cov, w, true)

	for _, stddev := range []bool{false, true} {
		v, _ := NewBoundedVariance(VarianceOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: 0, Upper: 10})
		vb := v.Fresh()
		sum, sq := 0.0, 0.0
		for _, x := range data[:200] {
			_ = vb.Add(x)
			cx := vb.enc.clamp(x)
			u, _ := vb.Encode(cx)
			fx := float64(u) * vb.Unit()
			sum += fx
			sq += fx * fx
		}
		n := 200.0
		exactVar := sq/n - (sum/n)*(sum/n)
		vs, _ := vb.Summary()
		name, want := "variance", exactVar
		if stddev {
			name, want = "stddev", math.Sqrt(exactVar)
		}
		cov, w = coverage(t, trials, want, func() (float64, float64, error) {
			if stddev {
				a := &BoundedStdDev{v.Fresh()}
				_ = a.Merge(vs)
				_, lo, hi, err := a.ResultWithCI(level)
				return lo, hi, err
			}
			a := v.Fresh()
			_ = a.Merge(vs)
			_, lo, hi, err := a.ResultWithCI(level)
			return lo, hi, err
		})
		check(name, cov, w, true)
	}
}

// TestQuantileCICoverage: 4000 intervals at level 0.9 for ranks 0.1, 0.5
// and 0.9 of 2000 values, uniform on [10, 90] and normal(50, 10), drawn
// afresh every 100 intervals (a given data set's arrangement of values
// inside the tree's nodes moves its coverage by a percent or two either
// way; the level is the average). Each coverage of the exact quantile
// (linear interpolation at p(n-1)) must lie in [0.88, 0.93]: the lower end
// is 4.2 standard errors (0.0047 at 4000 intervals) below the level, the
// upper one 4.9 above the highest coverage these 40 data sets have, the
// normal median's 0.907 (measured over 40,000 intervals; 0.899-0.903 for
// the other five). A run in CI found 0.920 there, 2.8 standard errors above
// 0.907, which the upper end of 0.92 it had then refused. An interval that
// covers more than its level because it is wider shows in its mean width,
// which moves by well under a percent between runs: each must be at most
// 1.1 times the width measured over those 40,000 intervals (uniform 1.56,
// 1.84, 1.55; normal 1.37, 0.572, 1.39). The previous interval, which read
// heavy nodes' children one by one, covered the normal median 0.927 with a
// mean width of 0.73 and fails.
func TestQuantileCICoverage(t *testing.T) {
	const trials, perData, level = 4000, 100, 0.9
	q, err := NewQuantiles(QuantilesOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: 0, Upper: 100})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(13, 14))
	ranks := []float64{0.1, 0.5, 0.9}
	for _, c := range []struct {
		name  string
		draw  func() float64
		width []float64 // measured mean widths per rank, 40,000 intervals
	}{
		{"uniform", func() float64 { return 10 + 80*r.Float64() }, []float64{1.56, 1.84, 1.55}},
		{"normal", func() float64 { return 50 + 10*r.NormFloat64() }, []float64{1.37, 0.572, 1.39}},
	} {
		in := make([]int, len(ranks))
		width := make([]float64, len(ranks))
		var s QuantileSummary
		var want []float64
		for i := 0; i < trials; i++ {
			if i%perData == 0 {
				data := make([]float64, 2000)
				for j := range data {
					data[j] = c.draw()
				}
				s, want = quantileCase(q, data, ranks)
			}
			a := q.Fresh()
			_ = a.Merge(s)
			v, lo, hi, err := a.ResultWithCI(level, ranks...)
			if err != nil {
				t.Fatal(err)
			}
			for j := range ranks {
				if lo[j] > v[j] || v[j] > hi[j] {
					t.Fatalf("%s, rank %v: value %v outside its interval [%v, %v]", c.name, ranks[j], v[j], lo[j], hi[j])
				}
				if lo[j] <= want[j] && want[j] <= hi[j] {
					in[j]++
				}
				width[j] += hi[j] - lo[j]
			}
		}
		for j, p := range ranks {
			cov := float64(in[j]) / trials
			w := width[j] / trials
			t.Logf("%s, rank %v: coverage %.4f at level %.2f, mean width %.3g", c.name, p, cov, level, w)
			if cov < level-0.02 || cov > level+0.03 {
				t.Errorf("%s, rank %v: coverage %.4f, want in [%.2f, %.2f]", c.name, p, cov, level-0.02, level+0.03)
			}
			if w > 1.1*c.width[j] {
				t.Errorf("%s, rank %v: mean width %.3g, want at most 1.1 times the measured %.3g", c.name, p, w, c.width[j])
			}
		}
	}
}

// quantileCase returns the summary of data for q's options and the exact
// quantiles of data at ranks (linear interpolation at p(n-1)).
func quantileCase(q *Quantiles, data, ranks []float64) (QuantileSummary, []float64) {
	base := q.Fresh()
	for _, v := range data {
		_ = base.Add(v)
	}
	s, _ := base.Summary()
	sorted := append([]float64(nil), data...)
	sort.Float64s(sorted)
	want := make([]float64, len(ranks))
	for j, p := range ranks {
		pos := p * float64(len(sorted)-1)
		k := int(pos)
		want[j] = sorted[k] + (pos-float64(k))*(sorted[min(k+1, len(sorted)-1)]-sorted[k])
	}
	return s, want
}

// TestQuantileCICoverageShapes: the quantile interval must not cover less
// than its level on data unlike TestQuantileCICoverage's: integer values
// (atoms), a long right tail, a small group and two modes with the median
// in the gap between them. 1000 intervals at level 0.9 per shape, each for
// ranks 0.1, 0.5 and 0.9 against the exact quantile (linear interpolation
// at p(n-1)); each coverage must be at least 0.85 (5.3 standard errors
// below the level, and 5 below the lowest measured: 0.862 was 3.7 below
// the bimodal shape's 0.898 and failed about one run in 3,000). Measured
// over 10,000 intervals each: 0.898-0.927 on the continuous shapes, 0.945-0.980 on
// the integers, where an atom makes the exact quantile a whole step of the CDF. Intervals that assume an even
// spread across an atom fail here (one tried covered 0.43 on the integers;
// see docs/aggregations.md).
func TestQuantileCICoverageShapes(t *testing.T) {
	const trials, level = 1000, 0.9
	r := rand.New(rand.NewPCG(5, 6))
	shape := func(n int, draw func() float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = math.Min(math.Max(draw(), 0), 100)
		}
		return out
	}
	for _, c := range []struct {
		name string
		data []float64
	}{
		{"integers", shape(2000, func() float64 { return math.Round(50 + 10*r.NormFloat64()) })},
		{"exponential", shape(2000, func() float64 { return 5 * r.ExpFloat64() })},
		{"200 normal", shape(200, func() float64 { return 50 + 10*r.NormFloat64() })},
		{"bimodal", shape(2000, func() float64 {
			if r.Float64() < 0.5 {
				return 20 + r.NormFloat64()
			}
			return 80 + r.NormFloat64()
		})},
	} {
		q, err := NewQuantiles(QuantilesOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: 0, Upper: 100})
		if err != nil {
			t.Fatal(err)
		}
		ranks := []float64{0.1, 0.5, 0.9}
		s, want := quantileCase(q, c.data, ranks)
		in := make([]int, len(ranks))
		for i := 0; i < trials; i++ {
			a := q.Fresh()
			_ = a.Merge(s)
			_, lo, hi, err := a.ResultWithCI(level, ranks...)
			if err != nil {
				t.Fatal(err)
			}
			for j := range ranks {
				if lo[j] <= want[j] && want[j] <= hi[j] {
					in[j]++
				}
			}
		}
		for j, p := range ranks {
			cov := float64(in[j]) / trials
			t.Logf("%s, rank %v: coverage %.3f at level %.2f", c.name, p, cov, level)
			if cov < 0.85 {
				t.Errorf("%s, rank %v: coverage %.3f below 0.85", c.name, p, cov)
			}
		}
	}
}

// TestSparseGroupIntervals: the pivot's intervals in groups of zero and one
// value, where the noise can leave no candidate consistent with the noisy
// parts. The interval must then be the whole range, not the estimate alone:
// an outside review (2026-11-30) saw the variance of one value released as
// [873.5, 873.5] and the mean of an empty group as [100, 100]. 2000 intervals
// at level 0.9 for the variance and the mean of the single value 7 (exact
// variance 0) on [0, 100]; each must cover at least 0.873 (4 standard errors
// below the level), and no interval may have zero width.
func TestSparseGroupIntervals(t *testing.T) {
	const trials, level = 2000, 0.9
	v, err := NewBoundedVariance(VarianceOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: 0, Upper: 100})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewBoundedMean(MeanOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: 0, Upper: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		exact float64
		ci    func() (float64, float64, float64, error)
	}{
		{"variance of one value", 0, func() (float64, float64, float64, error) {
			a := v.Fresh()
			_ = a.Add(7)
			return a.ResultWithCI(level)
		}},
		{"mean of one value", 7, func() (float64, float64, float64, error) {
			a := m.Fresh()
			_ = a.Add(7)
			return a.ResultWithCI(level)
		}},
		{"mean of no value", math.NaN(), func() (float64, float64, float64, error) {
			return m.Fresh().ResultWithCI(level)
		}},
	} {
		in, points := 0, 0
		for i := 0; i < trials; i++ {
			r, lo, hi, err := c.ci()
			if err != nil {
				t.Fatal(err)
			}
			if lo > r || r > hi {
				t.Fatalf("%s: value %v outside its interval [%v, %v]", c.name, r, lo, hi)
			}
			if lo == hi {
				points++
			}
			if lo <= c.exact && c.exact <= hi {
				in++
			}
		}
		cov := float64(in) / trials
		t.Logf("%s: coverage %.4f, %d intervals of zero width", c.name, cov, points)
		if points > 0 {
			t.Errorf("%s: %d of %d intervals have zero width", c.name, points, trials)
		}
		if !math.IsNaN(c.exact) && cov < level-4*math.Sqrt(level*(1-level)/trials) {
			t.Errorf("%s: coverage %.4f, want at least %.3f", c.name, cov, level-4*math.Sqrt(level*(1-level)/trials))
		}
	}
}
