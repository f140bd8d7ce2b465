package main

import (
	"fmt"
	"math/rand/v2"
)

// GenerateShard emits the rows [shard*rows/shards, (shard+1)*rows/shards) of
// the synthetic visits. Row i belongs to visitor i mod visitors, so with
// visitors = rows/5 every visitor has about five visits on random days (more
// than MaxPartitionsContributed = 3 distinct days for most of them). The
// output depends only on (seed, shard, shards, rows, visitors).
func GenerateShard(seed int64, shard, shards int, rows, visitors int64, emit func(Visit)) {
	lo := int64(shard) * rows / int64(shards)
	hi := int64(shard+1) * rows / int64(shards)
	r := rand.New(rand.NewPCG(uint64(seed), uint64(shard)))
	for i := lo; i < hi; i++ {
		emit(Visit{
			VisitorID:    fmt.Sprintf("v%08d", i%visitors),
			TimeEntered:  8 + r.IntN(15),
			MinutesSpent: 5 + r.IntN(86),
			EurosSpent:   float64(r.IntN(8001)) / 100,
			Day:          1 + r.IntN(7),
		})
	}
}

// GenerateAll returns all rows in memory (for -source=create).
func GenerateAll(seed int64, shards int, rows, visitors int64) []Visit {
	out := make([]Visit, 0, rows)
	for sh := 0; sh < shards; sh++ {
		GenerateShard(seed, sh, shards, rows, visitors, func(v Visit) { out = append(out, v) })
	}
	return out
}
