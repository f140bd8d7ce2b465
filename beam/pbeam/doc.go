// Package pbeam is Privacy on Beam for dpsql: differentially private
// aggregations of Apache Beam PCollections, with the public API of Google's
// Privacy on Beam v4 (a program written for it compiles against this package
// by changing its import path) and the mechanisms of dpsql's dp/ packages.
//
// # Model
//
// A PrivatePCollection is a PCollection whose every element belongs to a
// privacy unit (a user). MakePrivate and MakePrivateFromStruct attach the
// unit's identifier; ParDo transforms elements without ever showing it to
// the pipeline author; the only way out is an aggregation (Count, SumPerKey,
// MeanPerKey, ...), which bounds each unit's contributions, adds noise and
// releases only partitions chosen by private partition selection, or the
// public partitions given to it. Every aggregation spends part of the
// PrivacySpec's budget when the pipeline is constructed; asking for more
// than remains fails construction.
//
// # How an aggregation runs
//
//	PrivatePCollection<KV<id, X>>
//	  │ unitRowsFn: encode id and partition, read the value, keyed-hash priority
//	  │ CombinePerKey by unit (boundFn): keep the MaxPartitionsContributed partitions of
//	  │   smallest priority, each with the unit's sum, row count or
//	  │   MaxContributionsPerPartition values (one shuffle; O(kappa·k) memory per unit)
//	  │ CombinePerKey by partition (partitionFn): exact fixed-point sums, unit counts,
//	  │   quantile leaf counts; ExtractOutput selects the partition and adds noise (dp/)
//	  ▼
//	PCollection<KV<K, result>>
//
// bound.go and partition.go hold the two halves; each aggregation's file
// fills in its parameters and its kindImpl (how a contribution is added and
// how a partition is released).
//
// # Means, variances and quantiles
//
// MeanPerKey, MeanStatisticsPerKey, VariancePerKey, VarianceStatisticsPerKey
// and QuantilesPerKey aggregate the values of each key of a
// PrivatePCollection<K,V>. A privacy unit keeps up to
// MaxContributionsPerPartition of its values (at random) in each of at most
// MaxPartitionsContributed keys, and every kept value counts, clamped to
// [MinValue, MaxValue]: a mean of values, not of per-unit means, as in
// Privacy on Beam. The mechanisms are dp/agg's BoundedMean (a noisy sum over
// a noisy count), BoundedVariance (count, sum and centred sum of squares)
// and Quantiles (Google's quantile tree, 16^4 leaves, all ranks from one
// noisy tree; ranks are clamped into [0.005, 0.995]). MeanStatistics and
// VarianceStatistics report the noisy count (and mean) of the same release,
// at no extra cost. An empty public partition is released from noise alone;
// in the test modes it is Count 0, Mean the midpoint of the bounds,
// Variance 0, and quantiles interpolated over [MinValue, MaxValue]. In the
// test modes quantiles come from the exact tree, within one leaf,
// pbeamtest.QuantilesTolerance(MinValue, MaxValue), of the exact quantile;
// without contribution bounding means and variances are the plain ones of
// all values, and quantiles still clamp to the bounds.
//
// # Counting privacy units, distinct values and partitions
//
// DistinctPrivacyID counts the privacy units of each value. Its partition
// selection is the count itself, as in Privacy on Beam: the noisy count is
// released only when it reaches a threshold, so it spends the aggregation
// budget and only PartitionSelectionDelta (no selection epsilon). Both are
// one mechanism, dp/selection.ThresholdedCount: the threshold is the
// smallest integer that a lone unit's count reaches with probability at
// most 1-(1-delta)^(1/MaxPartitionsContributed) under the exact tail of the
// integer noise added (dp/noise's IntTailUpper), Laplace or Gaussian.
//
// DistinctPerKey counts the distinct values of each key: the per-unit
// combiner keeps MaxPartitionsContributed keys and, per key, up to
// MaxContributionsPerPartition distinct values chosen by a keyed hash (so a
// repeated value counts once); a second shuffle by (key, value) counts each
// value once whatever the number of its units; the per-key combiner selects
// keys on their number of units and adds count noise of L∞ sensitivity
// MaxContributionsPerPartition.
//
// SelectPartitions releases only the partitions (keys) that pass partition
// selection, spending only partition selection budget; its output can be
// the PublicPartitions of later aggregations.
//
// Count's MaxContributions bounds a unit's elements in all counts together
// (L1): the per-unit combiner keeps that many elements at random, the noise
// is calibrated to L1 = L2 = MaxContributions, and partition selection to
// MaxContributions partitions per unit.
//
// MakePrivateFromProto takes the privacy unit from a scalar field of proto
// messages ("user_id", "visitor.user_id").
//
// # Errors
//
// Like Beam's own constructors, pbeam's functions return no error: bad
// parameters, wrong element types or an overspent PrivacySpec make them
// panic while the pipeline is constructed, before anything runs, with a
// message that says what to change. (Privacy on Beam exits the process with
// log.Fatal instead.) This covers element types too: a privacy id, value
// or ParDo output that Beam cannot encode, and ParDo functions with windows,
// event times or universal types (beam.T, ...), are refused there. An error
// returned by a ParDo function fails the pipeline. Bad data never panics a
// worker: NaN values are ignored and infinite ones clamped (as in the SQL
// engine), integers beyond int64 saturate before clamping, and a nil
// pointer on MakePrivateFromStruct's id path reads as the zero value.
//
// # Beyond Privacy on Beam
//
// Three additions, beside the PoB-compatible API (which they leave
// unchanged):
//
// Budget ledger. PrivacySpec.ChargeLedger charges what the spec's
// aggregations consumed (Consumed: the sums of their epsilons and deltas)
// to a dpsql budget ledger, durably and before the pipeline runs, so that a
// pipeline and the SQL analysts of a database share one budget that is
// never overspent. Package pbeamledger opens the ledger of a DuckDB file or
// a PostgreSQL URL, as an analyst (never as the owner), and charges it:
//
//	... construct every aggregation on spec ...
//	if err := pbeamledger.Charge(ctx, spec, "shop.duckdb", "weekly report"); err != nil {
//		log.Fatal(err) // refused: nothing charged, do not run
//	}
//	beamx.Run(ctx, p)
//
// The first charge seals the spec (a later aggregation on it fails at
// construction), a spec is charged once, and test-mode specs are refused.
//
// Joint Gaussian release. AggregatePerKey releases the count, sum and mean
// of the values of each key as one generalised analytic Gaussian mechanism
// (one bounding, one partition selection, one (epsilon, delta), one sigma
// per aggregation from its sensitivity): at epsilon 1 its errors are about
// 0.6 of those of separate Gaussian aggregations with a third of the budget
// each (0.3 for the mean). Its doc comment has the mechanism and its proof.
//
// Confidence intervals. CountWithCI and SumPerKeyWithCI release, with each
// value, an interval containing the exact (bounded) value with probability
// at least the level, as ValueWithCI{Value, Lower, Upper}: post-processing
// of the noise's known distribution (dp/agg's ResultWithCI), no budget.
//
// # Test modes
//
// PrivacySpecParams.TestMode releases exact values (no noise, every
// non-empty partition kept), with or without contribution bounding, for
// tests of a pipeline's logic. Such results are not private.
package pbeam
