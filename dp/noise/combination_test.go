package noise

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

func TestCombinationTailClosedForms(t *testing.T) {
	lap := testMech(t, Laplace, Params{Epsilon: 0.5, L0: 1, LInf: 1}, 1) // b = 2
	gau := testMech(t, Gaussian, Params{Epsilon: 1, Delta: 1e-6, L0: 1, LInf: 1}, 2)
	b, sigma := lap.Scale(), gau.Scale()
	cases := []struct {
		name  string
		terms []Term
		x     float64
		want  float64
	}{
		{"one Laplace", []Term{{Mech: lap, Coef: 1}}, 3, math.Exp(-3/b) / 2},
		{"one Laplace, negative coefficient, below 0", []Term{{Mech: lap, Coef: -2}}, -1, 1 - math.Exp(-1/(2*b))/2},
		// Two iid Laplace(b): P(Z >= t) = exp(-t/b)(2 + t/b)/4.
		{"two equal Laplace", []Term{{Mech: lap, Coef: 1}, {Mech: lap, Coef: -1}}, 5, math.Exp(-5/b) * (2 + 5/b) / 4},
		// Two Laplace with scales b and 2b: (4 e^{-t/2b} - e^{-t/b}) / 6.
		{"Laplace b and 2b", []Term{{Mech: lap, Coef: 1}, {Mech: lap, Coef: 2}}, 7, (4*math.Exp(-7/(2*b)) - math.Exp(-7/b)) / 6},
		{"normal sum", []Term{{Mech: gau, Coef: 3}, {Mech: gau, Coef: -4}}, 6 * sigma, 0.5 * math.Erfc(6.0/5/math.Sqrt2)},
		{"zero coefficients", []Term{{Mech: lap, Coef: 0}}, 0.1, 0},
	}
	for _, c := range cases {
		got, err := CombinationTail(c.terms, c.x)
		if err != nil {
			t.Fatal(err)
		}
		// The equal-scale case is computed with the scales spread by 0.1%.
		if math.Abs(got-c.want) > 2e-3*c.want+1e-12 {
			t.Errorf("%s: P(Z >= %v) = %.6g, want %.6g", c.name, c.x, got, c.want)
		}
	}
	if _, err := CombinationTail([]Term{{Mech: lap, Coef: math.NaN()}}, 0); err == nil {
		t.Error("NaN coefficient accepted")
	}
	if _, err := CombinationTail([]Term{{Coef: 1}}, 0); err == nil {
		t.Error("term without mechanism accepted")
	}
}

// TestCombinationTailSampled compares CombinationTail with the frequencies of
// the mechanisms' own noise, for combinations that use the exact Laplace
// part, the normal part and both: the integer noise of a count with a small
// scale, many Laplace terms (a quantile's noisy rank) and Laplace with
// Gaussian.
func TestCombinationTailSampled(t *testing.T) {
	if testing.Short() {
		t.Skip("statistical test")
	}
	lap := testMech(t, Laplace, Params{Epsilon: 0.5, L0: 1, LInf: 1}, 3) // b = 2
	big := testMech(t, Laplace, Params{Epsilon: 0.1, L0: 1, LInf: 1}, 4) // b = 10
	gau := testMech(t, Gaussian, Params{Epsilon: 1, Delta: 1e-5, L0: 1, LInf: 3}, 5)
	many := make([]Term, 0, 20)
	for i := 0; i < 20; i++ {
		c := 1.0
		if i < 16 {
			c = -0.3
		}
		many = append(many, Term{Mech: lap, Coef: c})
	}
	cases := []struct {
		name  string
		terms []Term
	}{
		{"ratio pivot with integer count noise", []Term{{Mech: big, Coef: 1}, {Mech: lap, Int: true, Coef: -4}}},
		{"three Laplace", []Term{{Mech: big, Coef: 1}, {Mech: lap, Coef: 3}, {Mech: lap, Int: true, Coef: -2}}},
		{"twenty Laplace", many},
		{"Laplace and Gaussian", []Term{{Mech: lap, Coef: 2}, {Mech: gau, Coef: 1}}},
	}
	const n = 200000
	for _, c := range cases {
		draws := make([]float64, n)
		for i := range draws {
			z := 0.0
			for _, term := range c.terms {
				var y float64
				if term.Int {
					v, _ := term.Mech.AddNoiseInt(0)
					y = float64(v)
				} else {
					y, _ = term.Mech.AddNoiseFloat(0)
				}
				z += term.Coef * y
			}
			draws[i] = z
		}
		sort.Float64s(draws)
		for _, p := range []float64{0.005, 0.025, 0.05, 0.25} {
			x := draws[int(float64(n)*(1-p))] // the empirical (1-p)-quantile
			got, err := CombinationTail(c.terms, x)
			if err != nil {
				t.Fatal(err)
			}
			// Four standard errors of the empirical tail, plus the
			// approximation allowed: 3% of the tail.
			tol := 4*math.Sqrt(p*(1-p)/n) + 0.03*p
			if math.Abs(got-p) > tol {
				t.Errorf("%s: empirical P(Z >= %.4g) = %v, CombinationTail %.5f (tolerance %.5f)", c.name, x, p, got, tol)
			}
		}
	}
}

// combinationTailReference is CombinationTail as first written: an
// exponential per node of the trapezoid rule. normalMixTail must agree with it.
func combinationTailReference(terms []Term, t float64) float64 {
	scales, variance, err := splitTerms(terms)
	if err != nil {
		panic(err)
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(scales)))
	if len(scales) > exactLaplaceTerms {
		for _, s := range scales[exactLaplaceTerms:] {
			variance += 2 * s * s
		}
		scales = scales[:exactLaplaceTerms]
	}
	exact := newLaplaceSum(scales)
	if variance == 0 {
		return exact.tail(t)
	}
	sigma := math.Sqrt(variance)
	if len(scales) == 0 {
		return 0.5 * math.Erfc(t/sigma/math.Sqrt2)
	}
	h := 2 * normalReach / float64(normalNodes-1)
	sum, weights := 0.0, 0.0
	for k := 0; k < normalNodes; k++ {
		u := -normalReach + float64(k)*h
		w := math.Exp(-u * u / 2)
		sum += w * exact.tail(t-sigma*u)
		weights += w
	}
	return sum / weights
}

// TestNormalMixTailAgrees compares CombinationTail with the reference on
// random combinations of Laplace (float and integer) and Gaussian terms, at
// points across their range: a quantile's rank (many Laplace terms of both
// signs), a few terms with scales within laplaceSpread of each other, and
// mixtures where the normal part dominates or is tiny.
func TestNormalMixTailAgrees(t *testing.T) {
	lap := testMech(t, Laplace, Params{Epsilon: 0.5, L0: 1, LInf: 1}, 7)
	big := testMech(t, Laplace, Params{Epsilon: 0.01, L0: 1, LInf: 1}, 8)
	gau := testMech(t, Gaussian, Params{Epsilon: 1, Delta: 1e-5, L0: 1, LInf: 3}, 9)
	mechs := []Mechanism{lap, big, gau}
	r := rand.New(rand.NewPCG(21, 22))
	worst := 0.0
	for c := 0; c < 3000; c++ {
		n := 1 + r.IntN(40)
		terms := make([]Term, n)
		for i := range terms {
			terms[i] = Term{Mech: mechs[r.IntN(len(mechs))], Int: r.IntN(4) == 0, Coef: r.NormFloat64() * math.Pow(10, r.Float64()*4-2)}
			if c%5 == 0 {
				terms[i].Coef = 1 + 1e-4*r.Float64() // scales within laplaceSpread
			}
		}
		sd := 0.0
		for _, term := range terms {
			sd += term.Coef * term.Coef * term.Mech.Scale() * term.Mech.Scale()
		}
		sd = math.Sqrt(sd)
		for _, z := range []float64{-30, -3, -0.5, 0, 1e-9, 0.2, 1, 2.5, 6, 40} {
			x := z * sd
			got, err := CombinationTail(terms, x)
			if err != nil {
				t.Fatal(err)
			}
			want := combinationTailReference(terms, x)
			if d := math.Abs(got - want); d > worst {
				worst = d
			}
			if d := math.Abs(got - want); d > 5e-10 || math.IsNaN(got) {
				t.Fatalf("case %d, x = %v: CombinationTail %v, reference %v (difference %.3g)", c, x, got, want, d)
			}
		}
	}
	t.Logf("largest difference from the reference: %.3g", worst)
}

// BenchmarkCombinationTail times the law of a quantile's noisy rank: twenty
// Laplace terms, the three largest exact and the rest normal.
func BenchmarkCombinationTail(b *testing.B) {
	lap := testMech(b, Laplace, Params{Epsilon: 0.5, L0: 1, LInf: 1}, 3)
	terms := make([]Term, 20)
	for i := range terms {
		terms[i] = Term{Mech: lap, Coef: 1 - 0.07*float64(i)}
	}
	b.Run("now", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_, _ = CombinationTail(terms, 3)
		}
	})
	b.Run("reference", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_ = combinationTailReference(terms, 3)
		}
	})
}
