// Package plan describes, as plain data, how an anonymized query runs: the per-unit stage
// that the database executes (keys, privacy unit, per-unit partial aggregates, contribution
// bounding and clamping), and the release stage that runs in Go (which mechanism each
// aggregate uses, with what share of the budget, and how partitions are selected).
//
// internal/rewrite builds a Plan from an analyzed query; internal/sqlgen prints its stage as
// SQL for a dialect; internal/exec runs it. A Plan knows no SQL text and no database.
package plan

import (
	"github.com/dpsql/dpsql/dp/noise"
	"github.com/dpsql/dpsql/internal/analyzer"
)

// Plan is an anonymized query ready to run.
type Plan struct {
	Query *analyzer.Query
	// Seed makes the random choice of each unit's kappa groups (a hash of unit, keys and
	// seed); it comes from crypto/rand for every query.
	Seed int64
	// Kappa is the maximum number of groups a unit contributes to.
	Kappa int64
	// Unbounded says contributions across groups are not bounded (a NULL or missing kappa,
	// ZetaSQL's meaning, allowed by the owner's SET BUDGET UNLIMITED only): the stage keeps
	// every group of every unit, and the mechanisms are calibrated for Kappa = 1, as in
	// ZetaSQL's reference implementation. There is then no privacy guarantee.
	Unbounded bool
	// MaxRows, when > 0, is max_rows_contributed: instead of kappa groups with one
	// per-unit value each, every unit keeps at most MaxRows of its rows, chosen at random,
	// and values are clamped per row (Kappa is then MaxRows: a unit reaches at most that
	// many groups).
	MaxRows int64
	// AggregateFirst, when set, makes the stage aggregate per unit first and bound the
	// per-unit rows (DuckDB: the kappa of smallest priority for the units above kappa only;
	// PostgreSQL: a window over them) instead of bounding the rows before aggregating them
	// (the prefilter); the executor sets it when a sample of the data shows that few units
	// exceed kappa or that units repeat their groups (the prefilter then costs more than it
	// saves). Both forms keep the same groups for a given seed.
	AggregateFirst bool
	// KeyTypes are the database types of the group keys (from a query that reads no rows),
	// once the executor knows them; the SQL normalises each key by its type, so that the
	// stage's groups are exact values (sqlgen.NormaliseKey).
	KeyTypes []string
	// ValueTypes are the database types of the aggregates' arguments (from the same query as
	// KeyTypes; "" for none): an argument known to convert to a double without failing needs
	// no total conversion in the SQL (sqlgen.typedValue).
	ValueTypes []string
	// UnitType is the database type of the privacy unit (from the same query as KeyTypes): a
	// distributed stage compares units across shards by their normalised text (internal/shard).
	UnitType string
	// Selection is how groups are chosen for release.
	Selection Selection
	// Aggregates are the released aggregates, in query order.
	Aggregates []*Aggregate
	// Cost is what the query charges to the budget ledger.
	Cost Budget
	// ConfidenceLevel, when in (0,1), asks for a confidence interval for every aggregate.
	ConfidenceLevel float64
}

// Budget is an (epsilon, delta) amount.
type Budget struct{ Epsilon, Delta float64 }

// SelectionRule names a partition-selection mechanism.
type SelectionRule string

const (
	LaplaceThreshold   SelectionRule = "laplace-threshold"
	GaussianThreshold  SelectionRule = "gaussian-threshold"
	TruncatedGeometric SelectionRule = "truncated-geometric"
	PublicGroups       SelectionRule = "public"
)

// Selection is the partition-selection step.
type Selection struct {
	Rule    SelectionRule
	Epsilon float64
	Delta   float64
	Kappa   int64
	// KThreshold, when > 0, is ZetaSQL's k_threshold: with Laplace thresholding a group is
	// released when its noisy unit count rounded to an integer reaches it (Delta is then the
	// delta that costs, selection.KThresholdDelta).
	KThreshold float64
	// MinUnits raises the release threshold so that groups with fewer units are (almost)
	// never released (min_privacy_units_per_group); 0 when not asked.
	MinUnits int64
}

// Aggregate is one released aggregate.
type Aggregate struct {
	Index int
	Func  analyzer.Func
	// Lower and Upper clamp each unit's per-group partial (or each row, for per-row
	// functions).
	Lower, Upper float64
	// Epsilon and Delta are the aggregate's share of the budget.
	Epsilon, Delta float64
	Noise          noise.Kind
	Kappa          int64
	// PerGroup is how many values one unit may add to one group: 1 with kappa (its
	// per-group partial), RowsPerGroup with kappa for per-row functions (PerRow: up to that
	// many of its rows, each clamped), MaxRows with max_rows_contributed (with Kappa 1: a
	// unit's rows reach at most MaxRows groups in all, so the L1 sensitivity is MaxRows times
	// the bound).
	PerGroup int64
	// Percentile and N parameterise Percentile and Quantiles.
	Percentile float64
	N          int
	// Leaves is the number of leaves of a Percentile's or Quantiles' tree; the executor
	// fills it in from the mechanism before the SQL is generated.
	Leaves int
	// IntegerResult says the released value is rounded to an integer (counts, and sums of
	// integer inputs).
	IntegerResult bool
	// Name is the aggregate as written, for EXPLAIN.
	Name string
	// Implicit says the query gave no bounds: they are estimated with DP from a logarithmic
	// histogram of the clamped values' units before the stage runs, spending BoundsEpsilon
	// (half of the aggregate's share, as in ZetaSQL); Lower and Upper are set then.
	Implicit      bool
	BoundsEpsilon float64
	// Encoding is how the database must sum this aggregate's clamped values exactly; the
	// executor fills it in from the aggregate's mechanism before the SQL is generated.
	Encoding Encoding
	// Report, when set, makes the released value a report (ZetaSQL's WITH REPORT): the value,
	// its confidence interval at ReportConfidenceLevel and, with implicit bounds, a bounding
	// report (Bounding, filled in with the bounds).
	Report   *analyzer.Report
	Bounding BoundingReport
	// IntervalLevel, when above the plan's ConfidenceLevel, is the level of this aggregate's
	// confidence interval: the executor raises it when a post-processed output combines the
	// aggregate with other noisy values (a Bonferroni share, see internal/exec/intervals.go).
	IntervalLevel float64
}

// ReportConfidenceLevel is the level of the confidence interval in reports, ZetaSQL's.
const ReportConfidenceLevel = 0.95

// BoundingReport describes an implicit bounds estimate, made once per query over the values
// of every group: NumInputs and NumOutside are noisy counts read from the same noisy
// histogram as the bounds (so they cost nothing more), never exact counts.
type BoundingReport struct {
	NumInputs, NumOutside float64
}

// RowsPerGroup is how many of its rows a unit contributes to one group in a per-row
// aggregate (PerRow: VAR_POP, STDDEV_POP, PERCENTILE_CONT, QUANTILES) when contributions are
// bounded by groups (kappa): ZetaSQL's kPerUserArrayAggLimit
// (zetasql/analyzer/rewriters/anonymization_helper.cc), whose rewrite keeps
// ARRAY_AGG(x ORDER BY rand() LIMIT 5) per unit and group and computes the variance or the
// quantiles over those rows, each weighted 1, with max_contributions_per_partition = 5.
const RowsPerGroup = 5

// PerRow reports whether f is computed over a unit's rows (at most RowsPerGroup of them per
// group) rather than over one per-unit partial.
func PerRow(f analyzer.Func) bool {
	switch f {
	case analyzer.VarPop, analyzer.StddevPop, analyzer.Percentile, analyzer.Quantiles:
		return true
	}
	return false
}

// Encoding is a fixed-point encoding: a value v is sent as the integer
// clamp(round(v / Unit), LowerUnits, UpperUnits), so that sums are exact and do not depend on
// the order of their terms. Square* is the same for squared values (variance).
type Encoding struct {
	Unit                   float64
	LowerUnits, UpperUnits int64
	SquareUnit             float64
	SquareLowerUnits       int64
	SquareUpperUnits       int64
}
