package pbeam

import (
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

// TestMain runs the pipelines of the tests on Beam's Prism runner (the
// portable runner, the protocol of Flink and Spark job servers); pass
// --runner=direct for the direct runner.
func TestMain(m *testing.M) {
	ptest.Main(m)
}
