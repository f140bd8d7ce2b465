package pbeam

import (
	"math"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/dpsql/dpsql/beam/internal/dofn"

	"github.com/dpsql/dpsql/dp/noise"
)

func init() {
	dofn.DoFn2x1[beam.X, func(string, contribution), error](&publicMarkerFn{})
	dofn.DoFn3x1[string, unitRow, func(string, unitByPartition), error](&byPartitionFn{})
	register.Emitter2[string, unitByPartition]()
	dofn.DoFn4x0[string, func(*unitByPartition) bool, func(*contribution) bool, func(string, unitRow)](&publicJoinFn{})
	register.Iter1[unitByPartition]()
	register.Iter1[contribution]()
	beam.RegisterType(reflect.TypeOf(unitByPartition{}))
}

// aggregation is one aggregation being constructed: the two halves of
// bound.go and partition.go, with the public partitions between them.
type aggregation struct {
	op     string
	pcol   PrivatePCollection
	public any // nil, a slice or array, or a beam.PCollection of partitions
	rows   unitRowsFn
	bound  boundFn
	part   partitionFn
	// bounder, if set, replaces the per-unit bounding (CombinePerKey with
	// bound, then contributionsFn): from PCollection<KV<unit, unitRow>> to
	// the contributions keyed by partition.
	bounder func(s beam.Scope, keyed beam.PCollection) beam.PCollection
	// selDeltaOnly: the partition selection spends only delta
	// (DistinctPrivacyID's thresholding).
	selDeltaOnly bool
	// The budget shares requested; consumeBudget only reads them, build
	// takes them once every check has passed.
	aggReq, selReq [2]float64
	takesSelection bool
	noAggregation  bool // SelectPartitions: only a selection share
}

// partitionType is the type of the partitions of an aggregation: K of a
// PrivatePCollection<K,V>, or V of a PrivatePCollection<V>.
func (ag *aggregation) partitionType() reflect.Type {
	if ag.pcol.codec != nil {
		return ag.pcol.codec.KType.T
	}
	return ag.pcol.valueType()
}

// consumeBudget computes the aggregation's shares of the PrivacySpec's
// budgets and sets the noise and selection parameters; build takes them
// from the spec once every check passed, so a construction that fails
// spends nothing. With public partitions no selection budget is taken.
func (ag *aggregation) consumeBudget(aggEps, aggDelta float64, sel PartitionSelectionParams) {
	spec := ag.pcol.spec
	eps, delta, err := spec.aggregation.peek(ag.op, aggEps, aggDelta)
	if err != nil {
		fail("%v", err)
	}
	ag.aggReq = [2]float64{aggEps, aggDelta}
	ag.part.Epsilon, ag.part.Delta = eps, delta
	ag.takesSelection = false
	if ag.public != nil {
		return
	}
	if spec.testMode.enabled() && spec.partitionSelection.unset() {
		// Test mode keeps every non-empty partition: a spec made without a
		// selection budget serves any number of aggregations.
		return
	}
	eps, delta, err = spec.partitionSelection.peek(ag.op, sel.Epsilon, sel.Delta)
	if err != nil {
		fail("%v", err)
	}
	ag.selReq = [2]float64{sel.Epsilon, sel.Delta}
	ag.takesSelection = true
	ag.part.SelEpsilon, ag.part.SelDelta = eps, delta
}

// takeBudget takes the shares consumeBudget computed.
func (ag *aggregation) takeBudget() {
	spec := ag.pcol.spec
	if !ag.noAggregation {
		eps, delta, err := spec.aggregation.consume(ag.op, ag.aggReq[0], ag.aggReq[1])
		if err != nil {
			fail("%v", err)
		}
		spec.record(ag.op+" aggregation", eps, delta)
		// The mechanisms use what was taken: another aggregation built
		// concurrently on the spec may have left less than consumeBudget saw.
		ag.part.Epsilon, ag.part.Delta = eps, delta
	}
	if !ag.takesSelection {
		return
	}
	eps, delta, err := spec.partitionSelection.consume(ag.op, ag.selReq[0], ag.selReq[1])
	if err != nil {
		fail("%v", err)
	}
	spec.record(ag.op+" partition selection", eps, delta)
	ag.part.SelEpsilon, ag.part.SelDelta = eps, delta
}

// checkCommon checks what every aggregation requires, before any budget is
// consumed.
func (ag *aggregation) checkCommon(noiseKind NoiseKind, aggDelta float64, sel PartitionSelectionParams, maxPartitions int64) {
	op := ag.op
	if ag.pcol.spec == nil {
		fail("%s: the PrivatePCollection was not made with pbeam.MakePrivate or MakePrivateFromStruct", op)
	}
	if maxPartitions <= 0 {
		fail("%s: MaxPartitionsContributed is %d; set it to the largest number of partitions one privacy unit may contribute to (at least 1)", op, maxPartitions)
	}
	if ag.public != nil && (sel.Epsilon != 0 || sel.Delta != 0) {
		fail("%s: PartitionSelectionParams are set together with PublicPartitions; public partitions need no partition selection budget, leave PartitionSelectionParams unset", op)
	}
	checkNoiseKind(op, noiseKind)
	if noiseKindOf(noiseKind) != noise.Gaussian && aggDelta != 0 {
		fail("%s: AggregationDelta is %v with Laplace noise, which needs no delta; set it to 0 or use GaussianNoise{}", op, aggDelta)
	}
	selBudget := ag.pcol.spec.partitionSelection.epsilon
	if ag.selDeltaOnly {
		selBudget = ag.pcol.spec.partitionSelection.delta
	}
	if ag.public == nil && selBudget == 0 && !ag.pcol.spec.partitionSelection.consumed && !ag.pcol.spec.testMode.enabled() {
		fail("%s: the PrivacySpec has no partition selection budget and no PublicPartitions are given; set PartitionSelectionEpsilon and PartitionSelectionDelta in the PrivacySpecParams, or pass the partitions in PublicPartitions", op)
	}
}

// checkBounds checks a MinValue/MaxValue pair.
func checkBounds(op string, lower, upper float64) {
	if math.IsNaN(lower) || math.IsNaN(upper) || math.IsInf(lower, 0) || math.IsInf(upper, 0) {
		fail("%s: MinValue (%v) and MaxValue (%v) must be finite numbers", op, lower, upper)
	}
	if lower > upper {
		fail("%s: MinValue (%v) is greater than MaxValue (%v); swap them", op, lower, upper)
	}
}

// build constructs the aggregation and returns PCollection<KV<string,
// partResult>> of the released partitions (the encoded partition key).
func (ag *aggregation) build(s beam.Scope) beam.PCollection {
	spec := ag.pcol.spec
	ag.part.Op = ag.op
	ag.part.TestMode = spec.testMode
	ag.part.PreThreshold = spec.preThreshold
	ag.part.Public = ag.public != nil
	if ag.aggReq == [2]float64{} && ag.part.Delta > 0 && ag.part.Noise != noise.Gaussian && !ag.noAggregation {
		fail("%s: no budget share is given, so this aggregation takes the rest of the PrivacySpec's aggregation budget, which includes delta %v that Laplace noise cannot use; give it an explicit share (AggregationEpsilon, with AggregationDelta 0), or use GaussianNoise{}", ag.op, ag.part.Delta)
	}
	if err := ag.part.setup(); err != nil {
		fail("%v", err)
	}
	ag.part.impl, ag.part.selector = nil, nil // rebuilt on each worker

	ptype := ag.partitionType()
	ag.rows.IDCodec = newElementCodec(ag.pcol.idType())
	ag.rows.Seed = spec.seed
	if ag.pcol.codec != nil {
		ag.rows.Pairs = ag.pcol.codec
	} else {
		ag.rows.Elems = newElementCodec(ptype)
	}
	if !spec.testMode.bounding() {
		ag.bound.MaxPartitions, ag.bound.MaxValues = 0, 0
	}

	var markers beam.PCollection
	var publicCol beam.PCollection
	hasPublicCol := false
	if ag.public != nil {
		publicCol, hasPublicCol = ag.public.(beam.PCollection)
		if hasPublicCol {
			if !publicCol.IsValid() {
				fail("%s: PublicPartitions is an invalid (zero) PCollection", ag.op)
			}
			if t := publicCol.Type().Type(); t != ptype {
				fail("%s: PublicPartitions holds %v but the partitions are of type %v; they must be the same type", ag.op, t, ptype)
			}
		} else {
			enc := encodePublicSlice(ag.op, ag.public, ptype)
			ag.rows.Public, ag.rows.HasPublic = enc, true
			publicCol = beam.CreateList(s, ag.public)
		}
		markers = beam.ParDo(s, &publicMarkerFn{Codec: newElementCodec(ptype)}, publicCol)
	}

	// Every check passed: only now does the aggregation spend its shares,
	// and its mechanisms are checked again with what it took.
	ag.takeBudget()
	if err := ag.part.setup(); err != nil {
		fail("%v", err)
	}
	ag.part.impl, ag.part.selector = nil, nil
	var contributions beam.PCollection
	if ag.bounder == nil && !hasPublicCol {
		accs := beam.ParDo(s, &unitAccsFn{Rows: &ag.rows, Bound: &ag.bound}, ag.pcol.col)
		perUnit := beam.CombinePerKey(s, &ag.bound, accs)
		contributions = beam.ParDo(s, &contributionsFn{}, perUnit)
	} else {
		keyed := beam.ParDo(s, &ag.rows, ag.pcol.col)
		if hasPublicCol {
			keyed = keepPublicRows(s, keyed, publicCol, ptype)
		}
		if ag.bounder != nil {
			contributions = ag.bounder(s, keyed)
		} else {
			accs := beam.ParDo(s, &rowAccsFn{Bound: &ag.bound}, keyed)
			perUnit := beam.CombinePerKey(s, &ag.bound, accs)
			contributions = beam.ParDo(s, &contributionsFn{}, perUnit)
		}
	}
	if ag.public != nil {
		contributions = beam.Flatten(s, contributions, markers)
	}
	results := beam.CombinePerKey(s, &ag.part, contributions)
	return beam.ParDo(s, keptFn{}, results)
}

// encodePublicSlice checks and encodes a slice or array of public
// partitions at construction.
func encodePublicSlice(op string, public any, ptype reflect.Type) [][]byte {
	v := reflect.ValueOf(public)
	if v.Kind() != reflect.Slice && v.Kind() != reflect.Array {
		fail("%s: PublicPartitions is a %T; it must be a beam.PCollection, a slice or an array of partition keys", op, public)
	}
	if v.Type().Elem() != ptype {
		fail("%s: PublicPartitions holds %v but the partitions are of type %v; they must be the same type", op, v.Type().Elem(), ptype)
	}
	c := newElementCodec(ptype)
	out := make([][]byte, v.Len())
	for i := range out {
		b, err := c.encode(v.Index(i).Interface())
		if err != nil {
			fail("%s: PublicPartitions[%d]: %v", op, i, err)
		}
		out[i] = b
	}
	return out
}

// publicMarkerFn turns a public partition into a marker contribution, so
// that every public partition is released, with data or without.
type publicMarkerFn struct{ Codec *elementCodec }

func (fn *publicMarkerFn) ProcessElement(p beam.X, emit func(string, contribution)) error {
	b, err := fn.Codec.encode(p)
	if err != nil {
		return err
	}
	emit(string(b), contribution{Public: true})
	return nil
}

// unitByPartition is a row keyed by partition while it is joined with a
// PCollection of public partitions.
type unitByPartition struct {
	Unit string
	Row  unitRow
}

type byPartitionFn struct{}

func (byPartitionFn) ProcessElement(unit string, r unitRow, emit func(string, unitByPartition)) error {
	emit(r.Partition, unitByPartition{Unit: unit, Row: r})
	return nil
}

// publicJoinFn keeps the rows of the partitions that are public.
type publicJoinFn struct{}

func (publicJoinFn) ProcessElement(_ string, rows func(*unitByPartition) bool, public func(*contribution) bool, emit func(string, unitRow)) {
	var p contribution
	if !public(&p) {
		return
	}
	var r unitByPartition
	for rows(&r) {
		emit(r.Unit, r.Row)
	}
}

// keepPublicRows drops, before contribution bounding, the rows of partitions
// that are not in the PCollection of public partitions (so no unit spends
// its MaxPartitionsContributed on them).
func keepPublicRows(s beam.Scope, keyed, public beam.PCollection, ptype reflect.Type) beam.PCollection {
	byPartition := beam.ParDo(s, byPartitionFn{}, keyed)
	publicKeyed := beam.ParDo(s, &publicMarkerFn{Codec: newElementCodec(ptype)}, public)
	joined := beam.CoGroupByKey(s, byPartition, publicKeyed)
	return beam.ParDo(s, publicJoinFn{}, joined)
}

// checkNoiseKind rejects a NoiseKind that is neither LaplaceNoise{} nor
// GaussianNoise{}.
func checkNoiseKind(op string, k NoiseKind) {
	switch k.(type) {
	case nil, LaplaceNoise, GaussianNoise, *LaplaceNoise, *GaussianNoise:
		return
	}
	fail("%s: NoiseKind %T is not supported; use pbeam.LaplaceNoise{} or pbeam.GaussianNoise{}", op, k)
}
