package pbeam

import int128pkg "github.com/dpsql/dpsql/internal/int128"

// int128 is the exact per-partition sum of int64 fixed-point terms (internal/int128): merging
// partial sums in any order gives the same total.
type int128 = int128pkg.Int
