package discrete

import (
	"testing"

	"github.com/dpsql/dpsql/dp/internal/dptest"
)

// The exact samplers alone, on a reproducible stream (the production
// stream's cost, crypto/rand, is in dp/noise's benchmarks).
func BenchmarkLaplaceSample(b *testing.B) {
	scale, _ := RoundUp(10)
	d, src := Laplace{Scale: scale}, dptest.Seeded(b, 1)
	for b.Loop() {
		d.Sample(src)
	}
}

func BenchmarkGaussianSample(b *testing.B) {
	sigma, _ := RoundUp(10)
	d, src := Gaussian{Sigma: sigma}, dptest.Seeded(b, 1)
	for b.Loop() {
		d.Sample(src)
	}
}
