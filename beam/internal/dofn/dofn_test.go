package dofn

import (
	"reflect"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/reflectx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

func TestMain(m *testing.M) {
	ptest.Main(m)
}

// scaleFn has the lifecycle methods Beam calls by reflection once this package registered it.
type scaleFn struct {
	By      int
	setUp   bool
	bundles int
}

func (f *scaleFn) Setup()                { f.setUp = true }
func (f *scaleFn) StartBundle(func(int)) { f.bundles++ } // Beam: the emitters of ProcessElement
func (f *scaleFn) ProcessElement(x int, emit func(int)) {
	if !f.setUp || f.bundles == 0 {
		panic("ProcessElement before Setup or StartBundle")
	}
	emit(x * f.By)
}

type pairFn struct{}

func (pairFn) ProcessElement(k string, v int) (string, int, error) { return k + "!", v + 1, nil }

func init() {
	DoFn2x0[int, func(int)](&scaleFn{})
	register.Emitter1[int]()
	DoFn2x3[string, int, string, int, error](&pairFn{})
}

// TestProcessElementTypedCaller: ProcessElement is wrapped for the struct, through a typed
// caller (not reflect.Value.Call), and the struct's type is registered by name.
func TestProcessElementTypedCaller(t *testing.T) {
	methods, ok := reflectx.WrapMethods(&pairFn{})
	if !ok {
		t.Fatal("no struct wrapper registered for pairFn")
	}
	pe, ok := methods["ProcessElement"]
	if !ok {
		t.Fatalf("wrapper has %v, no ProcessElement", methods)
	}
	typed, ok := pe.(reflectx.Func2x3)
	if !ok {
		t.Fatalf("ProcessElement is called through %T, not a typed caller", pe)
	}
	k, v, err := typed.Call2x3("a", 1)
	if k != "a!" || v != 2 || err != nil {
		t.Errorf("Call2x3 = %v, %v, %v", k, v, err)
	}
	if _, ok := reflectx.WrapMethods(&scaleFn{}); !ok {
		t.Errorf("no struct wrapper registered for scaleFn")
	}
	key, _ := runtime.TypeKey(reflect.TypeOf(pairFn{}))
	if got, ok := runtime.LookupType(key); !ok || got != reflect.TypeOf(pairFn{}) {
		t.Errorf("pairFn's type is not registered by name %q: %v, %v", key, got, ok)
	}
}

// TestLifecycleByReflection: a DoFn registered here still has its Setup and StartBundle run
// before ProcessElement, and its fields travel with it.
func TestLifecycleByReflection(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	in := beam.Create(s, 1, 2, 3)
	out := beam.ParDo(s, &scaleFn{By: 10}, in)
	passert.Equals(s, out, 10, 20, 30)
	ptest.RunAndValidate(t, p)
}
