package accounting

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestZetaSQLSplitLaplace(t *testing.T) {
	s, err := ZetaSQLSplit(Budget{Epsilon: 1, Delta: 1e-5}, 3, []bool{false, true, false}, SplitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Selection != (Budget{Epsilon: 0.25, Delta: 1e-5}) {
		t.Errorf("selection = %v, want (0.25, 1e-5): all of delta goes to selection with Laplace noise", s.Selection)
	}
	want := []Share{
		{Noise: Budget{Epsilon: 0.25}},
		{Noise: Budget{Epsilon: 0.125}, Bounds: Budget{Epsilon: 0.125}},
		{Noise: Budget{Epsilon: 0.25}},
	}
	for i, w := range want {
		if s.Aggregations[i] != w {
			t.Errorf("aggregation %d = %+v, want %+v", i, s.Aggregations[i], w)
		}
	}
	if s.Total() != (Budget{Epsilon: 1, Delta: 1e-5}) {
		t.Errorf("total = %v", s.Total())
	}
}

func TestZetaSQLSplitGaussianAndPublic(t *testing.T) {
	s, err := ZetaSQLSplit(Budget{Epsilon: 2, Delta: 3e-5}, 2, nil, SplitOptions{GaussianNoise: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := s.Selection.Delta; math.Abs(d-1e-5) > 1e-20 || s.Aggregations[0].Noise.Delta != d {
		t.Errorf("Gaussian split = %+v, want delta 1e-5 each", s)
	}
	p, err := ZetaSQLSplit(Budget{Epsilon: 2, Delta: 0}, 2, nil, SplitOptions{PublicPartitions: true})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Selection.IsZero() || p.Aggregations[0].Noise.Epsilon != 1 {
		t.Errorf("public split = %+v, want no selection and epsilon 1 each", p)
	}
}

// TestSplitNeverExceeds checks that rounding never makes the parts compose
// to more than the total, for awkward epsilons and many aggregations.
func TestSplitNeverExceeds(t *testing.T) {
	for _, eps := range []float64{1, 0.1, 0.3, 1.0 / 3, math.Pi, 1e-300, 1e300, 7.000000000000001} {
		for n := 0; n < 40; n++ {
			bounds := make([]bool, n)
			for i := range bounds {
				bounds[i] = i%3 == 0
			}
			for _, g := range []bool{false, true} {
				total := Budget{Epsilon: eps, Delta: 0.1}
				s, err := ZetaSQLSplit(total, n, bounds, SplitOptions{GaussianNoise: g})
				if err != nil {
					t.Fatal(err)
				}
				if !total.Covers(s.Total()) {
					t.Fatalf("eps=%v n=%d: parts %v exceed %v", eps, n, s.Total(), total)
				}
				if s.Total().Epsilon < eps*(1-1e-12) {
					t.Fatalf("eps=%v n=%d: parts %v waste budget", eps, n, s.Total())
				}
			}
		}
	}
}

func TestSplitErrors(t *testing.T) {
	cases := []struct {
		total Budget
		n     int
		ib    []bool
		opts  SplitOptions
		want  string
	}{
		{Budget{Epsilon: -1, Delta: 1e-5}, 1, nil, SplitOptions{}, "epsilon"},
		{Budget{Epsilon: math.NaN(), Delta: 1e-5}, 1, nil, SplitOptions{}, "epsilon"},
		{Budget{Epsilon: 1, Delta: 1.5}, 1, nil, SplitOptions{}, "delta"},
		{Budget{Epsilon: 1, Delta: 0}, 1, nil, SplitOptions{}, "partition selection needs delta"},
		{Budget{Epsilon: 1, Delta: 0}, 1, nil, SplitOptions{GaussianNoise: true, PublicPartitions: true}, "Gaussian noise needs delta"},
		{Budget{Epsilon: 1, Delta: 1e-5}, -1, nil, SplitOptions{}, "negative"},
		{Budget{Epsilon: 1, Delta: 1e-5}, 2, []bool{true}, SplitOptions{}, "entries"},
	}
	for _, c := range cases {
		_, err := ZetaSQLSplit(c.total, c.n, c.ib, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ZetaSQLSplit(%v, %d, %v, %+v) error = %v, want %q", c.total, c.n, c.ib, c.opts, err, c.want)
		}
	}
}

func TestOverConsumption(t *testing.T) {
	total := Budget{Epsilon: 1, Delta: 1e-5}
	err := CheckAllocation(total, []Budget{{Epsilon: 0.6}, {Epsilon: 0.6}})
	var oe *OverConsumptionError
	if !errors.Is(err, ErrOverConsumption) || !errors.As(err, &oe) || oe.Requested.Epsilon != 1.2 {
		t.Fatalf("CheckAllocation = %v, want an over-consumption error for epsilon 1.2", err)
	}
	if !strings.Contains(err.Error(), "split the budget") {
		t.Errorf("error %q does not say what to do", err)
	}
	if err := CheckAllocation(total, []Budget{{Epsilon: 0.5}, {Epsilon: 0.5, Delta: 1e-5}}); err != nil {
		t.Errorf("an exact allocation was refused: %v", err)
	}
	if err := CheckAllocation(total, []Budget{{Epsilon: 0.5, Delta: 2e-5}}); !errors.Is(err, ErrOverConsumption) || !strings.Contains(err.Error(), "delta exceeded") {
		t.Errorf("delta over-consumption: %v", err)
	}
	a, err := NewAccountant(total)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Spend(Budget{Epsilon: 0.75}); err != nil {
		t.Fatal(err)
	}
	if err := a.Spend(Budget{Epsilon: 0.5}); !errors.Is(err, ErrOverConsumption) {
		t.Errorf("second spend: %v, want over-consumption", err)
	}
	if a.Spent() != (Budget{Epsilon: 0.75}) || a.Remaining().Epsilon != 0.25 {
		t.Errorf("after a refused spend: spent %v, remaining %v", a.Spent(), a.Remaining())
	}
}

func TestZCDP(t *testing.T) {
	rho, err := GaussianRho(1, 2)
	if err != nil || rho != 0.125 {
		t.Fatalf("GaussianRho(1, 2) = %v, %v; want 0.125", rho, err)
	}
	if ComposeRho(0.125, 0.125, 0.25) != 0.5 {
		t.Error("ComposeRho does not add")
	}
	for _, c := range []struct{ rho, delta float64 }{{0.125, 1e-5}, {0.01, 1e-6}, {1, 1e-5}, {10, 1e-9}, {1e-6, 1e-5}} {
		eps, err := ZCDPToEpsilon(c.rho, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		std := StandardZCDPToEpsilon(c.rho, c.delta)
		if eps > std || eps < c.rho {
			t.Errorf("rho=%v delta=%v: eps=%v, standard %v", c.rho, c.delta, eps, std)
		}
		// The tight conversion must be strictly better than the standard one.
		if eps > std*0.999 {
			t.Errorf("rho=%v delta=%v: tight eps %v is no better than standard %v", c.rho, c.delta, eps, std)
		}
		t.Logf("rho=%v delta=%v: tight eps %.6g, standard %.6g", c.rho, c.delta, eps, std)
	}
	// A known value: rho = 0.5, delta = 1e-5 (CKS 2020 Prop. 12). The bound
	// at alpha = 6 is 3 + ln(5/6) + (ln(1e5) - ln 6)/5 = 4.7234; the optimum
	// lies a little below.
	eps, _ := ZCDPToEpsilon(0.5, 1e-5)
	at6 := 6*0.5 + math.Log(5.0/6) + (math.Log(1e5)-math.Log(6))/5
	if eps > at6 || eps < at6-0.1 {
		t.Errorf("ZCDPToEpsilon(0.5, 1e-5) = %v, want just below %v", eps, at6)
	}
	for _, bad := range []struct{ rho, delta float64 }{{-1, 1e-5}, {math.NaN(), 1e-5}, {1, 0}, {1, 1}} {
		if _, err := ZCDPToEpsilon(bad.rho, bad.delta); err == nil {
			t.Errorf("ZCDPToEpsilon(%v, %v) accepted", bad.rho, bad.delta)
		}
	}
	if _, err := GaussianRho(1, 0); err == nil {
		t.Error("GaussianRho with sigma 0 accepted")
	}
}

func TestBudgetValidate(t *testing.T) {
	for _, b := range []Budget{{-1, 0}, {math.Inf(1), 0}, {1, -0.1}, {1, 1.01}, {1, math.NaN()}} {
		if err := b.Validate(); !errors.Is(err, ErrInvalidBudget) {
			t.Errorf("%v: Validate = %v", b, err)
		}
	}
	if err := (Budget{0, 0}).Validate(); err != nil {
		t.Errorf("(0, 0) refused: %v", err)
	}
	// ZetaSQL's delta = 1 (release every group) is a valid cost; a budget below it refuses it.
	if err := (Budget{1, 1}).Validate(); err != nil {
		t.Errorf("(1, 1) refused: %v", err)
	}
}
