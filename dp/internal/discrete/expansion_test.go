package discrete

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/dpsql/dpsql/dp/internal/dptest"
	"github.com/dpsql/dpsql/dp/internal/securerand"
)

// bitByBitRatio is the comparison bernoulliRatio made before it read the
// expansion 64 digits at a time: one digit of num/den and one random bit per
// step, for num < den < 2^127. The tests below check that bernoulliRatio gives
// the same answer and consumes the same bits on the same stream.
func bitByBitRatio(src *securerand.Source, num, den u128) bool {
	x := num
	for {
		x = u128{x.hi<<1 | x.lo>>63, x.lo << 1}
		digit := !x.less(den)
		if digit {
			x = x.sub(den)
		}
		if src.Bit() != digit {
			return digit
		}
	}
}

// bitByBitFloat is BernoulliFloat one digit at a time, for p in (0, 1).
func bitByBitFloat(src *securerand.Source, p float64) bool {
	frac, exp := math.Frexp(p)
	for i := 0; i < -exp; i++ {
		if src.Bit() {
			return false
		}
	}
	mant := uint64(math.Ldexp(frac, 53))
	for i := 52; i >= 0; i-- {
		digit := mant>>uint(i)&1 == 1
		if src.Bit() != digit {
			return digit
		}
	}
	return false
}

// twin returns two sources over the same stream.
func twin(seed uint64) (*securerand.Source, *securerand.Source) {
	var key [32]byte
	key[0], key[1] = byte(seed), byte(seed>>8)
	return securerand.NewFromReader(rand.NewChaCha8(key)), securerand.NewFromReader(rand.NewChaCha8(key))
}

// sameRest checks that two sources are at the same place of one stream.
func sameRest(t *testing.T, a, b *securerand.Source, what string) {
	t.Helper()
	for i := 0; i < 80; i++ {
		if a.Bit() != b.Bit() {
			t.Fatalf("%s: the streams differ %d bits after the draw", what, i)
		}
	}
}

// ratioCases returns fractions num/den < 1 of every width bernoulliRatio
// handles: the edges of the 64-bit and the normalised 128-bit divisions, and
// random ones.
func ratioCases(r *rand.Rand) [][2]u128 {
	max127 := u128{1<<63 - 1, ^uint64(0)}
	cases := [][2]u128{
		{{0, 0}, {0, 1}}, {{0, 1}, {0, 2}}, {{0, 1}, {0, 3}}, {{0, 2}, {0, 3}},
		{{0, 1<<63 - 1}, {0, 1 << 63}}, {{0, 1}, {0, 1<<63 + 1}}, {{0, ^uint64(0) - 1}, {0, ^uint64(0)}},
		{{0, ^uint64(0)}, {1, 0}}, {{0, 1}, {1, 0}}, {{1, 0}, {1, 1}}, {{0, 12345}, max127},
		{max127.sub(u128{0, 1}), max127}, {{1<<62 - 1, ^uint64(0)}, {1 << 62, 0}},
		{{0, 3}, {0, 10}}, {{0, 7}, {0, 24}},
	}
	for i := 0; i < 3000; i++ {
		var den u128
		switch i % 4 {
		case 0: // below 2^64
			den = u128{0, r.Uint64() >> r.UintN(64)}
		case 1: // a few bits above 2^64, as a Gaussian's 2u^2
			den = u128{r.Uint64() >> (40 + r.UintN(24)), r.Uint64()}
		case 2: // up to 2^127
			den = u128{r.Uint64() >> (1 + r.UintN(63)), r.Uint64()}
		default: // a power of two or one next to it
			den = u128{0, 1}.shl(uint(r.IntN(63)))
			if r.IntN(2) == 0 {
				den = den.shl(uint(r.IntN(63)))
			}
			den = den.sub(u128{0, uint64(r.IntN(2))})
		}
		if den.isZero() {
			den = u128{0, 1}
		}
		num := randBelow(r, den)
		if r.IntN(8) == 0 {
			num = den.sub(u128{0, 1})
		}
		cases = append(cases, [2]u128{num, den})
	}
	return cases
}

// randBelow returns a uniform value below den, by rejection.
func randBelow(r *rand.Rand, den u128) u128 {
	n := toBig(den).BitLen()
	for {
		v := u128{r.Uint64(), r.Uint64()}
		if n <= 64 {
			v = u128{0, v.lo >> (64 - n)}
		} else {
			v.hi >>= 128 - n
		}
		if v.less(den) {
			return v
		}
	}
}

// TestExpansionDigits checks next64 against math/big: the 64 digits after
// each point of the expansion, and the remainder, for a few words each.
func TestExpansionDigits(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	two64 := new(big.Int).Lsh(big.NewInt(1), 64)
	for _, c := range ratioCases(r) {
		num, den := c[0], c[1]
		e := newExpansion(num, den)
		x, d := toBig(num), toBig(den)
		for w := 0; w < 4; w++ {
			got := e.next64()
			var q, m big.Int
			q.DivMod(new(big.Int).Mul(x, two64), d, &m)
			if !q.IsUint64() || q.Uint64() != got {
				t.Fatalf("%v/%v, word %d: next64 = %#x, want %#x", x, d, w, got, q.Uint64())
			}
			x = &m
		}
	}
}

// TestRatioSameAsBitByBit draws each fraction's Bernoulli on two copies of
// one stream, word at a time and bit by bit: same answers, same bits used.
func TestRatioSameAsBitByBit(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i, c := range ratioCases(r) {
		a, b := twin(uint64(i))
		for k := 0; k < 40; k++ {
			if got, want := bernoulliRatio(a, c[0], c[1]), bitByBitRatio(b, c[0], c[1]); got != want {
				t.Fatalf("%v/%v, draw %d: %v, bit by bit %v", c[0], c[1], k, got, want)
			}
		}
		sameRest(t, a, b, "ratio")
	}
}

// TestInvSameAsBitByBit checks bernoulliInv, which reads 1/k's first digits
// from a table for small k, the same way.
func TestInvSameAsBitByBit(t *testing.T) {
	for k := uint64(1); k < 100; k++ {
		a, b := twin(k)
		for i := 0; i < 200; i++ {
			want := k == 1 || bitByBitRatio(b, u128{0, 1}, u128{0, k})
			if got := bernoulliInv(a, k); got != want {
				t.Fatalf("1/%d, draw %d: %v, bit by bit %v", k, i, got, want)
			}
		}
		sameRest(t, a, b, "inverse")
	}
}

// TestBernoulliFloatSameAsBitByBit is the same check for BernoulliFloat.
func TestBernoulliFloatSameAsBitByBit(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	ps := []float64{0.5, 0.25, 1.0 / 3, 0.999, math.Nextafter(1, 0), 1e-300, 5e-324, math.Ldexp(1, -64), math.Ldexp(1, -65), math.Ldexp(3, -130)}
	for i := 0; i < 2000; i++ {
		ps = append(ps, r.Float64(), math.Ldexp(r.Float64(), -r.IntN(200)))
	}
	for i, p := range ps {
		if !(p > 0 && p < 1) {
			continue
		}
		a, b := twin(uint64(i))
		for k := 0; k < 40; k++ {
			if got, want := BernoulliFloat(a, p), bitByBitFloat(b, p); got != want {
				t.Fatalf("BernoulliFloat(%v), draw %d: %v, bit by bit %v", p, k, got, want)
			}
		}
		sameRest(t, a, b, "float")
	}
}

// TestRatioProbability checks num/den >= 1 and a few fractions by
// frequency (the tests above show the bits are read as before, this shows
// what they mean).
func TestRatioProbability(t *testing.T) {
	src := dptest.Seeded(t, 9)
	if !bernoulliRatio(src, u128{0, 5}, u128{0, 5}) || !bernoulliRatio(src, u128{1, 0}, u128{0, 5}) {
		t.Fatal("a ratio of at least 1 must always be true")
	}
	const n = 200000
	for _, c := range [][2]u128{{{0, 1}, {0, 3}}, {{0, 2}, {0, 7}}, {{1, 0}, {3, 0}}, {{0, 1 << 63}, {1, 1}}} {
		hits := 0
		for i := 0; i < n; i++ {
			if bernoulliRatio(src, c[0], c[1]) {
				hits++
			}
		}
		want, _ := new(big.Rat).SetFrac(toBig(c[0]), toBig(c[1])).Float64()
		if got := float64(hits) / n; math.Abs(got-want) > 6*math.Sqrt(want*(1-want)/n) {
			t.Errorf("%v/%v: %v, want %v", c[0], c[1], got, want)
		}
	}
}
