package noise

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/dpsql/dpsql/dp/internal/dptest"
)

// shortCases is how many cases of each file run under -short.
const shortCases = 1

func loadCases(t *testing.T, file, field string) (cases []*dptest.Message, votes int) {
	t.Helper()
	root, err := dptest.ParseTextProtoFile(filepath.Join(dptest.DataDir(t), file))
	if err != nil {
		t.Fatal(err)
	}
	v, err := root.Message("voting_parameters").Int("number_of_votes", 9)
	if err != nil {
		t.Fatal(err)
	}
	cases = root.Messages(field)
	if len(cases) == 0 {
		t.Fatalf("%s has no %s", file, field)
	}
	if testing.Short() && len(cases) > shortCases {
		cases = cases[:shortCases]
	}
	return cases, int(v)
}

// mustOf returns a function that unwraps a field read: the shared files are
// trusted, so a parse error is a test failure.
func mustOf[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// TestClosenessCases runs laplace_closeness_test_cases.textproto and
// gaussian_closeness_test_cases.textproto: the noisy outputs on raw_input and
// draws from the reference distribution with the given mean and variance,
// both rounded to the case's granularity, must be within the l2 tolerance
// (Google's closeness test, majority of 9 votes).
func TestClosenessCases(t *testing.T) {
	for _, f := range []struct {
		file string
		kind Kind
	}{
		{"laplace_closeness_test_cases.textproto", Laplace},
		{"gaussian_closeness_test_cases.textproto", Gaussian},
	} {
		cases, votes := loadCases(t, f.file, "distribution_closeness_test_case")
		for i, c := range cases {
			name := fmt.Sprintf("%v/%02d_%s", f.kind, i, c.String("name", ""))
			kind := f.kind
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				fl, in := mustOf[float64](t), mustOf[int64](t)
				ct := c.Message("closeness_test_parameters")
				sp := c.Message("noise_sampling_parameters")
				mean := fl(ct.Float("mean", 0))
				variance := fl(ct.Float("variance", 0))
				tol := fl(ct.Float("l2_tolerance", 0))
				gran := fl(ct.Float("granularity", 0))
				n := int(in(sp.Int("number_of_samples", 0)))
				raw := fl(sp.Float("raw_input", 0))
				p := Params{
					Epsilon: fl(sp.Float("epsilon", 0)),
					L0:      in(sp.Int("l0_sensitivity", 1)),
					LInf:    fl(sp.Float("linf_sensitivity", 0)),
				}
				if kind == Gaussian {
					p.Delta = fl(sp.Float("delta", 0))
				}
				m := testMech(t, kind, p, uint64(i))
				u := uniform(uint64(i))
				vote, accepted := 0, 0
				ok, err := dptest.RunBallot(votes, func() (bool, error) {
					vote++
					a, b := dptest.NewHistogram(gran), dptest.NewHistogram(gran)
					for j := 0; j < n; j++ {
						v, err := m.AddNoiseFloat(raw)
						if err != nil {
							return false, err
						}
						a.Add(v)
						if kind == Laplace {
							b.Add(dptest.ReferenceLaplace(u, mean, variance))
						} else {
							b.Add(dptest.ReferenceGaussian(u, mean, variance))
						}
					}
					ok := dptest.VerifyCloseness(a, b, tol)
					if ok {
						accepted++
					}
					return ok, nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					t.Errorf("noise on %v with %+v (scale %v) is not close to the reference with variance %v (%d votes)",
						raw, p, m.Scale(), variance, vote)
				}
				t.Logf("%d of %d votes accepted; scale %.6g (reference variance %.6g, ours %.6g)",
					accepted, vote, m.Scale(), variance, variance0(kind, m.Scale()))
			})
		}
	}
}

// TestCountDPCases runs count_dp_test_cases.textproto: a count and its
// neighbour (one more privacy unit's increments), noised with the integer
// path of each mechanism; the histograms of outputs must be
// (epsilon, delta + tolerance)-close in both directions.
//
// The discrete Laplace on integers is exactly tight (privacy loss epsilon at
// every bin on one side of the shift), so the statistic carries a positive
// sampling bias. Measured against an independent floating-point sampler of
// the same distribution, 7 of 30 votes exceed the 0.0035 tolerance of the
// "large epsilon" Laplace cases for the reference and for dpsql alike, so a
// vote there accepts with probability about 0.77, not the 0.9 the file
// states, and a 9-vote majority about 0.95. Fixed seeds keep CI
// deterministic; under -dp.crypto those cases may fail now and then.
func TestCountDPCases(t *testing.T) {
	cases, votes := loadCases(t, "count_dp_test_cases.textproto", "count_dp_test_case")
	for i, c := range cases {
		t.Run(fmt.Sprintf("%02d_%s", i, c.String("name", "")), func(t *testing.T) {
			t.Parallel()
			fl, in, ins := mustOf[float64](t), mustOf[int64](t), mustOf[[]int64](t)
			dp := c.Message("dp_test_parameters")
			sp := c.Message("count_sampling_parameters")
			kind, err := ParseKind(sp.Enum("noise_type", ""))
			if err != nil {
				t.Fatal(err)
			}
			p := Params{
				Epsilon: fl(sp.Float("epsilon", 0)),
				Delta:   fl(sp.Float("delta", 0)),
				L0:      in(sp.Int("max_partitions_contributed", 1)),
				LInf:    1,
			}
			var raw, neighbour int64
			for _, v := range ins(sp.Ints("raw_increment_by")) {
				raw += v
			}
			for _, v := range ins(sp.Ints("neighbour_raw_increment_by")) {
				neighbour += v
			}
			eps := fl(dp.Float("epsilon", 0))
			delta := fl(dp.Float("delta", 0))
			tol := fl(dp.Float("delta_tolerance", 0))
			n := int(in(sp.Int("number_of_samples", 0)))
			m := testMech(t, kind, p, uint64(100+i))
			worst, vote := 0.0, 0
			ok, err := dptest.RunBallot(votes, func() (bool, error) {
				vote++
				a, b := dptest.NewHistogram(0), dptest.NewHistogram(0)
				for j := 0; j < n; j++ {
					x, err := m.AddNoiseInt(raw)
					if err != nil {
						return false, err
					}
					y, err := m.AddNoiseInt(neighbour)
					if err != nil {
						return false, err
					}
					a.AddKey(float64(x))
					b.AddKey(float64(y))
				}
				worst = max(worst, dptest.DPTestValue(a, b, eps), dptest.DPTestValue(b, a, eps))
				return dptest.VerifyApproximateDP(a, b, eps, delta, tol), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				t.Errorf("counts %d and %d with %v noise %+v are not (%v, %v+%v)-DP", raw, neighbour, kind, p, eps, delta, tol)
			}
			t.Logf("%s: largest empirical delta over %d votes: %.5f (allowed %v + %v)", c.String("name", ""), vote, worst, delta, tol)
		})
	}
}

// variance0 is the variance of continuous noise with the given scale.
func variance0(kind Kind, scale float64) float64 {
	if kind == Laplace {
		return 2 * scale * scale
	}
	return scale * scale
}
