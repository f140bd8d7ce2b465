package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/dpsql/dpsql"
)

// setupDuckDB creates a DuckDB file as its owner: a private table of 300 users in 3 shops
// (100 each), a public table, a budget, and the accounts of accounts ("name:password:options").
func setupDuckDB(t testing.TB, budget string, accounts ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shop.duckdb")
	ownerExec(t, path, setupScript(budget, accounts...))
	return path
}

func setupScript(budget string, accounts ...string) string {
	s := `CREATE TABLE visits AS SELECT i AS uid, 'shop' || (i % 3) AS shop, (i % 7)::DOUBLE AS amount FROM range(300) r(i);
ALTER TABLE visits SET OPTIONS(privacy_unit_column = uid);
CREATE TABLE shops AS SELECT 'shop' || i AS shop FROM range(3) r(i);
ALTER TABLE shops SET OPTIONS(public = true);
SET BUDGET ` + budget + `;
`
	for _, a := range accounts {
		parts := strings.SplitN(a, ":", 3)
		s += fmt.Sprintf("CREATE ANALYST %s PASSWORD '%s'", parts[0], parts[1])
		if len(parts) == 3 && parts[2] != "" {
			s += " OPTIONS(" + parts[2] + ")"
		}
		s += ";\n"
	}
	return s
}

// ownerExec runs script as the owner of database, in process.
func ownerExec(t testing.TB, database, script string) {
	t.Helper()
	ctx := context.Background()
	db, err := dpsql.Open(ctx, dpsql.Config{Database: database, Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(ctx, script); err != nil {
		t.Fatalf("setup: %v", err)
	}
}

type testServer struct {
	s    *Server
	addr string
	log  *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// start serves database on a loopback port until the test ends.
func start(t testing.TB, cfg Config) *testServer {
	t.Helper()
	log := &syncBuffer{}
	cfg.Log = log
	s, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		<-done
	})
	return &testServer{s: s, addr: ln.Addr().String(), log: log}
}

func (ts *testServer) url(user, password string) string {
	return fmt.Sprintf("postgres://%s:%s@%s/shop?sslmode=disable", user, password, ts.addr)
}

func connect(t testing.TB, ts *testServer, user, password string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, ts.url(user, password))
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

const countQuery = `SELECT WITH ANONYMIZATION OPTIONS(epsilon = 1e20, delta = 1e-5, kappa = 1)
	shop, ANON_COUNT(*) AS n FROM visits GROUP BY shop ORDER BY shop`

func TestServeDuckDB(t *testing.T) {
	path := setupDuckDB(t, "UNLIMITED", "alice:alice-pw:", "bob:bob-pw:epsilon = 3, delta = 1e-4")
	ts := start(t, Config{Database: path})
	ctx := context.Background()
	alice := connect(t, ts, "alice", "alice-pw")

	// An anonymized query, in the extended protocol (pgx's default), with exact counts at
	// epsilon 1e20 (production noise, negligible).
	rows, err := alice.Query(ctx, countQuery)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowToMap)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0]["shop"] != "shop0" || fmt.Sprint(got[0]["n"]) != "100" {
		t.Fatalf("rows %v", got)
	}
	// Bob's own allowance, and what a query leaves of it.
	bob := connect(t, ts, "bob", "bob-pw")
	var noisy float64
	if err := bob.QueryRow(ctx, `SELECT WITH ANONYMIZATION OPTIONS(epsilon = 1, delta = 1e-5, kappa = 1)
		ANON_COUNT(*) FROM visits`).Scan(&noisy); err != nil {
		t.Fatal(err)
	}
	if b := showBudget(t, bob); b["total"] != [2]float64{3, 1e-4} || b["spent"] != [2]float64{1, 1e-5} || b["remaining"] != [2]float64{2, 9e-5} {
		t.Errorf("bob's budget %v", b)
	}
	_, err = bob.Exec(ctx, `SELECT WITH ANONYMIZATION OPTIONS(epsilon = 2.5, delta = 1e-5, kappa = 1) ANON_COUNT(*) FROM visits`)
	if sqlState(err) != "2P001" || !strings.Contains(err.Error(), "allowance") {
		t.Errorf("beyond bob's allowance: %v", err)
	}
	// $1 parameters in an anonymized query.
	var n float64
	err = alice.QueryRow(ctx, `SELECT WITH ANONYMIZATION OPTIONS(epsilon = $1, delta = 1e-5, kappa = 1)
		ANON_COUNT(*) FROM visits WHERE shop = $2`, 1e20, "shop1").Scan(&n)
	if err != nil || n != 100 {
		t.Fatalf("parameters: %v %v", n, err)
	}
	// A raw read of the private table is refused, as in the CLI.
	_, err = alice.Exec(ctx, "SELECT * FROM visits")
	if sqlState(err) == "" || !strings.Contains(err.Error(), "private") {
		t.Errorf("raw read: %v", err)
	}
	// Public tables read as written.
	var shops int64
	if err := alice.QueryRow(ctx, "SELECT count(*) FROM shops").Scan(&shops); err != nil || shops != 3 {
		t.Errorf("public read: %d %v", shops, err)
	}
	// Account statements are the owner's.
	_, err = alice.Exec(ctx, "CREATE ANALYST mallory PASSWORD 'x'")
	if sqlState(err) != "42501" {
		t.Errorf("analyst creating an account: %v", err)
	}
	// A query that fails after its charge (implicit bounds with no rows to estimate them from)
	// is charged, and the log says what it spent, not cost=none (an outside review).
	_, err = alice.Exec(ctx, `SELECT WITH ANONYMIZATION OPTIONS(epsilon = 0.25, delta = 1e-5, kappa = 1)
		ANON_COUNT(*) FROM visits WHERE shop = 'nosuch'`)
	if err == nil || !strings.Contains(err.Error(), "charged") {
		t.Fatalf("implicit bounds over no rows: %v", err)
	}
	// The log: one line per statement, with its charge, never text or values.
	log := ts.log.String()
	if !strings.Contains(log, `statement analyst="alice"`) || !strings.Contains(log, "cost=epsilon=") || strings.Contains(log, "shop1") {
		t.Errorf("log:\n%s", log)
	}
	if !regexp.MustCompile(`cost=epsilon=0.25,delta=1e-05 .* outcome=[0-9A-Z]{5}`).MatchString(log) {
		t.Errorf("the failed, charged query is not logged with its charge:\n%s", log)
	}
}

// showBudget reads SHOW BUDGET into setting → (epsilon, delta).
func showBudget(t testing.TB, c *pgx.Conn) map[string][2]float64 {
	t.Helper()
	rows, err := c.Query(context.Background(), "SHOW BUDGET")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]float64{}
	for rows.Next() {
		var name string
		var eps, delta *float64
		if err := rows.Scan(&name, &eps, &delta); err != nil {
			t.Fatal(err)
		}
		var v [2]float64
		if eps != nil {
			v[0] = *eps
		}
		if delta != nil {
			v[1] = *delta
		}
		out[name] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Wrong password, unknown user and no password are refused alike.
func TestServeAuthentication(t *testing.T) {
	path := setupDuckDB(t, "UNLIMITED", "alice:alice-pw:")
	ts := start(t, Config{Database: path})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var msgs []string
	for _, u := range []struct{ user, pw string }{{"alice", "wrong"}, {"nobody", "wrong"}, {"alice", ""}} {
		c, err := pgx.Connect(ctx, ts.url(u.user, u.pw))
		if err == nil {
			c.Close(ctx)
			t.Fatalf("%s with %q connected", u.user, u.pw)
		}
		if sqlState(err) != "28P01" {
			t.Errorf("%s/%q: %v", u.user, u.pw, err)
		}
		msgs = append(msgs, strings.ReplaceAll(err.Error(), u.user, "USER"))
	}
	if msgs[0] != msgs[1] {
		t.Errorf("wrong password and unknown user differ:\n%s\n%s", msgs[0], msgs[1])
	}
	// ALICE is alice: names are case-insensitive.
	c := connect(t, ts, "ALICE", "alice-pw")
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

// 20 simultaneous queries of an analyst whose allowance has room for 9 give exactly 9 answers.
func TestServeAllowanceUnderConcurrency(t *testing.T) {
	path := setupDuckDB(t, "OPTIONS(epsilon = 100, delta = 1e-3)", "alice:pw:epsilon = 9, max_concurrent_queries = 20")
	ts := start(t, Config{Database: path})
	checkExactlyNine(t, ts)
}

func checkExactlyNine(t *testing.T, ts *testServer) {
	conns := make([]*pgx.Conn, 20)
	for i := range conns {
		conns[i] = connect(t, ts, "alice", "pw")
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	answers, refusals := 0, 0
	var other []error
	startLine := make(chan struct{})
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-startLine
			var n float64
			err := c.QueryRow(context.Background(), `SELECT WITH ANONYMIZATION OPTIONS(epsilon = 1, delta = 1e-9, kappa = 1)
				ANON_COUNT(*) FROM visits`).Scan(&n)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				answers++
			case sqlState(err) == "2P001" || strings.Contains(err.Error(), "exhausted"):
				refusals++
			default:
				other = append(other, err)
			}
		}()
	}
	close(startLine)
	wg.Wait()
	if answers != 9 || refusals != 11 || len(other) > 0 {
		t.Fatalf("answers %d, refusals %d, other errors %v; want 9 and 11", answers, refusals, other)
	}
	b := showBudget(t, conns[0])
	if b["spent"][0] != 9 || b["remaining"][0] != 0 {
		t.Errorf("budget after: %v", b)
	}
}

// 50 sessions at once, each running queries.
func TestServeFiftySessions(t *testing.T) {
	path := setupDuckDB(t, "UNLIMITED", "alice:pw:max_concurrent_queries = 50")
	ts := start(t, Config{Database: path, MaxConnectionsPerAccount: 50})
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := 0; i < 50; i++ {
		c := connect(t, ts, "alice", "pw")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 2; j++ {
				var n float64
				if err := c.QueryRow(context.Background(), countQuery+" LIMIT 1").Scan(new(string), &n); err != nil {
					errs <- err
					return
				}
				if n != 100 {
					errs <- fmt.Errorf("count %v", n)
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

// An owner account runs policy and account statements through the server; DDL is refused with
// a hint, since the server holds the DuckDB file.
func TestServeOwnerAccount(t *testing.T) {
	path := setupDuckDB(t, "OPTIONS(epsilon = 10, delta = 1e-3)", "admin:admin-pw:owner = true")
	ts := start(t, Config{Database: path})
	ctx := context.Background()
	admin := connect(t, ts, "admin", "admin-pw")
	for _, s := range []string{
		"CREATE ANALYST carol PASSWORD 'carol-pw' OPTIONS(epsilon = 2)",
		"SET BUDGET OPTIONS(epsilon = 20, delta = 1e-3)",
	} {
		if _, err := admin.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	carol := connect(t, ts, "carol", "carol-pw")
	if b := showBudget(t, carol); b["total"][0] != 2 {
		t.Errorf("carol's budget %v", b)
	}
	rows, err := admin.Query(ctx, "SHOW ANALYSTS")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for rows.Next() {
		vals, _ := rows.Values()
		names[fmt.Sprint(vals[0])] = true
	}
	if rows.Err() != nil || !names["carol"] || !names["admin"] {
		t.Errorf("SHOW ANALYSTS: %v %v", names, rows.Err())
	}
	_, err = admin.Exec(ctx, "CREATE TABLE t2 (a INTEGER)")
	if sqlState(err) != "0A000" || !strings.Contains(err.Error(), "not DDL") {
		t.Errorf("DDL through the server: %v", err)
	}
	// The owner reads raw rows.
	var n int64
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM visits").Scan(&n); err != nil || n != 300 {
		t.Errorf("owner raw read: %d %v", n, err)
	}
}

// psql's \dt and \d name list what the analyst may name.
func TestServePsql(t *testing.T) {
	bin := "/usr/bin/psql"
	if _, err := os.Stat(bin); err != nil {
		t.Skip("psql is not installed")
	}
	t.Run("duckdb", func(t *testing.T) { servePsql(t, bin, setupDuckDB(t, "UNLIMITED", "alice:alice-pw:")) })
	t.Run("postgres", func(t *testing.T) { servePsql(t, bin, setupPostgres(t, "UNLIMITED", "alice:alice-pw:")) })
}

func servePsql(t *testing.T, bin, database string) {
	ts := start(t, Config{Database: database})
	host, port, _ := net.SplitHostPort(ts.addr)
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"-X", "-w", "-v", "ON_ERROR_STOP=1",
			"host=" + host + " port=" + port + " user=alice dbname=shop"}, args...)...)
		cmd.Env = []string{"PGPASSWORD=alice-pw", "PGPASSFILE=/dev/null", "LANG=C.UTF-8", "HOME=" + t.TempDir()}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("psql %v: %v\n%s%s", args, err, out, stderr.String())
		}
		return string(out)
	}
	if out := run("-c", `\dt`); !strings.Contains(out, "visits") || !strings.Contains(out, "shops") {
		t.Errorf(`\dt: %s`, out)
	}
	if out := run("-c", `\d visits`); !strings.Contains(out, "uid") || !strings.Contains(out, "amount") {
		t.Errorf(`\d visits: %s`, out)
	}
	out := run("-A", "-t", "-c", countQuery)
	if out != "shop0|100\nshop1|100\nshop2|100\n" {
		t.Errorf("query: %q", out)
	}
}

// A session belongs to the account it logged in to: once the account is demoted, dropped
// (even if re-created) or its password changed, the session refuses everything; an owner
// account on DuckDB cannot create or replace relations (dpsql's own tables included).
func TestServeAccountChangesEndSessions(t *testing.T) {
	path := setupDuckDB(t, "OPTIONS(epsilon = 10, delta = 1e-3)",
		"admin:admin-pw:owner = true", "admin2:admin2-pw:owner = true", "carol:carol-pw:", "dave:dave-pw:")
	ts := start(t, Config{Database: path})
	ctx := context.Background()
	admin, admin2 := connect(t, ts, "admin", "admin-pw"), connect(t, ts, "admin2", "admin2-pw")
	carol, dave := connect(t, ts, "carol", "carol-pw"), connect(t, ts, "dave", "dave-pw")
	for _, ddl := range []string{
		"CREATE TABLE t2 AS SELECT 1 AS a",
		"CREATE OR REPLACE VIEW v OPTIONS(public = true) AS SELECT * FROM visits",
		"CREATE OR REPLACE TABLE dpsql.charges AS SELECT * FROM dpsql.charges WHERE false",
		"DELETE FROM dpsql.charges",
	} {
		if _, err := admin.Exec(ctx, ddl); sqlState(err) != "0A000" && sqlState(err) != "42601" {
			t.Errorf("%s through the server: %v", ddl, err)
		}
	}
	for _, s := range []string{
		"ALTER ANALYST admin SET OPTIONS(owner = FALSE)",
		"DROP ANALYST carol",
		"CREATE ANALYST carol PASSWORD 'other-pw'",
		"ALTER ANALYST dave PASSWORD 'new-pw'",
	} {
		if _, err := admin2.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	for name, c := range map[string]*pgx.Conn{"demoted admin": admin, "re-created carol": carol, "dave after a new password": dave} {
		for _, q := range []string{"SELECT count(*) FROM visits", "SHOW BUDGET", "SELECT count(*) FROM shops"} {
			if _, err := c.Exec(ctx, q); sqlState(err) != "28000" {
				t.Errorf("%s: %s: %v", name, q, err)
			}
		}
	}
	connect(t, ts, "carol", "other-pw") // the new carol logs in
}

// An account's statement_timeout bounds its statements through the server.
func TestServeAccountTimeout(t *testing.T) {
	path := setupDuckDB(t, "UNLIMITED", "slow:pw:statement_timeout = '1s'")
	ts := start(t, Config{Database: path})
	c := connect(t, ts, "slow", "pw")
	from := "shops s0"
	for i := 1; i < 22; i++ {
		from += fmt.Sprintf(", shops s%d", i)
	}
	t0 := time.Now()
	_, err := c.Exec(context.Background(), "SELECT count(*) FROM "+from) // 3^22 rows
	if sqlState(err) != "57014" || time.Since(t0) > 20*time.Second {
		t.Errorf("after %v: %v; want 57014 after about 1s", time.Since(t0), err)
	}
}

// One account cannot hold every connection: it has at most MaxConnectionsPerAccount, and
// analysts leave the last ReservedForOwners connections to owner accounts.
func TestServeConnectionShares(t *testing.T) {
	path := setupDuckDB(t, "UNLIMITED", "alice:pw:", "bob:pw:", "admin:admin-pw:owner = true")
	ts := start(t, Config{Database: path, MaxConnections: 10, MaxConnectionsPerAccount: 5})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 5; i++ {
		connect(t, ts, "alice", "pw")
	}
	if c, err := pgx.Connect(ctx, ts.url("alice", "pw")); err == nil || sqlState(err) != "53300" {
		if c != nil {
			c.Close(ctx)
		}
		t.Fatalf("alice's sixth connection: %v, want 53300", err)
	}
	connect(t, ts, "bob", "pw")
	connect(t, ts, "bob", "pw")
	// 7 of 10 open: the last 3 are the owners'.
	if c, err := pgx.Connect(ctx, ts.url("bob", "pw")); err == nil || sqlState(err) != "53300" {
		if c != nil {
			c.Close(ctx)
		}
		t.Fatalf("bob in the owners' reserve: %v, want 53300", err)
	}
	admin := connect(t, ts, "admin", "admin-pw")
	if err := admin.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

// A portal's kept rows are not sent once its session's account lost the rights that read
// them (second review: a demoted owner's suspended portal kept returning raw rows).
func TestServePortalAfterDemotion(t *testing.T) {
	path := setupDuckDB(t, "UNLIMITED", "admin:admin-pw:owner = true", "admin2:admin2-pw:owner = true")
	ts := start(t, Config{Database: path})
	ctx := context.Background()
	admin, admin2 := connect(t, ts, "admin", "admin-pw"), connect(t, ts, "admin2", "admin2-pw")
	fe := admin.PgConn().Frontend()
	next := func() string { // the outcome of one Execute: "row", "suspended", or the SQLSTATE
		t.Helper()
		fe.Send(&pgproto3.Execute{Portal: "p", MaxRows: 1})
		fe.Send(&pgproto3.Flush{})
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
		rows := 0
		for {
			m, err := fe.Receive()
			if err != nil {
				t.Fatal(err)
			}
			switch m := m.(type) {
			case *pgproto3.DataRow:
				rows++
			case *pgproto3.PortalSuspended:
				return fmt.Sprintf("%d rows, suspended", rows)
			case *pgproto3.ErrorResponse:
				return m.Code
			case *pgproto3.CommandComplete:
				return "complete"
			}
		}
	}
	fe.Send(&pgproto3.Parse{Name: "s", Query: "SELECT uid FROM visits"})
	fe.Send(&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s"})
	if got := next(); got != "1 rows, suspended" {
		t.Fatalf("before the demotion: %s", got)
	}
	if _, err := admin2.Exec(ctx, "ALTER ANALYST admin SET OPTIONS(owner = FALSE)"); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != "28000" {
		t.Errorf("the same portal after the demotion: %s, want 28000", got)
	}
}
