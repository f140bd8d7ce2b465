package pbeam

import (
	"math/big"
	"math/bits"
)

// int128 is an exact two's-complement sum of int64 fixed-point terms: the
// per-partition accumulators add encoded values without overflow or
// rounding, so merging partial sums in any order gives the same total.
type int128 struct {
	Hi int64
	Lo uint64
}

func (a int128) addInt64(x int64) int128 {
	lo, carry := bits.Add64(a.Lo, uint64(x), 0)
	hi := a.Hi + int64(carry)
	if x < 0 {
		hi--
	}
	return int128{Hi: hi, Lo: lo}
}

func (a int128) add(b int128) int128 {
	lo, carry := bits.Add64(a.Lo, b.Lo, 0)
	return int128{Hi: a.Hi + b.Hi + int64(carry), Lo: lo}
}

func (a int128) big() *big.Int {
	r := new(big.Int).SetInt64(a.Hi)
	r.Lsh(r, 64)
	return r.Add(r, new(big.Int).SetUint64(a.Lo))
}
