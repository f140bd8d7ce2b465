package noise

import (
	"math"
	"testing"
)

func benchMech(b *testing.B, k Kind, p Params, int bool) {
	m, err := New(k, p)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if int {
			_, _ = m.AddNoiseInt(int64(i))
		} else {
			_, _ = m.AddNoiseFloat(float64(i))
		}
	}
}

var (
	benchLaplace  = Params{Epsilon: math.Log(3), L0: 1, LInf: 1}
	benchGaussian = Params{Epsilon: math.Log(3), Delta: 1e-5, L0: 1, LInf: 1}
)

func BenchmarkLaplaceFloat(b *testing.B)  { benchMech(b, Laplace, benchLaplace, false) }
func BenchmarkLaplaceInt(b *testing.B)    { benchMech(b, Laplace, benchLaplace, true) }
func BenchmarkGaussianFloat(b *testing.B) { benchMech(b, Gaussian, benchGaussian, false) }
func BenchmarkGaussianInt(b *testing.B)   { benchMech(b, Gaussian, benchGaussian, true) }
