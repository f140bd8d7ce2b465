package engine_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/backend/postgres"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/internal/scram"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/internal/testmode"
	"github.com/dpsql/dpsql/sqlerr"
)

// shared is one database with an owner's engine and analysts' engines opened on it, as dpsql
// serve has them: every engine over a backend of its own.
type shared struct {
	owner *engine.Engine
	ob    backend.Backend
	open  func(analyst string) *engine.Engine
}

func newShared(t *testing.T, d backend.Dialect, setup string) *shared {
	t.Helper()
	ctx := context.Background()
	var openB func(mode backend.Mode) backend.Backend
	if d == backend.Postgres {
		url := pg.Cluster(t).NewDatabase(t)
		openB = func(mode backend.Mode) backend.Backend {
			b, err := postgres.Open(ctx, url, postgres.Options{Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			return b
		}
	} else {
		path := filepath.Join(t.TempDir(), "db.duckdb")
		openB = func(mode backend.Mode) backend.Backend {
			b, err := duckdb.Open(ctx, path, duckdb.Options{Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			return b
		}
	}
	s := &shared{ob: openB(backend.Owner)}
	var err error
	if s.owner, err = engine.New(ctx, engine.Options{Backend: s.ob, Mechanisms: testmode.Noiseless{}, Owner: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.owner.Exec(ctx, setup); err != nil {
		t.Fatal(err)
	}
	s.open = func(analyst string) *engine.Engine {
		t.Helper()
		e, err := engine.New(ctx, engine.Options{Backend: openB(backend.Analyst), Mechanisms: testmode.Noiseless{}, Analyst: analyst})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	return s
}

func mustExec(t *testing.T, e *engine.Engine, script string, args ...any) []*engine.Result {
	t.Helper()
	res, err := e.Exec(context.Background(), script, args...)
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return res
}

// wantErr checks that script fails with code, a message containing msg, at line:col pos (""
// for any), with a hint.
func wantErr(t *testing.T, e *engine.Engine, script, code, msg, pos string, args ...any) {
	t.Helper()
	_, err := e.Exec(context.Background(), script, args...)
	se, ok := sqlerr.As(err)
	switch {
	case !ok:
		t.Errorf("%s: %v, want a %s error", script, err, code)
	case se.Code != code || !strings.Contains(se.Msg, msg) || se.Hint == "":
		t.Errorf("%s: %s %q (hint %q), want %s %q with a hint", script, se.Code, se.Msg, se.Hint, code, msg)
	case pos != "" && se.Pos.String() != pos:
		t.Errorf("%s: error at %s, want %s: %v", script, se.Pos, pos, err)
	}
}

func rowsText(r *engine.Result) string {
	var b strings.Builder
	for _, row := range r.Rows {
		for i, v := range row {
			if i > 0 {
				b.WriteString("|")
			}
			if v == nil {
				b.WriteString("NULL")
			} else {
				fmt.Fprint(&b, v)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

const accountsSetup = `CREATE TABLE people OPTIONS(anonymization_userid_column='uid') AS
	SELECT 1 AS uid, 'a' AS city UNION ALL SELECT 2, 'b';
CREATE TABLE cities OPTIONS(public=true) AS SELECT 'a' AS city, 'A' AS name;
SET BUDGET OPTIONS(epsilon=10, delta=1e-3)`

func TestAnalystStatements(t *testing.T) {
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		ctx := context.Background()
		s := newShared(t, d, accountsSetup)
		o := s.owner
		res := mustExec(t, o, `CREATE ANALYST Ann PASSWORD 's3cret' OPTIONS(epsilon=2, delta=1e-4, statement_timeout='60s', max_concurrent_queries=4);
			CREATE ANALYST bob PASSWORD 'pw';
			CREATE ANALYST boss PASSWORD 'pw2' OPTIONS(owner = TRUE)`)
		if res[0].Tag != "CREATE ANALYST" || len(res[0].Notices) != 0 {
			t.Errorf("CREATE ANALYST result %+v", res[0])
		}
		if !strings.Contains(strings.Join(res[1].Notices, " "), "only the database's budget, shared by all analysts") {
			t.Errorf("an account without an allowance: notices %q", res[1].Notices)
		}
		// The password is in no result, and stored only as a verifier.
		for _, r := range res {
			if strings.Contains(r.Statement, "s3cret") || strings.Contains(r.Statement, "'pw") {
				t.Errorf("the result holds the password: %q", r.Statement)
			}
		}
		if res[0].Statement != "CREATE ANALYST ann PASSWORD '********' OPTIONS(epsilon = 2, delta = 1e-4, statement_timeout = '60s', max_concurrent_queries = 4)" {
			t.Errorf("statement %q", res[0].Statement)
		}
		checkPassword := func(name, pw string) {
			t.Helper()
			a, ok, err := store.LookupAnalyst(ctx, s.ob, name)
			v, perr := scram.Parse(a.Verifier)
			if err != nil || !ok || perr != nil || !v.Check(pw) {
				t.Errorf("%s's verifier does not check %q: %v %v %v", name, pw, ok, err, perr)
			}
		}
		checkPassword("ann", "s3cret")

		const header = "name|owner|allowance_epsilon|allowance_delta|spent_epsilon|spent_delta|remaining_epsilon|remaining_delta|statement_timeout|max_concurrent_queries"
		show := func() string {
			t.Helper()
			r := mustExec(t, o, "SHOW ANALYSTS")[0]
			var cols []string
			for _, c := range r.Columns {
				cols = append(cols, c.Name)
			}
			if strings.Join(cols, "|") != header || r.Columns[1].Type != "BOOLEAN" {
				t.Errorf("SHOW ANALYSTS columns %v", r.Columns)
			}
			return rowsText(r)
		}
		if got, want := show(), "ann|false|2|0.0001|0|0|2|0.0001|1m|4\nbob|false|NULL|NULL|0|0|NULL|NULL|NULL|NULL\nboss|true|NULL|NULL|0|0|NULL|NULL|NULL|NULL\n"; got != want {
			t.Errorf("SHOW ANALYSTS:\n%s\nwant:\n%s", got, want)
		}

		// ALTER: options not named keep their value, NULL removes one; a new password.
		mustExec(t, o, "ALTER ANALYST ann SET OPTIONS(delta = NULL, max_concurrent_queries = 2); ALTER ANALYST ANN PASSWORD 'n3w'")
		checkPassword("ann", "n3w")
		mustExec(t, o, "ALTER ANALYST bob PASSWORD 'x' SET OPTIONS(epsilon = 0.5)")
		if got, want := show(), "ann|false|2|NULL|0|0|2|NULL|1m|2\nbob|false|0.5|NULL|0|0|0.5|NULL|NULL|NULL\nboss|true|NULL|NULL|0|0|NULL|NULL|NULL|NULL\n"; got != want {
			t.Errorf("SHOW ANALYSTS after ALTER:\n%s\nwant:\n%s", got, want)
		}

		// Errors, each at its place, with a hint.
		for _, c := range []struct{ sql, code, msg, pos string }{
			{"CREATE ANALYST ann PASSWORD 'x'", sqlerr.DuplicateObject, "analyst ann already exists", "1:1"},
			{"CREATE ANALYST carl PASSWORD ''", sqlerr.InvalidParameterValue, "the password must not be empty", "1:30"},
			{"CREATE ANALYST carl PASSWORD 'x' OPTIONS(epsilon = 0)", sqlerr.InvalidParameterValue, "epsilon must be a finite number greater than 0, got 0", "1:52"},
			{"CREATE ANALYST carl PASSWORD 'x' OPTIONS(epsilon = -1)", sqlerr.InvalidParameterValue, "greater than 0", "1:52"},
			{"CREATE ANALYST carl PASSWORD 'x' OPTIONS(epsilon = 'a')", sqlerr.InvalidParameterValue, "epsilon must be a number or NULL", "1:52"},
			{"CREATE ANALYST carl PASSWORD 'x' OPTIONS(epsilon = CAST('inf' AS DOUBLE))", sqlerr.InvalidParameterValue, "epsilon must be a finite number greater than 0, got +Inf", "1:52"},
			{"CREATE ANALYST carl PASSWORD 'x' OPTIONS(delta = CAST('nan' AS DOUBLE))", sqlerr.InvalidParameterValue, "delta must be in [0, 1), got NaN", "1:50"},
			// The total: infinity is not "unlimited" (outside review); SET BUDGET UNLIMITED is.
			{"SET BUDGET OPTIONS(epsilon = CAST('inf' AS DOUBLE), delta = 1e-5)", sqlerr.InvalidParameterValue, "the budget's epsilon must be finite, got +Inf", "1:30"},
			{"SET BUDGET OPTIONS(epsilon = 1e400, delta = 1e-5)", sqlerr.InvalidParameterValue, "the budget's epsilon must be finite, got +Inf", "1:30"},
			{"SET BUDGET OPTIONS(epsilon = 1, delta = CAST('NaN' AS DOUBLE))", sqlerr.InvalidParameterValue, "the budget's delta must be finite, got NaN", "1:41"},
			{"CREATE ANALYST carl PASSWORD 'x' OPTIONS(delta = 1)", sqlerr.InvalidParameterValue, "delta must be in [0, 1), got 1", "1:50"},
			{"CREATE ANALYST carl PASSWORD 'x' OPTIONS(statement_timeout = 60)", sqlerr.InvalidParameterValue, "statement_timeout must be a duration in quotes or NULL", "1:62"},
			{"CREATE ANALYST carl PASSWORD 'x' OPTIONS(statement_timeout = 'soon')", sqlerr.InvalidParameterValue, "statement_timeout: ", "1:62"},
			{"CREATE ANALYST carl PASSWORD 'x' OPTIONS(max_concurrent_queries = 0)", sqlerr.InvalidParameterValue, "max_concurrent_queries must be an integer from 1 to 1000", "1:67"},
			{"CREATE ANALYST carl PASSWORD 'x' OPTIONS(max_concurrent_queries = 1001)", sqlerr.InvalidParameterValue, "from 1 to 1000", "1:67"},
			{"CREATE ANALYST carl PASSWORD 'x' OPTIONS(max_concurrent_queries = 1.5)", sqlerr.InvalidParameterValue, "from 1 to 1000", "1:67"},
			{"CREATE ANALYST carl PASSWORD 'x' OPTIONS(owner = 'yes')", sqlerr.InvalidParameterValue, "owner must be TRUE or FALSE", "1:50"},
			{"CREATE ANALYST carl PASSWORD 'x' OPTIONS(kappa = 1)", sqlerr.InvalidParameterValue, "unknown analyst option kappa", "1:42"},
			{"CREATE ANALYST carl PASSWORD 'x' OPTIONS(epsilon = 1, EPSILON = 2)", sqlerr.InvalidParameterValue, "option EPSILON is given twice", "1:55"},
			{"CREATE ANALYST carl PASSWORD 'x' OPTIONS(owner = TRUE, epsilon = 1)", sqlerr.InvalidParameterValue, "an owner account (owner = TRUE) has no allowance", "1:56"},
			{"ALTER ANALYST ann SET OPTIONS(owner = TRUE)", sqlerr.InvalidParameterValue, "has no allowance", "1:31"},
			{"ALTER ANALYST nobody SET OPTIONS(epsilon = 1)", sqlerr.UndefinedObject, "analyst nobody does not exist", "1:15"},
			{"DROP ANALYST nobody", sqlerr.UndefinedObject, "analyst nobody does not exist", "1:14"},
		} {
			wantErr(t, o, c.sql, c.code, c.msg, c.pos)
		}
		_, err := o.Exec(ctx, "CREATE ANALYST carl PASSWORD 'x' OPTIONS(foo = 1)")
		if se, _ := sqlerr.As(err); se == nil || !strings.Contains(se.Hint, "epsilon") || !strings.Contains(se.Hint, "max_concurrent_queries") {
			t.Errorf("an unknown option's hint lists the known ones: %v", err)
		}
		if got := show(); strings.Contains(got, "carl") {
			t.Errorf("a refused CREATE created carl:\n%s", got)
		}
		// A password given as a parameter is never in the text at all.
		mustExec(t, o, "CREATE ANALYST carl PASSWORD $1", "from-a-parameter")
		checkPassword("carl", "from-a-parameter")

		// DROP; IF EXISTS skips with a notice.
		res = mustExec(t, o, "DROP ANALYST carl; DROP ANALYST IF EXISTS carl")
		if res[0].Tag != "DROP ANALYST" || len(res[1].Notices) != 1 || res[1].Notices[0] != "analyst carl does not exist, skipping" {
			t.Errorf("DROP results %+v %+v", res[0], res[1])
		}

		// Analysts run none of them.
		a := s.open("ann")
		for _, c := range []struct{ sql, what string }{
			{"CREATE ANALYST eve PASSWORD 'x'", "CREATE ANALYST"},
			{"ALTER ANALYST ann SET OPTIONS(epsilon = 100)", "ALTER ANALYST"},
			{"ALTER ANALYST ann PASSWORD 'x'", "ALTER ANALYST"},
			{"DROP ANALYST bob", "DROP ANALYST"},
			{"SHOW ANALYSTS", "SHOW ANALYSTS"},
		} {
			wantErr(t, a, c.sql, sqlerr.InsufficientPrivilege, "only the data owner can run "+c.what, "1:1")
		}
		if got := show(); got != "ann|false|2|NULL|0|0|2|NULL|1m|2\nbob|false|0.5|NULL|0|0|0.5|NULL|NULL|NULL\nboss|true|NULL|NULL|0|0|NULL|NULL|NULL|NULL\n" {
			t.Errorf("the analyst's statements changed the accounts:\n%s", got)
		}
	})
}

const anon = "SELECT WITH ANONYMIZATION OPTIONS(epsilon=%g, delta=1e-5, kappa=1) city, ANON_COUNT(*) AS n FROM people GROUP BY city"

func TestAnalystAllowance(t *testing.T) {
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		ctx := context.Background()
		s := newShared(t, d, accountsSetup+`;
			CREATE ANALYST ann PASSWORD 'a' OPTIONS(epsilon = 1, delta = 1e-4);
			CREATE ANALYST bob PASSWORD 'b'`)
		ann, bob := s.open("ann"), s.open("bob")
		res := mustExec(t, ann, fmt.Sprintf(anon, 0.5))
		if n := res[0].Notices; len(n) == 0 || n[0] != "charged epsilon=0.5, delta=1e-05; you have epsilon=0.5, delta=9e-05 left (analyst ann)" {
			t.Errorf("ann's charge notice %q", n)
		}
		budget := func(e *engine.Engine) string {
			t.Helper()
			r := mustExec(t, e, "SHOW BUDGET")[0]
			if len(r.Columns) != 3 || r.Columns[0].Name != "setting" || r.Columns[1].Name != "epsilon" || r.Columns[2].Name != "delta" {
				t.Errorf("SHOW BUDGET columns %v", r.Columns)
			}
			return rowsText(r)
		}
		if got, want := budget(ann), "total|1|0.0001\nspent|0.5|1e-05\nremaining|0.5|9e-05\ndatabase remaining|9.5|0.00099\n"; got != want {
			t.Errorf("ann's SHOW BUDGET:\n%s\nwant:\n%s", got, want)
		}
		// bob has no allowance: his total is the database's.
		if got, want := budget(bob), "total|10|0.001\nspent|0|0\nremaining|9.5|0.00099\ndatabase remaining|9.5|0.00099\n"; got != want {
			t.Errorf("bob's SHOW BUDGET:\n%s\nwant:\n%s", got, want)
		}
		// The owner's session (no account) sees the database's budget, as before.
		if got, want := budget(s.owner), "total|10|0.001\nspent|0.5|1e-05\nremaining|9.5|0.00099\n"; got != want {
			t.Errorf("owner's SHOW BUDGET:\n%s\nwant:\n%s", got, want)
		}
		wantErr(t, ann, fmt.Sprintf(anon, 0.75), sqlerr.BudgetExhausted,
			"your privacy allowance is exhausted: this query costs epsilon=0.75, delta=1e-05; your allowance (analyst ann) has epsilon=0.5, delta=9e-05 left", "1:8")
		mustExec(t, bob, fmt.Sprintf(anon, 9.0))
		wantErr(t, bob, fmt.Sprintf(anon, 0.75), sqlerr.BudgetExhausted,
			"the database's privacy budget is exhausted: this query costs epsilon=0.75, delta=1e-05; the database has epsilon=0.5, delta=0.00098 left for all analysts", "1:8")
		// ann's remainder is now the database's, the smaller.
		mustExec(t, s.owner, "ALTER ANALYST ann SET OPTIONS(epsilon = 5)")
		if got, want := budget(ann), "total|5|0.0001\nspent|0.5|1e-05\nremaining|0.5|9e-05\ndatabase remaining|0.5|0.00098\n"; got != want {
			t.Errorf("ann's SHOW BUDGET after the database ran low:\n%s\nwant:\n%s", got, want)
		}
		charges, err := store.NewLedgerStore(s.ob).Charges(ctx)
		if err != nil || len(charges) != 2 || charges[0].Analyst != "ann" || charges[1].Analyst != "bob" {
			t.Errorf("charges %+v %v", charges, err)
		}

		// Dropped while its session is open: refused before anything runs.
		mustExec(t, s.owner, "DROP ANALYST ann")
		wantErr(t, ann, fmt.Sprintf(anon, 0.1), sqlerr.InsufficientPrivilege, "analyst account ann no longer exists", "1:8")
		if c, _ := store.NewLedgerStore(s.ob).Charges(ctx); len(c) != 2 {
			t.Errorf("%d charges after the dropped account's query, want 2", len(c))
		}
	})
}

// An owner that makes a public relation private binds every open session at its next
// statement: an analyst's session opened before the change cannot read its rows any more.
func TestPolicyChangeBindsOpenSessions(t *testing.T) {
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		s := newShared(t, d, accountsSetup)
		a := s.open("")
		if res := mustExec(t, a, "SELECT city, name FROM cities"); len(res[0].Rows) != 1 {
			t.Fatalf("public read: %v", res[0].Rows)
		}
		mustExec(t, s.owner, "ALTER TABLE cities SET OPTIONS(anonymization_userid_column = 'city')")
		_, err := a.Exec(context.Background(), "SELECT city, name FROM cities")
		if se, ok := sqlerr.As(err); !ok || se.Code != sqlerr.PrivacyViolation {
			t.Errorf("raw read of a relation made private after the session opened: %v", err)
		}
		// And back: public again, readable again.
		mustExec(t, s.owner, "ALTER TABLE cities SET OPTIONS(public = TRUE)")
		mustExec(t, a, "SELECT city, name FROM cities")
		// The owner's raw DDL: a new column of a declared relation is seen at once.
		mustExec(t, s.owner, "ALTER TABLE cities ADD COLUMN pop BIGINT")
		mustExec(t, a, "SELECT pop FROM cities")
	})
}

// $1, $2, ... take Exec's plain arguments; @name takes sql.Named ones; the two do not mix.
func TestPositionalParameters(t *testing.T) {
	s := newShared(t, backend.DuckDB, accountsSetup)
	a := s.open("")
	res := mustExec(t, a, "SELECT name FROM cities WHERE city = $1 AND $2 > 0", "a", 3)
	if got := rowsText(res[0]); got != "A\n" {
		t.Errorf("positional parameters: %q", got)
	}
	res = mustExec(t, a, "SELECT name FROM cities WHERE city = @c", sql.Named("c", "a"))
	if got := rowsText(res[0]); got != "A\n" {
		t.Errorf("named parameters: %q", got)
	}
	wantErr(t, a, "SELECT name FROM cities WHERE city = $1 OR city = $3", sqlerr.UndefinedParameter, "query parameter $3 has no value", "1:51", "a", "b")
	wantErr(t, a, "SELECT name FROM cities WHERE city = $1", sqlerr.UndefinedParameter, "a value is given for query parameter $2", "", "a", "b")
	wantErr(t, a, "SELECT name FROM cities WHERE city = $1", sqlerr.InvalidParameterValue, "mixes named and positional values", "", "a", sql.Named("b", 1))
	wantErr(t, a, "SELECT name FROM cities WHERE city = $1", sqlerr.InvalidParameterValue, "query parameter $1: ", "", struct{}{})
	// Anonymized queries take them too, in their options.
	mustExec(t, a, "SELECT WITH ANONYMIZATION OPTIONS(epsilon=$1, delta=1e-5, kappa=1) city, ANON_COUNT(*) AS n FROM people GROUP BY city", 0.5)
}

// A total or an allowance below what was already spent stops all spending: it is refused
// with the spent amount, unless allow_below_spent = TRUE says it is meant, and then it is set
// with a notice, on both backends.
func TestBudgetBelowSpent(t *testing.T) {
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		s := newShared(t, d, accountsSetup+`;
			CREATE ANALYST ann PASSWORD 'a' OPTIONS(epsilon = 3, delta = 1e-4)`)
		ann := s.open("ann")
		mustExec(t, ann, fmt.Sprintf(anon, 2.0))
		// The database's total.
		wantErr(t, s.owner, "SET BUDGET OPTIONS(epsilon=1, delta=1e-3)", sqlerr.InvalidParameterValue,
			"the new total (epsilon=1, delta=0.001) is below what was already spent (epsilon=2, delta=1e-05)", "1:1")
		wantErr(t, s.owner, "SET BUDGET OPTIONS(epsilon=5, delta=0)", sqlerr.InvalidParameterValue, "below what was already spent", "1:1")
		wantErr(t, s.owner, "SET BUDGET OPTIONS(epsilon=1, delta=1e-3, allow_below_spent=1)", sqlerr.InvalidParameterValue,
			"allow_below_spent must be TRUE or FALSE", "1:61")
		wantErr(t, s.owner, "SET BUDGET OPTIONS(epsilon=1, delta=1e-3, allow_below_spent=FALSE)", sqlerr.InvalidParameterValue,
			"below what was already spent", "1:1")
		if got := rowsText(mustExec(t, s.owner, "SHOW BUDGET")[0]); !strings.HasPrefix(got, "total|10|0.001\n") {
			t.Errorf("a refused total was set:\n%s", got)
		}
		// Exactly the spent amount needs no word.
		if r := mustExec(t, s.owner, "SET BUDGET OPTIONS(epsilon=2, delta=1e-5)")[0]; len(r.Notices) != 0 {
			t.Errorf("total equal to the spent amount: notices %q", r.Notices)
		}
		r := mustExec(t, s.owner, "SET BUDGET OPTIONS(epsilon=1, delta=1e-3, ALLOW_BELOW_SPENT=TRUE)")[0]
		if len(r.Notices) != 1 || r.Notices[0] != "the total (epsilon=1, delta=0.001) is below what was already spent (epsilon=2, delta=1e-05): "+
			"nothing more can be spent until the total is raised above it" {
			t.Errorf("notices %q", r.Notices)
		}
		wantErr(t, ann, fmt.Sprintf(anon, 0.1), sqlerr.BudgetExhausted, "the database's privacy budget is exhausted", "1:8")
		mustExec(t, s.owner, "SET BUDGET OPTIONS(epsilon=10, delta=1e-3)")

		// An analyst's allowance.
		wantErr(t, s.owner, "ALTER ANALYST ann SET OPTIONS(epsilon = 1)", sqlerr.InvalidParameterValue,
			"the new allowance of analyst ann is below what it already spent (epsilon=2, delta=1e-05)", "1:31")
		wantErr(t, s.owner, "ALTER ANALYST ann SET OPTIONS(delta = 1e-6)", sqlerr.InvalidParameterValue, "below what it already spent", "1:31")
		mustExec(t, s.owner, "ALTER ANALYST ann SET OPTIONS(epsilon = NULL)") // no limit: never below
		r = mustExec(t, s.owner, "ALTER ANALYST ann SET OPTIONS(epsilon = 1, allow_below_spent = TRUE)")[0]
		if len(r.Notices) != 1 || r.Notices[0] != "analyst ann's allowance is below what it already spent (epsilon=2, delta=1e-05): "+
			"it can spend nothing more until the allowance is raised" {
			t.Errorf("notices %q", r.Notices)
		}
		wantErr(t, ann, fmt.Sprintf(anon, 0.1), sqlerr.BudgetExhausted, "your privacy allowance is exhausted", "1:8")
		mustExec(t, s.owner, "ALTER ANALYST ann SET OPTIONS(epsilon = 3)")
		mustExec(t, ann, fmt.Sprintf(anon, 0.1))
	})
}
