package shard

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/dpsql/dpsql/internal/int128"
)

// The binary encodings of the states, for runners' shuffles: varints for integers, 8 bytes
// for floats, a length before every list and string. Decoders return an error on malformed
// input, never panic.

// EncodeUnit encodes a unit's state.
func EncodeUnit(u *Unit) []byte {
	var b strings.Builder
	writeUvarint(&b, uint64(len(u.Pairs)))
	for _, p := range u.Pairs {
		writePair(&b, p)
	}
	return []byte(b.String())
}

// DecodeUnit decodes EncodeUnit's bytes.
func DecodeUnit(data []byte) (*Unit, error) {
	r := &reader{b: data}
	n := r.count()
	u := &Unit{Pairs: make([]Pair, 0, n)}
	for i := 0; i < n && r.err == nil; i++ {
		u.Pairs = append(u.Pairs, r.pair())
	}
	return u, r.done("unit")
}

// EncodePair encodes one (unit, group) pair.
func EncodePair(p Pair) []byte {
	var b strings.Builder
	writePair(&b, p)
	return []byte(b.String())
}

// DecodePair decodes EncodePair's bytes.
func DecodePair(data []byte) (Pair, error) {
	r := &reader{b: data}
	p := r.pair()
	return p, r.done("pair")
}

func writePair(b *strings.Builder, p Pair) {
	writeUvarint(b, p.Priority)
	writeUvarint(b, uint64(len(p.Group)))
	b.WriteString(p.Group)
	writeUvarint(b, uint64(len(p.Parts)))
	for _, x := range p.Parts {
		if x.Null {
			b.WriteByte(0)
			continue
		}
		b.WriteByte(1)
		writeVarint(b, x.I)
		writeFloat(b, x.F)
		writeUvarint(b, x.U)
	}
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
	var b strings.Builder
	writeVarint(&b, g.N)
	writeUvarint(&b, uint64(len(g.Aggs)))
	for _, a := range g.Aggs {
		writeVarint(&b, a.C)
		writeInt128(&b, a.S)
		writeInt128(&b, a.Q)
		writeFloat(&b, a.CountSum)
		writeUvarint(&b, uint64(len(a.Leaves)))
		for l, n := range a.Leaves {
			writeVarint(&b, l)
			writeVarint(&b, n)
		}
	}
	return []byte(b.String())
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
	var b strings.Builder
	writeUvarint(&b, uint64(len(h.Positive)))
	for i := range h.Positive {
		writeVarint(&b, h.Positive[i])
		writeVarint(&b, h.Negative[i])
	}
	return []byte(b.String())
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

func writeUvarint(b *strings.Builder, x uint64) {
	var buf [binary.MaxVarintLen64]byte
	b.Write(buf[:binary.PutUvarint(buf[:], x)])
}

func writeVarint(b *strings.Builder, x int64) {
	var buf [binary.MaxVarintLen64]byte
	b.Write(buf[:binary.PutVarint(buf[:], x)])
}

func writeFloat(b *strings.Builder, f float64) {
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], math.Float64bits(f))
	b.Write(buf[:])
}

func writeInt128(b *strings.Builder, x int128.Int) {
	writeVarint(b, x.Hi)
	writeUvarint(b, x.Lo)
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
