package dpsql_test

import (
	"context"
	"errors"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/pgtest"
	"github.com/dpsql/dpsql/sqlerr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// docBlock returns the SQL block that follows the marker <!-- roles:name in docs/postgres.md,
// so that the tests run exactly the role set-up the documentation gives.
func docBlock(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("docs/postgres.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "<!-- roles:"+name+" ")
	if i < 0 {
		t.Fatalf("docs/postgres.md has no block <!-- roles:%s", name)
	}
	rest := doc[i:]
	start := strings.Index(rest, "```sql\n")
	if start < 0 {
		t.Fatalf("no ```sql block after <!-- roles:%s", name)
	}
	rest = rest[start+len("```sql\n"):]
	end := strings.Index(rest, "```")
	if end < 0 {
		t.Fatalf("unterminated block after <!-- roles:%s", name)
	}
	return rest[:end]
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// TestDocumentedRoles sets a database up as docs/postgres.md says (its two SQL blocks run
// verbatim with psql), then attacks it from plain SQL connections with the engine role's
// credentials, as psql would, and checks that dpsql still answers analysts through that role.
func TestDocumentedRoles(t *testing.T) {
	ctx := context.Background()
	c := pgtest.New(t, pgtest.Options{})
	if out, err := c.Psql(ctx, "", "postgres", docBlock(t, "admin")); err != nil {
		t.Fatalf("the documented administrator set-up failed: %v\n%s", err, out)
	}
	ownerURL, err := pgtest.AsRole(c.URL("app"), "dpsql_owner")
	if err != nil {
		t.Fatal(err)
	}
	engineURL, _ := pgtest.AsRole(c.URL("app"), "dpsql_engine")

	// The owner's data: a raw table that stays the owner's, a private view over it with one
	// target (uid 7), a public table.
	if out, err := c.Psql(ctx, "app", "dpsql_owner", `
		CREATE TABLE raw (uid BIGINT, name TEXT, city TEXT, salary DOUBLE PRECISION, note TEXT);
		INSERT INTO raw SELECT g, 'user' || g, CASE WHEN g % 2 = 0 THEN 'Paris' ELSE 'Oslo' END, 1000 + g, 'ok'
			FROM generate_series(1, 400) g WHERE g <> 7;
		INSERT INTO raw VALUES (7, 'victim', 'Oslo', 999999, 'secret-hiv-positive');
		CREATE TABLE cities (city TEXT, country TEXT);
		INSERT INTO cities VALUES ('Paris', 'FR'), ('Oslo', 'NO');`); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	owner, err := dpsql.Open(ctx, dpsql.Config{Database: ownerURL, Owner: true})
	if err != nil {
		t.Fatalf("the owner's role cannot open the database as owner: %v", err)
	}
	if _, err := owner.Exec(ctx, `
		CREATE VIEW people OPTIONS(anonymization_userid_column='uid') AS SELECT uid, name, city, salary, note FROM raw;
		ALTER TABLE cities SET OPTIONS(public=TRUE);
		SET BUDGET OPTIONS(epsilon=10, delta=1e-5);
		SET LIMITS OPTIONS(statement_timeout = '30s')`); err != nil {
		t.Fatal(err)
	}
	owner.Close()
	if out, err := c.Psql(ctx, "app", "dpsql_owner", docBlock(t, "owner")); err != nil {
		t.Fatalf("the documented owner grants failed: %v\n%s", err, out)
	}

	// Plain psql with the engine's credentials cannot rewrite the budget.
	out, err := c.Psql(ctx, "app", "dpsql_engine", "UPDATE dpsql.budget SET spent_epsilon = 0")
	if err == nil || !strings.Contains(out, "permission denied for table budget") {
		t.Errorf("psql as dpsql_engine: UPDATE dpsql.budget: %v\n%s", err, out)
	}

	out, err = c.Psql(ctx, "app", "dpsql_engine", "UPDATE dpsql.limits SET statement_timeout_ms = NULL")
	if err == nil || !strings.Contains(out, "permission denied for table limits") {
		t.Errorf("psql as dpsql_engine: UPDATE dpsql.limits: %v\n%s", err, out)
	}

	conn, err := pgx.Connect(ctx, engineURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	refused := func(code, stmt string, args ...any) {
		t.Helper()
		_, err := conn.Exec(ctx, stmt, args...)
		if got := sqlState(err); got != code {
			t.Errorf("as dpsql_engine: %s: %v (SQLSTATE %q), want SQLSTATE %s", stmt, err, got, code)
		}
	}
	const denied = "42501"
	for _, s := range []string{
		"SELECT * FROM raw",
		"SELECT * FROM raw WHERE uid = 7",
		"SELECT * FROM dpsql.charges",
		"UPDATE dpsql.budget SET spent_epsilon = 0, spent_delta = 0",
		"UPDATE dpsql.budget SET total_epsilon = 1000000",
		"INSERT INTO dpsql.budget VALUES (2, TRUE, TRUE, 0, 0, 0, 0, 0)",
		"DELETE FROM dpsql.budget",
		"TRUNCATE dpsql.budget",
		"INSERT INTO dpsql.charges VALUES (100, now(), -5, 0, 'refund')",
		"UPDATE dpsql.charges SET epsilon = 0",
		"DELETE FROM dpsql.charges",
		"TRUNCATE dpsql.charges",
		"UPDATE dpsql.relations SET kind = 'public'",
		"DELETE FROM dpsql.domains",
		"UPDATE dpsql.limits SET statement_timeout_ms = NULL, memory_limit_bytes = NULL",
		"INSERT INTO dpsql.limits VALUES (2, NULL, NULL)",
		"DELETE FROM dpsql.limits",
		"TRUNCATE dpsql.limits",
		"UPDATE dpsql.analysts SET spent_epsilon = 0",
		"INSERT INTO dpsql.analysts (name, verifier, created_at) VALUES ('eve', 'x', now())",
		"DELETE FROM dpsql.analysts",
		"UPDATE dpsql.policy SET generation = 0",
		"CREATE TABLE public.mine (a INT)",
		"CREATE TABLE dpsql.mine (a INT)",
		"CREATE TEMP TABLE mine (a INT)",
		"CREATE SCHEMA mine",
		"CREATE OR REPLACE FUNCTION dpsql.fits(total DOUBLE PRECISION, spent DOUBLE PRECISION, cost DOUBLE PRECISION) RETURNS BOOLEAN LANGUAGE sql AS 'SELECT TRUE'",
		"ALTER FUNCTION dpsql.spend(DOUBLE PRECISION, DOUBLE PRECISION, TEXT) SECURITY INVOKER",
		"ALTER FUNCTION dpsql.spend(DOUBLE PRECISION, DOUBLE PRECISION, TEXT, TEXT) SECURITY INVOKER",
		"SELECT dpsql.fits(1, 0, 1)",
		"SET ROLE dpsql_owner",
	} {
		refused(denied, s)
	}
	// Spends that would subtract, or that are no number, are refused by the function.
	for _, cost := range [][2]any{{-1.0, 0.0}, {0.0, -1e-9}, {math.NaN(), 0.0}, {math.Inf(1), 0.0},
		{0.1, 1.5}, {0.1, math.NaN()}, {nil, 0.0}, {0.1, nil}} {
		refused("22023", "SELECT * FROM dpsql.spend($1, $2, 'x')", cost[0], cost[1])
		refused("22023", "SELECT * FROM dpsql.spend($1, $2, 'x', 'ann')", cost[0], cost[1])
	}
	refused("22004", "SELECT * FROM dpsql.spend(0.1, 0, NULL)")

	// --owner with the engine's role is refused: no raw SQL, no SET BUDGET.
	if _, err := dpsql.Open(ctx, dpsql.Config{Database: engineURL, Owner: true}); err == nil {
		t.Error("dpsql_engine opened the database as its owner")
	} else if e, ok := sqlerr.As(err); !ok || e.Code != sqlerr.InsufficientPrivilege ||
		!strings.Contains(e.Msg, "dpsql_engine is not the data owner") || !strings.Contains(e.Msg, "dpsql_owner") || e.Hint == "" {
		t.Errorf("--owner as dpsql_engine: %v", err)
	}

	// The analyst flow through the engine role: answered and charged, under the owner's
	// statement_timeout even when the process asks for a longer one.
	eng, err := dpsql.Open(ctx, dpsql.Config{Database: engineURL, StatementTimeout: time.Hour})
	if err != nil {
		t.Fatalf("dpsql as dpsql_engine: %v", err)
	}
	defer eng.Close()
	if got := sessionLimit(t, eng, "statement_timeout"); got != "30s" {
		t.Errorf("dpsql as dpsql_engine with --timeout 1h: statement_timeout %v, want the owner's 30s", got)
	}
	res, err := eng.Exec(ctx, `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-6, kappa=1)
		city, ANON_COUNT(*, 1) AS n FROM people GROUP BY city`)
	if err != nil {
		t.Fatalf("anonymized query through dpsql_engine: %v", err)
	}
	if len(res) != 1 || len(res[0].Rows) == 0 {
		t.Errorf("anonymized query released nothing: %+v", res)
	}
	if _, err := eng.Exec(ctx, "SELECT city, country FROM cities"); err != nil {
		t.Errorf("public query through dpsql_engine: %v", err)
	}
	for _, s := range []string{"SET BUDGET OPTIONS(epsilon=1000000, delta=0.5)", "SELECT * FROM people WHERE uid = 7",
		"SET LIMITS OPTIONS(statement_timeout = NULL)"} {
		if _, err := eng.Exec(ctx, s); err == nil {
			t.Errorf("%s through dpsql_engine succeeded", s)
		}
	}
	var spent float64
	var charges int
	ownerConn, err := pgx.Connect(ctx, ownerURL)
	if err != nil {
		t.Fatal(err)
	}
	defer ownerConn.Close(ctx)
	if err := ownerConn.QueryRow(ctx, `SELECT spent_epsilon, (SELECT count(*) FROM dpsql.charges) FROM dpsql.budget`).Scan(&spent, &charges); err != nil {
		t.Fatal(err)
	}
	if spent != 1 || charges != 1 {
		t.Fatalf("after one anonymized query of epsilon 1: spent %g, %d charges; want 1 and 1", spent, charges)
	}

	// Concurrent spends through the function, from 8 plain connections (READ COMMITTED,
	// autocommit): 9 left, 0.25 each, so exactly 36 of 64 attempts are recorded.
	recorded := spendFrom8(t, engineURL, "SELECT recorded FROM dpsql.spend(0.25, 0, 'concurrent')")
	if err := ownerConn.QueryRow(ctx, `SELECT spent_epsilon, (SELECT count(*) FROM dpsql.charges) FROM dpsql.budget`).Scan(&spent, &charges); err != nil {
		t.Fatal(err)
	}
	if recorded != 36 || spent != 10 || charges != 37 {
		t.Errorf("concurrent spends: %d recorded, spent %g, %d charges; want 36, 10, 37", recorded, spent, charges)
	}
	// The budget is used up: dpsql refuses through the same function.
	_, err = eng.Exec(ctx, `SELECT WITH ANONYMIZATION OPTIONS(epsilon=0.5, delta=1e-6, kappa=1)
		city, ANON_COUNT(*, 1) AS n FROM people GROUP BY city`)
	if e, ok := sqlerr.As(err); !ok || e.Code != sqlerr.BudgetExhausted {
		t.Errorf("query over the budget: %v, want %s", err, sqlerr.BudgetExhausted)
	}

	// An analyst's account (dpsql serve): the engine role reads it and spends through the
	// function, which keeps the allowance under concurrency: 2 of allowance, 0.25 each, so
	// exactly 8 of 64 attempts are recorded although the database has 10 more.
	owner, err = dpsql.Open(ctx, dpsql.Config{Database: ownerURL, Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Exec(ctx, `SET BUDGET OPTIONS(epsilon=20, delta=1e-5); CREATE ANALYST ann PASSWORD 'pw' OPTIONS(epsilon=2)`); err != nil {
		t.Fatal(err)
	}
	owner.Close()
	var verifier string
	if err := conn.QueryRow(ctx, "SELECT verifier FROM dpsql.analysts WHERE name = 'ann'").Scan(&verifier); err != nil ||
		!strings.HasPrefix(verifier, "SCRAM-SHA-256$") {
		t.Errorf("dpsql_engine reads ann's verifier: %q, %v", verifier, err)
	}
	recorded = spendFrom8(t, engineURL, "SELECT recorded FROM dpsql.spend(0.25, 0, 'concurrent', 'ann')")
	var annSpent float64
	if err := ownerConn.QueryRow(ctx, `SELECT b.spent_epsilon, a.spent_epsilon, (SELECT count(*) FROM dpsql.charges WHERE analyst = 'ann')
		FROM dpsql.budget b, dpsql.analysts a WHERE a.name = 'ann'`).Scan(&spent, &annSpent, &charges); err != nil {
		t.Fatal(err)
	}
	if recorded != 8 || annSpent != 2 || spent != 12 || charges != 8 {
		t.Errorf("concurrent spends of ann: %d recorded, ann spent %g, the database %g, %d charges; want 8, 2, 12, 8", recorded, annSpent, spent, charges)
	}
}

// spendFrom8 runs spend (a query of dpsql.spend's recorded column) 8 times on each of 8 plain
// connections to url at once and returns how many charges were recorded.
func spendFrom8(t *testing.T, url, spend string) int {
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	recorded := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cc, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Error(err)
				return
			}
			defer cc.Close(ctx)
			for range 8 {
				var ok bool
				if err := cc.QueryRow(ctx, spend).Scan(&ok); err != nil {
					t.Error(err)
					return
				}
				if ok {
					mu.Lock()
					recorded++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return recorded
}
