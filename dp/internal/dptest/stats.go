package dptest

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpsql/dpsql/dp/internal/securerand"
)

// Histogram counts samples rounded to a granularity.
type Histogram struct {
	granularity float64
	counts      map[uint64]int64 // by binKey: a uint64 key hashes faster than a float64
	n           int64
}

// binKey is x's bin in the map: its bits, with -0 counted as 0 (as a float64
// key would) and every NaN in one bin.
func binKey(x float64) uint64 {
	if x == 0 {
		return 0
	}
	if x != x {
		return math.Float64bits(math.NaN())
	}
	return math.Float64bits(x)
}

// NewHistogram returns an empty histogram that rounds samples to the
// nearest multiple of granularity (0 or less: no rounding).
func NewHistogram(granularity float64) *Histogram {
	return &Histogram{granularity: granularity, counts: make(map[uint64]int64)}
}

// Add counts one sample.
func (h *Histogram) Add(x float64) {
	h.counts[binKey(RoundToMultiple(x, h.granularity))]++
	h.n++
}

// AddKey counts one sample in the exact bin x.
func (h *Histogram) AddKey(x float64) {
	h.counts[binKey(x)]++
	h.n++
}

// N returns the number of samples.
func (h *Histogram) N() int64 { return h.n }

// Count returns the number of samples in the bin of x.
func (h *Histogram) Count(x float64) int64 {
	return h.counts[binKey(RoundToMultiple(x, h.granularity))]
}

// RoundToMultiple rounds x to the nearest multiple of g (ties away from
// zero); g <= 0 returns x.
func RoundToMultiple(x, g float64) float64 {
	if g <= 0 {
		return x
	}
	return math.Round(x/g) * g
}

// DPTestValue returns sum over bins of max(0, A(x) - e^eps B(x)), with A and
// B the sample frequencies: an estimate of the smallest delta for which the
// distributions behind a and b are (eps, delta)-DP in the direction a
// versus b.
func DPTestValue(a, b *Histogram, eps float64) float64 {
	e := math.Exp(eps)
	na, nb := float64(a.n), float64(b.n)
	v := 0.0
	for x, ca := range a.counts {
		d := float64(ca)/na - e*float64(b.counts[x])/nb
		if d > 0 {
			v += d
		}
	}
	return v
}

// VerifyApproximateDP reports whether both test values (a versus b and b
// versus a) are below delta + tolerance.
func VerifyApproximateDP(a, b *Histogram, eps, delta, tolerance float64) bool {
	return DPTestValue(a, b, eps) < delta+tolerance && DPTestValue(b, a, eps) < delta+tolerance
}

// VerifyCloseness reports whether the distributions behind a and b (equal
// sample counts) are within l2 distance tolerance/2, with an error
// probability of at most 4014/(n t^2) as in Google's statistical tests: the
// squared l2 distance is estimated without bias from self- and
// cross-collision counts.
func VerifyCloseness(a, b *Histogram, tolerance float64) bool {
	n := float64(a.n)
	var selfA, selfB, cross float64
	for _, c := range a.counts {
		selfA += float64(c) * float64(c-1) / 2
	}
	for _, c := range b.counts {
		selfB += float64(c) * float64(c-1) / 2
	}
	for x, ca := range a.counts {
		cross += float64(ca) * float64(b.counts[x])
	}
	test := selfA + selfB - ((n-1)/n)*cross
	threshold := (tolerance * (n - 1)) * (tolerance * n) / 4
	return test < threshold
}

// RunBallot calls vote until a majority of votes (out of votes) agree and
// returns that majority; it stops at the first error.
func RunBallot(votes int, vote func() (bool, error)) (bool, error) {
	if votes < 1 {
		return false, errors.New("dptest: RunBallot needs at least one vote")
	}
	accept, reject := 0, 0
	for max(accept, reject) <= votes/2 {
		ok, err := vote()
		if err != nil {
			return false, err
		}
		if ok {
			accept++
		} else {
			reject++
		}
	}
	return accept > reject, nil
}

// ReferenceLaplace draws from the continuous Laplace distribution with the
// given mean and variance, using uniform draws in [0, 1) from u. It is a
// floating-point reference for tests, not a private mechanism.
func ReferenceLaplace(u func() float64, mean, variance float64) float64 {
	b := math.Sqrt(variance / 2)
	e := -b * math.Log(1-u())
	if u() < 0.5 {
		return mean - e
	}
	return mean + e
}

// ReferenceGaussian draws from the normal distribution with the given mean
// and variance (Box-Muller on draws from u); a test reference only.
func ReferenceGaussian(u func() float64, mean, variance float64) float64 {
	r := math.Sqrt(-2 * math.Log(1-u()))
	return mean + math.Sqrt(variance)*r*math.Cos(2*math.Pi*u())
}

// ModuleRoot returns the directory holding go.mod, searching upwards from
// the working directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("dptest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// DataDir returns the folder of the statistical test cases, which live in the
// repository at dp/internal/dptest/testdata/dp_statistical (copied from
// google/differential-privacy with their licence; see the README there). It
// fails the test if the folder is missing, since every checkout has it.
func DataDir(t testing.TB) string {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "dp", "internal", "dptest", "testdata", "dp_statistical")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("statistical test cases not found at %s (%v); they are part of the repository", dir, err)
	}
	return dir
}

// Seeded returns a reproducible randomness source for a test: ChaCha8 keyed
// by seed and the test's name, so that two tests never share a stream.
func Seeded(t testing.TB, seed uint64) *securerand.Source {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	copy(key[8:], t.Name())
	return securerand.NewFromReader(rand.NewChaCha8(key))
}
