package exec

import (
	"fmt"
	"testing"
	"time"
)

// TestShapeCacheExpires: a decision is reused for ShapeTTL, then read again; a full cache
// starts again empty; a nil cache remembers nothing.
func TestShapeCacheExpires(t *testing.T) {
	now := time.Unix(1000, 0)
	c := NewShapeCache()
	c.now = func() time.Time { return now }
	c.store("q", Bounding{AggregateFirst: true})
	if w, ok := c.lookup("q"); !ok || w != (Bounding{AggregateFirst: true}) {
		t.Fatalf("fresh decision: %v %v", w, ok)
	}
	now = now.Add(ShapeTTL - time.Second)
	if _, ok := c.lookup("q"); !ok {
		t.Error("a decision younger than ShapeTTL was forgotten")
	}
	now = now.Add(time.Second)
	if _, ok := c.lookup("q"); ok {
		t.Error("a decision ShapeTTL old was reused")
	}
	c.Clear()
	if len(c.entries) != 0 {
		t.Fatalf("Clear kept %d entries", len(c.entries))
	}
	for i := 0; i < maxShapes; i++ {
		c.store(fmt.Sprint(i), Bounding{})
	}
	c.store("last", Bounding{})
	if _, ok := c.lookup("0"); ok || len(c.entries) != 1 {
		t.Errorf("a full cache kept %d entries", len(c.entries))
	}
	var none *ShapeCache
	none.store("q", Bounding{AggregateFirst: true})
	none.Clear()
	if _, ok := none.lookup("q"); ok {
		t.Error("a nil cache remembered a decision")
	}
}
