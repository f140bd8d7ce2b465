package agg

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/dpsql/dpsql/dp/internal/dptest"
	"github.com/dpsql/dpsql/dp/noise"
)

// The statistical cases (dp/internal/dptest/testdata/dp_statistical) were
// calibrated by their authors for number_of_samples outputs per input and a
// majority of 9 votes: each vote accepts a correct mechanism with probability
// at least 0.9 and rejects, with probability at least 0.9, one whose
// neighbours are further apart than its sensitivity allows by 18.5% (sums),
// 37.5% (means) or 100% (standard deviations), or whose epsilon is 5%
// (quantiles) or 1% (bounds) larger than claimed.
//
// With -agg.full every case runs exactly so (number_of_samples, the given
// delta_tolerance, a majority of 9 votes that stops once decided). With exact
// discrete noise (1 to 30 µs per sample) that takes over an hour on two
// cores, so by default every case runs a reduced protocol:
//
//   - Cases with a granularity (sums, means, standard deviations) draw
//     number_of_samples/10 samples into bins 10 times wider. The expected
//     count per bin is then as calibrated, so the statistic sum over bins of
//     max(0, A - e^eps B) has about its calibrated mean; its spread grows by
//     about sqrt(10), which a tolerance twice the given one mostly covers.
//     Measured in two verbose runs of all 218 cases: every first reduced
//     vote passed; the largest statistic was 0.955 of the reduced tolerance,
//     the next largest 0.83, most below 0.6.
//   - Cases with few dense bins (32 buckets for quantiles, the handful of
//     possible bounds) keep their bins and draw number_of_samples/10
//     samples, with the tolerance times sqrt(10) (the statistic's error
//     scales as 1/sqrt(n)), when denseReducible says that stays in the
//     calibrated regime; otherwise (quantiles at eps = 0.1) they keep the
//     full sample count and tolerance.
//
// A case whose first reduced vote fails runs a majority ballot of 9 reduced
// votes before it is reported, so a correct mechanism fails a case with
// probability about 0.1 * 0.001. The price is power against small
// violations: TestReducedDPTestRejectsBrokenSum measures it (noise for twice
// epsilon is always rejected; a 17.5% underestimate is still caught with
// Laplace noise but not always with Gaussian noise), and the audits in
// audit_test.go add targeted checks.
var fullDPCases = flag.Bool("agg.full", false, "run the shared statistical DP cases with their full sample counts and 9-vote majority (hours)")

const sampleDivisor = 10

// Tolerance factors of the reduced runs. Cases with a granularity also get
// bins sampleDivisor times wider, which keeps the expected count per bin, and
// so the expected statistic, as calibrated; its spread grows by about
// sqrt(sampleDivisor), which granularTolFactor covers. Cases with few dense
// bins (32 buckets, or the handful of possible bounds) keep their bins; the
// statistic's error there scales as 1/sqrt(n), which denseTolFactor covers.
const (
	granularTolFactor = 2
	denseTolFactor    = 3.1622776601683795 // sqrt(sampleDivisor)
)

// denseReducible reports whether a case without a granularity keeps its
// calibration with sampleDivisor times fewer samples. In a bin where the two
// distributions are equal, max(0, A - e^eps B) is negligible only while the
// bin's sampling error is small against (e^eps - 1) B; with p ~ 1/bins that
// needs n p (e^eps - 1)^2 well above 1. The reduced run keeps that product
// at least 50 (it is about 3000 for eps = ln 3 and 32 buckets at n = 25000),
// and otherwise (the quantile cases with eps = 0.1) uses the full n.
func denseReducible(c *dpCase) bool {
	bins := float64(max(c.buckets, 16))
	return float64(c.n/sampleDivisor)/bins*math.Pow(math.Expm1(c.eps), 2) >= 50
}

var logStats = flag.Bool("agg.stats", false, "log each vote's statistic relative to the tolerance")

// shortDPCases is how many cases of each file run under -short.
const shortDPCases = 2

// dpCase is one shared statistical case, ready to sample.
type dpCase struct {
	n                   int     // samples per input and vote
	eps, delta, tol     float64 // the test's parameters
	granularity         float64 // histogram granularity (0: exact keys)
	buckets             int     // > 0: bucketize into [lower, upper] instead
	lower, upper        float64
	sampleA, sampleB    func() ([]float64, error)
	outputs             int // number of outputs per sample (ranks)
	stats               func(ratio float64)
	firstVotes, retries *atomic.Int64
}

// vote draws c.n samples of each input and tests every output.
func (c *dpCase) vote() (bool, error) {
	ha := make([]*dptest.Histogram, c.outputs)
	hb := make([]*dptest.Histogram, c.outputs)
	for i := range ha {
		ha[i], hb[i] = dptest.NewHistogram(c.granularity), dptest.NewHistogram(c.granularity)
	}
	add := func(h []*dptest.Histogram, s []float64) {
		for i, x := range s {
			if c.buckets > 0 {
				h[i].AddKey(bucketize(x, c.lower, c.upper, c.buckets))
			} else {
				h[i].Add(x)
			}
		}
	}
	for j := 0; j < c.n; j++ {
		a, err := c.sampleA()
		if err != nil {
			return false, err
		}
		b, err := c.sampleB()
		if err != nil {
			return false, err
		}
		add(ha, a)
		add(hb, b)
	}
	worst := 0.0
	for i := range ha {
		v := math.Max(dptest.DPTestValue(ha[i], hb[i], c.eps), dptest.DPTestValue(hb[i], ha[i], c.eps))
		worst = math.Max(worst, (v-c.delta)/c.tol)
	}
	if c.stats != nil {
		c.stats(worst)
	}
	return worst < 1, nil
}

// bucketize maps x in [lower, upper] to one of n equal buckets (as Google's
// quantile DP tests do).
func bucketize(x, lower, upper float64, n int) float64 {
	b := math.Floor((x - lower) / (upper - lower) * float64(n))
	return math.Min(math.Max(b, 0), float64(n-1))
}

// run runs the case: the full protocol under -agg.full, otherwise one
// reduced vote and, if it fails, a 9-vote reduced ballot.
func (c *dpCase) run(t *testing.T, votes int) {
	t.Helper()
	if *fullDPCases {
		ok, err := dptest.RunBallot(votes, c.vote)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Errorf("rejected by the majority of %d votes (n=%d, eps=%v, delta=%v, tolerance=%v)", votes, c.n, c.eps, c.delta, c.tol)
		}
		return
	}
	ok, err := c.vote()
	if err != nil {
		t.Fatal(err)
	}
	c.firstVotes.Add(1)
	if ok {
		return
	}
	c.retries.Add(1)
	t.Logf("first reduced vote failed; running a majority of %d", votes)
	ok, err = dptest.RunBallot(votes, c.vote)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Errorf("rejected by the first vote and by the majority of %d votes (n=%d, eps=%v, delta=%v, tolerance=%v)", votes, c.n, c.eps, c.delta, c.tol)
	}
}

// caseFile loads one shared file.
func caseFile(t *testing.T, file, field string) ([]*dptest.Message, int) {
	t.Helper()
	root, err := dptest.ParseTextProtoFile(filepath.Join(dptest.DataDir(t), file))
	if err != nil {
		t.Fatal(err)
	}
	v, err := root.Message("voting_parameters").Int("number_of_votes", 9)
	if err != nil {
		t.Fatal(err)
	}
	cases := root.Messages(field)
	if len(cases) == 0 {
		t.Fatalf("%s has no %s", file, field)
	}
	if testing.Short() && len(cases) > shortDPCases {
		cases = cases[:shortDPCases]
	}
	return cases, int(v)
}

// reader unwraps field reads: the shared files are trusted data, so a parse
// error is a test failure.
type reader struct {
	t *testing.T
	m *dptest.Message
}

func (r reader) f(name string) float64 {
	r.t.Helper()
	v, err := r.m.Float(name, 0)
	if err != nil {
		r.t.Fatal(err)
	}
	return v
}

func (r reader) i(name string, def int64) int64 {
	r.t.Helper()
	v, err := r.m.Int(name, def)
	if err != nil {
		r.t.Fatal(err)
	}
	return v
}

func (r reader) fs(name string) []float64 {
	r.t.Helper()
	v, err := r.m.Floats(name)
	if err != nil {
		r.t.Fatal(err)
	}
	return v
}

func (r reader) is(name string) []int64 {
	r.t.Helper()
	v, err := r.m.Ints(name)
	if err != nil {
		r.t.Fatal(err)
	}
	return v
}

func (r reader) kind() noise.Kind {
	r.t.Helper()
	k, err := noise.ParseKind(r.m.Enum("noise_type", ""))
	if err != nil {
		r.t.Fatal(err)
	}
	return k
}

// newCase reads the dp_test_parameters and the sample count.
func newCase(t *testing.T, c *dptest.Message, sampling string, first, retries *atomic.Int64) (*dpCase, reader) {
	t.Helper()
	dp := reader{t, c.Message("dp_test_parameters")}
	sp := reader{t, c.Message(sampling)}
	dc := &dpCase{
		n:           int(sp.i("number_of_samples", 0)),
		eps:         dp.f("epsilon"),
		delta:       dp.f("delta"),
		tol:         dp.f("delta_tolerance"),
		granularity: dp.f("granularity"),
		buckets:     int(dp.i("num_of_buckets", 0)),
		outputs:     1,
		firstVotes:  first,
		retries:     retries,
	}
	if !*fullDPCases {
		switch {
		case dc.granularity > 0:
			dc.n /= sampleDivisor
			dc.granularity *= sampleDivisor
			dc.tol *= granularTolFactor
		case denseReducible(dc):
			dc.n /= sampleDivisor
			dc.tol *= denseTolFactor
		}
	}
	if *logStats {
		name := t.Name()
		dc.stats = func(r float64) { t.Logf("STAT %s %.3f", name, r) }
	}
	return dc, sp
}

// runFile runs every case of a file in parallel subtests; build returns the
// two samplers of a case.
func runFile(t *testing.T, file, field, sampling string, build func(t *testing.T, c *dpCase, sp reader)) {
	cases, votes := caseFile(t, file, field)
	var first, retries atomic.Int64
	t.Cleanup(func() {
		if n := first.Load(); n > 0 {
			t.Logf("%s: %d cases, first reduced vote passed in %d (%.1f%%)", file, n, n-retries.Load(), 100*float64(n-retries.Load())/float64(n))
		}
	})
	for i, c := range cases {
		t.Run(fmt.Sprintf("%02d_%s", i, c.String("name", "")), func(t *testing.T) {
			t.Parallel()
			dc, sp := newCase(t, c, sampling, &first, &retries)
			build(t, dc, sp)
			dc.run(t, votes)
		})
	}
}

func scalar(f func() (float64, error)) func() ([]float64, error) {
	return func() ([]float64, error) {
		v, err := f()
		return []float64{v}, err
	}
}

func TestSharedBoundedSumCases(t *testing.T) {
	runFile(t, "bounded_sum_dp_test_cases.textproto", "bounded_sum_dp_test_case", "bounded_sum_sampling_parameters",
		func(t *testing.T, c *dpCase, sp reader) {
			s, err := NewBoundedSum(SumOptions{
				Epsilon: sp.f("epsilon"), Delta: sp.f("delta"), NoiseKind: sp.kind(),
				MaxPartitionsContributed: sp.i("max_partitions_contributed", 1),
				Lower:                    sp.f("lower_bound"), Upper: sp.f("upper_bound"),
			})
			if err != nil {
				t.Fatal(err)
			}
			sampler := func(entries []float64) func() ([]float64, error) {
				return scalar(func() (float64, error) {
					a := s.Fresh()
					for _, e := range entries {
						if err := a.Add(e); err != nil {
							return 0, err
						}
					}
					return a.Result()
				})
			}
			c.sampleA, c.sampleB = sampler(sp.fs("raw_entry")), sampler(sp.fs("neighbour_raw_entry"))
		})
}

func TestSharedLongBoundedSumCases(t *testing.T) {
	runFile(t, "long_bounded_sum_dp_test_cases.textproto", "long_bounded_sum_dp_test_case", "long_bounded_sum_sampling_parameters",
		func(t *testing.T, c *dpCase, sp reader) {
			s, err := NewBoundedSumInt(IntSumOptions{
				Epsilon: sp.f("epsilon"), Delta: sp.f("delta"), NoiseKind: sp.kind(),
				MaxPartitionsContributed: sp.i("max_partitions_contributed", 1),
				Lower:                    sp.i("lower_bound", 0), Upper: sp.i("upper_bound", 0),
			})
			if err != nil {
				t.Fatal(err)
			}
			sampler := func(entries []int64) func() ([]float64, error) {
				return scalar(func() (float64, error) {
					a := s.Fresh()
					for _, e := range entries {
						if err := a.Add(e); err != nil {
							return 0, err
						}
					}
					v, err := a.Result()
					return float64(v), err
				})
			}
			c.sampleA, c.sampleB = sampler(sp.is("raw_entry")), sampler(sp.is("neighbour_raw_entry"))
		})
}

func TestSharedBoundedMeanCases(t *testing.T) {
	runFile(t, "bounded_mean_dp_test_cases.textproto", "bounded_mean_dp_test_case", "bounded_mean_sampling_parameters",
		func(t *testing.T, c *dpCase, sp reader) {
			m, err := NewBoundedMean(MeanOptions{
				Epsilon: sp.f("epsilon"), Delta: sp.f("delta"), NoiseKind: sp.kind(),
				MaxPartitionsContributed:     sp.i("max_partitions_contributed", 1),
				MaxContributionsPerPartition: sp.i("max_contributions_per_partition", 1),
				Lower:                        sp.f("lower_bound"), Upper: sp.f("upper_bound"),
			})
			if err != nil {
				t.Fatal(err)
			}
			sampler := func(entries []float64) func() ([]float64, error) {
				return scalar(func() (float64, error) {
					a := m.Fresh()
					for _, e := range entries {
						if err := a.Add(e); err != nil {
							return 0, err
						}
					}
					return a.Result()
				})
			}
			c.sampleA, c.sampleB = sampler(sp.fs("raw_entry")), sampler(sp.fs("neighbour_raw_entry"))
		})
}

func TestSharedBoundedStdDevCases(t *testing.T) {
	runFile(t, "bounded_stdv_dp_test_cases.textproto", "bounded_stdv_dp_test_case", "bounded_stdv_sampling_parameters",
		func(t *testing.T, c *dpCase, sp reader) {
			s, err := NewBoundedStdDev(VarianceOptions{
				Epsilon: sp.f("epsilon"), Delta: sp.f("delta"), NoiseKind: sp.kind(),
				MaxPartitionsContributed:     sp.i("max_partitions_contributed", 1),
				MaxContributionsPerPartition: sp.i("max_contributions_per_partition", 1),
				Lower:                        sp.f("lower_bound"), Upper: sp.f("upper_bound"),
			})
			if err != nil {
				t.Fatal(err)
			}
			sampler := func(entries []float64) func() ([]float64, error) {
				return scalar(func() (float64, error) {
					a := s.Fresh()
					for _, e := range entries {
						if err := a.Add(e); err != nil {
							return 0, err
						}
					}
					return a.Result()
				})
			}
			c.sampleA, c.sampleB = sampler(sp.fs("raw_entry")), sampler(sp.fs("neighbour_raw_entry"))
		})
}

func TestSharedBoundedQuantilesCases(t *testing.T) {
	runFile(t, "bounded_quantiles_dp_test_cases.textproto", "bounded_quantiles_dp_test_case", "bounded_quantiles_sampling_parameters",
		func(t *testing.T, c *dpCase, sp reader) {
			lower, upper := sp.f("lower_bound"), sp.f("upper_bound")
			q, err := NewQuantiles(QuantilesOptions{
				Epsilon: sp.f("epsilon"), Delta: sp.f("delta"), NoiseKind: sp.kind(),
				MaxPartitionsContributed:     sp.i("max_partitions_contributed", 1),
				MaxContributionsPerPartition: sp.i("max_contributions_per_partition", 1),
				Lower:                        lower, Upper: upper,
				TreeHeight:      int(sp.i("tree_height", 0)),
				BranchingFactor: int(sp.i("branching_factor", 0)),
			})
			if err != nil {
				t.Fatal(err)
			}
			ranks := sp.fs("rank")
			c.outputs, c.lower, c.upper = len(ranks), lower, upper
			sampler := func(entries []float64) func() ([]float64, error) {
				return func() ([]float64, error) {
					a := q.Fresh()
					for _, e := range entries {
						if err := a.Add(e); err != nil {
							return nil, err
						}
					}
					return a.Result(ranks...)
				}
			}
			c.sampleA, c.sampleB = sampler(sp.fs("raw_entry")), sampler(sp.fs("neighbour_raw_entry"))
		})
}

func TestSharedApproximateBoundsCases(t *testing.T) {
	runFile(t, "approximate_bounds_dp_test_cases.textproto", "approximate_bounds_dp_test_case", "approximate_bounds_sampling_parameters",
		func(t *testing.T, c *dpCase, sp reader) {
			if k := sp.kind(); k != noise.Laplace {
				t.Fatalf("noise_type %v: approximate bounds use Laplace noise only", k)
			}
			if base := sp.f("base"); base != 2 {
				t.Fatalf("base %v: bins are powers of two", base)
			}
			b, err := NewApproxBounds(BoundsOptions{
				Epsilon:          sp.f("epsilon"),
				MaxContributions: sp.i("max_contributions", 1),
				Scale:            sp.f("scale"),
				NumBins:          int(sp.i("number_of_bins", 0)),
			})
			if err != nil {
				t.Fatal(err)
			}
			// Outputs are exact pairs of bounds (powers of two) or a failure:
			// key them exactly.
			c.granularity = 0
			sampler := func(entries []float64) func() ([]float64, error) {
				return scalar(func() (float64, error) {
					a := b.Fresh()
					for _, e := range entries {
						if err := a.Add(e); err != nil {
							return 0, err
						}
					}
					lo, hi, err := a.Result()
					if err != nil {
						if errors.Is(err, ErrNotEnoughData) {
							return math.Inf(1), nil
						}
						return 0, err
					}
					return lo*4096 + hi, nil // both are 0 or ±2^k with |k| small
				})
			}
			c.sampleA, c.sampleB = sampler(sp.fs("raw_entry")), sampler(sp.fs("neighbour_raw_entry"))
		})
}

// TestReducedDPTestRejectsBrokenSum checks that the reduced runs keep power:
// on four bounded_sum cases (default parameters, Laplace and Gaussian, small
// and large sums) a sum whose noise is calibrated for twice the case's
// epsilon (as if the sensitivity were underestimated by half) must be
// rejected by a reduced vote. The rejection rate for an underestimate by the
// cases' calibrated 17.5% is logged, as a measure of the lost power.
func TestReducedDPTestRejectsBrokenSum(t *testing.T) {
	if *fullDPCases {
		t.Skip("checks the reduced runs")
	}
	all, _ := caseFile(t, "bounded_sum_dp_test_cases.textproto", "bounded_sum_dp_test_case")
	if len(all) < 34 {
		t.Skip("-short: needs cases 5, 13, 23 and 33")
	}
	for _, i := range []int{5, 13, 23, 33} {
		c := all[i]
		t.Run(fmt.Sprintf("%02d_%s", i, c.String("name", "")), func(t *testing.T) {
			t.Parallel()
			for _, factor := range []float64{2, 1.175} {
				var first, retries atomic.Int64
				dc, sp := newCase(t, c, "bounded_sum_sampling_parameters", &first, &retries)
				s, err := NewBoundedSum(SumOptions{
					Epsilon: factor * sp.f("epsilon"), Delta: sp.f("delta"), NoiseKind: sp.kind(),
					MaxPartitionsContributed: sp.i("max_partitions_contributed", 1),
					Lower:                    sp.f("lower_bound"), Upper: sp.f("upper_bound"),
				})
				if err != nil {
					t.Fatal(err)
				}
				sampler := func(entries []float64) func() ([]float64, error) {
					return scalar(func() (float64, error) {
						a := s.Fresh()
						for _, e := range entries {
							_ = a.Add(e)
						}
						return a.Result()
					})
				}
				dc.sampleA, dc.sampleB = sampler(sp.fs("raw_entry")), sampler(sp.fs("neighbour_raw_entry"))
				var ratio float64
				dc.stats = func(r float64) { ratio = r }
				rejected := 0
				const votes = 3
				for v := 0; v < votes; v++ {
					ok, err := dc.vote()
					if err != nil {
						t.Fatal(err)
					}
					if !ok {
						rejected++
					}
				}
				t.Logf("noise for %.3g x epsilon: %d of %d reduced votes rejected (last statistic/tolerance %.2f)", factor, rejected, votes, ratio)
				if factor == 2 && rejected < 2 {
					t.Errorf("noise for twice epsilon passed %d of %d reduced votes", votes-rejected, votes)
				}
			}
		})
	}
}
