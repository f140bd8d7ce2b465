package exec

import (
	"sync"
	"time"
)

// ShapeCache remembers, for one session, how chooseBounding decided to bound contributions
// for a statistics query (sqlgen.ShapeStats, whose text holds the relation, filter, keys and
// kappa but no seed), so that a session asking the same kind of query again does not read the
// sample again. The choice changes only the speed of the stage, never its rows (both forms
// keep the same groups for a given seed), so a decision that has gone stale (the data changed)
// costs time, never privacy or correctness: entries expire after ShapeTTL all the same, and
// the engine clears the cache when the privacy policy changes. The zero value is not usable:
// use NewShapeCache. A nil *ShapeCache remembers nothing. It is safe for concurrent use.
type ShapeCache struct {
	mu      sync.Mutex
	entries map[string]shapeEntry
	now     func() time.Time
}

// Bounding is a decision of chooseBounding: how the stage bounds contributions.
type Bounding struct {
	AggregateFirst bool // plan.Plan.AggregateFirst
}

type shapeEntry struct {
	decision Bounding
	at       time.Time
}

// ShapeTTL is how long a bounding decision is reused.
const ShapeTTL = time.Minute

// maxShapes bounds a session's cache: past it, the cache starts again empty.
const maxShapes = 256

// NewShapeCache returns an empty cache.
func NewShapeCache() *ShapeCache {
	return &ShapeCache{entries: map[string]shapeEntry{}, now: time.Now}
}

// lookup returns the decision remembered for the statistics query key, if it is fresh.
func (c *ShapeCache) lookup(key string) (d Bounding, ok bool) {
	if c == nil {
		return d, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || c.now().Sub(e.at) >= ShapeTTL {
		return Bounding{}, false
	}
	return e.decision, true
}

// store remembers the decision for key.
func (c *ShapeCache) store(key string, d Bounding) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxShapes {
		clear(c.entries)
	}
	c.entries[key] = shapeEntry{decision: d, at: c.now()}
}

// Clear forgets every decision (the engine calls it when it loads the catalog again).
func (c *ShapeCache) Clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	clear(c.entries)
	c.mu.Unlock()
}
