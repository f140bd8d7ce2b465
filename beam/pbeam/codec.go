package pbeam

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
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
// with an elementCodec for each. The codecs are built lazily on each worker
// (the pairCodec travels inside DoFns as its two types).
type pairCodec struct {
	KType, VType beam.EncodedType

	once sync.Once
	k, v *elementCodec
}

func newPairCodec(k, v reflect.Type) *pairCodec {
	return &pairCodec{KType: beam.EncodedType{T: k}, VType: beam.EncodedType{T: v}}
}

func (c *pairCodec) setup() {
	c.once.Do(func() {
		c.k = newElementCodec(c.KType.T)
		c.v = newElementCodec(c.VType.T)
	})
}

func (c *pairCodec) encode(k, v any) (kvPair, error) {
	c.setup()
	kb, err := c.k.encode(k)
	if err != nil {
		return kvPair{}, err
	}
	vb, err := c.v.encode(v)
	if err != nil {
		return kvPair{}, err
	}
	return kvPair{K: kb, V: vb}, nil
}

func (c *pairCodec) decodeK(b []byte) (any, error) {
	c.setup()
	return c.k.decode(b)
}

func (c *pairCodec) decodeV(b []byte) (any, error) {
	c.setup()
	return c.v.decode(b)
}

// number reads an encoded numeric value without decoding it to an
// interface (see elementCodec.number).
func (c *pairCodec) number(b []byte, r *unitRow) (bool, error) {
	c.setup()
	return c.v.number(b, r)
}

func decodeWith(d beam.ElementDecoder, b []byte) (any, error) {
	v, err := d.Decode(bytes.NewReader(b))
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("pbeam: decoding: %w", err)
	}
	return v, nil
}

// elementCodec encodes and decodes values of one type (privacy ids,
// partition keys, values) to the bytes pbeam groups and hashes by. Strings,
// booleans, integers and floats (and types defined on them) have a direct
// encoding: the string's bytes, 8 little-endian bytes of the int64, uint64
// or float64 bits, one byte; other types use Beam's coder. Every encoding
// of one type goes through the same codec, so equal values have equal bytes
// (floats: equal bits; -0 and 0, like Beam's coder, differ).
type elementCodec struct {
	T beam.EncodedType

	once sync.Once
	kind reflect.Kind // the direct encoding, or reflect.Invalid for Beam's coder
	enc  beam.ElementEncoder
	dec  beam.ElementDecoder
}

func newElementCodec(t reflect.Type) *elementCodec {
	return &elementCodec{T: beam.EncodedType{T: t}}
}

func (c *elementCodec) setup() {
	c.once.Do(func() {
		switch k := c.T.T.Kind(); k {
		case reflect.String, reflect.Bool,
			reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64:
			c.kind = k
		default:
			c.enc = beam.NewElementEncoder(c.T.T)
			c.dec = beam.NewElementDecoder(c.T.T)
		}
	})
}

func (c *elementCodec) encode(v any) ([]byte, error) {
	c.setup()
	switch x := v.(type) {
	case string:
		if c.kind == reflect.String {
			return []byte(x), nil
		}
	case int:
		if c.kind == reflect.Int {
			return binary.LittleEndian.AppendUint64(make([]byte, 0, 8), uint64(x)), nil
		}
	case int64:
		if c.kind == reflect.Int64 {
			return binary.LittleEndian.AppendUint64(make([]byte, 0, 8), uint64(x)), nil
		}
	case float64:
		if c.kind == reflect.Float64 {
			return binary.LittleEndian.AppendUint64(make([]byte, 0, 8), math.Float64bits(x)), nil
		}
	}
	if c.kind == reflect.Invalid {
		var b bytes.Buffer
		if err := c.enc.Encode(v, &b); err != nil {
			return nil, fmt.Errorf("pbeam: encoding %v: %w", v, err)
		}
		return b.Bytes(), nil
	}
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || rv.Kind() != c.kind {
		return nil, fmt.Errorf("pbeam: encoding %v: a %T where %v was expected", v, v, c.T.T)
	}
	b := make([]byte, 0, 8)
	switch c.kind {
	case reflect.String:
		return []byte(rv.String()), nil
	case reflect.Bool:
		if rv.Bool() {
			return []byte{1}, nil
		}
		return []byte{0}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return binary.LittleEndian.AppendUint64(b, uint64(rv.Int())), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return binary.LittleEndian.AppendUint64(b, rv.Uint()), nil
	default: // floats
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(rv.Float())), nil
	}
}

// key is encode as a string (a string value is its own encoding).
func (c *elementCodec) key(v any) (string, error) {
	c.setup()
	if x, ok := v.(string); ok && c.kind == reflect.String {
		return x, nil
	}
	b, err := c.encode(v)
	return string(b), err
}

func (c *elementCodec) decode(b []byte) (any, error) {
	c.setup()
	if c.kind == reflect.Invalid {
		return decodeWith(c.dec, b)
	}
	if c.kind == reflect.String {
		if c.T.T == stringType {
			return string(b), nil
		}
		return reflect.ValueOf(string(b)).Convert(c.T.T).Interface(), nil
	}
	if c.kind == reflect.Bool {
		if len(b) != 1 {
			return nil, fmt.Errorf("pbeam: corrupt encoding of a %v", c.T.T)
		}
		return reflect.ValueOf(b[0] == 1).Convert(c.T.T).Interface(), nil
	}
	if len(b) != 8 {
		return nil, fmt.Errorf("pbeam: corrupt encoding of a %v", c.T.T)
	}
	u := binary.LittleEndian.Uint64(b)
	v := reflect.New(c.T.T).Elem()
	switch c.kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(u))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(u)
	default:
		v.SetFloat(math.Float64frombits(u))
	}
	return v.Interface(), nil
}

// number reads an encoded integer or float into r (I and F, or Null for
// NaN) without going through an interface; it reports false for a type
// without a direct numeric encoding.
func (c *elementCodec) number(b []byte, r *unitRow) (bool, error) {
	c.setup()
	switch c.kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
	default:
		return false, nil
	}
	if len(b) != 8 {
		return false, fmt.Errorf("pbeam: corrupt encoding of a %v", c.T.T)
	}
	u := binary.LittleEndian.Uint64(b)
	switch c.kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		r.I = int64(u)
		r.F = float64(r.I)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		r.I = int64(min(u, math.MaxInt64)) // bounds are int64: saturating changes no clamped value
		r.F = float64(u)
	default:
		r.F = math.Float64frombits(u)
		r.Null = math.IsNaN(r.F)
	}
	return true, nil
}

var stringType = reflect.TypeOf("")

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
