package exec

import (
	"math/big"

	"github.com/dpsql/dpsql/dp/agg"
	"github.com/dpsql/dpsql/internal/plan"
)

// Mechanisms makes the release machinery of one query.
type Mechanisms interface {
	// Prepare validates the plan's parameters, fills in each aggregate's Encoding (which the
	// SQL needs), and returns what releases this query's groups.
	Prepare(p *plan.Plan) (Release, error)
	// Bounds estimates the clamping bounds of an aggregate with implicit bounds from the
	// exact histogram of its values (see Histogram), spending its BoundsEpsilon; for an
	// aggregate with a report it also gives the bounding report's counts, from the same noisy
	// histogram. Too few data give a *sqlerr.Error with code sqlerr.InsufficientData.
	Bounds(a *plan.Aggregate, s agg.BoundsSummary) (agg.BoundsReport, error)
}

// Release decides and noises one query's groups. Each call spends nothing by itself: the
// engine charges the query's whole cost to the ledger before anything is shown.
type Release interface {
	// Keep reports whether a group of n privacy units is released.
	Keep(n int64) (bool, error)
	// Value releases aggregate j of one group from its exact summary.
	Value(j int, s Summary) (Value, error)
	// Describe explains, for EXPLAIN, the selection rule and each aggregate's mechanism.
	Describe() []string
}

// NoiseReporter is a Release that knows, before any data is read, the standard deviation
// of the noise it adds to aggregate j (NaN when it depends on the data). The command uses it
// to print noisy values with as many digits as their noise leaves meaningful.
type NoiseReporter interface {
	NoiseStddev(j int) float64
}

// Summary is aggregate j's exact state for one group, as the stage SQL computed it.
type Summary struct {
	// Units is the group's number of privacy units (after contribution bounding).
	Units int64
	// Count is how many units contributed a value (COUNT of the per-unit partials).
	Count int64
	// Sum is the exact sum of encoded values (clamped counts for counts).
	Sum *big.Int
	// Shift, when not 0, says Sum counts finer units than the encoding's, Unit/2^Shift
	// (agg.SumSummary.Shift): the exact sums of one-pass implicit bounds (binnedSummary).
	Shift uint
	// Square is the exact sum of encoded squares (variance).
	Square *big.Int
	// Leaves are the leaf counts of a quantile tree (percentiles and quantiles).
	Leaves map[int]int64
}

// Value is a released value and, when a confidence level was asked for, its interval.
type Value struct {
	V      any // int64 or float64
	Lo, Hi any
	HasCI  bool
}
