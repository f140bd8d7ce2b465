package sqlbeam

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/dpsql/dpsql/internal/shard/shardtest"
)

// TestMain runs the pipelines of the tests on Beam's Prism runner; pass --runner=direct for
// the direct runner.
func TestMain(m *testing.M) {
	ptest.Main(m)
}

func runner() *Runner {
	return &Runner{Execute: func(_ context.Context, p *beam.Pipeline) error { return ptest.Run(p) }, Threads: 1}
}

// TestStageOnBeam runs queries of every kind with their stage on Beam and checks the rows
// (and the bounds histograms) against the stage SQL on the same plan and seed.
func TestStageOnBeam(t *testing.T) {
	e, st := shardtest.Fixture(t, runner())
	ctx := context.Background()
	for _, q := range shardtest.Queries {
		res, err := e.Exec(ctx, q)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		if len(res) != 1 || len(res[0].Rows) == 0 {
			t.Errorf("%s: no rows", q)
		}
	}
	if st.Stages != len(shardtest.Queries) {
		t.Errorf("%d stages ran on Beam, want %d", st.Stages, len(shardtest.Queries))
	}
}

// TestConformanceOnBeam runs the engine's conformance files with their stages on Beam, every
// private relation split over three Parquet files.
func TestConformanceOnBeam(t *testing.T) {
	files, err := filepath.Glob("../../internal/conformance/testdata/*.test")
	if err != nil || len(files) == 0 {
		t.Fatalf("no conformance files: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			ran, skipped := shardtest.Conformance(t, f, runner())
			t.Logf("%d queries ran, %d refused by the distributed stage", ran, skipped)
		})
	}
}
