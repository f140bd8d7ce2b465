package pbeam

import (
	"crypto/rand"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/dpsql/dpsql/beam/internal/dofn"
)

// The first half of every aggregation: from PrivatePCollection elements to
// each privacy unit's bounded contributions, one per (unit, partition).
//
//	PCollection<KV<ID, X>>
//	  │ unitAccsFn      encode the id and the partition, read the value, priority;
//	  │                 merge the rows of each unit seen in the bundle (unitCache)
//	  ▼
//	PCollection<KV<unit, unitAcc>>
//	  │ CombinePerKey(boundFn)   per unit: the MaxPartitionsContributed partitions of
//	  │                          smallest priority, each with its sum, count or up to
//	  │                          MaxContributionsPerPartition values (random priority)
//	  ▼
//	PCollection<KV<partition, contribution>>   (contributionsFn)
//
// One shuffle (by unit); a worker holds O(kappa * k) per unit, however many
// rows the unit has. unitAccsFn does what Beam's combiner lifting does, with
// a larger cache (Beam's keeps 2000 keys, the direct runner none): the rows
// of a unit are spread over the input, and each element shuffled costs far
// more than merging it.

func init() {
	dofn.DoFn3x1[beam.U, beam.V, func(string, unitRow), error](&unitRowsFn{})
	register.Emitter2[string, unitRow]()
	dofn.DoFn3x1[beam.U, beam.V, func(string, unitAcc), error](&unitAccsFn{})
	dofn.DoFn3x0[string, unitRow, func(string, unitAcc)](&rowAccsFn{})
	register.Emitter2[string, unitAcc]()
	register.Combiner1[unitAcc](&boundFn{})
	dofn.DoFn3x0[string, unitAcc, func(string, contribution)](&contributionsFn{})
	register.Emitter2[string, contribution]()
	for _, t := range []reflect.Type{reflect.TypeOf(unitRow{}), reflect.TypeOf(unitAcc{}), reflect.TypeOf(unitEntry{}), reflect.TypeOf(contribution{})} {
		beam.RegisterType(t)
	}
}

// valueKind says what an aggregation reads from each element's value.
type valueKind int

const (
	valueNone    valueKind = iota // only the partition (Count, DistinctPrivacyID, SelectPartitions)
	valueFloat                    // the value as float64
	valueInt                      // the value as int64
	valueEncoded                  // the encoded value, with a keyed-hash priority (DistinctPerKey)
)

// unitRow is one element, reduced to what bounding needs.
type unitRow struct {
	Partition string  // the encoded partition key
	Pri       uint64  // priority of (unit, partition)
	VPri      uint64  // random priority of this value among the unit's values in the partition
	F         float64 // the value (valueFloat)
	I         int64   // the value (valueInt)
	Null      bool    // the value is NaN: counts the unit, adds no value
	Enc       string  // the encoded value (valueEncoded)
}

// unitRowsFn keys elements by their encoded privacy id.
type unitRowsFn struct {
	IDCodec   *elementCodec
	Pairs     *pairCodec    // set for a PrivatePCollection<K,V>
	Elems     *elementCodec // set for a PrivatePCollection<V>: the element is the partition
	Value     valueKind
	Seed      uint64
	Public    [][]byte // a slice of public partitions, encoded; rows outside are dropped
	HasPublic bool

	public map[string]bool
	rng    *mrand.Rand
}

func (fn *unitRowsFn) Setup() {
	var s [32]byte
	if _, err := rand.Read(s[:]); err != nil {
		panic("pbeam: crypto/rand failed: " + err.Error())
	}
	fn.rng = mrand.New(mrand.NewChaCha8(s))
	if fn.HasPublic {
		fn.public = make(map[string]bool, len(fn.Public))
		for _, p := range fn.Public {
			fn.public[string(p)] = true
		}
	}
}

func (fn *unitRowsFn) ProcessElement(id beam.U, x beam.V, emit func(string, unitRow)) error {
	unit, r, ok, err := fn.row(id, x)
	if ok {
		emit(unit, r)
	}
	return err
}

// row reduces one element to its unit and its unitRow; ok is false for an
// element of a partition that is not public.
func (fn *unitRowsFn) row(id beam.U, x beam.V) (unit string, r unitRow, ok bool, err error) {
	if fn.rng == nil {
		fn.Setup()
	}
	if unit, err = fn.IDCodec.key(id); err != nil {
		return
	}
	var part []byte
	if fn.Pairs != nil {
		p, isPair := x.(kvPair)
		if !isPair {
			err = fmt.Errorf("pbeam: internal error: element %T is not a key-value pair", x)
			return
		}
		part = p.K
		if fn.Value == valueEncoded {
			r.Enc = string(p.V)
		} else if fn.Value != valueNone {
			// Construction admits only number types, which all have a
			// direct encoding.
			var direct bool
			if direct, err = fn.Pairs.number(p.V, &r); err == nil && !direct {
				err = fmt.Errorf("pbeam: internal error: values of type %v are not numbers", fn.Pairs.VType.T)
			}
			if err != nil {
				return
			}
		}
	} else {
		if part, err = fn.Elems.encode(x); err != nil {
			return
		}
	}
	if fn.HasPublic && !fn.public[string(part)] {
		return
	}
	r.Partition = string(part)
	r.Pri = priority(fn.Seed, unit, part)
	r.VPri = fn.rng.Uint64()
	if fn.Value == valueEncoded {
		// Equal values get equal priorities, so keeping the smallest
		// ones keeps distinct values chosen uniformly.
		r.VPri = valuePriority(fn.Seed, unit, part, r.Enc)
	}
	return unit, r, true, nil
}

// isNumeric reports whether t is a number type (elementCodec.number reads
// its values directly).
func isNumeric(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// isIntegral reports whether t is an integer type.
func isIntegral(t reflect.Type) bool {
	return isNumeric(t) && t.Kind() != reflect.Float32 && t.Kind() != reflect.Float64
}

// unitEntry is one kept partition of a unit.
type unitEntry struct {
	Partition string
	Pri       uint64
	Rows      int64     // rows of the unit in the partition
	F         float64   // sum of the float values
	I         int64     // sum of the int values (saturating)
	Vals      []float64 // up to MaxValues values, by smallest VPri
	VPris     []uint64
	Encs      []string // DistinctValues: up to MaxValues distinct encoded values, by smallest VPri
}

// unitAcc is a unit's kept partitions (at most MaxPartitions).
type unitAcc struct {
	E []unitEntry
}

// boundFn bounds one unit's contributions. Everything it keeps is decided by
// priorities fixed per (unit, partition) and per value, so the result does
// not depend on the order of AddInput and MergeAccumulators calls.
type boundFn struct {
	MaxPartitions int64 // 0: unbounded (test mode without bounding)
	KeepValues    bool  // keep values (Mean, Variance, Quantiles)
	MaxValues     int64 // with KeepValues or DistinctValues: values per partition; 0: unbounded
	// DistinctValues keeps up to MaxValues distinct encoded values per
	// partition (DistinctPerKey).
	DistinctValues bool
}

func (fn *boundFn) CreateAccumulator() unitAcc { return unitAcc{} }

// addRow adds one row of the unit (the combiner's input is unitAcc: rows
// are added on the way in, by unitAccsFn).
func (fn *boundFn) addRow(a unitAcc, r unitRow) unitAcc {
	e := unitEntry{Partition: r.Partition, Pri: r.Pri, Rows: 1}
	if !r.Null {
		e.F, e.I = r.F, r.I
		if fn.KeepValues {
			e.Vals, e.VPris = []float64{r.F}, []uint64{r.VPri}
		}
	}
	if fn.DistinctValues {
		e.Encs, e.VPris = []string{r.Enc}, []uint64{r.VPri}
	}
	return fn.insert(a, e)
}

func (fn *boundFn) MergeAccumulators(a, b unitAcc) unitAcc {
	for _, e := range b.E {
		a = fn.insert(a, e)
	}
	return a
}

func (fn *boundFn) ExtractOutput(a unitAcc) unitAcc { return a }

// insert adds e's data to a's entry for the same partition, or adds e as a
// new entry if it is among the MaxPartitions smallest priorities.
func (fn *boundFn) insert(a unitAcc, e unitEntry) unitAcc {
	for i := range a.E {
		if a.E[i].Partition == e.Partition {
			fn.combine(&a.E[i], e)
			return a
		}
	}
	a.E = keepSmallest(a.E, e, fn.MaxPartitions, before)
	return a
}

// keepSmallest adds x to xs if xs has fewer than max elements (max 0: no
// limit), or else in place of the largest element if x is smaller.
func keepSmallest[T any](xs []T, x T, max int64, less func(a, b T) bool) []T {
	if max == 0 || int64(len(xs)) < max {
		return append(xs, x)
	}
	worst := 0
	for i := range xs {
		if less(xs[worst], xs[i]) {
			worst = i
		}
	}
	if less(x, xs[worst]) {
		xs[worst] = x
	}
	return xs
}

// before orders entries by priority, then by partition (equal hashes).
func before(x, y unitEntry) bool {
	if x.Pri != y.Pri {
		return x.Pri < y.Pri
	}
	return x.Partition < y.Partition
}

func (fn *boundFn) combine(dst *unitEntry, e unitEntry) {
	dst.Rows += e.Rows
	dst.F += e.F
	dst.I = saturatingAdd(dst.I, e.I)
	if fn.DistinctValues {
		mergeDistinct(dst, e, fn.MaxValues)
		return
	}
	if !fn.KeepValues {
		return
	}
	for i, v := range e.Vals {
		p := e.VPris[i]
		if fn.MaxValues == 0 || int64(len(dst.Vals)) < fn.MaxValues {
			dst.Vals = append(dst.Vals, v)
			dst.VPris = append(dst.VPris, p)
			continue
		}
		worst := 0
		for j := range dst.VPris {
			if dst.VPris[j] > dst.VPris[worst] {
				worst = j
			}
		}
		if p < dst.VPris[worst] {
			dst.Vals[worst], dst.VPris[worst] = v, p
		}
	}
}

func saturatingAdd(a, b int64) int64 {
	s := a + b
	if a > 0 && b > 0 && s < 0 {
		return math.MaxInt64
	}
	if a < 0 && b < 0 && s >= 0 {
		return math.MinInt64
	}
	return s
}

// contribution is one unit's bounded contribution to one partition.
type contribution struct {
	Rows   int64
	F      float64
	I      int64
	Vals   []float64
	Public bool // a marker of a public partition, not a unit's contribution
	NoUnit bool // not one unit's contribution (a DistinctPerKey value): Units is not incremented
}

// contributionsFn re-keys a unit's kept partitions by partition; the unit id
// is dropped here.
type contributionsFn struct{}

func (fn *contributionsFn) ProcessElement(_ string, a unitAcc, emit func(string, contribution)) {
	for _, e := range a.E {
		emit(e.Partition, contribution{Rows: e.Rows, F: e.F, I: e.I, Vals: e.Vals})
	}
}

// unitCacheMax is the most units a unitCache holds before it flushes them.
// A unit takes about 100 bytes plus 40 per kept partition and value.
const unitCacheMax = 1 << 16

// unitCache merges the rows of each unit within a bundle, so that one
// partial accumulator per unit, not one element per row, is shuffled.
type unitCache struct {
	units map[string]unitAcc
}

func (c *unitCache) add(bound *boundFn, unit string, r unitRow, emit func(string, unitAcc)) {
	if c.units == nil {
		c.units = make(map[string]unitAcc)
	}
	a, ok := c.units[unit]
	if !ok && len(c.units) >= unitCacheMax {
		c.flush(emit)
		c.units = make(map[string]unitAcc)
	}
	c.units[unit] = bound.addRow(a, r)
}

func (c *unitCache) flush(emit func(string, unitAcc)) {
	for unit, a := range c.units {
		emit(unit, a)
	}
	c.units = nil
}

// unitAccsFn is unitRowsFn followed by a unitCache.
type unitAccsFn struct {
	Rows  *unitRowsFn
	Bound *boundFn

	cache unitCache
}

func (fn *unitAccsFn) ProcessElement(id beam.U, x beam.V, emit func(string, unitAcc)) error {
	unit, r, ok, err := fn.Rows.row(id, x)
	if ok {
		fn.cache.add(fn.Bound, unit, r, emit)
	}
	return err
}

func (fn *unitAccsFn) FinishBundle(emit func(string, unitAcc)) {
	fn.cache.flush(emit)
}

// rowAccsFn merges rows already keyed by unit (after the join with a
// PCollection of public partitions) the same way.
type rowAccsFn struct {
	Bound *boundFn

	cache unitCache
}

func (fn *rowAccsFn) ProcessElement(unit string, r unitRow, emit func(string, unitAcc)) {
	fn.cache.add(fn.Bound, unit, r, emit)
}

func (fn *rowAccsFn) FinishBundle(emit func(string, unitAcc)) {
	fn.cache.flush(emit)
}
