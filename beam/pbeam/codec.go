package pbeam

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"reflect"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*kvPair)(nil)).Elem())
	beam.RegisterCoder(reflect.TypeOf((*kvPair)(nil)).Elem(), encodeKVPair, decodeKVPair)
}

// kvPair is one element of a PrivatePCollection<K,V>: Beam cannot nest a KV
// inside the KV<ID, X> that carries the privacy id, so K and V travel
// encoded with their Beam coders.
type kvPair struct {
	K, V []byte
}

func encodeKVPair(p kvPair) []byte {
	b := make([]byte, 0, len(p.K)+len(p.V)+binary.MaxVarintLen64)
	b = binary.AppendUvarint(b, uint64(len(p.K)))
	b = append(b, p.K...)
	return append(b, p.V...)
}

func decodeKVPair(b []byte) (kvPair, error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || uint64(len(b)-w) < n {
		return kvPair{}, fmt.Errorf("pbeam: corrupt key-value pair encoding")
	}
	k := b[w : w+int(n)]
	return kvPair{K: k, V: b[w+int(n):]}, nil
}

// pairCodec encodes and decodes the K and V of a PrivatePCollection<K,V>
// with Beam's coders for their types. The coders are built lazily on each
// worker (the codec travels inside DoFns as its two types).
type pairCodec struct {
	KType, VType beam.EncodedType

	once       sync.Once
	kEnc, vEnc beam.ElementEncoder
	kDec, vDec beam.ElementDecoder
}

func newPairCodec(k, v reflect.Type) *pairCodec {
	return &pairCodec{KType: beam.EncodedType{T: k}, VType: beam.EncodedType{T: v}}
}

func (c *pairCodec) setup() {
	c.once.Do(func() {
		c.kEnc = beam.NewElementEncoder(c.KType.T)
		c.kDec = beam.NewElementDecoder(c.KType.T)
		c.vEnc = beam.NewElementEncoder(c.VType.T)
		c.vDec = beam.NewElementDecoder(c.VType.T)
	})
}

func (c *pairCodec) encode(k, v any) (kvPair, error) {
	c.setup()
	var kb, vb bytes.Buffer
	if err := c.kEnc.Encode(k, &kb); err != nil {
		return kvPair{}, fmt.Errorf("pbeam: encoding key %v: %w", k, err)
	}
	if err := c.vEnc.Encode(v, &vb); err != nil {
		return kvPair{}, fmt.Errorf("pbeam: encoding value %v: %w", v, err)
	}
	return kvPair{K: kb.Bytes(), V: vb.Bytes()}, nil
}

func (c *pairCodec) decodeK(b []byte) (any, error) {
	c.setup()
	return decodeWith(c.kDec, b)
}

func (c *pairCodec) decodeV(b []byte) (any, error) {
	c.setup()
	return decodeWith(c.vDec, b)
}

func decodeWith(d beam.ElementDecoder, b []byte) (any, error) {
	v, err := d.Decode(bytes.NewReader(b))
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("pbeam: decoding: %w", err)
	}
	return v, nil
}

// elementCodec encodes and decodes values of one type (partition keys of a
// PrivatePCollection<V>, public partitions) to the bytes pbeam groups by.
type elementCodec struct {
	T beam.EncodedType

	once sync.Once
	enc  beam.ElementEncoder
	dec  beam.ElementDecoder
}

func newElementCodec(t reflect.Type) *elementCodec {
	return &elementCodec{T: beam.EncodedType{T: t}}
}

func (c *elementCodec) setup() {
	c.once.Do(func() {
		c.enc = beam.NewElementEncoder(c.T.T)
		c.dec = beam.NewElementDecoder(c.T.T)
	})
}

func (c *elementCodec) encode(v any) ([]byte, error) {
	c.setup()
	var b bytes.Buffer
	if err := c.enc.Encode(v, &b); err != nil {
		return nil, fmt.Errorf("pbeam: encoding %v: %w", v, err)
	}
	return b.Bytes(), nil
}

func (c *elementCodec) decode(b []byte) (any, error) {
	c.setup()
	return decodeWith(c.dec, b)
}

// checkCodable reports, at construction, an element type that Beam cannot
// encode: pbeam encodes privacy ids, partition keys and values in its
// workers, where a missing coder would otherwise surface as a panic.
func checkCodable(t reflect.Type) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("Beam cannot encode values of type %v (%v); use a type with a coder (a number, a string, a struct of exported encodable fields, or one registered with beam.RegisterCoder)", t, r)
		}
	}()
	if t.Kind() == reflect.Func || t.Kind() == reflect.Chan || t.Kind() == reflect.UnsafePointer {
		return fmt.Errorf("Beam cannot encode values of type %v; use a concrete type with a coder (a number, a string, a struct of exported encodable fields, or one registered with beam.RegisterCoder)", t)
	}
	beam.NewElementEncoder(t)
	beam.NewElementDecoder(t)
	return nil
}
