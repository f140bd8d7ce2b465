package pbeam

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// SelectPartitionsParams are the parameters of SelectPartitions: its share
// of the partition selection budget (Epsilon, Delta; both 0: all of it) and
// MaxPartitionsContributed, the number of partitions a privacy unit may
// contribute to (required).
type SelectPartitionsParams = PartitionSelectionParams

// SelectPartitions returns the partitions of a PrivatePCollection that pass
// private partition selection (on their number of privacy units, each unit
// counting in at most MaxPartitionsContributed partitions chosen at
// random): PCollection<K> for a PrivatePCollection<K,V>, PCollection<V> for
// a PrivatePCollection<V>. It spends only partition selection budget. The
// result can serve as the PublicPartitions of later aggregations.
func SelectPartitions(s beam.Scope, pcol PrivatePCollection, params SelectPartitionsParams) beam.PCollection {
	const op = "pbeam.SelectPartitions"
	s = s.Scope(op)
	ag := &aggregation{op: op, pcol: pcol}
	ag.checkCommon(nil, 0, params, params.MaxPartitionsContributed)
	spec := pcol.spec
	eps, delta, err := spec.partitionSelection.peek(op, params.Epsilon, params.Delta)
	if err != nil {
		fail("%v", err)
	}
	ag.part.SelEpsilon, ag.part.SelDelta = eps, delta
	ag.noAggregation, ag.takesSelection = true, true
	ag.selReq = [2]float64{params.Epsilon, params.Delta}
	ag.rows.Value = valueNone
	ag.bound.MaxPartitions = params.MaxPartitionsContributed
	ag.part.Kind = kindSelect
	ag.part.MaxPartitions = params.MaxPartitionsContributed
	released := ag.build(s)
	return ag.output(s, released, &keyOutFn{Codec: newElementCodec(ag.partitionType())})
}

func init() {
	kindImpls[kindSelect] = func(*partitionFn) (kindImpl, error) { return selectImpl{}, nil }
}

// selectImpl releases nothing but the partition itself.
type selectImpl struct{}

func (selectImpl) add(*partAcc, contribution)          {}
func (selectImpl) release(partAcc) (partResult, error) { return partResult{}, nil }
