package pbeam

import (
	"encoding/binary"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/dpsql/dpsql/beam/internal/dofn"
)

func init() {
	dofn.DoFn4x0[string, unitAcc, func(string, contribution), func(string, string)](&distinctFanOutFn{})
	register.Function2x1(firstPartition)
	dofn.DoFn3x0[string, string, func(string, contribution)](&distinctValueFn{})
	register.Emitter2[string, string]()

	// The distinct values of a partition are counted as a count: each is
	// one contribution of 1, and a unit adds at most
	// MaxContributionsPerPartition of them to a partition.
	kindImpls[kindDistinctPerKey] = func(fn *partitionFn) (kindImpl, error) {
		impl, err := kindImpls[kindCount](fn)
		if err != nil {
			return nil, err
		}
		return distinctPerKeyImpl{impl.(countImpl)}, nil
	}
}

// DistinctPerKeyParams are the parameters of DistinctPerKey.
type DistinctPerKeyParams struct {
	// NoiseKind is LaplaceNoise{} (the default) or GaussianNoise{}.
	NoiseKind NoiseKind
	// AggregationEpsilon and AggregationDelta: this aggregation's share of
	// the aggregation budget (both 0: all of it; only for the last one).
	AggregationEpsilon, AggregationDelta float64
	// PartitionSelectionParams: this aggregation's share of the partition
	// selection budget (both 0: all of it). Leave unset with PublicPartitions;
	// its MaxPartitionsContributed must stay 0 (use the field below).
	PartitionSelectionParams PartitionSelectionParams
	// PublicPartitions, if set, are the output's keys, known in advance (a
	// beam.PCollection, slice or array of the key type).
	PublicPartitions any
	// MaxPartitionsContributed is the number of keys a privacy unit may
	// contribute to; its other keys are dropped at random. Required.
	MaxPartitionsContributed int64
	// MaxContributionsPerPartition is the number of distinct values a privacy
	// unit may contribute to one key; its other values for the key are
	// dropped at random. Required.
	MaxContributionsPerPartition int64
}

// DistinctPerKey counts the distinct values of each key of a
// PrivatePCollection<K,V>: each privacy unit contributes at most
// MaxContributionsPerPartition distinct values to at most
// MaxPartitionsContributed keys, a value contributed by several units is
// counted once, noise is added and keys are released by private partition
// selection on their number of privacy units (or are the PublicPartitions).
// It returns PCollection<K,int64>. Values are compared by their Beam
// encoding.
func DistinctPerKey(s beam.Scope, pcol PrivatePCollection, params DistinctPerKeyParams) beam.PCollection {
	const op = "pbeam.DistinctPerKey"
	s = s.Scope(op)
	pcol.mustPairs(op)
	ag := &aggregation{op: op, pcol: pcol, public: params.PublicPartitions}
	ag.checkCommon(params.NoiseKind, params.AggregationDelta, params.PartitionSelectionParams, params.MaxPartitionsContributed)
	if params.MaxContributionsPerPartition <= 0 {
		fail("%s: MaxContributionsPerPartition is %d; set it to the number of distinct values one privacy unit may contribute to one key (at least 1)", op, params.MaxContributionsPerPartition)
	}
	if params.PartitionSelectionParams.MaxPartitionsContributed != 0 {
		fail("%s: PartitionSelectionParams.MaxPartitionsContributed is %d; only SelectPartitions reads it, set DistinctPerKeyParams.MaxPartitionsContributed instead", op, params.PartitionSelectionParams.MaxPartitionsContributed)
	}
	ag.consumeBudget(params.AggregationEpsilon, params.AggregationDelta, params.PartitionSelectionParams)
	ag.rows.Value = valueEncoded
	ag.bound.MaxPartitions = params.MaxPartitionsContributed
	ag.bound.MaxValues = params.MaxContributionsPerPartition
	ag.bound.DistinctValues = true
	ag.part.Kind = kindDistinctPerKey
	ag.part.MaxPartitions = params.MaxPartitionsContributed
	ag.part.MaxPerPartition = 1
	ag.part.Lower, ag.part.Upper = 0, float64(params.MaxContributionsPerPartition)
	ag.part.Noise = noiseKindOf(params.NoiseKind)
	ag.part.ClampNegative = true
	ag.bounder = func(s beam.Scope, keyed beam.PCollection) beam.PCollection {
		// Per unit: its kept keys, each with its kept distinct values
		// (boundFn with DistinctValues; build clears the bounds in test
		// mode without bounding).
		accs := beam.ParDo(s, &rowAccsFn{Bound: &ag.bound}, keyed)
		perUnit := beam.CombinePerKey(s, &ag.bound, accs)
		units, values := beam.ParDo2(s, &distinctFanOutFn{}, perUnit)
		// Per (key, value): once, whatever the number of units.
		deduped := beam.CombinePerKey(s, firstPartition, values)
		counted := beam.ParDo(s, &distinctValueFn{}, deduped)
		return beam.Flatten(s, units, counted)
	}
	released := ag.build(s)
	return ag.output(s, released, &int64OutFn{Codec: newElementCodec(ag.partitionType())})
}

// valuePriority is the keyed-hash priority of a value of a unit in a
// partition.
func valuePriority(seed uint64, unit string, part []byte, enc string) uint64 {
	b := make([]byte, 0, binary.MaxVarintLen64+len(part)+len(enc))
	b = binary.AppendUvarint(b, uint64(len(part)))
	b = append(b, part...)
	b = append(b, enc...)
	return priority(seed^0x2545f4914f6cdd1d, unit, b)
}

// mergeDistinct adds e's distinct values to dst's, keeping the max (0: all)
// of smallest priority; a value already there is not added twice.
func mergeDistinct(dst *unitEntry, e unitEntry, max int64) {
next:
	for i, v := range e.Encs {
		p := e.VPris[i]
		for j := range dst.Encs {
			if dst.VPris[j] == p && dst.Encs[j] == v {
				continue next
			}
		}
		if max == 0 || int64(len(dst.Encs)) < max {
			dst.Encs = append(dst.Encs, v)
			dst.VPris = append(dst.VPris, p)
			continue
		}
		worst := 0
		for j := range dst.Encs {
			if valueBefore(dst.VPris[worst], dst.Encs[worst], dst.VPris[j], dst.Encs[j]) {
				worst = j
			}
		}
		if valueBefore(p, v, dst.VPris[worst], dst.Encs[worst]) {
			dst.Encs[worst], dst.VPris[worst] = v, p
		}
	}
}

// valueBefore orders values by priority, then by encoding (equal hashes).
func valueBefore(p1 uint64, v1 string, p2 uint64, v2 string) bool {
	if p1 != p2 {
		return p1 < p2
	}
	return v1 < v2
}

// distinctFanOutFn emits, for each kept key of a unit, the unit's
// contribution to the key (for partition selection) and each of its kept
// values keyed by (key, value).
type distinctFanOutFn struct{}

func (fn *distinctFanOutFn) ProcessElement(_ string, a unitAcc, units func(string, contribution), values func(string, string)) {
	for _, e := range a.E {
		units(e.Partition, contribution{Rows: e.Rows})
		for _, v := range e.Encs {
			values(string(encodeKVPair(kvPair{K: []byte(e.Partition), V: []byte(v)})), e.Partition)
		}
	}
}

// firstPartition combines the copies of one (key, value), all of the same key.
func firstPartition(a, _ string) string { return a }

// distinctValueFn turns a distinct (key, value) into a contribution of one
// value to the key, which is no unit's.
type distinctValueFn struct{}

func (fn *distinctValueFn) ProcessElement(_ string, part string, emit func(string, contribution)) {
	emit(part, contribution{Rows: 1, NoUnit: true})
}

// distinctPerKeyImpl counts the values of a partition; the units'
// contributions only count for partition selection.
type distinctPerKeyImpl struct{ countImpl }

func (k distinctPerKeyImpl) add(a *partAcc, c contribution) {
	if c.NoUnit {
		k.countImpl.add(a, c)
	}
}
