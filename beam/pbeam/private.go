package pbeam

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/dpsql/dpsql/beam/internal/dofn"
)

func init() {
	dofn.DoFn1x3[beam.V, string, beam.V, error](&structIDFn{})
	dofn.DoFn2x3[beam.U, kvPair, beam.U, beam.V, error](&dropKeyFn{})
	dofn.DoFn2x3[beam.U, kvPair, beam.U, beam.W, error](&dropValueFn{})
}

// PrivatePCollection is a PCollection whose every element belongs to one
// privacy unit (a user). The unit's identifier travels with every element and
// no function of the pipeline author ever sees it; the only way out of a
// PrivatePCollection is a differentially private aggregation.
//
// A PrivatePCollection<V> holds single values; a PrivatePCollection<K,V> (made
// by ParDo with a function returning two values) holds key-value pairs, the
// key being the partition of the per-key aggregations.
type PrivatePCollection struct {
	// col is PCollection<KV<ID, X>>: X is the element itself, or a kvPair
	// (the encoded key and value) when codec is set.
	col   beam.PCollection
	codec *pairCodec
	spec  *PrivacySpec
}

// MakePrivate makes a PrivatePCollection<V> from a PCollection<KV<ID, V>>,
// where ID identifies the privacy unit of each element.
func MakePrivate(_ beam.Scope, col beam.PCollection, spec *PrivacySpec) PrivatePCollection {
	if spec == nil {
		fail("pbeam.MakePrivate: the PrivacySpec is nil; make one with pbeam.NewPrivacySpec")
	}
	if !typex.IsKV(col.Type()) {
		fail("pbeam.MakePrivate: the PCollection is of type %v; it must be a PCollection<KV<ID, V>> whose key identifies the privacy unit (or use MakePrivateFromStruct)", col.Type())
	}
	for i, what := range []string{"privacy id", "value"} {
		if err := checkCodable(col.Type().Components()[i].Type()); err != nil {
			fail("pbeam.MakePrivate: the %s: %v", what, err)
		}
	}
	return PrivatePCollection{col: col, spec: spec}
}

// MakePrivateFromStruct makes a PrivatePCollection<S> from a PCollection of
// structs S, whose field idFieldPath (a name, or a dotted path into nested
// structs, e.g. "User.ID") identifies the privacy unit. The field must be of a
// simple type (bool, an integer, a float or a string).
func MakePrivateFromStruct(s beam.Scope, col beam.PCollection, spec *PrivacySpec, idFieldPath string) PrivatePCollection {
	s = s.Scope("pbeam.MakePrivateFromStruct")
	if spec == nil {
		fail("pbeam.MakePrivateFromStruct: the PrivacySpec is nil; make one with pbeam.NewPrivacySpec")
	}
	if typex.IsKV(col.Type()) {
		fail("pbeam.MakePrivateFromStruct: the PCollection is of KV type %v; it must hold structs (use MakePrivate for KV<ID, V>)", col.Type())
	}
	t := col.Type().Type()
	if err := checkIDPath(t, idFieldPath); err != nil {
		fail("pbeam.MakePrivateFromStruct: %v", err)
	}
	if err := checkCodable(t); err != nil {
		fail("pbeam.MakePrivateFromStruct: %v", err)
	}
	return PrivatePCollection{
		col:  beam.ParDo(s, &structIDFn{IDFieldPath: idFieldPath}, col),
		spec: spec,
	}
}

// checkIDPath checks, at construction, that path names a field of a simple
// type in struct type t (through pointers and nested structs).
func checkIDPath(t reflect.Type, path string) error {
	st := t
	for st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	if st.Kind() != reflect.Struct {
		return fmt.Errorf("the PCollection holds %v, not structs", t)
	}
	if path == "" {
		return fmt.Errorf("the privacy id field path is empty; name the field that identifies the privacy unit, e.g. \"UserID\"")
	}
	cur := st
	parts := strings.Split(path, ".")
	for i, name := range parts {
		for cur.Kind() == reflect.Pointer {
			cur = cur.Elem()
		}
		if cur.Kind() != reflect.Struct {
			return fmt.Errorf("%s is of type %v, not a struct, so it has no field %q", strings.Join(parts[:i], "."), cur, name)
		}
		f, ok := cur.FieldByName(name)
		if !ok {
			return fmt.Errorf("struct %v has no field %q (privacy id path %q)", cur, name, path)
		}
		if !f.IsExported() {
			return fmt.Errorf("field %q of %v is not exported; Beam cannot encode it", name, cur)
		}
		cur = f.Type
	}
	for cur.Kind() == reflect.Pointer {
		cur = cur.Elem()
	}
	switch cur.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.String:
		return nil
	}
	return fmt.Errorf("the privacy id field %q is of type %v; it must be a bool, an integer, a float or a string", path, cur)
}

// structIDFn keys each struct by the printed value of its id field.
type structIDFn struct {
	IDFieldPath string
	parts       []string
}

func (fn *structIDFn) ProcessElement(v beam.V) (string, beam.V, error) {
	if fn.parts == nil {
		fn.parts = strings.Split(fn.IDFieldPath, ".")
	}
	f := deref(reflect.ValueOf(v))
	for _, name := range fn.parts {
		sf, ok := f.Type().FieldByName(name)
		if !ok {
			return "", v, fmt.Errorf("pbeam.MakePrivateFromStruct: %v has no field %q", f.Type(), name)
		}
		// Step by index, not FieldByName on the value: a field promoted
		// through a nil embedded pointer reads as its zero value instead of
		// panicking.
		for _, i := range sf.Index {
			f = deref(f).Field(i)
		}
		f = deref(f)
	}
	// %#v keeps distinct values distinct (1 and "1" differ).
	return fmt.Sprintf("%#v", f.Interface()), v, nil
}

// deref follows pointers, reading a nil one as the zero value of its type
// (as Privacy on Beam reads a nil pointer on the id path).
func deref(f reflect.Value) reflect.Value {
	for f.Kind() == reflect.Pointer {
		if f.IsNil() {
			f = reflect.Zero(f.Type().Elem())
		} else {
			f = f.Elem()
		}
	}
	return f
}

// DropKey turns a PrivatePCollection<K,V> into a PrivatePCollection<V>.
func DropKey(s beam.Scope, pcol PrivatePCollection) PrivatePCollection {
	s = s.Scope("pbeam.DropKey")
	c := pcol.mustPairs("pbeam.DropKey")
	pcol.col = beam.ParDo(s, &dropKeyFn{Codec: c}, pcol.col, beam.TypeDefinition{Var: beam.VType, T: c.VType.T})
	pcol.codec = nil
	return pcol
}

// DropValue turns a PrivatePCollection<K,V> into a PrivatePCollection<K>.
func DropValue(s beam.Scope, pcol PrivatePCollection) PrivatePCollection {
	s = s.Scope("pbeam.DropValue")
	c := pcol.mustPairs("pbeam.DropValue")
	pcol.col = beam.ParDo(s, &dropValueFn{Codec: c}, pcol.col, beam.TypeDefinition{Var: beam.WType, T: c.KType.T})
	pcol.codec = nil
	return pcol
}

type dropKeyFn struct{ Codec *pairCodec }

func (fn *dropKeyFn) ProcessElement(id beam.U, p kvPair) (beam.U, beam.V, error) {
	v, err := fn.Codec.decodeV(p.V)
	return id, v, err
}

type dropValueFn struct{ Codec *pairCodec }

func (fn *dropValueFn) ProcessElement(id beam.U, p kvPair) (beam.U, beam.W, error) {
	k, err := fn.Codec.decodeK(p.K)
	return id, k, err
}

// mustPairs returns the codec of a PrivatePCollection<K,V>, or fails
// construction if pcol holds single values.
func (pcol PrivatePCollection) mustPairs(op string) *pairCodec {
	if pcol.spec == nil {
		fail("%s: the PrivatePCollection was not made with MakePrivate or MakePrivateFromStruct", op)
	}
	if pcol.codec == nil {
		fail("%s: needs a PrivatePCollection<K,V> but this one holds single values of type %v; use pbeam.ParDo with a function returning (K, V) first", op, pcol.valueType())
	}
	return pcol.codec
}

// valueType is the type of the elements (V) of a PrivatePCollection<V>.
func (pcol PrivatePCollection) valueType() reflect.Type {
	return pcol.col.Type().Components()[1].Type()
}

// idType is the type of the privacy identifiers.
func (pcol PrivatePCollection) idType() reflect.Type {
	return pcol.col.Type().Components()[0].Type()
}

// constructionError is the panic value of a pipeline construction that
// cannot succeed (bad parameters, wrong types, an overspent budget). Like
// Beam's own constructors, pbeam's functions return no error: they panic
// while the pipeline is built, before anything runs, with a message that
// says what to change.
type constructionError struct{ msg string }

func (e *constructionError) Error() string { return e.msg }

func fail(format string, args ...any) {
	panic(&constructionError{msg: fmt.Sprintf(format, args...)})
}
