package pgcatalog

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// calledFuncs lists the functions (scalar, aggregate, window and table) the parse tree v
// calls, as "schema.name" ("name" when unqualified).
func calledFuncs(v any, into map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		if c := str(v, "class"); c == "FUNCTION" || c == "WINDOW" {
			name := str(v, "function_name")
			if s := str(v, "schema"); s != "" {
				name = s + "." + name
			}
			into[name] = true
		}
		for _, c := range v {
			calledFuncs(c, into)
		}
	case []any:
		for _, c := range v {
			calledFuncs(c, into)
		}
	}
}

// TestAllowedFuncsCoverTestdata lists the functions the captured client queries call once
// rewritten (go test -run AllowedFuncs -v shows them: the source of allowedFuncs) and checks
// that vet allows each.
func TestAllowedFuncsCoverTestdata(t *testing.T) {
	ctx := context.Background()
	m, err := models.acquire(ctx, testRels)
	if err != nil {
		t.Fatal(err)
	}
	defer models.release(m)
	files, _ := filepath.Glob("testdata/*/*.sql")
	used := map[string]bool{}
	for _, f := range files {
		q, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text, err := rewrite(string(q))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := m.db.Query(ctx, "SELECT json_serialize_sql($1::VARCHAR)::VARCHAR", text)
		if err != nil {
			t.Fatal(err)
		}
		var tree struct {
			Statements []struct{ Node map[string]any }
		}
		if err := json.Unmarshal([]byte(rows.Values[0][0].(string)), &tree); err != nil || len(tree.Statements) != 1 {
			t.Fatalf("%s: %v", f, err)
		}
		calledFuncs(tree.Statements[0].Node, used)
		if err := vet(tree.Statements[0].Node, map[string]bool{}); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	var names []string
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("functions of testdata: %s", strings.Join(names, " "))
}

// amplifiers are catalog queries whose answer, or whose work, an analyst could make large
// (finding H3: SELECT repeat('x', 1000000) FROM pg_class, generate_series(1,100) took the
// server to 2.4 GB). Each must be refused or answered within MaxRows and MaxBytes.
var amplifiers = []string{
	"SELECT repeat('x', 1000000) FROM pg_catalog.pg_class, generate_series(1,100)",
	"SELECT pg_catalog.repeat('x', 1000000) FROM pg_catalog.pg_class",
	"SELECT repeat(relname, 100000000) FROM pg_catalog.pg_class",
	"SELECT lpad('x', 100000000, 'y') FROM pg_catalog.pg_class",
	"SELECT rpad(relname, 100000000) FROM pg_catalog.pg_class",
	"SELECT format('%100000000s', 'x') FROM pg_catalog.pg_class",
	"SELECT printf('%100000000d', 1) FROM pg_catalog.pg_class",
	"SELECT list_resize([1], 100000000) FROM pg_catalog.pg_class",
	"SELECT array_fill(1, ARRAY[100000000]) FROM pg_catalog.pg_class",
	"SELECT generate_series(1, 1000000000) FROM pg_catalog.pg_class",
	"SELECT range(1000000000) FROM pg_catalog.pg_class",
	"SELECT * FROM pg_catalog.pg_class, generate_series(1, 1000000000)",
	"SELECT * FROM pg_catalog.pg_class, generate_series(1, 1e9)",
	"SELECT * FROM pg_catalog.pg_class, range(1000000000)",
	"SELECT * FROM pg_catalog.pg_class, generate_series(1, 10000, 0)",
	"SELECT * FROM pg_catalog.pg_class, generate_series(1, array_upper(ARRAY(SELECT 1 FROM pg_type a, pg_type b, pg_type c, pg_type d), 1))",
	"SELECT * FROM pg_catalog.pg_class, unnest(ARRAY(SELECT 1 FROM pg_type a, pg_type b, pg_type c, pg_type d))",
	"SELECT * FROM pg_attribute a, pg_attribute b, pg_type c, pg_type d",
	"SELECT a.typname, e.typname FROM pg_type a, pg_type b, pg_type c, pg_type d, pg_type e",
	"SELECT a.typname FROM pg_type a, pg_type b, pg_type c, pg_type d, pg_type e ORDER BY 1",
	"SELECT count(*) FROM pg_type a, pg_type b, pg_type c, pg_type d, pg_type e",
	"SELECT string_agg(a.typname || b.typname || c.typname, ',') FROM pg_type a, pg_type b, pg_type c, pg_type d",
	"SELECT string_agg(a.typname || b.typname, ',') FROM pg_type a, pg_type b, pg_type c, pg_type d, pg_type e",
	"SELECT array_agg(a.typname || b.typname) FROM pg_type a, pg_type b, pg_type c, pg_type d",
	"SELECT string_agg(a.typname, ',') OVER (ORDER BY a.oid, b.oid, c.oid) FROM pg_type a, pg_type b, pg_type c",
	"SELECT length(string_agg(a.typname, ',')) FROM pg_type a, pg_type b, pg_type c, pg_type d, pg_type e",
	"WITH RECURSIVE r(s) AS (SELECT 'x' UNION ALL SELECT s || s FROM r) SELECT length(s) FROM r, pg_catalog.pg_class",
	"WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r, pg_catalog.pg_class",
	"WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 100) SELECT n FROM r, pg_catalog.pg_class",
	"SELECT replace(replace(replace(replace(replace(replace(replace(replace(typname, 'e', 'eeeeeeeeee'), 'e', 'eeeeeeeeee'), 'e', 'eeeeeeeeee'), 'e', 'eeeeeeeeee'), 'e', 'eeeeeeeeee'), 'e', 'eeeeeeeeee'), 'e', 'eeeeeeeeee'), 'e', 'eeeeeeeeee') FROM pg_type",
	"SELECT replace(typname, 'e', repeat('e', 1000000)) FROM pg_type",
	"SELECT regexp_replace(typname, '.', repeat('e', 1000000), 'g') FROM pg_type",
	"SELECT list_transform([1, 2], x -> repeat('x', 1000000)) FROM pg_type",
	"SELECT string_agg(a.typname, ',') FROM pg_type a, pg_type b, pg_type c, pg_type d GROUP BY b.oid, c.oid",
}

// heapWatch samples the Go heap every few milliseconds until stopped; peak is the largest
// HeapAlloc seen.
func heapWatch() (stop func() (peak uint64)) {
	var ms runtime.MemStats
	done, res := make(chan struct{}), make(chan uint64)
	go func() {
		var peak uint64
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-done:
				res <- peak
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() uint64 { close(done); return <-res }
}

func heapNow() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// maxHeapGrowth bounds what the amplifiers may add to the Go heap while they run.
const maxHeapGrowth = 200 << 20

func checkAmplifier(t *testing.T, q string) {
	start := time.Now()
	res, err := Query(context.Background(), q, testRels)
	if d := time.Since(start); d > Timeout+2*time.Second {
		t.Errorf("%s: took %v", q, d)
	}
	if err == nil && (len(res.Rows) > MaxRows) {
		t.Errorf("%s: answered %d rows", q, len(res.Rows))
	}
	t.Logf("%s: %v (%v)", q, err, time.Since(start).Round(time.Millisecond))
}

// TestAmplifiersBounded: each amplifier is refused or bounded, quickly, with the heap small.
func TestAmplifiersBounded(t *testing.T) {
	base := heapNow()
	for _, q := range amplifiers {
		stop := heapWatch()
		checkAmplifier(t, q)
		if peak := stop(); peak > base+maxHeapGrowth {
			t.Errorf("%s: heap grew from %d MB to %d MB", q, base>>20, peak>>20)
		}
	}
	if after := heapNow(); after > base+maxHeapGrowth {
		t.Errorf("heap grew from %d MB to %d MB", base>>20, after>>20)
	}
}

// TestAmplifiersConcurrent: 16 amplifiers at once (MaxConcurrent run, the rest wait their
// turn), the heap staying small.
func TestAmplifiersConcurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	var heavy []string
	for _, q := range amplifiers {
		if strings.Contains(q, "pg_type d") || strings.Contains(q, "OVER") {
			heavy = append(heavy, q)
		}
	}
	base := heapNow()
	stop := heapWatch()
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := heavy[i%len(heavy)]
			res, err := Query(context.Background(), q, testRels)
			if err == nil && len(res.Rows) > MaxRows {
				t.Errorf("%s: answered %d rows", q, len(res.Rows))
			}
		}()
	}
	wg.Wait()
	peak := stop()
	t.Logf("16 at once: %v, heap %d MB -> peak %d MB", time.Since(start).Round(time.Millisecond), base>>20, peak>>20)
	if peak > base+maxHeapGrowth {
		t.Errorf("heap grew from %d MB to %d MB", base>>20, peak>>20)
	}
	// A client's query still runs afterwards.
	q, err := os.ReadFile("testdata/psql15/dt.1.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Query(context.Background(), string(q), testRels); err != nil {
		t.Error(err)
	}
}
