package shard

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/dpsql/dpsql/internal/int128"
)

// The binary encodings of the states, for runners' shuffles: varints for integers, 8 bytes
// for floats, a length before every list and string. Decoders return an error on malformed
// input, never panic.

func appendPair(b []byte, p Pair) []byte {
	b = binary.AppendUvarint(b, p.Priority)
	b = binary.AppendUvarint(b, uint64(len(p.Group)))
	b = append(b, p.Group...)
	b = binary.AppendUvarint(b, uint64(len(p.Parts)))
	for _, x := range p.Parts {
		if x.Null {
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		b = binary.AppendVarint(b, x.I)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x.F))
		b = binary.AppendUvarint(b, x.U)
	}
	return b
}

func (r *reader) pair() Pair {
	var p Pair
	p.Priority = r.uvarint()
	p.Group = string(r.bytes())
	n := r.count()
	p.Parts = make([]Part, n)
	for i := 0; i < n && r.err == nil; i++ {
		if r.byte() == 0 {
			p.Parts[i].Null = true
			continue
		}
		p.Parts[i] = Part{I: r.varint(), F: r.float(), U: r.uvarint()}
	}
	return p
}

// EncodeGroup encodes a group's sums.
func EncodeGroup(g Group) []byte {
	b := binary.AppendVarint(nil, g.N)
	b = binary.AppendUvarint(b, uint64(len(g.Aggs)))
	for _, a := range g.Aggs {
		b = binary.AppendVarint(b, a.C)
		b = appendInt128(b, a.S)
		b = appendInt128(b, a.Q)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(a.CountSum))
		b = binary.AppendUvarint(b, uint64(len(a.Leaves)))
		for l, n := range a.Leaves {
			b = binary.AppendVarint(b, l)
			b = binary.AppendVarint(b, n)
		}
	}
	return b
}

// DecodeGroup decodes EncodeGroup's bytes.
func DecodeGroup(data []byte) (Group, error) {
	r := &reader{b: data}
	g := Group{N: r.varint()}
	n := r.count()
	g.Aggs = make([]GroupAgg, n)
	for i := 0; i < n && r.err == nil; i++ {
		a := &g.Aggs[i]
		a.C = r.varint()
		a.S = r.int128()
		a.Q = r.int128()
		a.CountSum = r.float()
		if m := r.count(); m > 0 {
			a.Leaves = make(map[int64]int64, m)
			for k := 0; k < m && r.err == nil; k++ {
				l := r.varint()
				a.Leaves[l] += r.varint()
			}
		}
	}
	return g, r.done("group")
}

// EncodeHistogram encodes a histogram.
func EncodeHistogram(h Histogram) []byte {
	b := binary.AppendUvarint(nil, uint64(len(h.Positive)))
	for i := range h.Positive {
		b = binary.AppendVarint(b, h.Positive[i])
		b = binary.AppendVarint(b, h.Negative[i])
	}
	return b
}

// DecodeHistogram decodes EncodeHistogram's bytes.
func DecodeHistogram(data []byte) (Histogram, error) {
	r := &reader{b: data}
	n := r.count()
	h := Histogram{Positive: make([]int64, n), Negative: make([]int64, n)}
	for i := 0; i < n && r.err == nil; i++ {
		h.Positive[i] = r.varint()
		h.Negative[i] = r.varint()
	}
	return h, r.done("histogram")
}

func appendInt128(b []byte, x int128.Int) []byte {
	return binary.AppendUvarint(binary.AppendVarint(b, x.Hi), x.Lo)
}

// reader decodes; the first error sticks and later reads return zero values.
type reader struct {
	b   []byte
	i   int
	err error
}

func (r *reader) fail() {
	if r.err == nil {
		r.err = fmt.Errorf("shard: truncated or malformed state")
	}
	r.i = len(r.b)
}

func (r *reader) byte() byte {
	if r.i >= len(r.b) {
		r.fail()
		return 0
	}
	r.i++
	return r.b[r.i-1]
}

func (r *reader) uvarint() uint64 {
	x, n := binary.Uvarint(r.b[r.i:])
	if n <= 0 {
		r.fail()
		return 0
	}
	r.i += n
	return x
}

func (r *reader) varint() int64 {
	x, n := binary.Varint(r.b[r.i:])
	if n <= 0 {
		r.fail()
		return 0
	}
	r.i += n
	return x
}

// count reads a length, which cannot exceed the bytes left (every element takes at least
// one byte): a malformed length fails instead of allocating.
func (r *reader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.b)-r.i) {
		r.fail()
		return 0
	}
	return int(n)
}

func (r *reader) bytes() []byte {
	n := r.count()
	out := r.b[r.i : r.i+n]
	r.i += n
	return out
}

func (r *reader) float() float64 {
	if len(r.b)-r.i < 8 {
		r.fail()
		return 0
	}
	f := math.Float64frombits(binary.LittleEndian.Uint64(r.b[r.i:]))
	r.i += 8
	return f
}

func (r *reader) int128() int128.Int {
	return int128.Int{Hi: r.varint(), Lo: r.uvarint()}
}

func (r *reader) done(what string) error {
	if r.err == nil && r.i != len(r.b) {
		r.err = fmt.Errorf("shard: %d trailing bytes after a %s", len(r.b)-r.i, what)
	}
	return r.err
}

// AppendRecord appends one (unit, pair) record to a batch of records.
func AppendRecord(batch []byte, unit string, p Pair) []byte {
	batch = binary.AppendUvarint(batch, uint64(len(unit)))
	return appendPair(append(batch, unit...), p)
}

// ReadRecords calls fn for every record of a batch made by AppendRecord.
func ReadRecords(batch []byte, fn func(unit string, p Pair) error) error {
	r := &reader{b: batch}
	for r.i < len(r.b) && r.err == nil {
		unit := string(r.bytes())
		p := r.pair()
		if r.err != nil {
			break
		}
		if err := fn(unit, p); err != nil {
			return err
		}
	}
	return r.done("batch of records")
}

// AppendUnitRecord appends one unit's state, with the unit, to a batch.
func AppendUnitRecord(batch []byte, unit string, u *Unit) []byte {
	batch = binary.AppendUvarint(batch, uint64(len(unit)))
	batch = binary.AppendUvarint(append(batch, unit...), uint64(len(u.Pairs)))
	for _, p := range u.Pairs {
		batch = appendPair(batch, p)
	}
	return batch
}

// ReadUnitRecords calls fn for every unit of a batch made by AppendUnitRecord.
func ReadUnitRecords(batch []byte, fn func(unit string, u *Unit) error) error {
	r := &reader{b: batch}
	for r.i < len(r.b) && r.err == nil {
		unit := string(r.bytes())
		n := r.count()
		u := &Unit{Pairs: make([]Pair, 0, n)}
		for i := 0; i < n && r.err == nil; i++ {
			u.Pairs = append(u.Pairs, r.pair())
		}
		if r.err != nil {
			break
		}
		if err := fn(unit, u); err != nil {
			return err
		}
	}
	return r.done("batch of units")
}
