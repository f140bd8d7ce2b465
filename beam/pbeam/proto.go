package pbeam

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/dpsql/dpsql/beam/internal/dofn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

func init() {
	dofn.DoFn1x3[beam.V, string, beam.V, error](&protoIDFn{})
}

var protoMessageType = reflect.TypeOf((*proto.Message)(nil)).Elem()

// MakePrivateFromProto makes a PrivatePCollection<M> from a PCollection of
// proto messages M, whose field idFieldPath (a field name, or a dotted path
// through singular submessages, e.g. "visitor.user_id", with the names of
// the .proto file) identifies the privacy unit. The field must be a
// singular scalar field (not repeated, not a map, not a message); an unset
// field is its default value, so all messages without it are one unit.
func MakePrivateFromProto(s beam.Scope, col beam.PCollection, spec *PrivacySpec, idFieldPath string) PrivatePCollection {
	const op = "pbeam.MakePrivateFromProto"
	s = s.Scope(op)
	if spec == nil {
		fail("%s: the PrivacySpec is nil; make one with pbeam.NewPrivacySpec", op)
	}
	if typex.IsKV(col.Type()) {
		fail("%s: the PCollection is of KV type %v; it must hold proto messages (use MakePrivate for KV<ID, V>)", op, col.Type())
	}
	t := col.Type().Type()
	if !t.Implements(protoMessageType) {
		fail("%s: the PCollection holds %v, which is not a proto message (proto.Message); use MakePrivateFromStruct for Go structs", op, t)
	}
	var desc protoreflect.MessageDescriptor
	if t.Kind() == reflect.Pointer {
		desc = reflect.New(t.Elem()).Interface().(proto.Message).ProtoReflect().Descriptor()
	} else {
		desc = reflect.Zero(t).Interface().(proto.Message).ProtoReflect().Descriptor()
	}
	if _, err := protoIDPath(desc, idFieldPath); err != nil {
		fail("%s: %v", op, err)
	}
	return PrivatePCollection{
		col:  beam.ParDo(s, &protoIDFn{IDFieldPath: idFieldPath}, col),
		spec: spec,
	}
}

// protoIDPath resolves a dotted field path in a message descriptor: the
// fields to follow, the last a singular scalar.
func protoIDPath(desc protoreflect.MessageDescriptor, path string) ([]protoreflect.FieldDescriptor, error) {
	if path == "" {
		return nil, fmt.Errorf("the privacy id field path is empty; name the field that identifies the privacy unit, e.g. \"user_id\"")
	}
	parts := strings.Split(path, ".")
	fields := make([]protoreflect.FieldDescriptor, len(parts))
	cur := desc
	for i, name := range parts {
		f := cur.Fields().ByName(protoreflect.Name(name))
		if f == nil {
			return nil, fmt.Errorf("message %s has no field %q (privacy id path %q; use the field names of the .proto file)", cur.FullName(), name, path)
		}
		at := strings.Join(parts[:i+1], ".")
		switch {
		case f.IsMap():
			return nil, fmt.Errorf("field %s is a map; the privacy id must be a singular scalar field", at)
		case f.Cardinality() == protoreflect.Repeated:
			return nil, fmt.Errorf("field %s is repeated; the privacy id must be a singular scalar field", at)
		}
		fields[i] = f
		isMsg := f.Kind() == protoreflect.MessageKind || f.Kind() == protoreflect.GroupKind
		last := i == len(parts)-1
		if last && isMsg {
			return nil, fmt.Errorf("field %s is a message; name one of its scalar fields", at)
		}
		if !last {
			if !isMsg {
				return nil, fmt.Errorf("field %s is a %v, not a message, so it has no field %q", at, f.Kind(), parts[i+1])
			}
			cur = f.Message()
		}
	}
	return fields, nil
}

// protoIDFn keys each message by the printed value of its id field.
type protoIDFn struct {
	IDFieldPath string

	fields []protoreflect.FieldDescriptor
	desc   protoreflect.MessageDescriptor
}

func (fn *protoIDFn) ProcessElement(v beam.V) (string, beam.V, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return "", nil, fmt.Errorf("pbeam.MakePrivateFromProto: element %T is not a proto message", v)
	}
	msg := m.ProtoReflect()
	if fn.desc != msg.Descriptor() {
		fields, err := protoIDPath(msg.Descriptor(), fn.IDFieldPath)
		if err != nil {
			return "", nil, fmt.Errorf("pbeam.MakePrivateFromProto: %w", err)
		}
		fn.fields, fn.desc = fields, msg.Descriptor()
	}
	cur := msg
	for _, f := range fn.fields[:len(fn.fields)-1] {
		// Get of an unset message field is an empty, read-only message, so
		// its fields read as their defaults.
		cur = cur.Get(f).Message()
	}
	last := fn.fields[len(fn.fields)-1]
	// The kind keeps values of different fields apart (1 and "1").
	return fmt.Sprintf("%v:%v", last.Kind(), cur.Get(last).Interface()), v, nil
}
