package pbeam

import (
	"context"
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/reflectx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/dpsql/dpsql/beam/internal/dofn"
)

func init() {
	dofn.DoFn4x1[context.Context, beam.U, beam.V, func(beam.U, beam.W), error](&privateDoFn{})
	register.Emitter2[beam.U, beam.W]()
}

// ParDo applies doFn to every element of a PrivatePCollection and returns
// the PrivatePCollection of its outputs: each output belongs to the privacy
// unit of its input. doFn never sees the privacy unit. It must be a function
// (not a structural DoFn), with concrete types (no beam.T, beam.V, ...), of
// one of these shapes, as in Privacy on Beam:
//
//	PrivatePCollection<X> to PrivatePCollection<Y> or <Y,Z>:
//	  func(X) Y, func(X) (Y, Z), func(X) (Y, error), func(X) (Y, Z, error),
//	  func(X, emit), func(X, emit) error, with emit a func(Y) or func(Y, Z);
//	PrivatePCollection<W,X> to PrivatePCollection<Y> or <Y,Z>:
//	  the same with (W, X) as inputs;
//	and each of them with a context.Context as first argument.
//
// An error returned by doFn fails the pipeline. Side inputs, windows and
// event times are not supported. For portable runners (Prism, Flink, Spark,
// Dataflow) register doFn with Beam (register.FunctionNxM or
// beam.RegisterFunction), as for beam.ParDo.
func ParDo(s beam.Scope, doFn any, pcol PrivatePCollection) PrivatePCollection {
	const op = "pbeam.ParDo"
	s = s.Scope(op)
	if pcol.spec == nil {
		fail("%s: the PrivatePCollection was not made with pbeam.MakePrivate or MakePrivateFromStruct", op)
	}
	sh, err := shapeOf(doFn)
	if err != nil {
		fail("%s: %v", op, err)
	}
	if sh.pairIn != (pcol.codec != nil) {
		if pcol.codec != nil {
			fail("%s: the PrivatePCollection holds key-value pairs (%v, %v) but the function takes one value; give it two value arguments", op, pcol.codec.KType.T, pcol.codec.VType.T)
		}
		fail("%s: the PrivatePCollection holds single values of type %v but the function takes two; give it one value argument", op, pcol.valueType())
	}
	if sh.pairIn {
		if sh.in[0] != pcol.codec.KType.T || sh.in[1] != pcol.codec.VType.T {
			fail("%s: the function takes (%v, %v) but the PrivatePCollection holds (%v, %v)", op, sh.in[0], sh.in[1], pcol.codec.KType.T, pcol.codec.VType.T)
		}
	} else if sh.in[0] != pcol.valueType() {
		fail("%s: the function takes %v but the PrivatePCollection holds %v", op, sh.in[0], pcol.valueType())
	}
	for i, t := range sh.out {
		if err := checkCodable(t); err != nil {
			fail("%s: output %d of the function: %v", op, i+1, err)
		}
	}
	fn := &privateDoFn{Fn: beam.EncodedFunc{Fn: reflectx.MakeFunc(doFn)}, In: pcol.codec}
	out := PrivatePCollection{spec: pcol.spec}
	outT := sh.out[0]
	if len(sh.out) == 2 {
		out.codec = newPairCodec(sh.out[0], sh.out[1])
		fn.Out = out.codec
		outT = reflect.TypeOf(kvPair{})
	}
	out.col = beam.ParDo(s, fn, pcol.col, beam.TypeDefinition{Var: beam.WType, T: outT})
	return out
}

// shape is what ParDo learned of a function's signature.
type shape struct {
	ctx    bool           // first argument is a context.Context
	pairIn bool           // two value arguments
	in     []reflect.Type // value arguments
	emit   bool           // outputs through an emit function (last argument)
	out    []reflect.Type // output types (returned or emitted)
	err    bool           // last return value is an error
}

var (
	contextType = reflect.TypeOf((*context.Context)(nil)).Elem()
	errorType   = reflect.TypeOf((*error)(nil)).Elem()
)

func shapeOf(doFn any) (shape, error) {
	t := reflect.TypeOf(doFn)
	if t == nil || t.Kind() != reflect.Func {
		return shape{}, fmt.Errorf("doFn is a %T; it must be a function (structural DoFns are not supported)", doFn)
	}
	return shapeOfType(t)
}

func shapeOfType(t reflect.Type) (shape, error) {
	var sh shape
	if t.IsVariadic() {
		return sh, fmt.Errorf("doFn %v is variadic", t)
	}
	args := make([]reflect.Type, t.NumIn())
	for i := range args {
		args[i] = t.In(i)
	}
	if len(args) > 0 && args[0] == contextType {
		sh.ctx = true
		args = args[1:]
	}
	if n := len(args); n > 0 && args[n-1].Kind() == reflect.Func {
		e := args[n-1]
		if e.NumOut() != 0 || e.NumIn() < 1 || e.NumIn() > 2 {
			return sh, fmt.Errorf("doFn %v: its emit function must be a func(Y) or func(Y, Z) returning nothing", t)
		}
		for i := 0; i < e.NumIn(); i++ {
			sh.out = append(sh.out, e.In(i))
		}
		sh.emit = true
		args = args[:n-1]
	}
	if len(args) < 1 || len(args) > 2 {
		return sh, fmt.Errorf("doFn %v must take one value (or two: a key and a value), after an optional context.Context", t)
	}
	sh.in = args
	sh.pairIn = len(args) == 2
	rets := make([]reflect.Type, t.NumOut())
	for i := range rets {
		rets[i] = t.Out(i)
	}
	if n := len(rets); n > 0 && rets[n-1] == errorType {
		sh.err = true
		rets = rets[:n-1]
	}
	if sh.emit {
		if len(rets) != 0 {
			return sh, fmt.Errorf("doFn %v has an emit function and also returns values; use one or the other", t)
		}
	} else {
		if len(rets) < 1 || len(rets) > 2 {
			return sh, fmt.Errorf("doFn %v must return one value or two (a key and a value), optionally followed by an error, or emit them", t)
		}
		sh.out = rets
	}
	for _, x := range append(append([]reflect.Type{}, sh.in...), sh.out...) {
		if isUniversal(x) {
			return sh, fmt.Errorf("doFn %v uses the universal type %v; pbeam.ParDo needs concrete types", t, x)
		}
		if x == contextType || x == errorType || x.Kind() == reflect.Func || x.Kind() == reflect.Chan ||
			x == typex.EventTimeType || x == typex.WindowType || x == typex.PaneInfoType || x == typex.BundleFinalizationType {
			return sh, fmt.Errorf("doFn %v: argument or result of type %v is not supported (no side inputs, windows, panes or event times)", t, x)
		}
	}
	return sh, nil
}

func isUniversal(t reflect.Type) bool {
	for _, u := range []any{(*beam.T)(nil), (*beam.U)(nil), (*beam.V)(nil), (*beam.W)(nil), (*beam.X)(nil), (*beam.Y)(nil), (*beam.Z)(nil)} {
		if t == reflect.TypeOf(u).Elem() {
			return true
		}
	}
	return false
}

// privateDoFn runs a pipeline author's function on the elements of a
// PrivatePCollection, keeping each output with its input's privacy id.
type privateDoFn struct {
	Fn  beam.EncodedFunc
	In  *pairCodec // the input's pairs, if any
	Out *pairCodec // the output's pairs, if any

	sh     shape
	fn     reflectx.Func
	emitFn any
	id     beam.U
	emit   func(beam.U, beam.W)
	err    error
}

func (f *privateDoFn) Setup() error {
	sh, err := shapeOfType(f.Fn.Fn.Type())
	if err != nil {
		return err
	}
	f.sh, f.fn = sh, f.Fn.Fn
	if sh.emit {
		et := f.fn.Type().In(f.fn.Type().NumIn() - 1)
		f.emitFn = reflect.MakeFunc(et, func(args []reflect.Value) []reflect.Value {
			vals := make([]any, len(args))
			for i, a := range args {
				vals[i] = a.Interface()
			}
			f.output(vals)
			return nil
		}).Interface()
	}
	return nil
}

// output forwards one output of the function with the current privacy id.
func (f *privateDoFn) output(vals []any) {
	if f.err != nil {
		return
	}
	if f.Out == nil {
		f.emit(f.id, vals[0])
		return
	}
	p, err := f.Out.encode(vals[0], vals[1])
	if err != nil {
		f.err = err
		return
	}
	f.emit(f.id, p)
}

func (f *privateDoFn) ProcessElement(ctx context.Context, id beam.U, x beam.V, emit func(beam.U, beam.W)) error {
	if f.fn == nil {
		if err := f.Setup(); err != nil {
			return err
		}
	}
	f.id, f.emit, f.err = id, emit, nil
	args := make([]any, 0, 4)
	if f.sh.ctx {
		args = append(args, ctx)
	}
	if f.In != nil {
		p, ok := x.(kvPair)
		if !ok {
			return fmt.Errorf("pbeam: internal error: element %T is not a key-value pair", x)
		}
		k, err := f.In.decodeK(p.K)
		if err != nil {
			return err
		}
		v, err := f.In.decodeV(p.V)
		if err != nil {
			return err
		}
		args = append(args, k, v)
	} else {
		args = append(args, x)
	}
	if f.sh.emit {
		args = append(args, f.emitFn)
	}
	rets := f.fn.Call(args)
	if f.sh.err {
		if e, _ := rets[len(rets)-1].(error); e != nil {
			return e
		}
		rets = rets[:len(rets)-1]
	}
	if !f.sh.emit {
		f.output(rets)
	}
	return f.err
}
