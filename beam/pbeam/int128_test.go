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
			a = a.AddInt64(x)
			want.Add(want, big.NewInt(x))
		} else {
			b = b.AddInt64(x)
			wantB.Add(wantB, big.NewInt(x))
		}
	}
	if a.Big().Cmp(want) != 0 || b.Big().Cmp(wantB) != 0 {
		t.Fatalf("int128 sums %v %v, want %v %v", a.Big(), b.Big(), want, wantB)
	}
	if got := a.Add(b).Big(); got.Cmp(new(big.Int).Add(want, wantB)) != 0 {
		t.Fatalf("int128 add %v, want %v", got, new(big.Int).Add(want, wantB))
	}
}
