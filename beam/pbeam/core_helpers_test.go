package pbeam

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/dpsql/dpsql/beam/internal/dofn"
)

// Helpers of the core tests (spec, private, pardo, aggregation, bounding,
// statistics). Their names start with ct to stay clear of other test files.

func init() {
	dofn.DoFn2x1[beam.X, beam.Y, error](&ctCollectKVFn{})
	dofn.DoFn2x2[beam.U, kvPair, string, error](&ctPairStringFn{})
	dofn.DoFn2x1[beam.U, beam.V, string](&ctValueStringFn{})
	register.Function1x2(ctKeyInt)
	register.Function1x2(ctKeyFloat)
	register.Function1x1(ctKey)
	beam.RegisterType(reflectTypeOf[ctRow]())
}

// ctRow is the input row of the aggregation tests.
type ctRow struct {
	ID  int
	Key int
	I   int64
	F   float64
}

func ctKeyInt(r ctRow) (int, int64)     { return r.Key, r.I }
func ctKeyFloat(r ctRow) (int, float64) { return r.Key, r.F }
func ctKey(r ctRow) int                 { return r.Key }

// ctMustFail runs f, which must fail pipeline construction with a
// constructionError whose message contains every one of want.
func ctMustFail(t *testing.T, f func(), want ...string) {
	t.Helper()
	msg := func() (msg string) {
		defer func() {
			r := recover()
			if r == nil {
				return
			}
			var ce *constructionError
			if err, ok := r.(error); !ok || !errors.As(err, &ce) {
				msg = fmt.Sprintf("NOT A CONSTRUCTION ERROR: %v", r)
				return
			}
			msg = ce.Error()
		}()
		f()
		return "NO PANIC"
	}()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("construction failed with %q; want a message containing %q", msg, w)
			return
		}
	}
}

// ctCollector gathers the elements of a PCollection in a file, read back
// after the pipeline ran (any runner on this machine).
type ctCollector struct{ path string }

func newCollector(t *testing.T) ctCollector {
	return ctCollector{path: filepath.Join(t.TempDir(), "out.txt")}
}

var ctFileMu sync.Mutex

func ctAppend(path string, lines []string) error {
	if len(lines) == 0 {
		return nil
	}
	ctFileMu.Lock()
	defer ctFileMu.Unlock()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type ctCollectKVFn struct {
	Path  string
	lines []string
}

func (fn *ctCollectKVFn) ProcessElement(k beam.X, v beam.Y) error {
	fn.lines = append(fn.lines, fmt.Sprintf("%v\t%v", k, v))
	return nil
}

func (fn *ctCollectKVFn) FinishBundle() error {
	err := ctAppend(fn.Path, fn.lines)
	fn.lines = nil
	return err
}

// kv collects a PCollection<KV<K, V>>.
func (c ctCollector) kv(s beam.Scope, col beam.PCollection) {
	beam.ParDo0(s, &ctCollectKVFn{Path: c.path}, col)
}

// lines returns the collected lines, sorted.
func (c ctCollector) lines(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(c.path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	sort.Strings(out)
	return out
}

// floats returns the collected KV lines as key -> value.
func (c ctCollector) floats(t *testing.T) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, l := range c.lines(t) {
		k, v, ok := strings.Cut(l, "\t")
		if !ok {
			t.Fatalf("collected line %q is not a key-value pair", l)
		}
		if _, dup := out[k]; dup {
			t.Fatalf("key %s released twice", k)
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatal(err)
		}
		out[k] = f
	}
	return out
}

// ctRun runs p on the test runner and fails the test on error.
func ctRun(t *testing.T, p *beam.Pipeline) {
	t.Helper()
	if err := ptest.Run(p); err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
}

// ctWant compares collected key -> value results with want exactly.
func ctWant(t *testing.T, what string, got map[string]float64, want map[int]float64) {
	t.Helper()
	w := map[string]float64{}
	for k, v := range want {
		w[strconv.Itoa(k)] = v
	}
	if len(got) != len(w) {
		t.Errorf("%s: got %v, want %v", what, got, w)
		return
	}
	for k, v := range w {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s: got %v, want %v", what, got, w)
			return
		}
	}
}

// ctPairStringFn prints the elements of a PrivatePCollection<K,V> as
// "id|k|v", to check what ParDo, DropKey and DropValue produce.
type ctPairStringFn struct{ Codec *pairCodec }

func (fn *ctPairStringFn) ProcessElement(id beam.U, p kvPair) (string, error) {
	k, err := fn.Codec.decodeK(p.K)
	if err != nil {
		return "", err
	}
	v, err := fn.Codec.decodeV(p.V)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%v|%v|%v", id, k, v), nil
}

// ctValueStringFn prints the elements of a PrivatePCollection<V> as "id|v".
type ctValueStringFn struct{}

func (ctValueStringFn) ProcessElement(id beam.U, v beam.V) string {
	return fmt.Sprintf("%v|%v", id, v)
}

// ctStrings returns the elements of a PrivatePCollection as strings.
func ctStrings(s beam.Scope, pcol PrivatePCollection) beam.PCollection {
	if pcol.codec != nil {
		return beam.ParDo(s, &ctPairStringFn{Codec: pcol.codec}, pcol.col)
	}
	return beam.ParDo(s, &ctValueStringFn{}, pcol.col)
}

// ctSpec makes a PrivacySpec or fails the test.
func ctSpec(t *testing.T, p PrivacySpecParams) *PrivacySpec {
	t.Helper()
	spec, err := NewPrivacySpec(p)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func reflectTypeOfValue(v any) reflect.Type { return reflect.TypeOf(v) }
