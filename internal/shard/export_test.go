package shard

// ShardsOpened returns how many shard databases this process has opened.
func ShardsOpened() int64 { return shardsOpened.Load() }
