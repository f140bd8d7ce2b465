package pbeam

import (
	"encoding/binary"
	"errors"
	"math"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// Compact coders for the elements pbeam shuffles (per-unit and
// per-partition accumulators and what feeds them). Beam's default coder for
// structs (its schema row coder) works by reflection and writes field
// headers; these write the fields in order, with varints, which makes the
// shuffles of an aggregation several times smaller and cheaper.

func init() {
	beam.RegisterCoder(reflect.TypeOf(unitRow{}), encodeUnitRow, decodeUnitRow)
	beam.RegisterCoder(reflect.TypeOf(unitAcc{}), encodeUnitAcc, decodeUnitAcc)
	beam.RegisterCoder(reflect.TypeOf(contribution{}), encodeContribution, decodeContribution)
	beam.RegisterCoder(reflect.TypeOf(partAcc{}), encodePartAcc, decodePartAcc)
}

var errCorrupt = errors.New("pbeam: corrupt encoding of a shuffled element")

// writer appends fields to a byte slice.
type writer struct{ b []byte }

func (w *writer) uvarint(x uint64) { w.b = binary.AppendUvarint(w.b, x) }
func (w *writer) varint(x int64)   { w.b = binary.AppendVarint(w.b, x) }
func (w *writer) u64(x uint64)     { w.b = binary.LittleEndian.AppendUint64(w.b, x) }
func (w *writer) f64(x float64)    { w.u64(math.Float64bits(x)) }
func (w *writer) str(s string)     { w.uvarint(uint64(len(s))); w.b = append(w.b, s...) }
func (w *writer) flag(x bool) {
	if x {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

// reader reads fields back; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	x, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errCorrupt
		return 0
	}
	r.b = r.b[n:]
	return x
}

func (r *reader) varint() int64 {
	x, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errCorrupt
		return 0
	}
	r.b = r.b[n:]
	return x
}

func (r *reader) u64() uint64 {
	if len(r.b) < 8 {
		r.err = errCorrupt
		return 0
	}
	x := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return x
}

func (r *reader) f64() float64 { return math.Float64frombits(r.u64()) }

func (r *reader) str() string {
	n := r.uvarint()
	if r.err != nil || uint64(len(r.b)) < n {
		r.err = errCorrupt
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *reader) flag() bool {
	if len(r.b) < 1 {
		r.err = errCorrupt
		return false
	}
	x := r.b[0]
	r.b = r.b[1:]
	return x == 1
}

// count reads a slice length, refusing lengths the input cannot hold (each
// element takes at least one byte).
func (r *reader) count() int {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errCorrupt
		return 0
	}
	return int(n)
}

func (r *reader) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.err = errCorrupt
	}
	return r.err
}

func encodeUnitRow(x unitRow) []byte {
	w := writer{b: make([]byte, 0, 48+len(x.Partition)+len(x.Enc))}
	w.str(x.Partition)
	w.u64(x.Pri)
	w.u64(x.VPri)
	w.f64(x.F)
	w.varint(x.I)
	w.flag(x.Null)
	w.str(x.Enc)
	return w.b
}

func decodeUnitRow(b []byte) (unitRow, error) {
	r := reader{b: b}
	x := unitRow{Partition: r.str(), Pri: r.u64(), VPri: r.u64(), F: r.f64(), I: r.varint(), Null: r.flag(), Enc: r.str()}
	return x, r.done()
}

func encodeUnitAcc(a unitAcc) []byte {
	w := writer{b: make([]byte, 0, 64*len(a.E)+8)}
	w.uvarint(uint64(len(a.E)))
	for _, e := range a.E {
		w.str(e.Partition)
		w.u64(e.Pri)
		w.varint(e.Rows)
		w.f64(e.F)
		w.varint(e.I)
		w.uvarint(uint64(len(e.Vals)))
		for _, v := range e.Vals {
			w.f64(v)
		}
		w.uvarint(uint64(len(e.VPris)))
		for _, p := range e.VPris {
			w.u64(p)
		}
		w.uvarint(uint64(len(e.Encs)))
		for _, s := range e.Encs {
			w.str(s)
		}
	}
	return w.b
}

func decodeUnitAcc(b []byte) (unitAcc, error) {
	r := reader{b: b}
	var a unitAcc
	if n := r.count(); n > 0 {
		a.E = make([]unitEntry, n)
	}
	for i := range a.E {
		e := &a.E[i]
		e.Partition, e.Pri, e.Rows, e.F, e.I = r.str(), r.u64(), r.varint(), r.f64(), r.varint()
		if n := r.count(); n > 0 {
			e.Vals = make([]float64, n)
			for j := range e.Vals {
				e.Vals[j] = r.f64()
			}
		}
		if n := r.count(); n > 0 {
			e.VPris = make([]uint64, n)
			for j := range e.VPris {
				e.VPris[j] = r.u64()
			}
		}
		if n := r.count(); n > 0 {
			e.Encs = make([]string, n)
			for j := range e.Encs {
				e.Encs[j] = r.str()
			}
		}
		if r.err != nil {
			break
		}
	}
	return a, r.done()
}

func encodeContribution(c contribution) []byte {
	w := writer{b: make([]byte, 0, 32+8*len(c.Vals))}
	w.varint(c.Rows)
	w.f64(c.F)
	w.varint(c.I)
	w.uvarint(uint64(len(c.Vals)))
	for _, v := range c.Vals {
		w.f64(v)
	}
	w.flag(c.Public)
	w.flag(c.NoUnit)
	return w.b
}

func decodeContribution(b []byte) (contribution, error) {
	r := reader{b: b}
	c := contribution{Rows: r.varint(), F: r.f64(), I: r.varint()}
	if n := r.count(); n > 0 {
		c.Vals = make([]float64, n)
		for j := range c.Vals {
			c.Vals[j] = r.f64()
		}
	}
	c.Public, c.NoUnit = r.flag(), r.flag()
	return c, r.done()
}

func encodePartAcc(a partAcc) []byte {
	w := writer{b: make([]byte, 0, 96+12*len(a.Leaves))}
	w.varint(a.Units)
	w.flag(a.Public)
	w.varint(a.Count)
	w.varint(a.Sum.Hi)
	w.u64(a.Sum.Lo)
	w.varint(a.Sq.Hi)
	w.u64(a.Sq.Lo)
	w.uvarint(uint64(len(a.Leaves)))
	for k, n := range a.Leaves {
		w.varint(int64(k))
		w.varint(n)
	}
	w.f64(a.ExactF)
	w.f64(a.ExactF2)
	w.varint(a.ExactI)
	return w.b
}

func decodePartAcc(b []byte) (partAcc, error) {
	r := reader{b: b}
	a := partAcc{Units: r.varint(), Public: r.flag(), Count: r.varint()}
	a.Sum = int128{Hi: r.varint(), Lo: r.u64()}
	a.Sq = int128{Hi: r.varint(), Lo: r.u64()}
	if n := r.count(); n > 0 {
		a.Leaves = make(map[int32]int64, n)
		for j := 0; j < n && r.err == nil; j++ {
			k := r.varint()
			if k < math.MinInt32 || k > math.MaxInt32 {
				r.err = errCorrupt
			}
			a.Leaves[int32(k)] += r.varint()
		}
	}
	a.ExactF, a.ExactF2, a.ExactI = r.f64(), r.f64(), r.varint()
	return a, r.done()
}
