package sqlbeam

import (
	"context"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/dpsql/dpsql/internal/shard"
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
	shardtest.RunQueries(t, runner())
}

// TestConformanceOnBeam runs the engine's conformance files with their stages on Beam, every
// private relation split over three Parquet files.
func TestConformanceOnBeam(t *testing.T) {
	shardtest.RunConformanceFiles(t, "../../internal/conformance/testdata", func() shard.Runner { return runner() })
}
