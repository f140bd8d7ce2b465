package pgwire

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/sqlerr"
)

const anonQuery = `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=0.9, kappa=2) k, ANON_COUNT(*) AS n FROM t GROUP BY k ORDER BY k`

func TestAuthentication(t *testing.T) {
	ts := startServer(t, engineOpen(t))
	ctx := testCtx(t)
	c, err := pgx.Connect(ctx, ts.url("alice", alicePassword))
	if err != nil {
		t.Fatalf("right password refused: %v", err)
	}
	c.Close(ctx)
	messages := map[string]string{}
	for name, url := range map[string]string{
		"wrong password": ts.url("alice", "nope"),
		"unknown user":   ts.url("mallory", "nope"),
		"no password":    ts.url("alice", ""),
	} {
		_, err := pgx.Connect(ctx, url)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "28P01" {
			t.Errorf("%s: %v, want 28P01", name, err)
			continue
		}
		messages[name] = strings.ReplaceAll(pe.Message, "mallory", "alice")
	}
	if messages["wrong password"] != messages["unknown user"] {
		t.Errorf("wrong password %q and unknown user %q differ", messages["wrong password"], messages["unknown user"])
	}
	if len(ts.h.startups) != 1 || ts.h.startups[0]["user"] != "alice" {
		t.Errorf("sessions opened: %v, want alice's only", ts.h.startups)
	}
}

func TestSimpleAndExtendedQueries(t *testing.T) {
	ts := startServer(t, engineOpen(t))
	for _, mode := range []string{"simple_protocol", "cache_statement", "cache_describe", "describe_exec", "exec"} {
		t.Run(mode, func(t *testing.T) {
			c := connect(t, ts, "default_query_exec_mode="+mode)
			ctx := testCtx(t)
			for round := 0; round < 2; round++ { // the second round uses the cached statement
				rows, err := c.Query(ctx, anonQuery)
				if err != nil {
					t.Fatal(err)
				}
				type kn struct {
					k string
					n int64
				}
				got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (kn, error) {
					var x kn
					err := r.Scan(&x.k, &x.n)
					return x, err
				})
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != 2 || got[0] != (kn{"a", 3}) || got[1] != (kn{"b", 3}) {
					t.Errorf("round %d: %v", round, got)
				}
				fields := rows.FieldDescriptions()
				if len(fields) != 2 || fields[0].Name != "k" || fields[1].Name != "n" || fields[1].DataTypeOID != oidInt8 {
					t.Errorf("fields %+v", fields)
				}
			}
			var name string
			if err := c.QueryRow(ctx, "SELECT name FROM pub WHERE n = 2").Scan(&name); err != nil || name != "two" {
				t.Errorf("public query: %q, %v", name, err)
			}
			var v string
			if err := c.QueryRow(ctx, "select pg_catalog.version()").Scan(&v); err != nil || !strings.HasPrefix(v, "PostgreSQL 16.0 (dpsql test)") {
				t.Errorf("version(): %q, %v", v, err)
			}
			if err := c.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil || v != "16.0 (dpsql test)" {
				t.Errorf("SHOW server_version: %q, %v", v, err)
			}
			if _, err := c.Exec(ctx, "SET application_name = 'tests'"); err != nil {
				t.Fatal(err)
			}
			if err := c.QueryRow(ctx, "SELECT current_setting('application_name')").Scan(&v); err != nil || v != "tests" {
				t.Errorf("current_setting: %q, %v", v, err)
			}
			if got := c.PgConn().ParameterStatus("application_name"); got != "tests" {
				t.Errorf("ParameterStatus application_name %q", got)
			}
		})
	}
}

func TestBudgetStatementsReachSession(t *testing.T) {
	ts := startServer(t, engineOpen(t))
	c := connect(t, ts)
	ctx := testCtx(t)
	rows, err := c.Query(ctx, "SHOW BUDGET", pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	all, err := pgx.CollectRows(rows, pgx.RowToMap)
	if err != nil || len(all) == 0 {
		t.Fatalf("SHOW BUDGET: %v, %v", all, err)
	}
	// An analyst may not SET BUDGET: the engine refuses, which shows it got the statement.
	_, err = c.Exec(ctx, "SET BUDGET UNLIMITED")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != sqlerr.InsufficientPrivilege {
		t.Errorf("SET BUDGET as analyst: %v", err)
	}
}

func TestErrors(t *testing.T) {
	ts := startServer(t, engineOpen(t))
	c := connect(t, ts)
	ctx := testCtx(t)
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		// The join on a non-unit column is a privacy refusal with a rule and a hint.
		q := "SELECT 1;\nSELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5) ANON_COUNT(*) FROM t WHERE nosuch = 1"
		if mode != pgx.QueryExecModeSimpleProtocol {
			q = q[len("SELECT 1;\n"):]
		}
		_, err := c.Exec(ctx, q, mode)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			t.Fatalf("%v: %v", mode, err)
		}
		if pe.Code != sqlerr.UndefinedColumn || pe.Position != int32(strings.Index(q, "nosuch")+1) {
			t.Errorf("%v: code %s position %d (want %d): %s", mode, pe.Code, pe.Position, strings.Index(q, "nosuch")+1, pe.Message)
		}
	}
	// A rule and a hint.
	_, err := c.Exec(ctx, "SELECT * FROM t")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != sqlerr.PrivacyViolation || !strings.HasPrefix(pe.Detail, "rule: ") || pe.Hint == "" {
		t.Errorf("privacy refusal: %+v", pe)
	}
	// Character positions, not bytes.
	q := "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5) ANON_COUNT(*) FROM t WHERE k = 'é€' OR nosuch = 1"
	_, err = c.Exec(ctx, q, pgx.QueryExecModeSimpleProtocol)
	if !errors.As(err, &pe) || pe.Position != int32(len([]rune(q[:strings.Index(q, "nosuch")]))+1) {
		t.Errorf("position after multibyte characters: %+v", pe)
	}
	// The connection still works.
	var n int
	if err := c.QueryRow(ctx, "SELECT 41 + 1").Scan(&n); err != nil || n != 42 {
		t.Errorf("after errors: %d, %v", n, err)
	}
}

func TestTransactions(t *testing.T) {
	ts := startServer(t, engineOpen(t))
	c := connect(t, ts)
	ctx := testCtx(t)
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s := c.PgConn().TxStatus(); s != 'T' {
		t.Errorf("status in transaction %c", s)
	}
	if _, err := tx.Exec(ctx, "SELECT nosuch FROM pub"); err == nil {
		t.Fatal("no error")
	}
	if s := c.PgConn().TxStatus(); s != 'E' {
		t.Errorf("status after error %c", s)
	}
	_, err = tx.Exec(ctx, "SELECT 1")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "25P02" {
		t.Errorf("in failed transaction: %v", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if s := c.PgConn().TxStatus(); s != 'I' {
		t.Errorf("status after rollback %c", s)
	}
	for _, q := range []string{"BEGIN", "SAVEPOINT a", "RELEASE SAVEPOINT a", "COMMIT", "START TRANSACTION ISOLATION LEVEL SERIALIZABLE", "END",
		"SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED", "DISCARD ALL", "RESET ALL", "SET extra_float_digits = 3",
		"SET TIME ZONE 'UTC'", "set client_encoding to 'utf-8';", "SET search_path = public, \"$user\"", "SET statement_timeout = '10s'"} {
		if _, err := c.Exec(ctx, q, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	if _, err := c.Exec(ctx, "SET client_encoding = 'LATIN1'"); err == nil {
		t.Error("LATIN1 accepted")
	}
	// Times go out in UTC: another zone is refused rather than reported and ignored (an
	// outside review saw SHOW TimeZone say America/New_York while values printed +00).
	for _, q := range []string{"SET TimeZone = 'America/New_York'", "SET TIME ZONE 'Europe/Paris'", "SET TIME ZONE '+02:00'",
		"SET TIME ZONE 'UTC+1'", "SET TimeZone = ''", "SET TIME ZONE INTERVAL '+00:00' HOUR TO MINUTE", "SET TIME ZONE '0:30'"} {
		var pe *pgconn.PgError
		if _, err := c.Exec(ctx, q, pgx.QueryExecModeSimpleProtocol); !errors.As(err, &pe) || pe.Code != "22023" || !strings.Contains(pe.Message, "UTC only") {
			t.Errorf("%s: %v", q, err)
		}
	}
	for _, q := range []string{"SET TimeZone = 'Etc/UTC'", "SET TIME ZONE 'GMT'", "SET TIME ZONE LOCAL", "SET TIME ZONE DEFAULT", "SET TimeZone TO 'Z'",
		"SET TIME ZONE 'UTC+0'", "SET TIME ZONE 'UTC0'", "SET TIME ZONE 'GMT+00:00'", "SET TIME ZONE 0.0", "SET TIME ZONE '-00:00:00'", "RESET TimeZone"} {
		if _, err := c.Exec(ctx, q, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Errorf("%s: %v", q, err)
		}
		var tz string
		if err := c.QueryRow(ctx, "SHOW TimeZone", pgx.QueryExecModeSimpleProtocol).Scan(&tz); err != nil || tz != "UTC" {
			t.Errorf("after %s: SHOW TimeZone = %q, %v", q, tz, err)
		}
	}
	// A zone sent at startup (pgJDBC sends the JVM's) keeps UTC, and the client is told so.
	c2 := connect(t, ts, "TimeZone=America/New_York")
	if tz := c2.PgConn().ParameterStatus("TimeZone"); tz != "UTC" {
		t.Errorf("a startup TimeZone of America/New_York is reported as %q", tz)
	}
}

// TestParameters checks that $n arguments reach the session in order, typed as pgx sends
// them, in the extended protocol and in pgx's simple protocol (which inlines them).
func TestParameters(t *testing.T) {
	fake := &fakeSession{}
	ts := startServer(t, func(string) (Session, error) { return fake, nil })
	c := connect(t, ts)
	ctx := testCtx(t)
	ts0 := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	q := "SELECT WITH ANONYMIZATION ANON_SUM(x CLAMPED BETWEEN $1 AND $2) FROM t WHERE k = $3 AND $4 AND d < $5"
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec} {
		if _, err := c.Exec(ctx, q, mode, int64(-3), 1.5, "a'b", true, ts0); err != nil {
			t.Fatal(err)
		}
		got := fake.lastCall()
		// pgx writes a bool as "t" in text: it stays a string (an analyst's "t" must not turn
		// into a boolean), which the database casts where a boolean is needed.
		want := []any{int64(-3), 1.5, "a'b", "t"}
		if got.script != q || len(got.args) != 5 {
			t.Fatalf("%v: %q %#v", mode, got.script, got.args)
		}
		for i, w := range want {
			if got.args[i] != w {
				t.Errorf("%v: $%d = %#v, want %#v", mode, i+1, got.args[i], w)
			}
		}
		if tm, ok := got.args[4].(time.Time); ok && !tm.Equal(ts0) {
			t.Errorf("%v: $5 = %v", mode, tm)
		} else if s, ok := got.args[4].(string); ok && !strings.HasPrefix(s, "2024-01-02 03:04:05") {
			t.Errorf("%v: $5 = %q", mode, s)
		}
	}
	// Typed parameters (JDBC and psycopg give the OIDs in Parse), text and binary.
	pc := c.PgConn()
	res := pc.ExecParams(ctx, "SELECT $1, $2, $3, $4", [][]byte{[]byte("12"), []byte("2.5"), []byte("t"), []byte("2024-03-04")},
		[]uint32{oidInt4, oidFloat8, oidBool, oidDate}, nil, nil).Read()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := fake.lastCall().args; len(got) != 4 || got[0] != int64(12) || got[1] != 2.5 || got[2] != true {
		t.Errorf("typed text parameters %#v", got)
	}
	i8, _ := pgtype.NewMap().Encode(oidInt8, 1, int64(7), nil)
	f8, _ := pgtype.NewMap().Encode(oidFloat8, 1, float64(0.25), nil)
	res = pc.ExecParams(ctx, "SELECT $1, $2, $3", [][]byte{i8, f8, nil}, []uint32{oidInt8, oidFloat8, oidText}, []int16{1}, nil).Read()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := fake.lastCall().args; len(got) != 3 || got[0] != int64(7) || got[1] != 0.25 || got[2] != nil {
		t.Errorf("binary parameters %#v", got)
	}
	// A numeric parameter, text or binary, is exact: a released DECIMAL key sent back must
	// match itself only (an outside review saw 12345678901234567.89 read as a float64, which
	// matched its neighbour ...567.90 too).
	var num pgtype.Numeric
	if err := num.Scan("12345678901234567.89"); err != nil {
		t.Fatal(err)
	}
	nb, err := pgtype.NewMap().Encode(oidNumeric, 1, num, nil)
	if err != nil {
		t.Fatal(err)
	}
	res = pc.ExecParams(ctx, "SELECT $1, $2", [][]byte{[]byte("12345678901234567.89"), nb}, []uint32{oidNumeric, oidNumeric}, []int16{0, 1}, nil).Read()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	exact := big.NewRat(1234567890123456789, 100)
	for i, v := range fake.lastCall().args {
		if r, ok := v.(*big.Rat); !ok || r.Cmp(exact) != 0 {
			t.Errorf("numeric parameter $%d = %#v, want the exact %s", i+1, v, exact.FloatString(2))
		}
	}
	// With an exponent too (Python's str(Decimal) writes one): exact, not through a float.
	res = pc.ExecParams(ctx, "SELECT $1", [][]byte{[]byte("1.2345678901234567891E+20")}, []uint32{oidNumeric}, nil, nil).Read()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if r, ok := fake.lastCall().args[0].(*big.Rat); !ok || r.FloatString(0) != "123456789012345678910" {
		t.Errorf("numeric parameter with an exponent = %#v", fake.lastCall().args[0])
	}
	// Untyped text: the analyst's own value.
	res = pc.ExecParams(ctx, "SELECT $1, $2, $3, $4, $5", [][]byte{[]byte("12"), []byte("1e3"), []byte("false"), []byte("x"), []byte("-3")}, nil, nil, nil).Read()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := fake.lastCall().args; len(got) != 5 || got[0] != int64(12) || got[1] != 1000.0 || got[2] != false || got[3] != "x" || got[4] != int64(-3) {
		t.Errorf("untyped parameters %#v", got)
	}
}

// TestDescribeNeverRuns checks that preparing (Parse + Describe statement) does not run an
// engine statement, and that pgx still reads the columns.
func TestDescribeNeverRuns(t *testing.T) {
	fake := &fakeSession{answer: func(ctx context.Context, script string, args []any) ([]*engine.Result, error) {
		return []*engine.Result{{Statement: script, Columns: []engine.Column{{Name: "n", Type: "BIGINT"}},
			Rows: [][]any{{int64(1)}, {int64(2)}, {int64(3)}}, Tag: "SELECT 3"}}, nil
	}}
	ts := startServer(t, func(string) (Session, error) { return fake, nil })
	c := connect(t, ts)
	ctx := testCtx(t)
	sd, err := c.Prepare(ctx, "q", "SELECT WITH ANONYMIZATION ANON_COUNT(*) AS n FROM t WHERE x > $1")
	if err != nil {
		t.Fatal(err)
	}
	if len(fake.calls) != 0 || len(sd.Fields) != 0 || len(sd.ParamOIDs) != 1 {
		t.Fatalf("prepare ran %d statements; fields %v params %v", len(fake.calls), sd.Fields, sd.ParamOIDs)
	}
	var sum int64
	rows, _ := c.Query(ctx, "q", 5)
	n, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(n) != 3 {
		t.Fatalf("%v %v", n, err)
	}
	for _, x := range n {
		sum += x
	}
	if sum != 6 || len(fake.calls) != 1 {
		t.Errorf("sum %d after %d runs", sum, len(fake.calls))
	}
	// Execute with a row limit: PortalSuspended, and the rest at the next Execute; the
	// statement runs once.
	hc, err := c.PgConn().Hijack()
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Conn.Close()
	hc.Conn.SetDeadline(time.Now().Add(10 * time.Second))
	fe := hc.Frontend
	fe.Send(&pgproto3.Parse{Query: "SELECT rows"})
	fe.Send(&pgproto3.Bind{})
	fe.Send(&pgproto3.Describe{ObjectType: 'P'})
	fe.Send(&pgproto3.Execute{MaxRows: 2})
	fe.Send(&pgproto3.Execute{MaxRows: 2})
	fe.Send(&pgproto3.Sync{})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for {
		m, err := fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, fmt.Sprintf("%T", m)[len("*pgproto3."):])
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	want := "ParseComplete BindComplete RowDescription DataRow DataRow PortalSuspended DataRow CommandComplete ReadyForQuery"
	if strings.Join(seen, " ") != want || len(fake.calls) != 2 {
		t.Errorf("got %s after %d runs\nwant %s", strings.Join(seen, " "), len(fake.calls), want)
	}
}

func TestBinaryResults(t *testing.T) {
	// A DECIMAL beyond float64's digits goes out exactly, in both formats.
	exact := backend.Decimal{Unscaled: big.NewInt(1234567890123456789), Scale: 2}
	d := time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)
	tsv := time.Date(2024, 1, 2, 3, 4, 5, 600000000, time.UTC)
	fake := &fakeSession{answer: func(ctx context.Context, script string, args []any) ([]*engine.Result, error) {
		return []*engine.Result{{Statement: script, Columns: []engine.Column{
			{Name: "i", Type: "BIGINT"}, {Name: "f", Type: "DOUBLE"}, {Name: "s", Type: "VARCHAR"}, {Name: "b", Type: "BOOLEAN"},
			{Name: "d", Type: "DATE"}, {Name: "ts", Type: "TIMESTAMP"}, {Name: "n", Type: "DECIMAL(18,3)"}, {Name: "h", Type: "HUGEINT"},
			{Name: "i4", Type: "INTEGER"}, {Name: "null", Type: "BIGINT"}, {Name: "x", Type: "DECIMAL(38,2)"}},
			Rows: [][]any{{int64(-5), 0.1, "héllo", true, d, tsv, 12.5, new(big.Int).Lsh(big.NewInt(1), 70), int64(7), nil, exact}}, Tag: "SELECT 1"}}, nil
	}}
	ts := startServer(t, func(string) (Session, error) { return fake, nil })
	c := connect(t, ts)
	ctx := testCtx(t)
	want := []string{"-5", "0.1", "héllo", "t", "2024-02-29", "2024-01-02 03:04:05.6", "12.5", "1180591620717411303424", "7", "", "12345678901234567.89"}
	for _, format := range []int16{0, 1} {
		res := c.PgConn().ExecParams(ctx, "SELECT everything", nil, nil, nil, []int16{format}).Read()
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if len(res.Rows) != 1 {
			t.Fatalf("rows %v", res.Rows)
		}
		m := pgtype.NewMap()
		for i, fd := range res.FieldDescriptions {
			if fd.Format != format {
				t.Errorf("column %s format %d", fd.Name, fd.Format)
			}
			var v any
			if res.Rows[0][i] == nil {
				if want[i] != "" {
					t.Errorf("column %s NULL", fd.Name)
				}
				continue
			}
			if err := m.Scan(fd.DataTypeOID, format, res.Rows[0][i], &v); err != nil {
				t.Errorf("column %s: %v", fd.Name, err)
				continue
			}
			var got string
			switch x := v.(type) {
			case time.Time:
				got = formatTime(x, pgType{oid: fd.DataTypeOID})
			case pgtype.Numeric:
				f, _ := x.Float64Value()
				got = formatFloat(f.Float64, 64)
				if fd.Name == "x" {
					dv, _ := x.Value()
					got, _ = dv.(string)
				}
				if fd.Name == "h" {
					got = x.Int.String()
					for e := int32(0); e < x.Exp; e++ {
						got += "0"
					}
				}
			default:
				got, _ = textValue(x, pgType{oid: fd.DataTypeOID})
			}
			if got != want[i] {
				t.Errorf("format %d column %s: %q, want %q", format, fd.Name, got, want[i])
			}
		}
	}
	// pgx's default mode decodes them to Go values.
	var (
		i   int64
		f   float64
		s   string
		b   bool
		dd  time.Time
		tt  time.Time
		n   pgtype.Numeric
		h   pgtype.Numeric
		i4  int32
		nul *int64
		x   string
	)
	if err := c.QueryRow(ctx, "SELECT everything").Scan(&i, &f, &s, &b, &dd, &tt, &n, &h, &i4, &nul, &x); err != nil {
		t.Fatal(err)
	}
	if i != -5 || f != 0.1 || s != "héllo" || !b || !dd.Equal(d) || !tt.Equal(tsv) || i4 != 7 || nul != nil || x != "12345678901234567.89" {
		t.Errorf("scanned %v %v %v %v %v %v %v %v %v", i, f, s, b, dd, tt, i4, nul, x)
	}
}

func TestNoticesAndCancel(t *testing.T) {
	started := make(chan struct{}, 1)
	fake := &fakeSession{answer: func(ctx context.Context, script string, args []any) ([]*engine.Result, error) {
		if strings.Contains(script, "slow") {
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return []*engine.Result{{Statement: script, Columns: []engine.Column{{Name: "n", Type: "BIGINT"}},
			Rows: [][]any{{int64(1)}}, Tag: "SELECT 1", Notices: []string{"charged epsilon 1", "remaining epsilon 9"}}}, nil
	}}
	ts := startServer(t, func(string) (Session, error) { return fake, nil })
	var mu sync.Mutex
	var notices []*pgconn.Notice
	ctx := testCtx(t)
	cfg, err := pgx.ParseConfig(ts.url("alice", alicePassword))
	if err != nil {
		t.Fatal(err)
	}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		notices = append(notices, n)
		mu.Unlock()
	}
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int64
	if err := c.QueryRow(ctx, "SELECT n").Scan(&n); err != nil || n != 1 {
		t.Fatal(n, err)
	}
	mu.Lock()
	if len(notices) != 2 || notices[0].Severity != "NOTICE" || notices[0].Message != "charged epsilon 1" {
		t.Errorf("notices %+v", notices)
	}
	mu.Unlock()

	go func() {
		<-started
		time.Sleep(50 * time.Millisecond)
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.PgConn().CancelRequest(cctx); err != nil {
			t.Errorf("CancelRequest: %v", err)
		}
	}()
	startT := time.Now()
	_, err = c.Exec(ctx, "SELECT slow", pgx.QueryExecModeSimpleProtocol)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != sqlerr.QueryCanceled || time.Since(startT) > 5*time.Second {
		t.Errorf("canceled statement: %v after %v", err, time.Since(startT))
	}
	// statement_timeout cancels too.
	if _, err := c.Exec(ctx, "SET statement_timeout = 100"); err != nil {
		t.Fatal(err)
	}
	_, err = c.Exec(ctx, "SELECT slow", pgx.QueryExecModeSimpleProtocol)
	if !errors.As(err, &pe) || pe.Code != sqlerr.QueryCanceled || !strings.Contains(pe.Message, "timeout") {
		t.Errorf("statement_timeout: %v", err)
	}
	<-started
}

func TestConcurrentConnections(t *testing.T) {
	// 50 logins at once from one address: past the default MaxStartupsPerIP.
	ts := startServer(t, engineOpen(t), func(s *Server) { s.MaxStartupsPerIP = 50 })
	ctx := testCtx(t)
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := pgx.Connect(ctx, ts.url("alice", alicePassword))
			if err != nil {
				errs <- err
				return
			}
			defer c.Close(ctx)
			for j := 0; j < 3; j++ {
				var n int64
				if err := c.QueryRow(ctx, "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=0.9, kappa=1) ANON_COUNT(*) FROM t").Scan(&n); err != nil {
					errs <- err
					return
				}
				if n != 6 {
					errs <- fmt.Errorf("count %d, want 6", n)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
