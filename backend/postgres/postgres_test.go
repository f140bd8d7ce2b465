package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/postgres"
	"github.com/dpsql/dpsql/internal/pgtest"
	"github.com/jackc/pgx/v5/pgconn"
)

var pg pgtest.Shared

func TestMain(m *testing.M) {
	// A short deadlock_timeout makes the deadlock test quick.
	pgtest.MainWith(m, &pg, pgtest.Options{Settings: map[string]string{"deadlock_timeout": "50ms"}})
}

// open opens a fresh database of the shared cluster as owner, and returns its URL too.
func open(t *testing.T, opts postgres.Options) (*postgres.DB, string) {
	t.Helper()
	url := pg.Cluster(t).NewDatabase(t)
	return openURL(t, url, opts), url
}

func openURL(t *testing.T, url string, opts postgres.Options) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return db
}

func mustExec(t *testing.T, q backend.Querier, sql string, args ...any) {
	t.Helper()
	if err := q.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func mustQuery(t testing.TB, q backend.Querier, sql string, args ...any) *backend.Rows {
	t.Helper()
	rows, err := q.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return rows
}

func bigInt(s string) *big.Int {
	b, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return b
}

func TestQueryTypes(t *testing.T) {
	db, _ := open(t, postgres.Options{Mode: backend.Owner})
	twoTo100 := new(big.Int).Lsh(big.NewInt(1), 100)
	tests := []struct {
		expr string
		typ  string
		want any
	}{
		{"1::smallint", "SMALLINT", int64(1)},
		{"-2::integer", "INTEGER", int64(-2)},
		{"9223372036854775807::bigint", "BIGINT", int64(math.MaxInt64)},
		{"1.5::real", "REAL", 1.5},
		{"0.1::double precision", "DOUBLE PRECISION", 0.1},
		{"'x'::text", "TEXT", "x"},
		{"'v'::varchar(3)", "CHARACTER VARYING", "v"},
		{"true", "BOOLEAN", true},
		{"NULL::integer", "INTEGER", nil},
		{"NULL::text", "TEXT", nil},
		// NUMERIC integers come back exactly, however large.
		{"'1267650600228229401496703205376'::numeric", "NUMERIC", twoTo100},
		{"-(2::numeric ^ 100)::numeric(40,0)", "NUMERIC", new(big.Int).Neg(twoTo100)},
		{"100::numeric", "NUMERIC", big.NewInt(100)},
		{"0::numeric", "NUMERIC", big.NewInt(0)},
		{"(SELECT sum(x) FROM (VALUES (9223372036854775807::bigint), (9223372036854775807), (3)) v(x))",
			"NUMERIC", bigInt("18446744073709551617")},
		// Fractional NUMERIC: exactly, with its display scale.
		{"1.25::numeric", "NUMERIC", "1.25"},
		{"5.000::numeric", "NUMERIC", "5.000"},
		{"-0.05::numeric", "NUMERIC", "-0.05"},
		{"12345678901234567.89::numeric", "NUMERIC", "12345678901234567.89"},
		{"(SELECT avg(x) FROM (VALUES (1), (2)) v(x))", "NUMERIC", "1.5000000000000000"},
		{"ARRAY[0.5, 12345678901234567.89]", "NUMERIC[]", []any{"0.5", "12345678901234567.89"}},
		{"'Infinity'::numeric", "NUMERIC", math.Inf(1)},
		{"ARRAY[1, 2, NULL]::bigint[]", "BIGINT[]", []any{int64(1), int64(2), nil}},
		{"ARRAY['a', 'b']::text[]", "TEXT[]", []any{"a", "b"}},
		{"ARRAY['1267650600228229401496703205376'::numeric]", "NUMERIC[]", []any{twoTo100}},
		{"'{}'::integer[]", "INTEGER[]", []any{}},
		{"DATE '2024-02-29'", "DATE", time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)},
		{"TIMESTAMP '2024-02-29 12:34:56.789'", "TIMESTAMP WITHOUT TIME ZONE", time.Date(2024, 2, 29, 12, 34, 56, 789e6, time.UTC)},
		{"'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid", "UUID", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
		{"INTERVAL '1 year 2 months 3 days 04:05:06'", "INTERVAL", "1 year 2 months 3 days 04:05:06"},
		{"'\\x0102'::bytea", "BYTEA", []byte{1, 2}},
	}
	for _, tc := range tests {
		rows, err := db.Query(context.Background(), "SELECT "+tc.expr+" AS v")
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		if !reflect.DeepEqual(rows.Columns, []string{"v"}) || len(rows.Values) != 1 {
			t.Errorf("%s: columns %v, %d rows", tc.expr, rows.Columns, len(rows.Values))
			continue
		}
		got := rows.Values[0][0]
		if !equal(got, tc.want) {
			t.Errorf("%s = %#v (%T), want %#v (%T)", tc.expr, got, got, tc.want, tc.want)
		}
		if rows.Types[0] != tc.typ {
			t.Errorf("%s: type %q, want %q", tc.expr, rows.Types[0], tc.typ)
		}
	}

	// NaN separately: it equals nothing.
	rows := mustQuery(t, db, "SELECT 'NaN'::numeric")
	if f, ok := rows.Values[0][0].(float64); !ok || !math.IsNaN(f) {
		t.Errorf("NaN::numeric = %#v", rows.Values[0][0])
	}
	// timestamptz is an instant.
	rows = mustQuery(t, db, "SELECT TIMESTAMPTZ '2024-02-29 12:00:00+02'")
	if tm, ok := rows.Values[0][0].(time.Time); !ok || !tm.Equal(time.Date(2024, 2, 29, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("timestamptz = %#v", rows.Values[0][0])
	}
	if rows.Types[0] != "TIMESTAMP WITH TIME ZONE" {
		t.Errorf("timestamptz type %q", rows.Types[0])
	}
}

// equal is reflect.DeepEqual, but compares *big.Int by value, time.Time with Equal, and
// recurses into []any.
func equal(got, want any) bool {
	if g, ok := got.(backend.Decimal); ok {
		// A decimal is written as its exact text in the table.
		w, ok := want.(string)
		return ok && g.String() == w
	}
	switch w := want.(type) {
	case *big.Int:
		g, ok := got.(*big.Int)
		return ok && g.Cmp(w) == 0
	case time.Time:
		g, ok := got.(time.Time)
		return ok && g.Equal(w)
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !equal(g[i], w[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(got, want)
}

func TestQueryArgsAndRows(t *testing.T) {
	db, _ := open(t, postgres.Options{Mode: backend.Owner})
	mustExec(t, db, "CREATE TABLE t (k text, v bigint, n numeric)")
	big := bigInt("123456789012345678901234567890")
	mustExec(t, db, "INSERT INTO t VALUES ($1, $2, $3), ($4, $5, $6)", "a", int64(1), big, "b", int64(2), nil)
	rows := mustQuery(t, db, "SELECT k, v, n FROM t WHERE v >= $1 ORDER BY k", 1)
	if !reflect.DeepEqual(rows.Columns, []string{"k", "v", "n"}) ||
		!reflect.DeepEqual(rows.Types, []string{"TEXT", "BIGINT", "NUMERIC"}) {
		t.Errorf("columns %v types %v", rows.Columns, rows.Types)
	}
	if len(rows.Values) != 2 || rows.Values[0][0] != "a" || rows.Values[0][1] != int64(1) ||
		!equal(rows.Values[0][2], big) || rows.Values[1][2] != nil {
		t.Errorf("rows %v", rows.Values)
	}
	// No rows: columns and types are still known.
	rows = mustQuery(t, db, "SELECT k, v FROM t WHERE false")
	if len(rows.Values) != 0 || !reflect.DeepEqual(rows.Types, []string{"TEXT", "BIGINT"}) {
		t.Errorf("empty result: %+v", rows)
	}
	// Owner Exec without arguments accepts a script.
	mustExec(t, db, "CREATE TABLE u (x int); INSERT INTO u VALUES (1), (2)")
	if rows := mustQuery(t, db, "SELECT count(*) FROM u"); rows.Values[0][0] != int64(2) {
		t.Errorf("count = %v", rows.Values[0][0])
	}
}

func TestErrorsKeepSQLSTATE(t *testing.T) {
	db, _ := open(t, postgres.Options{Mode: backend.Owner})
	_, err := db.Query(context.Background(), "SELECT 1 / 0")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "22012" {
		t.Fatalf("1/0: err = %v, want a *pgconn.PgError with SQLSTATE 22012", err)
	}
	if postgres.SQLState(err) != "22012" || !strings.HasPrefix(err.Error(), "postgres: query: ") {
		t.Errorf("SQLState = %q, message %q", postgres.SQLState(err), err)
	}
	err = db.Exec(context.Background(), "SELECT * FROM missing_table")
	if postgres.SQLState(err) != "42P01" {
		t.Errorf("missing table: %v", err)
	}
	if postgres.SQLState(errors.New("plain")) != "" {
		t.Error("SQLState of a plain error")
	}
}

func TestTxCommitAndRollback(t *testing.T) {
	db, _ := open(t, postgres.Options{Mode: backend.Owner})
	ctx := context.Background()
	mustExec(t, db, "CREATE TABLE t (x int)")
	if err := db.Tx(ctx, func(q backend.Querier) error {
		if err := q.Exec(ctx, "INSERT INTO t VALUES (1)"); err != nil {
			return err
		}
		rows, err := q.Query(ctx, "SELECT current_setting('transaction_isolation')")
		if err != nil {
			return err
		}
		if rows.Values[0][0] != "serializable" {
			return fmt.Errorf("isolation %v", rows.Values[0][0])
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	errMine := errors.New("mine")
	err := db.Tx(ctx, func(q backend.Querier) error {
		if err := q.Exec(ctx, "INSERT INTO t VALUES (2)"); err != nil {
			return err
		}
		return errMine
	})
	if err != errMine {
		t.Errorf("Tx returned %v, want fn's error unchanged", err)
	}
	if rows := mustQuery(t, db, "SELECT array_agg(x) FROM t"); !equal(rows.Values[0][0], []any{int64(1)}) {
		t.Errorf("after commit and rollback: %v", rows.Values[0][0])
	}
}

// TestTxRetriesSerializationFailure forces write skew: each transaction reads the other's
// row and writes its own, both read before either writes, so SERIALIZABLE aborts one with
// 40001. Tx must retry it and both must end up committed.
func TestTxRetriesSerializationFailure(t *testing.T) {
	db, _ := open(t, postgres.Options{Mode: backend.Owner})
	ctx := context.Background()
	mustExec(t, db, "CREATE TABLE acct (id int PRIMARY KEY, bal int)")
	mustExec(t, db, "INSERT INTO acct VALUES (1, 100), (2, 100)")

	var attempts atomic.Int32
	var bothRead sync.WaitGroup
	bothRead.Add(2)
	var first [2]atomic.Bool
	run := func(i int) error {
		mine, other := i+1, 2-i
		return db.Tx(ctx, func(q backend.Querier) error {
			attempts.Add(1)
			rows, err := q.Query(ctx, "SELECT sum(bal) FROM acct WHERE id = $1", other)
			if err != nil {
				return err
			}
			if first[i].CompareAndSwap(false, true) { // only the first attempt waits
				bothRead.Done()
				bothRead.Wait()
			}
			return q.Exec(ctx, "UPDATE acct SET bal = bal + $1 WHERE id = $2", rows.Values[0][0], mine)
		})
	}
	errs := make(chan error, 2)
	for i := range 2 {
		go func() { errs <- run(i) }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := attempts.Load(); n < 3 {
		t.Errorf("%d attempts, want at least 3 (one retry after the forced conflict)", n)
	}
	// Serial outcome: one of (200, 300) or (300, 200).
	rows := mustQuery(t, db, "SELECT array_agg(bal ORDER BY bal) FROM acct")
	if !equal(rows.Values[0][0], []any{int64(200), int64(300)}) {
		t.Errorf("balances %v, not a serial outcome", rows.Values[0][0])
	}
}

// TestTxRetriesDeadlock locks two rows in opposite orders; the deadlock detector aborts one
// transaction with 40P01 and Tx retries it.
func TestTxRetriesDeadlock(t *testing.T) {
	db, _ := open(t, postgres.Options{Mode: backend.Owner})
	ctx := context.Background()
	mustExec(t, db, "CREATE TABLE r (id int PRIMARY KEY, n int)")
	mustExec(t, db, "INSERT INTO r VALUES (1, 0), (2, 0)")
	var attempts atomic.Int32
	var bothLocked sync.WaitGroup
	bothLocked.Add(2)
	var first [2]atomic.Bool
	var sawDeadlock atomic.Bool
	run := func(i int) error {
		a, b := 1+i, 2-i
		return db.Tx(ctx, func(q backend.Querier) error {
			attempts.Add(1)
			if err := q.Exec(ctx, "UPDATE r SET n = n + 1 WHERE id = $1", a); err != nil {
				return err
			}
			if first[i].CompareAndSwap(false, true) {
				bothLocked.Done()
				bothLocked.Wait()
			}
			err := q.Exec(ctx, "UPDATE r SET n = n + 1 WHERE id = $1", b)
			if postgres.SQLState(err) == postgres.DeadlockDetected {
				sawDeadlock.Store(true)
			}
			return err
		})
	}
	errs := make(chan error, 2)
	for i := range 2 {
		go func() { errs <- run(i) }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if !sawDeadlock.Load() || attempts.Load() < 3 {
		t.Errorf("deadlock seen: %v, attempts %d; want a deadlock and a retry", sawDeadlock.Load(), attempts.Load())
	}
	if rows := mustQuery(t, db, "SELECT sum(n) FROM r"); rows.Values[0][0] != int64(4) {
		t.Errorf("sum = %v, want 4 (both transactions applied once)", rows.Values[0][0])
	}
}

func TestTxGivesUp(t *testing.T) {
	db, _ := open(t, postgres.Options{Mode: backend.Owner, MaxTxAttempts: 3})
	var n int
	err := db.Tx(context.Background(), func(q backend.Querier) error {
		n++
		// A serialization failure raised by hand, as a conflict would.
		return q.Exec(context.Background(), "DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '40001'; END $$")
	})
	if n != 3 || !postgres.IsRetryable(err) || !strings.Contains(err.Error(), "after 3 attempts") {
		t.Errorf("ran %d times, err = %v; want 3 attempts and the 40001 error", n, err)
	}
	n = 0
	err = db.Tx(context.Background(), func(q backend.Querier) error {
		n++
		return q.Exec(context.Background(), "SELECT 1/0")
	})
	if n != 1 || postgres.SQLState(err) != "22012" {
		t.Errorf("a non-retryable error: ran %d times, err = %v", n, err)
	}
}

func TestAnalystIsReadOnly(t *testing.T) {
	owner, url := open(t, postgres.Options{Mode: backend.Owner})
	mustExec(t, owner, "CREATE TABLE t (x int); INSERT INTO t VALUES (1)")
	analyst := openURL(t, url, postgres.Options{})
	ctx := context.Background()

	if rows := mustQuery(t, analyst, "SELECT x FROM t"); rows.Values[0][0] != int64(1) {
		t.Errorf("analyst read %v", rows.Values)
	}
	for _, sql := range []string{
		"INSERT INTO t VALUES (2)",
		"CREATE TABLE u (x int)",
		"UPDATE t SET x = 3",
	} {
		err := analyst.Exec(ctx, sql)
		if postgres.SQLState(err) != postgres.ReadOnlyTransaction {
			t.Errorf("analyst Exec %q: err = %v, want SQLSTATE 25006", sql, err)
		}
	}
	if _, err := analyst.Query(ctx, "INSERT INTO t VALUES (2) RETURNING x"); postgres.SQLState(err) != postgres.ReadOnlyTransaction {
		t.Errorf("analyst Query INSERT ... RETURNING: err = %v, want SQLSTATE 25006", err)
	}
	// Escapes that must not work: turning the session default off, a second statement
	// after COMMIT, switching the transaction to read-write.
	mustQuery(t, analyst, "SELECT set_config('default_transaction_read_only', 'off', false)")
	if err := analyst.Exec(ctx, "INSERT INTO t VALUES (2)"); postgres.SQLState(err) != postgres.ReadOnlyTransaction {
		t.Errorf("after set_config: err = %v, want SQLSTATE 25006", err)
	}
	if err := analyst.Exec(ctx, "COMMIT; INSERT INTO t VALUES (2)"); err == nil {
		t.Error("analyst Exec with two statements succeeded")
	}
	if _, err := analyst.Query(ctx, "SELECT set_config('transaction_read_only', 'off', true)"); err == nil {
		t.Error("analyst switched its transaction to read-write")
	}
	if rows := mustQuery(t, owner, "SELECT count(*) FROM t"); rows.Values[0][0] != int64(1) {
		t.Errorf("the table changed: %v rows", rows.Values[0][0])
	}

	// Tx is the ledger's path and can write in analyst mode.
	if err := analyst.Tx(ctx, func(q backend.Querier) error {
		return q.Exec(ctx, "INSERT INTO t VALUES (10)")
	}); err != nil {
		t.Errorf("analyst Tx: %v", err)
	}
}

func TestStatementTimeout(t *testing.T) {
	_, url := open(t, postgres.Options{Mode: backend.Owner})
	analyst := openURL(t, url, postgres.Options{StatementTimeout: 200 * time.Millisecond})
	start := time.Now()
	_, err := analyst.Query(context.Background(), "SELECT pg_sleep(30)")
	if postgres.SQLState(err) != postgres.QueryCanceled || time.Since(start) > 10*time.Second {
		t.Fatalf("pg_sleep(30) with a 200ms timeout: err = %v after %v", err, time.Since(start))
	}
	// The timeout applies inside Tx too, and the DB stays usable.
	err = analyst.Tx(context.Background(), func(q backend.Querier) error {
		_, err := q.Query(context.Background(), "SELECT pg_sleep(30)")
		return err
	})
	if postgres.SQLState(err) != postgres.QueryCanceled {
		t.Errorf("in Tx: err = %v", err)
	}
	mustQuery(t, analyst, "SELECT 1")

	// The default is 60 s.
	def := openURL(t, url, postgres.Options{})
	if rows := mustQuery(t, def, "SHOW statement_timeout"); rows.Values[0][0] != "1min" {
		t.Errorf("default statement_timeout %v", rows.Values[0][0])
	}
}

func TestSettings(t *testing.T) {
	_, url := open(t, postgres.Options{Mode: backend.Owner})
	// Settings apply, but cannot loosen analyst mode.
	db := openURL(t, url, postgres.Options{Settings: map[string]string{
		"work_mem": "32MB", "default_transaction_read_only": "off", "statement_timeout": "0",
	}})
	rows := mustQuery(t, db, "SELECT current_setting('work_mem'), current_setting('default_transaction_read_only'), current_setting('statement_timeout')")
	if got := fmt.Sprint(rows.Values[0]); got != "[32MB on 1min]" {
		t.Errorf("settings %s, want [32MB on 1min]", got)
	}
	if err := db.Exec(context.Background(), "CREATE TABLE x (i int)"); postgres.SQLState(err) != postgres.ReadOnlyTransaction {
		t.Errorf("write with settings that try to loosen analyst mode: %v", err)
	}
}

func TestContextCancelStopsServerQuery(t *testing.T) {
	db, _ := open(t, postgres.Options{Mode: backend.Owner, MaxConns: 1})
	pid := mustQuery(t, db, "SELECT pg_backend_pid()").Values[0][0]
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := db.Query(ctx, "SELECT pg_sleep(30), 'cancel-me'")
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("err = %v after %v, want context.DeadlineExceeded quickly", err, time.Since(start))
	}
	if code := postgres.SQLState(err); code != postgres.QueryCanceled {
		t.Errorf("SQLSTATE %q, want 57014: the server cancelled the query", code)
	}
	// Nothing is left running on the server.
	rows := mustQuery(t, db, `SELECT count(*) FROM pg_stat_activity
		WHERE query LIKE '%cancel-me%' AND state = 'active' AND pid <> pg_backend_pid()`)
	if rows.Values[0][0] != int64(0) {
		t.Errorf("%v queries still running on the server", rows.Values[0][0])
	}
	if again := mustQuery(t, db, "SELECT pg_backend_pid()").Values[0][0]; again != pid {
		t.Errorf("backend pid %v after the cancel, was %v: the connection was not kept", again, pid)
	}
	// A context already cancelled fails at once.
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if err := db.Exec(ctx, "SELECT 1"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
	mustQuery(t, db, "SELECT 1")
}

func TestOpenAndClose(t *testing.T) {
	if _, err := postgres.Open(context.Background(), "postgres://nobody@/x?host=/nonexistent", postgres.Options{}); err == nil {
		t.Error("Open of a server that does not exist succeeded")
	}
	if _, err := postgres.Open(context.Background(), "::not a url", postgres.Options{}); err == nil {
		t.Error("Open of a bad URL succeeded")
	}
	if _, err := postgres.Open(context.Background(), "", postgres.Options{Mode: 7}); err == nil {
		t.Error("Open with an unknown mode succeeded")
	}
	db, _ := open(t, postgres.Options{})
	if db.Dialect() != backend.Postgres || db.Mode() != backend.Analyst {
		t.Errorf("dialect %q mode %v", db.Dialect(), db.Mode())
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Query(context.Background(), "SELECT 1"); !errors.Is(err, postgres.ErrClosed) {
		t.Errorf("Query after Close: %v", err)
	}
}

// TestConcurrentUse runs queries from many goroutines on one DB with two connections.
func TestConcurrentUse(t *testing.T) {
	db, _ := open(t, postgres.Options{Mode: backend.Owner, MaxConns: 2})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rows, err := db.Query(context.Background(), "SELECT $1::int * 2, pg_sleep(0.01)", i)
			if err == nil && rows.Values[0][0] != int64(2*i) {
				err = fmt.Errorf("got %v for %d", rows.Values[0][0], i)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	rows := mustQuery(t, db, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'dpsql' AND datname = current_database()")
	if n := rows.Values[0][0].(int64); n > 2 {
		t.Errorf("%d connections open, MaxConns is 2", n)
	}
}
