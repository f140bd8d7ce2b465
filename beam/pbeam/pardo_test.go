package pbeam

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

// The ParDo shapes of Privacy on Beam, each with and without a context and
// an error result: ctP* return their outputs, ctE* emit them (twice).
func ctP1x1(x int) int                               { return x + 1 }
func ctP1x2(x int) (int, string)                     { return x, fmt.Sprint("s", x) }
func ctP2x1(k int, v string) string                  { return fmt.Sprint(k + 1) }
func ctP2x2(k int, v string) (int, string)           { return k, v }
func ctE1x1(x int, emit func(int))                   { emit(x + 1); emit(x + 1000) }
func ctE1x2(x int, emit func(int, string))           { emit(x, fmt.Sprint("s", x)); emit(-x, "t") }
func ctE2x1(k int, v string, emit func(int))         { emit(k + 1); emit(k + 1000) }
func ctE2x2(k int, v string, emit func(int, string)) { emit(k, v); emit(-k, "t") }
func ctP1x1Err(x int) (int, error)                   { return x + 1, nil }
func ctP1x2Err(x int) (int, string, error)           { return x, fmt.Sprint("s", x), nil }
func ctP2x1Err(k int, v string) (string, error)      { return fmt.Sprint(k + 1), nil }
func ctP2x2Err(k int, v string) (int, string, error) { return k, v, nil }
func ctE1x1Err(x int, emit func(int)) error          { emit(x + 1); emit(x + 1000); return nil }
func ctE1x2Err(x int, emit func(int, string)) error {
	emit(x, fmt.Sprint("s", x))
	emit(-x, "t")
	return nil
}
func ctE2x1Err(k int, v string, emit func(int)) error              { emit(k + 1); emit(k + 1000); return nil }
func ctE2x2Err(k int, v string, emit func(int, string)) error      { emit(k, v); emit(-k, "t"); return nil }
func ctPCtx1x1(ctx context.Context, x int) int                     { return x + 1 }
func ctPCtx1x2(ctx context.Context, x int) (int, string)           { return x, fmt.Sprint("s", x) }
func ctPCtx2x1(ctx context.Context, k int, v string) string        { return fmt.Sprint(k + 1) }
func ctPCtx2x2(ctx context.Context, k int, v string) (int, string) { return k, v }
func ctECtx1x1(ctx context.Context, x int, emit func(int))         { emit(x + 1); emit(x + 1000) }
func ctECtx1x2(ctx context.Context, x int, emit func(int, string)) {
	emit(x, fmt.Sprint("s", x))
	emit(-x, "t")
}
func ctECtx2x1(ctx context.Context, k int, v string, emit func(int)) { emit(k + 1); emit(k + 1000) }
func ctECtx2x2(ctx context.Context, k int, v string, emit func(int, string)) {
	emit(k, v)
	emit(-k, "t")
}
func ctPCtx1x1Err(ctx context.Context, x int) (int, error)         { return x + 1, nil }
func ctPCtx1x2Err(ctx context.Context, x int) (int, string, error) { return x, fmt.Sprint("s", x), nil }
func ctPCtx2x1Err(ctx context.Context, k int, v string) (string, error) {
	return fmt.Sprint(k + 1), nil
}
func ctPCtx2x2Err(ctx context.Context, k int, v string) (int, string, error) { return k, v, nil }
func ctECtx1x1Err(ctx context.Context, x int, emit func(int)) error {
	emit(x + 1)
	emit(x + 1000)
	return nil
}
func ctECtx1x2Err(ctx context.Context, x int, emit func(int, string)) error {
	emit(x, fmt.Sprint("s", x))
	emit(-x, "t")
	return nil
}
func ctECtx2x1Err(ctx context.Context, k int, v string, emit func(int)) error {
	emit(k + 1)
	emit(k + 1000)
	return nil
}
func ctECtx2x2Err(ctx context.Context, k int, v string, emit func(int, string)) error {
	emit(k, v)
	emit(-k, "t")
	return nil
}
func init() {
	register.Function1x1(ctP1x1)
	register.Function1x2(ctP1x2)
	register.Function2x1(ctP2x1)
	register.Function2x2(ctP2x2)
	register.Function2x0(ctE1x1)
	register.Function2x0(ctE1x2)
	register.Function3x0(ctE2x1)
	register.Function3x0(ctE2x2)
	register.Function1x2(ctP1x1Err)
	register.Function1x3(ctP1x2Err)
	register.Function2x2(ctP2x1Err)
	register.Function2x3(ctP2x2Err)
	register.Function2x1(ctE1x1Err)
	register.Function2x1(ctE1x2Err)
	register.Function3x1(ctE2x1Err)
	register.Function3x1(ctE2x2Err)
	register.Function2x1(ctPCtx1x1)
	register.Function2x2(ctPCtx1x2)
	register.Function3x1(ctPCtx2x1)
	register.Function3x2(ctPCtx2x2)
	register.Function3x0(ctECtx1x1)
	register.Function3x0(ctECtx1x2)
	register.Function4x0(ctECtx2x1)
	register.Function4x0(ctECtx2x2)
	register.Function2x2(ctPCtx1x1Err)
	register.Function2x3(ctPCtx1x2Err)
	register.Function3x2(ctPCtx2x1Err)
	register.Function3x3(ctPCtx2x2Err)
	register.Function3x1(ctECtx1x1Err)
	register.Function3x1(ctECtx1x2Err)
	register.Function4x1(ctECtx2x1Err)
	register.Function4x1(ctECtx2x2Err)
}

var ctShapes = []struct {
	name   string
	fn     any
	pairIn bool
	want   []any
}{
	{"ctP1x1", ctP1x1, false, []any{"1|18", "2|100"}},
	{"ctP1x2", ctP1x2, false, []any{"1|17|s17", "2|99|s99"}},
	{"ctP2x1", ctP2x1, true, []any{"1|18", "2|100"}},
	{"ctP2x2", ctP2x2, true, []any{"1|17|s17", "2|99|s99"}},
	{"ctE1x1", ctE1x1, false, []any{"1|18", "2|100", "1|1017", "2|1099"}},
	{"ctE1x2", ctE1x2, false, []any{"1|17|s17", "2|99|s99", "1|-17|t", "2|-99|t"}},
	{"ctE2x1", ctE2x1, true, []any{"1|18", "2|100", "1|1017", "2|1099"}},
	{"ctE2x2", ctE2x2, true, []any{"1|17|s17", "2|99|s99", "1|-17|t", "2|-99|t"}},
	{"ctP1x1Err", ctP1x1Err, false, []any{"1|18", "2|100"}},
	{"ctP1x2Err", ctP1x2Err, false, []any{"1|17|s17", "2|99|s99"}},
	{"ctP2x1Err", ctP2x1Err, true, []any{"1|18", "2|100"}},
	{"ctP2x2Err", ctP2x2Err, true, []any{"1|17|s17", "2|99|s99"}},
	{"ctE1x1Err", ctE1x1Err, false, []any{"1|18", "2|100", "1|1017", "2|1099"}},
	{"ctE1x2Err", ctE1x2Err, false, []any{"1|17|s17", "2|99|s99", "1|-17|t", "2|-99|t"}},
	{"ctE2x1Err", ctE2x1Err, true, []any{"1|18", "2|100", "1|1017", "2|1099"}},
	{"ctE2x2Err", ctE2x2Err, true, []any{"1|17|s17", "2|99|s99", "1|-17|t", "2|-99|t"}},
	{"ctPCtx1x1", ctPCtx1x1, false, []any{"1|18", "2|100"}},
	{"ctPCtx1x2", ctPCtx1x2, false, []any{"1|17|s17", "2|99|s99"}},
	{"ctPCtx2x1", ctPCtx2x1, true, []any{"1|18", "2|100"}},
	{"ctPCtx2x2", ctPCtx2x2, true, []any{"1|17|s17", "2|99|s99"}},
	{"ctECtx1x1", ctECtx1x1, false, []any{"1|18", "2|100", "1|1017", "2|1099"}},
	{"ctECtx1x2", ctECtx1x2, false, []any{"1|17|s17", "2|99|s99", "1|-17|t", "2|-99|t"}},
	{"ctECtx2x1", ctECtx2x1, true, []any{"1|18", "2|100", "1|1017", "2|1099"}},
	{"ctECtx2x2", ctECtx2x2, true, []any{"1|17|s17", "2|99|s99", "1|-17|t", "2|-99|t"}},
	{"ctPCtx1x1Err", ctPCtx1x1Err, false, []any{"1|18", "2|100"}},
	{"ctPCtx1x2Err", ctPCtx1x2Err, false, []any{"1|17|s17", "2|99|s99"}},
	{"ctPCtx2x1Err", ctPCtx2x1Err, true, []any{"1|18", "2|100"}},
	{"ctPCtx2x2Err", ctPCtx2x2Err, true, []any{"1|17|s17", "2|99|s99"}},
	{"ctECtx1x1Err", ctECtx1x1Err, false, []any{"1|18", "2|100", "1|1017", "2|1099"}},
	{"ctECtx1x2Err", ctECtx1x2Err, false, []any{"1|17|s17", "2|99|s99", "1|-17|t", "2|-99|t"}},
	{"ctECtx2x1Err", ctECtx2x1Err, true, []any{"1|18", "2|100", "1|1017", "2|1099"}},
	{"ctECtx2x2Err", ctECtx2x2Err, true, []any{"1|17|s17", "2|99|s99", "1|-17|t", "2|-99|t"}},
}

// ctShapeInputs returns the PrivatePCollection<int> {id 1: 17, id 2: 99}
// and the PrivatePCollection<int,string> {1: (17, "s17"), 2: (99, "s99")}.
func ctShapeInputs(t *testing.T, s beam.Scope) (PrivatePCollection, PrivatePCollection) {
	rows := beam.CreateList(s, []ctRow{{ID: 1, Key: 17}, {ID: 2, Key: 99}})
	one := ParDo(s, ctKey, MakePrivateFromStruct(s, rows, ctSpec(t, PrivacySpecParams{AggregationEpsilon: 1}), "ID"))
	return one, ParDo(s, ctP1x2, one)
}

// TestParDoShapes runs every shape in one pipeline: each output keeps its
// input's privacy id, and emit functions may output several elements.
func TestParDoShapes(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	one, pairs := ctShapeInputs(t, s)
	for _, tc := range ctShapes {
		in := one
		if tc.pairIn {
			in = pairs
		}
		out := ParDo(s.Scope(tc.name), tc.fn, in)
		passert.Equals(s.Scope(tc.name), ctStrings(s.Scope(tc.name), out), tc.want...)
	}
	ctRun(t, p)
}

var errCt = errors.New("ct: refused element 99")

func ctFail1x1(x int) (int, error) {
	if x == 99 {
		return 0, errCt
	}
	return x, nil
}

func ctFailCtx2x2(_ context.Context, k int, v string) (int, string, error) {
	if k == 99 {
		return 0, "", errCt
	}
	return k, v, nil
}

func ctFailEmit1x2(x int, emit func(int, string)) error {
	if x == 99 {
		return errCt
	}
	emit(x, "ok")
	return nil
}

func ctFailCtxEmit2x1(_ context.Context, k int, _ string, emit func(int)) error {
	emit(k)
	if k == 99 {
		return errCt
	}
	return nil
}

func init() {
	register.Function1x2(ctFail1x1)
	register.Function3x3(ctFailCtx2x2)
	register.Function2x1(ctFailEmit1x2)
	register.Function4x1(ctFailCtxEmit2x1)
}

// TestParDoErrorsFailThePipeline: an error returned by the function fails
// the pipeline with that error.
func TestParDoErrorsFailThePipeline(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fn     any
		pairIn bool
	}{
		{"1x1 error", ctFail1x1, false},
		{"ctx 2x2 error", ctFailCtx2x2, true},
		{"emit 1x2 error", ctFailEmit1x2, false},
		{"ctx emit 2x1 error", ctFailCtxEmit2x1, true},
	} {
		p, s := beam.NewPipelineWithRoot()
		one, pairs := ctShapeInputs(t, s)
		in := one
		if tc.pairIn {
			in = pairs
		}
		out := ParDo(s, tc.fn, in)
		ctStrings(s, out)
		err := ptest.Run(p)
		if err == nil || !strings.Contains(err.Error(), errCt.Error()) {
			t.Errorf("%s: the pipeline returned %v; want the function's error %q", tc.name, err, errCt)
		}
	}
}

type ctStructuralDoFn struct{}

func (ctStructuralDoFn) ProcessElement(x int) int { return x }

// TestParDoRefusedShapes: functions PoB refuses are refused at
// construction, with a message, not by Beam or in a worker.
func TestParDoRefusedShapes(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   any
		want string
	}{
		{"not a function", 42, "must be a function"},
		{"structural DoFn", &ctStructuralDoFn{}, "structural DoFns"},
		{"nil", nil, "must be a function"},
		{"universal input", func(x beam.W) int { return 0 }, "universal type"},
		{"universal output", func(x int) beam.W { return x }, "universal type"},
		{"universal emit", func(x int, emit func(beam.W)) { emit(x) }, "universal type"},
		{"three inputs", func(x, y, z int) int { return x }, "must take one value"},
		{"no input", func() int { return 0 }, "must take one value"},
		{"event time input", func(_ beam.EventTime, x int) int { return x }, "not supported"},
		{"window input", func(_ beam.Window, x int) int { return x }, "not supported"},
		{"two emits", func(x int, emit func(int), other func(int)) { emit(x) }, "not supported"},
		{"emit and return", func(x int, emit func(int)) int { return x }, "emit function and also returns"},
		{"emit with a result", func(x int, emit func(int) bool) {}, "returning nothing"},
		{"emit of three", func(x int, emit func(int, int, int)) {}, "func(Y) or func(Y, Z)"},
		{"context after the value", func(x int, _ context.Context) int { return x }, "not supported"},
		{"event time output", func(x int) (beam.EventTime, int) { return 0, x }, "not supported"},
		{"three outputs", func(x int) (int, int, int) { return x, x, x }, "must return one value or two"},
		{"no output", func(x int) {}, "must return one value or two"},
		{"only an error", func(x int) error { return nil }, "must return one value or two"},
		{"error first", func(x int) (error, int) { return nil, x }, "not supported"},
		{"variadic", func(x ...int) int { return 0 }, "variadic"},
		{"side input iterator", func(x int, it func(*int) bool) int { return x }, "returning nothing"},
	} {
		p, s := beam.NewPipelineWithRoot()
		_ = p
		one, _ := ctShapeInputs(t, s)
		t.Run(tc.name, func(t *testing.T) {
			ctMustFail(t, func() { ParDo(s, tc.fn, one) }, "pbeam.ParDo", tc.want)
		})
	}
}

// TestParDoTypeMismatch: a function whose input types do not match the
// PrivatePCollection is refused at construction.
func TestParDoTypeMismatch(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	_ = p
	one, pairs := ctShapeInputs(t, s)
	ctMustFail(t, func() { ParDo(s, func(x string) int { return len(x) }, one) }, "takes string but the PrivatePCollection holds int")
	ctMustFail(t, func() { ParDo(s, func(k int, v int) int { return k }, pairs) }, "takes (int, int) but the PrivatePCollection holds (int, string)")
	ctMustFail(t, func() { ParDo(s, ctP1x1, pairs) }, "holds key-value pairs")
	ctMustFail(t, func() { ParDo(s, ctP2x1, one) }, "holds single values")
	ctMustFail(t, func() { ParDo(s, ctP1x1, PrivatePCollection{}) }, "not made with")
}
