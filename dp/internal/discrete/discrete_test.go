package discrete

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/dpsql/dpsql/dp/internal/dptest"
)

// chiSquare compares observed counts of integer values with the expected
// probabilities pmf(y) of a symmetric distribution, pooling the tails (values
// with expected count < 20) into two bins. It narrows [lo, hi] until each
// tail bin expects at least 20 values too: a tail bin expecting 0.005 turns a
// single far value, an event of probability 0.5%, into a statistic of 200.
// It returns the statistic and its degrees of freedom.
func chiSquare(counts map[int64]int, n int, pmf func(int64) float64, lo, hi int64) (float64, int) {
	for hi > lo {
		inside := 0.0
		for y := lo; y <= hi; y++ {
			inside += pmf(y)
		}
		if (1-inside)*float64(n)/2 >= 20 {
			break
		}
		lo, hi = lo+1, hi-1
	}
	stat, bins := 0.0, 0
	var lowObs, highObs int
	lowExp, highExp := 0.0, 0.0
	for y, c := range counts {
		if y < lo {
			lowObs += c
		} else if y > hi {
			highObs += c
		}
	}
	for y := lo; y <= hi; y++ {
		e := float64(n) * pmf(y)
		d := float64(counts[y]) - e
		stat += d * d / e
		bins++
	}
	// Expected mass outside [lo, hi].
	inside := 0.0
	for y := lo; y <= hi; y++ {
		inside += pmf(y)
	}
	out := (1 - inside) * float64(n)
	lowExp, highExp = out/2, out/2 // symmetric distributions
	if lowExp > 0 {
		stat += sq(float64(lowObs)-lowExp) / lowExp
		stat += sq(float64(highObs)-highExp) / highExp
		bins += 2
	}
	return stat, bins - 1
}

func sq(x float64) float64 { return x * x }

// chiSquareCritical returns a critical value of the chi-square distribution
// with k degrees of freedom at a tail probability of about 1e-6, by the
// Wilson-Hilferty approximation with z = 4.75.
func chiSquareCritical(k int) float64 {
	kf := float64(k)
	c := 1 - 2/(9*kf) + 4.75*math.Sqrt(2/(9*kf))
	return kf * c * c * c
}

// TestLaplaceExactDistribution draws 400000 samples of small discrete
// Laplace distributions and compares them with the exact pmf
// (1-p)/(1+p) p^|y| by a chi-square test at false-alarm probability 1e-6,
// plus the mean (0) and variance (2p/(1-p)^2) within 6 standard errors.
func TestLaplaceExactDistribution(t *testing.T) {
	const n = 400000
	for i, scale := range []Rational{{Num: 1, DenExp: 0}, {Num: 3, DenExp: 0}, {Num: 5, DenExp: 1}, {Num: 1 << 20, DenExp: 20}, {Num: 7, DenExp: 3}} {
		d := Laplace{Scale: scale}
		src := dptest.Seeded(t, uint64(i))
		counts := map[int64]int{}
		var sum, sum2 float64
		for j := 0; j < n; j++ {
			y := d.Sample(src)
			counts[y]++
			sum += float64(y)
			sum2 += float64(y) * float64(y)
		}
		p := d.P()
		pmf := func(y int64) float64 { return (1 - p) / (1 + p) * math.Pow(p, math.Abs(float64(y))) }
		hi := int64(1)
		for float64(n)*pmf(hi+1) >= 20 {
			hi++
		}
		stat, df := chiSquare(counts, n, pmf, -hi, hi)
		t.Logf("Laplace scale %v: chi-square %.1f, df %d, critical %.1f", scale.Float(), stat, df, chiSquareCritical(df))
		if stat > chiSquareCritical(df) {
			t.Errorf("scale %v: chi-square %v > %v (df %d)", scale.Float(), stat, chiSquareCritical(df), df)
		}
		variance := 2 * p / sq(1-p)
		mean := sum / n
		if math.Abs(mean) > 6*math.Sqrt(variance/n) {
			t.Errorf("scale %v: mean %v", scale.Float(), mean)
		}
		// The variance of y^2 is at most E[y^4] ~ 24 b^4 for Laplace.
		b := scale.Float()
		if v := sum2/n - mean*mean; math.Abs(v-variance) > 6*math.Sqrt(24*b*b*b*b/n)+6/math.Sqrt(n) {
			t.Errorf("scale %v: variance %v, want %v", b, v, variance)
		}
	}
}

// TestGaussianExactDistribution does the same for the discrete Gaussian,
// whose pmf is exp(-y^2/(2 sigma^2)) / Z with Z summed exactly.
func TestGaussianExactDistribution(t *testing.T) {
	const n = 400000
	for i, sigma := range []Rational{{Num: 1, DenExp: 1}, {Num: 1, DenExp: 0}, {Num: 3, DenExp: 0}, {Num: 41, DenExp: 3}, {Num: 10 << 30, DenExp: 30}} {
		d := Gaussian{Sigma: sigma}
		src := dptest.Seeded(t, uint64(10+i))
		counts := map[int64]int{}
		var sum, sum2 float64
		for j := 0; j < n; j++ {
			y := d.Sample(src)
			counts[y]++
			sum += float64(y)
			sum2 += float64(y) * float64(y)
		}
		s := sigma.Float()
		z, m2 := 0.0, 0.0
		for y := -int64(40*s) - 1; y <= int64(40*s)+1; y++ {
			w := math.Exp(-float64(y*y) / (2 * s * s))
			z += w
			m2 += w * float64(y*y)
		}
		pmf := func(y int64) float64 { return math.Exp(-float64(y*y)/(2*s*s)) / z }
		hi := int64(0)
		for float64(n)*pmf(hi+1) >= 20 {
			hi++
		}
		stat, df := chiSquare(counts, n, pmf, -hi, hi)
		t.Logf("Gaussian sigma %v: chi-square %.1f, df %d, critical %.1f", s, stat, df, chiSquareCritical(df))
		if stat > chiSquareCritical(df) {
			t.Errorf("sigma %v: chi-square %v > %v (df %d)", s, stat, chiSquareCritical(df), df)
		}
		variance := m2 / z
		mean := sum / n
		if math.Abs(mean) > 6*math.Sqrt(variance/n) {
			t.Errorf("sigma %v: mean %v", s, mean)
		}
		if v := sum2/n - mean*mean; math.Abs(v-variance) > 6*math.Sqrt(2*variance*variance/n)+6/math.Sqrt(n) {
			t.Errorf("sigma %v: variance %v, want %v", s, v, variance)
		}
	}
}

// TestBernoulliExp checks exp(-num/den) for fractions below and above 1,
// including the big-integer path, within 6 standard errors.
func TestBernoulliExp(t *testing.T) {
	const n = 200000
	src := dptest.Seeded(t, 1)
	for _, c := range []struct{ num, den uint64 }{{0, 1}, {1, 3}, {1, 1}, {5, 2}, {7, 1}, {1 << 62, 1 << 61}} {
		hits := 0
		for i := 0; i < n; i++ {
			if bernoulliExp(src, u128{0, c.num}, u128{0, c.den}) {
				hits++
			}
		}
		want := math.Exp(-float64(c.num) / float64(c.den))
		if got := float64(hits) / n; math.Abs(got-want) > 6*math.Sqrt(want*(1-want)/n)+1e-12 {
			t.Errorf("exp(-%d/%d): got %v, want %v", c.num, c.den, got, want)
		}
		hits = 0
		for i := 0; i < n; i++ {
			if bernoulliExpBig(src, new(big.Int).SetUint64(c.num), new(big.Int).SetUint64(c.den)) {
				hits++
			}
		}
		if got := float64(hits) / n; math.Abs(got-want) > 6*math.Sqrt(want*(1-want)/n)+1e-12 {
			t.Errorf("big exp(-%d/%d): got %v, want %v", c.num, c.den, got, want)
		}
	}
}

func TestBernoulliFloat(t *testing.T) {
	const n = 200000
	src := dptest.Seeded(t, 2)
	for _, p := range []float64{0, 1e-300, 0.25, 1.0 / 3, 0.999, 1, 2, math.NaN()} {
		hits := 0
		for i := 0; i < n; i++ {
			if BernoulliFloat(src, p) {
				hits++
			}
		}
		want := p
		if math.IsNaN(p) {
			want = 0
		}
		want = math.Min(want, 1)
		if got := float64(hits) / n; math.Abs(got-want) > 6*math.Sqrt(want*(1-want)/n)+1e-12 {
			t.Errorf("BernoulliFloat(%v) = %v", p, got)
		}
	}
}

func TestRoundUp(t *testing.T) {
	for _, x := range []float64{1e-300, 1e-20, 0.91, 1, 3.4246623981125595, 1 << 39, 1<<40 + 0.5, 3e12} {
		r, err := RoundUp(x)
		if err != nil {
			t.Fatal(err)
		}
		if r.Float() < x {
			t.Errorf("RoundUp(%v) = %v is below", x, r.Float())
		}
		if x > 1e-18 && r.Float() > x*(1+math.Ldexp(1, -39)) {
			t.Errorf("RoundUp(%v) = %v is too far above", x, r.Float())
		}
	}
	for _, x := range []float64{0, -1, math.NaN(), math.Inf(1), 1 << 62} {
		if _, err := RoundUp(x); err == nil {
			t.Errorf("RoundUp(%v) accepted", x)
		}
	}
}

// TestGridRound checks exact rounding to the grid against math/big, and the
// property the calibration relies on: values at distance d round to points
// at most ceil(d/g) steps apart.
func TestGridRound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, exp := range []int{-1022, -107, -41, -1, 0, 3} {
		g := Grid{Exp: exp}
		for i := 0; i < 20000; i++ {
			x := (r.Float64() - 0.5) * math.Ldexp(1, exp+r.IntN(120)-20)
			n, bn := g.Round(x)
			got := bn
			if got == nil {
				got = big.NewInt(n)
			}
			// floor(x/g + 1/2) exactly.
			v := new(big.Float).SetPrec(3000).SetFloat64(x)
			v.SetMantExp(v, -exp)
			v.Add(v, big.NewFloat(0.5))
			want, _ := v.Int(nil)
			if v.Sign() < 0 && !v.IsInt() {
				want.Sub(want, big.NewInt(1)) // Int truncates toward zero
			}
			if got.Cmp(want) != 0 {
				t.Fatalf("grid 2^%d: Round(%v) = %v, want %v", exp, x, got, want)
			}
			d := math.Abs(r.Float64()) * math.Ldexp(1, exp+3)
			n2, bn2 := g.Round(x + d)
			if bn == nil && bn2 == nil {
				if float64(n2-n) > g.Steps(d)+1e-9 {
					// x+d itself rounds in float64; allow that error.
					if float64(n2-n) > g.Steps(math.Nextafter(x+d, math.Inf(1))-x) {
						t.Fatalf("grid 2^%d: %v and %v round %d steps apart, more than ceil(d/g) = %v", exp, x, x+d, n2-n, g.Steps(d))
					}
				}
			}
		}
	}
}

func TestGridFloatBigPath(t *testing.T) {
	g := Grid{Exp: -41}
	n, bn := g.Round(1e12)
	if bn == nil {
		t.Fatalf("1e12 on grid 2^-41 should not fit in 62 bits (got %d)", n)
	}
	for _, y := range []int64{0, 1, -1, 1 << 40, -(1 << 41)} {
		v, err := g.Float(n, bn, y)
		if err != nil {
			t.Fatal(err)
		}
		want := 1e12 + math.Ldexp(float64(y), -41)
		if v != want {
			t.Errorf("1e12 + %d steps = %v, want %v", y, v, want)
		}
	}
	if _, err := (Grid{Exp: 960}).Float(math.MaxInt64, nil, math.MaxInt64); err == nil {
		t.Error("overflowing result accepted")
	}
}

func TestGridInt(t *testing.T) {
	g := Grid{Exp: 2}
	for _, c := range []struct{ x, want int64 }{{0, 0}, {1, 0}, {2, 1}, {3, 1}, {-2, 0}, {-3, -1}, {6, 2}, {math.MaxInt64, 1 << 61}} {
		if got := g.RoundInt(c.x); got != c.want {
			t.Errorf("RoundInt(%d) = %d, want %d", c.x, got, c.want)
		}
	}
	if got := g.Int(1<<61, 1<<61); got != math.MaxInt64 {
		t.Errorf("saturation: got %d", got)
	}
	if got := (Grid{}).Int(math.MinInt64, -1); got != math.MinInt64 {
		t.Errorf("negative saturation: got %d", got)
	}
}

func TestTwoSidedWidth(t *testing.T) {
	for _, d := range []interface {
		TwoSidedWidth(float64) int64
		TailAtLeast(int64) float64
	}{Laplace{Scale: Rational{Num: 3}}, Gaussian{Sigma: Rational{Num: 5}}, Gaussian{Sigma: Rational{Num: 3 << 40, DenExp: 0}}} {
		for _, alpha := range []float64{0.5, 0.05, 1e-6} {
			m := d.TwoSidedWidth(alpha)
			if tail := 2 * d.TailAtLeast(m+1); tail > alpha*(1+1e-6) {
				t.Errorf("%T: width %d for alpha %v leaves %v outside", d, m, alpha, tail)
			}
			// Minimal where the tail is summed exactly (the huge sigma uses
			// the normal quantile with slack).
			if g, ok := d.(Gaussian); ok && g.Sigma.Float() > exactSumLimit {
				continue
			}
			if tail := 2 * d.TailAtLeast(m); m > 0 && tail <= alpha {
				t.Errorf("%T: width %d for alpha %v is not the smallest: %d leaves %v outside", d, m, alpha, m-1, tail)
			}
		}
	}
}

func TestGaussianTailUpper(t *testing.T) {
	small := Gaussian{Sigma: Rational{Num: 3}}
	big := Gaussian{Sigma: Rational{Num: 3 << 40}}
	for _, k := range []int64{1, 3, 9} {
		if small.TailAtLeastUpper(k) < small.TailAtLeast(k) {
			t.Errorf("upper bound below the exact tail at %d", k)
		}
		kb := k << 40
		if u, e := big.TailAtLeastUpper(kb), big.TailAtLeast(kb); u < e || u > e*(1+1e-6) {
			t.Errorf("large sigma: upper %v, approximate %v at %d sigma/3", u, e, k)
		}
	}
}
