package driver_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/driver"
	"github.com/dpsql/dpsql/internal/pgtest"
	"github.com/dpsql/dpsql/ledger"
	"github.com/dpsql/dpsql/sqlerr"
)

var pg pgtest.Shared

func TestMain(m *testing.M) { pgtest.Main(m, &pg) }

// setup is the owner's script: 3000 units, one row each, in three groups of 1000; a public
// table with values of several types.
const setup = `CREATE TABLE visits OPTIONS(anonymization_userid_column='uid') AS
	SELECT i AS uid, 'g' || CAST(i % 3 AS VARCHAR) AS g, CAST(i AS DOUBLE) AS x FROM range(3000) AS t(i);
CREATE TABLE things OPTIONS(public=true) AS
	SELECT 1 AS id, 'a' AS name, true AS ok, TIMESTAMP '2024-01-02 03:04:05' AS seen,
	       CAST(170141183460469231731687303715884105727 AS HUGEINT) AS huge, [1, 2] AS list, CAST(NULL AS BIGINT) AS nothing;
`

// ownerSetup creates a DuckDB file in a temporary directory as its owner, through the
// Connector, runs setup and then more, and closes the owner's pool.
func ownerSetup(t *testing.T, more string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shop.duckdb")
	db := sql.OpenDB(driver.NewConnector(dpsql.Config{Database: path, Owner: true}))
	if _, err := db.Exec(setup + more); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func open(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("dpsql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// exact is a query whose answer is exact at its huge epsilon: every group has 1000 units.
const exact = `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=1e-5, kappa=1) g, ANON_COUNT(*) AS n FROM visits GROUP BY g ORDER BY g`

func TestQuery(t *testing.T) {
	db := open(t, ownerSetup(t, "SET BUDGET UNLIMITED"))
	rows, err := db.Query(exact)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if !reflect.DeepEqual(cols, []string{"g", "n"}) {
		t.Errorf("columns %v", cols)
	}
	types, _ := rows.ColumnTypes()
	if types[1].DatabaseTypeName() != "BIGINT" || types[1].ScanType() != reflect.TypeFor[int64]() {
		t.Errorf("n: %s %v", types[1].DatabaseTypeName(), types[1].ScanType())
	}
	var got []string
	for rows.Next() {
		var g string
		var n int64
		if err := rows.Scan(&g, &n); err != nil {
			t.Fatal(err)
		}
		got = append(got, g+"="+big.NewInt(n).String())
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "g0=1000 g1=1000 g2=1000" {
		t.Errorf("rows %v", got)
	}
}

// Values of a public table, as the engine returns them, and their scanning.
func TestValues(t *testing.T) {
	db := open(t, ownerSetup(t, "SET BUDGET UNLIMITED"))
	rows, err := db.Query("SELECT id, name, ok, seen, huge, list, nothing FROM things")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	types, _ := rows.ColumnTypes()
	var names []string
	for _, ct := range types {
		names = append(names, ct.DatabaseTypeName()+":"+ct.ScanType().String())
	}
	if want := "INTEGER:int64 VARCHAR:string BOOLEAN:bool TIMESTAMP:time.Time HUGEINT:*big.Int INTEGER[]:[]interface {} BIGINT:int64"; strings.Join(names, " ") != want {
		t.Errorf("types\n%s, want\n%s", strings.Join(names, " "), want)
	}
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	var (
		id      int64
		name    string
		ok      bool
		at      time.Time
		huge    *big.Int
		list    any
		nothing sql.NullInt64
	)
	if err := rows.Scan(&id, &name, &ok, &at, &huge, &list, &nothing); err != nil {
		t.Fatal(err)
	}
	if id != 1 || name != "a" || !ok || !at.Equal(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)) || huge.String() != "170141183460469231731687303715884105727" ||
		!reflect.DeepEqual(list, []any{int64(1), int64(2)}) || nothing.Valid {
		t.Errorf("values %v %v %v %v %v %#v %v", id, name, ok, at, huge, list, nothing)
	}
	rows.Close()
	// A BigInt takes int64 and *big.Int values; an int64 takes a *big.Int that fits.
	var a, b driver.BigInt
	var small int64
	if err := db.QueryRow("SELECT id, huge, CAST(42 AS HUGEINT) FROM things").Scan(&a, &b, &small); err != nil {
		t.Fatal(err)
	}
	if a.Int.Int64() != 1 || b.Int.String() != "170141183460469231731687303715884105727" || small != 42 {
		t.Errorf("BigInt %v %v, int64 %v", a.Int, b.Int, small)
	}
	// A DECIMAL is its exact text: into a string, a float64 (rounded) or an any.
	rows, err = db.Query("SELECT CAST('12345678901234567.89' AS DECIMAL(38,2)) AS d")
	if err != nil {
		t.Fatal(err)
	}
	types, _ = rows.ColumnTypes()
	if got := types[0].DatabaseTypeName() + ":" + types[0].ScanType().String(); got != "DECIMAL(38,2):string" {
		t.Errorf("DECIMAL column type %s", got)
	}
	rows.Close()
	var (
		text string
		f    float64
		v    any
	)
	q := "SELECT CAST('12345678901234567.89' AS DECIMAL(38,2)) AS d"
	if err := db.QueryRow(q+", d, d").Scan(&text, &f, &v); err != nil {
		t.Fatal(err)
	}
	if text != "12345678901234567.89" || f != 12345678901234567.89 || v != "12345678901234567.89" {
		t.Errorf("DECIMAL scanned as %q, %v, %#v", text, f, v)
	}
	// In lists too; a whole DECIMAL ("5.00") scans into a BigInt; a dpsql.Decimal goes back
	// in as a parameter, exactly.
	var (
		lst   any
		whole driver.BigInt
		back  string
	)
	exact := dpsql.Decimal{Unscaled: big.NewInt(1234567890123456789), Scale: 2}
	if err := db.QueryRow("SELECT [CAST('0.50' AS DECIMAL(9,2))], CAST(5 AS DECIMAL(10,2)), CAST(@x AS VARCHAR)", sql.Named("x", exact)).Scan(&lst, &whole, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(lst, []any{"0.50"}) || whole.Int.Int64() != 5 || back != "12345678901234567.890000000" {
		t.Errorf("list %#v, whole %v, parameter %q", lst, whole.Int, back)
	}
	// In STRUCTs and MAPs too, and a MAP keeps DuckDB's order of its entries.
	var st, m any
	nested := open(t, ownerSetup(t, "CREATE TABLE nested OPTIONS(public=true) AS SELECT {'d': CAST('0.50' AS DECIMAL(9,2))} AS st, MAP {2: CAST('1.50' AS DECIMAL(4,2)), 1: NULL} AS m"))
	if err := nested.QueryRow("SELECT st, m FROM nested").Scan(&st, &m); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st, map[string]any{"d": "0.50"}) || fmt.Sprint(m) != "[{2 1.50} {1 <nil>}]" {
		t.Errorf("struct %#v, map %#v", st, m)
	}
}

// Named parameters, and values database/sql would not accept by default.
func TestParameters(t *testing.T) {
	db := open(t, ownerSetup(t, "SET BUDGET UNLIMITED"))
	var n int64
	err := db.QueryRow(`SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=1e-5, kappa=1) ANON_COUNT(*) AS n FROM visits WHERE uid < @hi`,
		sql.Named("hi", 1234)).Scan(&n)
	if err != nil || n != 1234 {
		t.Errorf("n = %d, %v", n, err)
	}
	var id int64
	args := []any{sql.Named("i", big.NewInt(1)), sql.Named("r", big.NewRat(1, 2)), sql.Named("t", time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)), sql.Named("u", uint8(1))}
	if err := db.QueryRow("SELECT id FROM things WHERE id = @i AND @r < 1 AND seen = @t AND id = @u", args...).Scan(&id); err != nil || id != 1 {
		t.Errorf("id = %d, %v", id, err)
	}
	// A prepared statement runs its text each time.
	st, err := db.Prepare("SELECT @v + 1")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, v := range []int64{1, 41} {
		var got int64
		if err := st.QueryRow(sql.Named("v", v)).Scan(&got); err != nil || got != v+1 {
			t.Errorf("@v=%d: %d, %v", v, got, err)
		}
	}
	// []any reaches the engine, which says what it thinks of it.
	_, err = db.Exec("SELECT @a", sql.Named("a", []any{1, 2}))
	if se, ok := sqlerr.As(err); !ok || se.Code != sqlerr.InvalidParameterValue {
		t.Errorf("[]any parameter: %v", err)
	}
	// Positional arguments are $1, $2, ...
	var sum int64
	if err := db.QueryRow("SELECT $1 + $2", 40, 2).Scan(&sum); err != nil || sum != 42 {
		t.Errorf("positional arguments: %d, %v", sum, err)
	}
	// A $n without its value, or a value without its $n, is the engine's error.
	for _, args := range [][]any{{1}, {1, 2, 3}} {
		_, err = db.Exec("SELECT $1 + $2", args...)
		if se, ok := sqlerr.As(err); !ok || se.Code != sqlerr.UndefinedParameter {
			t.Errorf("positional arguments %v: %v", args, err)
		}
	}
}

// Every statement's charge, as data: through OnCharge and through Conn.Charges.
func TestCharges(t *testing.T) {
	path := ownerSetup(t, "SET BUDGET OPTIONS(epsilon=10, delta=1e-3)")
	var mu sync.Mutex
	var charges []driver.Charge
	var notices []string
	type key struct{}
	c := driver.NewConnector(dpsql.Config{Database: path})
	c.OnCharge = func(ctx context.Context, ch driver.Charge) {
		mu.Lock()
		defer mu.Unlock()
		if ctx.Value(key{}) != "mine" {
			t.Errorf("OnCharge without the query's context")
		}
		charges = append(charges, ch)
	}
	c.OnNotice = func(_ context.Context, n string) {
		mu.Lock()
		defer mu.Unlock()
		notices = append(notices, n)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	ctx := context.WithValue(context.Background(), key{}, "mine")
	q1 := `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) ANON_COUNT(*) AS n FROM visits`
	q2 := `SELECT WITH ANONYMIZATION OPTIONS(epsilon=0.5, delta=1e-5, kappa=1) g, ANON_COUNT(*) AS n FROM visits GROUP BY g`
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, q1+";\nSELECT name FROM things;\n"+q2); err != nil {
		t.Fatal(err)
	}
	var last []driver.Charge
	if err := conn.Raw(func(dc any) error { last = dc.(*driver.Conn).Charges(); return nil }); err != nil {
		t.Fatal(err)
	}
	want := []driver.Charge{
		{Statement: q1, Cost: ledger.Budget{Epsilon: 1, Delta: 1e-5}, Remaining: &ledger.Budget{Epsilon: 9, Delta: 1e-3 - 1e-5}},
		{Statement: q2, Cost: ledger.Budget{Epsilon: 0.5, Delta: 1e-5}, Remaining: &ledger.Budget{Epsilon: 8.5, Delta: 1e-3 - 2e-5}},
	}
	for _, got := range [][]driver.Charge{charges, last} {
		if len(got) != 2 {
			t.Fatalf("charges %+v", got)
		}
		for i := range got {
			g, w := got[i], want[i]
			if g.Statement != w.Statement || g.Cost != w.Cost || g.Remaining == nil || g.Remaining.Epsilon != w.Remaining.Epsilon ||
				!near(g.Remaining.Delta, w.Remaining.Delta) {
				t.Errorf("charge %d: %+v (remaining %v), want %+v (remaining %v)", i, g, g.Remaining, w, w.Remaining)
			}
		}
	}
	// Each query's charge notice (others explain what a group needs: engine.needsNotices).
	var chargeNotices []string
	for _, n := range notices {
		if strings.HasPrefix(n, "charged ") {
			chargeNotices = append(chargeNotices, n)
		}
	}
	if len(chargeNotices) != 2 || !strings.HasPrefix(chargeNotices[0], "charged epsilon=1, delta=1e-05; remaining epsilon=9") {
		t.Errorf("notices %q", notices)
	}
	// Statements before a failing one were charged, and say so.
	charges = nil
	_, err = conn.ExecContext(ctx, q1+";\nSELECT * FROM visits")
	if _, ok := sqlerr.As(err); !ok || len(charges) != 1 || charges[0].Statement != q1 {
		t.Errorf("charges before an error: %+v, %v", charges, err)
	}
	// A statement that charges nothing leaves no charge.
	if _, err := conn.ExecContext(ctx, "SELECT name FROM things"); err != nil {
		t.Fatal(err)
	}
	conn.Raw(func(dc any) error { last = dc.(*driver.Conn).Charges(); return nil })
	if len(last) != 0 {
		t.Errorf("charges of a public query: %+v", last)
	}
}

func near(a, b float64) bool { return a-b < 1e-15 && b-a < 1e-15 }

// A script gives one result set per statement.
func TestNextResultSet(t *testing.T) {
	db := open(t, ownerSetup(t, "SET BUDGET UNLIMITED"))
	rows, err := db.Query("SELECT name FROM things; SHOW BUDGET; " + exact)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var sets [][]string
	for {
		cols, _ := rows.Columns()
		n := 0
		for rows.Next() {
			n++
		}
		sets = append(sets, append(cols, strings.Repeat("r", n)))
		if !rows.NextResultSet() {
			break
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(sets) != 3 || sets[0][0] != "name" || sets[0][1] != "r" || sets[1][0] != "setting" || sets[2][0] != "g" || sets[2][2] != "rrr" {
		t.Errorf("result sets %q", sets)
	}
}

func TestErrors(t *testing.T) {
	path := ownerSetup(t, "SET BUDGET UNLIMITED")
	db := open(t, path)
	// The engine's refusal, unchanged.
	_, err := db.Query("SELECT * FROM visits")
	var se *sqlerr.Error
	if !errors.As(err, &se) || se.Code != sqlerr.PrivacyViolation || se.Rule != "private-data-only-through-anonymization" {
		t.Errorf("raw read of a private table: %v", err)
	}
	// No transactions.
	_, err = db.Begin()
	if !errors.As(err, &se) || se.Code != sqlerr.FeatureNotSupported {
		t.Errorf("Begin: %v", err)
	}
	_, err = db.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true})
	if !errors.As(err, &se) || se.Code != sqlerr.FeatureNotSupported {
		t.Errorf("read-only BeginTx: %v", err)
	}
	// No counts of affected rows.
	res, err := db.Exec("SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.RowsAffected(); err == nil {
		t.Errorf("RowsAffected without an error")
	}
	// A cancelled context reaches the engine.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := db.QueryContext(ctx, exact); err == nil {
		t.Errorf("a cancelled query ran")
	}
	// An owner cannot connect while analysts of the same file are connected in this process.
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	owner := sql.OpenDB(driver.NewConnector(dpsql.Config{Database: path, Owner: true}))
	defer owner.Close()
	if err := owner.Ping(); err == nil || !strings.Contains(err.Error(), "open as an analyst") {
		t.Errorf("owner beside analysts: %v", err)
	}
	db.Close()
	if err := owner.Ping(); err != nil {
		t.Errorf("owner once the analysts are gone: %v", err)
	}
	analyst := open(t, path)
	if err := analyst.Ping(); err == nil || !strings.Contains(err.Error(), "open as its owner") {
		t.Errorf("analyst beside the owner: %v", err)
	}
}

// ":memory:" is one database per connection: with one connection, the owner's setup and
// queries see one database.
func TestMemory(t *testing.T) {
	db := sql.OpenDB(driver.NewConnector(dpsql.Config{Database: ":memory:", Owner: true}))
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(setup + "SET BUDGET UNLIMITED"); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := db.QueryRow(`SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=1e-5, kappa=1) ANON_COUNT(*) AS n FROM visits`).Scan(&n); err != nil || n != 3000 {
		t.Errorf("n = %d, %v", n, err)
	}
}

// Ten goroutines share one pool on a file whose budget pays for exactly five queries: five
// answers, five budget refusals.
func TestConcurrentBudget(t *testing.T) {
	db := open(t, ownerSetup(t, "SET BUDGET OPTIONS(epsilon=5, delta=1e-3)"))
	db.SetMaxOpenConns(10)
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n int64
			errs[i] = db.QueryRow(`SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) ANON_COUNT(*) AS n FROM visits`).Scan(&n)
		}()
	}
	wg.Wait()
	answers, refusals := 0, 0
	for _, err := range errs {
		switch se, ok := sqlerr.As(err); {
		case err == nil:
			answers++
		case ok && se.Code == sqlerr.BudgetExhausted:
			refusals++
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if answers != 5 || refusals != 5 {
		t.Errorf("%d answers, %d budget refusals; want 5 and 5", answers, refusals)
	}
	if st := db.Stats(); st.MaxOpenConnections != 10 {
		t.Errorf("stats %+v", st)
	}
}

// sql.Open with a PostgreSQL URL.
func TestPostgres(t *testing.T) {
	url := pg.Cluster(t).NewDatabase(t)
	owner := sql.OpenDB(driver.NewConnector(dpsql.Config{Database: url, Owner: true}))
	_, err := owner.Exec(`CREATE TABLE visits OPTIONS(anonymization_userid_column='uid') AS
		SELECT g AS uid, 'g' || (g % 3) AS g FROM generate_series(0, 2999) AS g;
		SET BUDGET UNLIMITED`)
	owner.Close()
	if err != nil {
		t.Fatal(err)
	}
	db := open(t, url)
	var n int64
	if err := db.QueryRow(`SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=1e-5, kappa=1) ANON_COUNT(*) AS n FROM visits WHERE uid < @hi`,
		sql.Named("hi", 100)).Scan(&n); err != nil || n != 100 {
		t.Errorf("n = %d, %v", n, err)
	}
	_, err = db.Exec("SELECT * FROM visits")
	if _, ok := sqlerr.As(err); !ok {
		t.Errorf("raw read of a private table: %v", err)
	}
}
