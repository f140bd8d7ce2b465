package pbeam

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/dpsql/dpsql/beam/internal/dofn"
)

// Test helpers of the value aggregations: results are written to a file by
// the pipeline and checked in Go after it ran (so that the checks can
// compute statistics and log figures).

// row is an element of the tests' inputs: a privacy unit's value in a
// partition.
type row struct {
	ID   int
	Part int
	V    float64
}

func rowKV(r row) (int, float64) { return r.Part, r.V }

// keyed is one released partition, its results as floats: the value, the
// statistics' fields in order, or the quantiles.
type keyed struct {
	K  int
	Vs []float64
}

func floatResult(k int, v float64) keyed            { return keyed{k, []float64{v}} }
func floatsResult(k int, v []float64) keyed         { return keyed{k, v} }
func meanStatsResult(k int, m MeanStatistics) keyed { return keyed{k, []float64{m.Count, m.Mean}} }
func varianceStatsResult(k int, v VarianceStatistics) keyed {
	return keyed{k, []float64{v.Count, v.Mean, v.Variance}}
}

// writeResultsFn writes all the results it is given (one group) to Path.
type writeResultsFn struct{ Path string }

func (fn *writeResultsFn) ProcessElement(_ int, rs func(*keyed) bool) error {
	out := map[int][]float64{}
	var r keyed
	for rs(&r) {
		if _, dup := out[r.K]; dup {
			return fmt.Errorf("partition %d released twice", r.K)
		}
		out[r.K] = r.Vs
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return os.WriteFile(fn.Path, b, 0o644)
}

func init() {
	register.Function1x2(rowKV)
	register.Function2x1(floatResult)
	register.Function2x1(floatsResult)
	register.Function2x1(meanStatsResult)
	register.Function2x1(varianceStatsResult)
	dofn.DoFn2x1[int, func(*keyed) bool, error](&writeResultsFn{})
	register.Iter1[keyed]()
	beam.RegisterType(reflect.TypeOf(row{}))
	beam.RegisterType(reflect.TypeOf(keyed{}))
}

// results collects the output of a value aggregation; read it after the
// pipeline ran.
type results struct{ path string }

func collect(t *testing.T, s beam.Scope, col beam.PCollection) results {
	t.Helper()
	var conv any
	switch vt := col.Type().Components()[1].Type(); vt {
	case reflect.TypeOf(0.0):
		conv = floatResult
	case reflect.TypeOf([]float64{}):
		conv = floatsResult
	case reflect.TypeOf(MeanStatistics{}):
		conv = meanStatsResult
	case reflect.TypeOf(VarianceStatistics{}):
		conv = varianceStatsResult
	default:
		t.Fatalf("collect: unexpected output type %v", vt)
	}
	path := filepath.Join(t.TempDir(), "results.json") // a new directory per call
	rs := beam.ParDo(s, conv, col)
	grouped := beam.GroupByKey(s, beam.AddFixedKey(s, rs))
	beam.ParDo0(s, &writeResultsFn{Path: path}, grouped)
	return results{path: path}
}

// get returns the released partitions (none if nothing was released).
func (r results) get(t *testing.T) map[int][]float64 {
	t.Helper()
	b, err := os.ReadFile(r.path)
	if errors.Is(err, os.ErrNotExist) {
		return map[int][]float64{}
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[int][]float64{}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkResults compares released partitions with want, each value within
// tol.
func checkResults(t *testing.T, what string, got, want map[int][]float64, tol float64) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s: partition %d not released, want %v", what, k, w)
			continue
		}
		if len(g) != len(w) {
			t.Errorf("%s: partition %d = %v, want %v", what, k, g, w)
			continue
		}
		for i := range w {
			if !(math.Abs(g[i]-w[i]) <= tol) {
				t.Errorf("%s: partition %d = %v, want %v (within %v)", what, k, g, w, tol)
				break
			}
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: partition %d = %v released, want it absent", what, k, g)
		}
	}
}

// constructionPanic runs build and returns the message of the construction
// error it panics with ("" if none).
func constructionPanic(t *testing.T, build func()) (msg string) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		ce, ok := r.(*constructionError)
		if !ok {
			t.Errorf("panic %v (%T), want a *constructionError", r, r)
			msg = fmt.Sprint(r)
			return
		}
		msg = ce.Error()
	}()
	build()
	return ""
}

// wantPanic checks that build fails construction with a message containing
// every one of parts.
func wantPanic(t *testing.T, what string, build func(), parts ...string) {
	t.Helper()
	msg := constructionPanic(t, build)
	if msg == "" {
		t.Errorf("%s: construction succeeded, want an error", what)
		return
	}
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("%s: error %q does not say %q", what, msg, p)
		}
	}
}
