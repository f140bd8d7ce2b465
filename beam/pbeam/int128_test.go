package pbeam

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

func TestInt128MatchesBigInt(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var a, b int128
	want, wantB := new(big.Int), new(big.Int)
	for i := 0; i < 100000; i++ {
		x := r.Int64()
		if r.IntN(2) == 0 {
			x = -x
		}
		if i%1000 == 0 {
			x = math.MinInt64
		}
		if i%2 == 0 {
			a = a.addInt64(x)
			want.Add(want, big.NewInt(x))
		} else {
			b = b.addInt64(x)
			wantB.Add(wantB, big.NewInt(x))
		}
	}
	if a.big().Cmp(want) != 0 || b.big().Cmp(wantB) != 0 {
		t.Fatalf("int128 sums %v %v, want %v %v", a.big(), b.big(), want, wantB)
	}
	if got := a.add(b).big(); got.Cmp(new(big.Int).Add(want, wantB)) != 0 {
		t.Fatalf("int128 add %v, want %v", got, new(big.Int).Add(want, wantB))
	}
}
