package securerand

import (
	"bytes"
	"math"
	"testing"
)

// TestUint64nUniform checks Uint64n on a non-power-of-two range with a
// chi-square test (9 degrees of freedom, critical value 37.7 at 1e-6).
func TestUint64nUniform(t *testing.T) {
	s := New()
	const n, k = 900000, 10
	var counts [k]int
	for i := 0; i < n; i++ {
		counts[s.Uint64n(k)]++
	}
	stat := 0.0
	for _, c := range counts {
		d := float64(c) - n/k
		stat += d * d / (n / k)
	}
	if stat > 37.7 {
		t.Errorf("chi-square %v over counts %v", stat, counts)
	}
}

// TestBitBalanced checks that Bit is fair within 6 standard errors.
func TestBitBalanced(t *testing.T) {
	s := New()
	const n = 1 << 20
	ones := 0
	for i := 0; i < n; i++ {
		if s.Bit() {
			ones++
		}
	}
	if d := math.Abs(float64(ones) - n/2); d > 6*math.Sqrt(n/4) {
		t.Errorf("%d ones in %d bits", ones, n)
	}
}

// TestFromReaderIsDeterministic checks that NewFromReader replays a stream.
func TestFromReaderIsDeterministic(t *testing.T) {
	stream := bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7, 8}, 200)
	a, b := NewFromReader(bytes.NewReader(stream)), NewFromReader(bytes.NewReader(stream))
	for i := 0; i < 50; i++ {
		if a.Uint64() != b.Uint64() {
			t.Fatal("two sources over the same stream differ")
		}
	}
	if got := NewFromReader(bytes.NewReader(stream)).Uint64(); got != 0x0807060504030201 {
		t.Errorf("Uint64 = %#x, want little-endian 0x0807060504030201", got)
	}
}
