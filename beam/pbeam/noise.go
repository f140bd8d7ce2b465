package pbeam

import (
	"crypto/rand"
	"encoding/binary"

	"github.com/dpsql/dpsql/dp/noise"
)

// NoiseKind is the kind of noise an aggregation adds: LaplaceNoise{} (the
// default) or GaussianNoise{}.
type NoiseKind interface {
	kind() noise.Kind
}

// LaplaceNoise adds Laplace noise: epsilon-DP, calibrated to the L1
// sensitivity MaxPartitionsContributed * (the largest contribution to one
// partition).
type LaplaceNoise struct{}

func (LaplaceNoise) kind() noise.Kind { return noise.Laplace }

// GaussianNoise adds Gaussian noise from the analytic Gaussian mechanism:
// (epsilon, delta)-DP with delta > 0, calibrated to the L2 sensitivity
// sqrt(MaxPartitionsContributed) * (the largest contribution to one partition).
type GaussianNoise struct{}

func (GaussianNoise) kind() noise.Kind { return noise.Gaussian }

// noiseKindOf returns the noise of a params struct, Laplace when unset.
func noiseKindOf(k NoiseKind) noise.Kind {
	switch k.(type) {
	case GaussianNoise, *GaussianNoise:
		return noise.Gaussian
	}
	return noise.Laplace // nil, LaplaceNoise{}, *LaplaceNoise (checkNoiseKind refuses others)
}

// TestMode makes a pipeline release exact values, for tests of the
// pipeline's logic. Its results are NOT differentially private.
type TestMode int

const (
	// TestModeDisabled is the default: results are differentially private.
	TestModeDisabled TestMode = iota
	// TestModeWithContributionBounding adds no noise and keeps every
	// non-empty partition, but bounds contributions (partitions per unit,
	// values per partition, clamping) as the private pipeline does.
	TestModeWithContributionBounding
	// TestModeWithoutContributionBounding adds no noise, keeps every non-empty
	// partition and bounds nothing: sums and means are the plain ones.
	TestModeWithoutContributionBounding
)

func (m TestMode) enabled() bool { return m != TestModeDisabled }

// bounding reports whether contributions are bounded in this mode.
func (m TestMode) bounding() bool { return m != TestModeWithoutContributionBounding }

// secureSeed draws the key of the sampling hash from crypto/rand.
func secureSeed() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("pbeam: crypto/rand failed: " + err.Error())
	}
	return binary.LittleEndian.Uint64(b[:])
}
