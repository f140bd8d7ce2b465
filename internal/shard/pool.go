package shard

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dpsql/dpsql/backend/duckdb"
)

// The shards' databases are kept between scans. Opening one (a DuckDB instance, the setup's
// views, the analyst lockdown) and closing it cost more than a small shard's query: in
// sqlbeam's conformance tests, 17.5 s of the 34.6 s of CPU in Scan went to opening, 3.7 s
// more to closing. A kept database is reused by the next scan with the same setup (the same
// files, views and settings) and thread count, by one scan at a time. That changes nothing a
// query sees: its views resolve their files when a query runs and cast every column to the
// coordinator's type, so a file rewritten since, even in other types, reads as in a new
// database (TestKeptShardsReadFilesAfresh, TestKeptShardsFollowRewrittenSchemas); DuckDB's
// file caches are off; and an analyst's database takes one read-only SELECT per statement,
// so no query leaves anything behind for the next. A database whose query failed is closed,
// not kept.

// maxIdleShards bounds the databases kept, the least recently used closed first: enough for
// the shards of a job on one worker, without holding one per shard of every job ever run.
const maxIdleShards = 8

// shardsOpened counts the databases openShard opened, for tests.
var shardsOpened atomic.Int64

type shardKey struct {
	setup   string
	threads int
}

var idleShards struct {
	sync.Mutex
	dbs []idleShard // the most recently kept last
}

type idleShard struct {
	key shardKey
	db  *duckdb.DB
}

// takeShard returns a kept database of sh's setup, or opens one.
func takeShard(ctx context.Context, sh Shard, threads int) (*duckdb.DB, shardKey, error) {
	var setup strings.Builder // each statement after its length: one text per setup
	for _, s := range sh.Setup {
		setup.WriteString(strconv.Itoa(len(s)) + ":" + s)
	}
	key := shardKey{setup.String(), threads}
	idleShards.Lock()
	for i := len(idleShards.dbs) - 1; i >= 0; i-- {
		if idleShards.dbs[i].key == key {
			db := idleShards.dbs[i].db
			idleShards.dbs = append(idleShards.dbs[:i], idleShards.dbs[i+1:]...)
			idleShards.Unlock()
			return db, key, nil
		}
	}
	idleShards.Unlock()
	db, err := openShard(ctx, sh, threads)
	return db, key, err
}

// keepShard keeps db, whose last query succeeded, for the next scan of key.
func keepShard(key shardKey, db *duckdb.DB) {
	idleShards.Lock()
	idleShards.dbs = append(idleShards.dbs, idleShard{key, db})
	var evicted *duckdb.DB
	if len(idleShards.dbs) > maxIdleShards {
		evicted = idleShards.dbs[0].db
		idleShards.dbs = append(idleShards.dbs[:0], idleShards.dbs[1:]...)
	}
	idleShards.Unlock()
	if evicted != nil {
		evicted.Close()
	}
}
