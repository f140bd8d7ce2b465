package shard_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/shard"
	"github.com/dpsql/dpsql/internal/shard/shardtest"
	"github.com/dpsql/dpsql/sqlerr"
)

// TestDistributedStageIsTheStage runs queries of every kind through the distributed stage
// (in this process) and checks its rows, and its bounds histograms, against the stage SQL's
// on the same plan and seed.
func TestDistributedStageIsTheStage(t *testing.T) {
	shardtest.RunQueries(t, shard.Local{Threads: 1})
}

// TestConformance runs the engine's conformance files through the distributed stage, with
// every private relation split over three Parquet files.
func TestConformance(t *testing.T) {
	shardtest.RunConformanceFiles(t, "../conformance/testdata", func() shard.Runner { return shard.Local{Threads: 1} })
}

// TestDistributedRefusals: what the distributed stage cannot run is refused before it is
// charged, naming the construct.
func TestDistributedRefusals(t *testing.T) {
	e, _ := shardtest.Fixture(t, shard.Local{Threads: 1})
	ctx := context.Background()
	for q, want := range map[string]string{
		`SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) ANON_COUNT(*) FROM purchases p JOIN s ON p.customer_id = s.uid`: "several private relations (purchases, s)",
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-5, max_rows_contributed=2) COUNT(*) FROM s`:                          "max_rows_contributed",
	} {
		_, err := e.Exec(ctx, q)
		se, ok := sqlerr.As(err)
		if !ok || !strings.Contains(se.Msg, want) || se.Rule != shard.RuleDistributed {
			t.Errorf("%s: got %v, want the %s rule and %q", q, err, shard.RuleDistributed, want)
		}
	}
}

// TestCodecRoundTrips: the binary states decode to what was encoded, and malformed bytes are
// errors, never panics.
func TestCodecRoundTrips(t *testing.T) {
	u := &shard.Unit{Pairs: []shard.Pair{{Priority: 7, Group: "\x01\x01a", Parts: []shard.Part{{Null: true}, {I: -3, F: 2.5, U: 1 << 63}}}}}
	batch := shard.AppendUnitRecord(shard.AppendUnitRecord(nil, "u1", u), "u2", &shard.Unit{})
	var got []*shard.Unit
	if err := shard.ReadUnitRecords(batch, func(unit string, x *shard.Unit) error { got = append(got, x); return nil }); err != nil || len(got) != 2 || !reflect.DeepEqual(got[0], u) {
		t.Fatalf("units %+v %v, want %+v", got, err, u)
	}
	first := len(shard.AppendUnitRecord(nil, "u1", u))
	for i := 1; i < len(batch); i++ {
		if err := shard.ReadUnitRecords(batch[:i], func(string, *shard.Unit) error { return nil }); err == nil && i != first {
			t.Fatalf("truncated batch of %d bytes decoded", i)
		}
	}
	recs := shard.AppendRecord(nil, "u1", u.Pairs[0])
	if err := shard.ReadRecords(recs, func(unit string, p shard.Pair) error {
		if unit != "u1" || !reflect.DeepEqual(p, u.Pairs[0]) {
			t.Fatalf("record %q %+v", unit, p)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := shard.ReadRecords(recs[:len(recs)-1], func(string, shard.Pair) error { return nil }); err == nil {
		t.Fatal("truncated record decoded")
	}
	g := shard.Group{N: 3, Aggs: []shard.GroupAgg{{C: 2, CountSum: 4, Leaves: map[int64]int64{3: 1}}}}
	g.Aggs[0].S = g.Aggs[0].S.AddInt64(-5)
	gg, err := shard.DecodeGroup(shard.EncodeGroup(g))
	if err != nil || !reflect.DeepEqual(gg, g) {
		t.Fatalf("group %+v %v, want %+v", gg, err, g)
	}
	if _, err := shard.DecodeGroup([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}); err == nil {
		t.Fatal("malformed group decoded")
	}
}
