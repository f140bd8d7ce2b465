// Package int128 is an exact 128-bit two's-complement integer for sums of int64 fixed-point
// terms: accumulators add encoded values without overflow or rounding, so merging partial
// sums in any order gives the same total (beam/pbeam's per-partition sums, internal/shard's
// per-group sums of a distributed stage).
package int128

import (
	"math/big"
	"math/bits"
)

// Int is a 128-bit two's-complement integer.
type Int struct {
	Hi int64
	Lo uint64
}

// AddInt64 returns a + x.
func (a Int) AddInt64(x int64) Int {
	lo, carry := bits.Add64(a.Lo, uint64(x), 0)
	hi := a.Hi + int64(carry)
	if x < 0 {
		hi--
	}
	return Int{Hi: hi, Lo: lo}
}

// Add returns a + b.
func (a Int) Add(b Int) Int {
	lo, carry := bits.Add64(a.Lo, b.Lo, 0)
	return Int{Hi: a.Hi + b.Hi + int64(carry), Lo: lo}
}

// Big returns a as a big.Int.
func (a Int) Big() *big.Int {
	r := new(big.Int).SetInt64(a.Hi)
	r.Lsh(r, 64)
	return r.Add(r, new(big.Int).SetUint64(a.Lo))
}

// AddSquare returns a + x*x, exactly.
func (a Int) AddSquare(x int64) Int {
	ux := uint64(x)
	if x < 0 {
		ux = -ux
	}
	hi, lo := bits.Mul64(ux, ux)
	return a.Add(Int{Hi: int64(hi), Lo: lo})
}
