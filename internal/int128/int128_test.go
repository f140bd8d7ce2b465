package int128

import (
	"math"
	"math/big"
	"testing"
)

func TestAddSquare(t *testing.T) {
	want := new(big.Int)
	var a Int
	for _, x := range []int64{0, 1, -1, 3, -7, 1 << 40, -(1 << 40), math.MinInt64} {
		a = a.AddSquare(x)
		bx := big.NewInt(x)
		want.Add(want, new(big.Int).Mul(bx, bx))
	}
	a = a.AddInt64(-5)
	want.Sub(want, big.NewInt(5))
	if a.Big().Cmp(want) != 0 {
		t.Fatalf("got %v, want %v", a.Big(), want)
	}
}
