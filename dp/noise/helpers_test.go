package noise

import (
	"encoding/binary"
	"flag"
	"math/rand/v2"
	"testing"

	"github.com/dpsql/dpsql/dp/internal/securerand"
)

// cryptoSource makes the statistical suites draw from crypto/rand, like
// production, instead of fixed seeds. With fixed seeds (the default) a run is
// reproducible; each case accepts a correct mechanism with probability at
// least 0.999 (majority of 9 votes, each accepting with probability >= 0.9),
// so a seed that passes is not luck.
var cryptoSource = flag.Bool("dp.crypto", false, "draw test noise from crypto/rand instead of fixed seeds")

// testSource returns a reproducible Source for the named test, or the
// production source under -dp.crypto.
func testSource(t testing.TB, seed uint64) *securerand.Source {
	if *cryptoSource {
		return securerand.New()
	}
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	copy(key[8:], t.Name())
	return securerand.NewFromReader(rand.NewChaCha8(key))
}

// testMech builds a mechanism over a test source.
func testMech(t testing.TB, kind Kind, p Params, seed uint64) Mechanism {
	t.Helper()
	var m Mechanism
	var err error
	switch kind {
	case Laplace:
		m, err = newLaplace(p, testSource(t, seed))
	case Gaussian:
		m, err = newGaussian(p, testSource(t, seed))
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// uniform returns a reproducible uniform [0,1) generator for reference
// distributions.
func uniform(seed uint64) func() float64 {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	return r.Float64
}
