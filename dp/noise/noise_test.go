package noise

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/dp/internal/dptest"
)

func TestParseKind(t *testing.T) {
	for s, want := range map[string]Kind{"laplace": Laplace, " Gaussian ": Gaussian, "LAPLACE": Laplace} {
		if k, err := ParseKind(s); err != nil || k != want {
			t.Errorf("ParseKind(%q) = %v, %v", s, k, err)
		}
	}
	if _, err := ParseKind("cauchy"); err == nil {
		t.Error("ParseKind(cauchy) accepted")
	}
	if Laplace.String() != "laplace" || Gaussian.String() != "gaussian" || Kind(0).String() != "Kind(0)" {
		t.Error("Kind.String")
	}
}

// TestParamErrors checks that every bad parameter is refused with an error
// that names it.
func TestParamErrors(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		kind Kind
		p    Params
		want string
	}{
		{Laplace, Params{Epsilon: nan, L0: 1, LInf: 1}, "epsilon is NaN"},
		{Laplace, Params{Epsilon: inf, L0: 1, LInf: 1}, "epsilon is +Inf"},
		{Laplace, Params{Epsilon: 0, L0: 1, LInf: 1}, "epsilon is 0"},
		{Laplace, Params{Epsilon: -1, L0: 1, LInf: 1}, "epsilon is -1"},
		{Laplace, Params{Epsilon: 1, L0: 0, LInf: 1}, "L0"},
		{Laplace, Params{Epsilon: 1, L0: -3, LInf: 1}, "L0"},
		{Laplace, Params{Epsilon: 1, L0: 1, LInf: 0}, "LInf"},
		{Laplace, Params{Epsilon: 1, L0: 1, LInf: nan}, "LInf"},
		{Laplace, Params{Epsilon: 1, L0: 1, LInf: -inf}, "LInf"},
		{Laplace, Params{Epsilon: 1, Delta: 1e-5, L0: 1, LInf: 1}, "delta"},
		{Gaussian, Params{Epsilon: 1, Delta: 0, L0: 1, LInf: 1}, "delta"},
		{Gaussian, Params{Epsilon: 1, Delta: 1, L0: 1, LInf: 1}, "delta"},
		{Gaussian, Params{Epsilon: 1, Delta: nan, L0: 1, LInf: 1}, "delta"},
		{Gaussian, Params{Epsilon: 1, Delta: -1e-5, L0: 1, LInf: 1}, "delta"},
		// Noise too small to represent on a float64 grid (ZetaSQL refuses
		// epsilon = 1e308 too).
		{Laplace, Params{Epsilon: 1e308, L0: 1, LInf: 1}, "cannot be represented"},
		// Noise too large: the scale overflows, or the grid needed is so
		// much coarser than LInf that the noise spans more than 2^62 steps.
		{Laplace, Params{Epsilon: 1e-300, L0: 1, LInf: 1e300}, "cannot be represented"},
		{Laplace, Params{Epsilon: 1e-30, L0: 1, LInf: 1}, "2^62"},
		{Gaussian, Params{Epsilon: 1e-30, Delta: 1e-30, L0: 1, LInf: 1}, "2^62"},
		{Laplace, Params{Epsilon: 1, L0: math.MaxInt64, LInf: math.MaxFloat64}, "cannot be represented"},
		{Kind(7), Params{Epsilon: 1, L0: 1, LInf: 1}, "kind"},
	}
	for _, c := range cases {
		_, err := New(c.kind, c.p)
		if err == nil || !errors.Is(err, ErrInvalidParams) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%v, %+v) error = %v; want one mentioning %q", c.kind, c.p, err, c.want)
		}
	}
	if _, err := GaussianSigma(1, 1e-5, -1); err == nil || !strings.Contains(err.Error(), "L2") {
		t.Errorf("GaussianSigma with negative L2: %v", err)
	}
}

// TestHugeEpsilon checks that epsilon = 1e20 works and is practically
// noise-free, for both kinds and both value types.
func TestHugeEpsilon(t *testing.T) {
	for _, kind := range []Kind{Laplace, Gaussian} {
		p := Params{Epsilon: 1e20, L0: 1, LInf: 1}
		if kind == Gaussian {
			p.Delta = 1e-5
		}
		m := testMech(t, kind, p, 1)
		for i := 0; i < 1000; i++ {
			v, err := m.AddNoiseFloat(1234.5)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(v-1234.5) > 1e-9 {
				t.Fatalf("%v noise at epsilon 1e20 moved 1234.5 to %v", kind, v)
			}
			n, err := m.AddNoiseInt(-77)
			if err != nil || n != -77 {
				t.Fatalf("%v integer noise at epsilon 1e20: %d, %v", kind, n, err)
			}
		}
	}
}

func TestNonFiniteInput(t *testing.T) {
	m := testMech(t, Laplace, Params{Epsilon: 1, L0: 1, LInf: 1}, 1)
	for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := m.AddNoiseFloat(x); err == nil {
			t.Errorf("AddNoiseFloat(%v) accepted", x)
		}
	}
	if _, err := m.AddNoiseFloat(math.MaxFloat64); err != nil {
		t.Errorf("AddNoiseFloat(MaxFloat64): %v", err)
	}
	// With scale 1e307, about half the draws on MaxFloat64 overflow: they
	// must be reported as errors, never returned as +Inf.
	big := testMech(t, Laplace, Params{Epsilon: 1, L0: 1, LInf: 1e307}, 1)
	overflows := 0
	for i := 0; i < 40; i++ {
		v, err := big.AddNoiseFloat(math.MaxFloat64)
		switch {
		case err != nil && strings.Contains(err.Error(), "overflow"):
			overflows++
		case err != nil || math.IsInf(v, 0):
			t.Fatalf("AddNoiseFloat(MaxFloat64) = %v, %v", v, err)
		}
	}
	if overflows == 0 || overflows == 40 {
		t.Errorf("%d of 40 draws overflowed; want about half", overflows)
	}
	// Tiny epsilon that is still representable: a noise scale of 1e16.
	if _, err := NewLaplace(Params{Epsilon: 1e-16, L0: 1, LInf: 1}); err != nil {
		t.Errorf("epsilon 1e-16: %v", err)
	}
}

// TestGaussianSigmaReference compares the analytic Gaussian sigma with
// values computed independently at 50 digits (mpmath, bisection on the
// exact condition), and checks it is never below them.
func TestGaussianSigmaReference(t *testing.T) {
	for _, c := range []struct{ eps, delta, want float64 }{
		{math.Log(3), 1e-5, 3.42466239790895},
		{1e-6, 1e-5, 38021.9814687474},
		{2 * math.Log(3), 1e-5, 1.8330331141415},
		{5, 1e-5, 0.891868264951518},
		{math.Log(3), 1e-10, 5.36148597143117},
		{0.01, 1e-5, 243.785437675678},
		{1e-30, 1e-30, 2.76029804798143e+29},
		{1e-3, 1e-12, 5412.30219384393},
		{1e-8, 1e-5, 39874.2942628478},
		{20, 1e-5, 0.290041418032796},
		{1, 0.5, 0.507065031476331},
	} {
		got, err := GaussianSigma(c.eps, c.delta, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got < c.want*(1-1e-13) || got > c.want*(1+2e-9) {
			t.Errorf("GaussianSigma(%v, %v, 1) = %.15g, want %.15g", c.eps, c.delta, got, c.want)
		}
		// Scale invariance.
		if g7, _ := GaussianSigma(c.eps, c.delta, 7); math.Abs(g7-7*got) > 1e-12*g7 {
			t.Errorf("sigma is not linear in L2: %v vs 7*%v", g7, got)
		}
	}
	// Valid for large epsilon, where the classical formula is not.
	for _, eps := range []float64{10, 100, 1e4, 1e20} {
		s, err := GaussianSigma(eps, 1e-5, 1)
		if err != nil || !(s > 0) || analyticDelta(eps, s) > 1e-5 {
			t.Errorf("GaussianSigma(%v) = %v, %v", eps, s, err)
		}
	}
}

// TestScales checks the scales the mechanisms report: Laplace b =
// L0*LInf/eps and Gaussian sigma = GaussianSigma(eps, delta,
// sqrt(L0)*LInf), each rounded up by at most 2^-38 relative.
func TestScales(t *testing.T) {
	for _, p := range []Params{{Epsilon: 1, L0: 1, LInf: 1}, {Epsilon: 0.3, L0: 7, LInf: 2.5}, {Epsilon: 1e-9, L0: 1, LInf: 1}, {Epsilon: 20, L0: 1000, LInf: 1e-6}} {
		m, err := NewLaplace(p)
		if err != nil {
			t.Fatal(err)
		}
		want := float64(p.L0) * p.LInf / p.Epsilon
		if m.Scale() < want || m.Scale() > want*(1+math.Ldexp(1, -38)) {
			t.Errorf("Laplace %+v: scale %v, want %v", p, m.Scale(), want)
		}
		if g := m.Granularity(); g > want*math.Ldexp(1, -40) || g <= want*math.Ldexp(1, -41) {
			t.Errorf("Laplace %+v: granularity %v for scale %v", p, g, want)
		}
		p.Delta = 1e-6
		gm, err := NewGaussian(p)
		if err != nil {
			t.Fatal(err)
		}
		ws, _ := GaussianSigma(p.Epsilon, p.Delta, math.Sqrt(float64(p.L0))*p.LInf)
		if gm.Scale() < ws*(1-1e-15) || gm.Scale() > ws*(1+math.Ldexp(1, -38)) {
			t.Errorf("Gaussian %+v: sigma %v, want %v", p, gm.Scale(), ws)
		}
	}
}

// TestGridHygiene checks the floating-point hygiene the grid gives: every
// output is a multiple of the granularity, and two inputs closer than the
// grid that round to the same point produce identical outputs from the same
// random stream, so no output can tell them apart.
func TestGridHygiene(t *testing.T) {
	for _, kind := range []Kind{Laplace, Gaussian} {
		p := Params{Epsilon: 1, L0: 1, LInf: 1}
		if kind == Gaussian {
			p.Delta = 1e-5
		}
		probe := testMech(t, kind, p, 0)
		g := probe.Granularity()
		x1 := 10 * g
		x2 := x1 + 0.25*g // same grid point
		x3 := x1 - 0.49*g
		ma, mb, mc := testMech(t, kind, p, 9), testMech(t, kind, p, 9), testMech(t, kind, p, 9)
		for i := 0; i < 10000; i++ {
			a, _ := ma.AddNoiseFloat(x1)
			b, _ := mb.AddNoiseFloat(x2)
			c, _ := mc.AddNoiseFloat(x3)
			if a != b || a != c {
				t.Fatalf("%v: inputs %v, %v, %v on one grid point gave %v, %v, %v", kind, x1, x2, x3, a, b, c)
			}
			if r := math.Mod(a, g); r != 0 {
				t.Fatalf("%v: output %v is not a multiple of the grid %v", kind, a, g)
			}
		}
		// Outputs for a huge input are multiples of the grid too.
		for i := 0; i < 100; i++ {
			v, _ := ma.AddNoiseFloat(1e15 + 0.1)
			if math.Mod(v, g) != 0 {
				t.Fatalf("%v: output %v not on the grid", kind, v)
			}
		}
	}
}

// TestConfidenceIntervalCoverage draws 20000 noisy values and checks that
// the 95% interval covers the true value at a rate within 5 standard errors
// of at least 95% (sd = sqrt(0.95*0.05/20000) = 0.0015; the tolerance
// 0.0077 fails a correct interval with probability below 1e-6), and not so
// wide that it covers more than 96.5% (the intervals are tight to a grid
// step).
func TestConfidenceIntervalCoverage(t *testing.T) {
	const n, level = 20000, 0.95
	for _, c := range []struct {
		kind Kind
		p    Params
	}{
		{Laplace, Params{Epsilon: math.Log(3), L0: 1, LInf: 1}},
		{Laplace, Params{Epsilon: 0.1, L0: 4, LInf: 2.5}},
		{Gaussian, Params{Epsilon: 1, Delta: 1e-5, L0: 1, LInf: 1}},
		{Gaussian, Params{Epsilon: 0.5, Delta: 1e-6, L0: 9, LInf: 3}},
	} {
		m := testMech(t, c.kind, c.p, 3)
		const x = 42.125
		var covered, coveredInt int
		for i := 0; i < n; i++ {
			v, _ := m.AddNoiseFloat(x)
			lo, hi, err := m.ConfidenceInterval(v, level)
			if err != nil {
				t.Fatal(err)
			}
			if lo <= x && x <= hi {
				covered++
			}
			vi, _ := m.AddNoiseInt(42)
			loi, hii, err := m.ConfidenceIntervalInt(vi, level)
			if err != nil {
				t.Fatal(err)
			}
			if loi <= 42 && 42 <= hii {
				coveredInt++
			}
		}
		for name, cov := range map[string]int{"float": covered, "int": coveredInt} {
			rate := float64(cov) / n
			t.Logf("%v %+v %s: 95%% interval covered %.4f of %d", c.kind, c.p, name, rate, n)
			upper := 0.965
			if name == "int" && m.Scale() < 5 {
				upper = 0.995 // integer steps are coarse at small scales
			}
			if rate < level-0.0077 || rate > upper {
				t.Errorf("%v %+v %s: 95%% interval covered %.4f", c.kind, c.p, name, rate)
			}
		}
	}
	m := testMech(t, Laplace, Params{Epsilon: 1, L0: 1, LInf: 1}, 1)
	for _, level := range []float64{0, 1, -0.5, math.NaN()} {
		if _, _, err := m.ConfidenceInterval(0, level); err == nil {
			t.Errorf("level %v accepted", level)
		}
	}
}

// TestFloatPrivacyAudit runs the histogram DP test on the float path: 200000
// outputs on x and on x + L1 (the worst neighbour), binned to a width of
// scale/8. Binning is post-processing, so the binned histograms must still
// be epsilon-DP; the tolerance 0.02 exceeds the estimator's bias and noise
// for this support (about 200 bins: sqrt(m/n)(1+e^2eps) ~ 0.0032*10).
func TestFloatPrivacyAudit(t *testing.T) {
	const n = 200000
	for _, c := range []struct {
		kind Kind
		p    Params
	}{
		{Laplace, Params{Epsilon: math.Log(3), L0: 2, LInf: 0.75}},
		{Gaussian, Params{Epsilon: math.Log(3), Delta: 1e-5, L0: 1, LInf: 2}},
	} {
		m := testMech(t, c.kind, c.p, 5)
		shift := c.p.L1()
		if c.kind == Gaussian {
			shift = c.p.L2()
		}
		width := m.Scale() / 8
		x := 1000.3
		a, b := dptest.NewHistogram(width), dptest.NewHistogram(width)
		for i := 0; i < n; i++ {
			va, _ := m.AddNoiseFloat(x)
			vb, _ := m.AddNoiseFloat(x + shift)
			a.Add(va)
			b.Add(vb)
		}
		t.Logf("%v %+v: empirical delta %.5f and %.5f", c.kind, c.p, dptest.DPTestValue(a, b, c.p.Epsilon), dptest.DPTestValue(b, a, c.p.Epsilon))
		if !dptest.VerifyApproximateDP(a, b, c.p.Epsilon, c.p.Delta, 0.02) {
			t.Errorf("%v %+v: test values %v, %v", c.kind, c.p, dptest.DPTestValue(a, b, c.p.Epsilon), dptest.DPTestValue(b, a, c.p.Epsilon))
		}
		// The audit has power: a neighbour 4 sensitivities away fails.
		far := dptest.NewHistogram(width)
		for i := 0; i < n; i++ {
			v, _ := m.AddNoiseFloat(x + 4*shift)
			far.Add(v)
		}
		if dptest.VerifyApproximateDP(a, far, c.p.Epsilon, c.p.Delta, 0.02) {
			t.Errorf("%v %+v: the audit accepts a shift of 4 sensitivities; it has no power", c.kind, c.p)
		}
	}
}

func TestQuantile(t *testing.T) {
	lm := testMech(t, Laplace, Params{Epsilon: 1, L0: 1, LInf: 1}, 1)
	if q, _ := lm.Quantile(0.5); q != 0 {
		t.Errorf("Laplace median %v", q)
	}
	if q, _ := lm.Quantile(0.975); math.Abs(q-lm.Scale()*math.Log(20)) > 1e-12 {
		t.Errorf("Laplace 0.975 quantile %v", q)
	}
	gm := testMech(t, Gaussian, Params{Epsilon: 1, Delta: 1e-5, L0: 1, LInf: 1}, 1)
	if q, _ := gm.Quantile(0.975); math.Abs(q/gm.Scale()-1.959963984540054) > 1e-9 {
		t.Errorf("Gaussian 0.975 quantile %v", q/gm.Scale())
	}
	if _, err := gm.Quantile(1); err == nil {
		t.Error("Quantile(1) accepted")
	}
}

func TestIntSaturates(t *testing.T) {
	m := testMech(t, Laplace, Params{Epsilon: 1, L0: 1, LInf: 1}, 1)
	seenMax := false
	for i := 0; i < 100; i++ {
		v, err := m.AddNoiseInt(math.MaxInt64)
		if err != nil {
			t.Fatal(err)
		}
		if v == math.MaxInt64 {
			seenMax = true
		}
		if v < math.MaxInt64-100 {
			t.Fatalf("MaxInt64 + noise wrapped to %d", v)
		}
	}
	if !seenMax {
		t.Error("no draw saturated at MaxInt64")
	}
}

// TestIntTailUpper checks IntTailUpper against the empirical frequency of
// AddNoiseInt results at least t, and that it is an upper bound of the exact
// discrete tail.
func TestIntTailUpper(t *testing.T) {
	for _, c := range []struct {
		kind Kind
		p    Params
	}{
		{Laplace, Params{Epsilon: 1, L0: 1, LInf: 1}},
		{Laplace, Params{Epsilon: 0.5, L0: 3, LInf: 1}},
		{Gaussian, Params{Epsilon: 1, Delta: 1e-5, L0: 2, LInf: 1}},
	} {
		m, err := New(c.kind, c.p)
		if err != nil {
			t.Fatal(err)
		}
		tm := m.(interface {
			IntTailUpper(x, t int64) (float64, error)
		})
		const n = 40000
		const x = 5
		hist := map[int64]int{}
		for i := 0; i < n; i++ {
			v, err := m.AddNoiseInt(x)
			if err != nil {
				t.Fatal(err)
			}
			hist[v]++
		}
		for _, thr := range []int64{x - 6, x - 1, x, x + 1, x + 3, x + 8} {
			got := 0
			for v, k := range hist {
				if v >= thr {
					got += k
				}
			}
			want, err := tm.IntTailUpper(x, thr)
			if err != nil {
				t.Fatal(err)
			}
			f := float64(got) / n
			// Five standard deviations of a binomial frequency.
			if tol := 5*math.Sqrt(want*(1-want)/n) + 1e-3; math.Abs(f-want) > tol {
				t.Errorf("%v %+v: P(AddNoiseInt(%d) >= %d) = %.4f empirically, IntTailUpper says %.4f", c.kind, c.p, x, thr, f, want)
			}
		}
		// Shifting x and t together changes nothing; the tail decreases in t.
		a, _ := tm.IntTailUpper(0, 3)
		b, _ := tm.IntTailUpper(10, 13)
		if a != b {
			t.Errorf("%v: IntTailUpper(0, 3) = %v but IntTailUpper(10, 13) = %v", c.kind, a, b)
		}
		prev := 1.0
		for thr := int64(-20); thr <= 40; thr++ {
			v, _ := tm.IntTailUpper(0, thr)
			if v > prev || v < 0 || v > 1 {
				t.Errorf("%v: IntTailUpper(0, %d) = %v after %v", c.kind, thr, v, prev)
			}
			prev = v
		}
		if v, _ := tm.IntTailUpper(math.MinInt64, math.MaxInt64); v != 0 {
			t.Errorf("%v: IntTailUpper at the int64 extremes = %v, want 0", c.kind, v)
		}
		if v, _ := tm.IntTailUpper(math.MaxInt64, math.MinInt64); v != 1 {
			t.Errorf("%v: IntTailUpper at the int64 extremes = %v, want 1", c.kind, v)
		}
	}
}
