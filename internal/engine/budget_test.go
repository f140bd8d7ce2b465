package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/backend/postgres"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/internal/exec"
	"github.com/dpsql/dpsql/internal/pgtest"
	"github.com/dpsql/dpsql/internal/plan"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/internal/testmode"
	"github.com/dpsql/dpsql/ledger"
	"github.com/dpsql/dpsql/sqlerr"
)

var pg pgtest.Shared

func TestMain(m *testing.M) { pgtest.Main(m, &pg) }

// recorder wraps an analyst's backend: it records every statement sent to it outside the
// ledger's transactions (Tx is the embedded backend's), and runs hook, if set, before each.
type recorder struct {
	backend.Backend
	mu   sync.Mutex
	sqls []string
	hook func(ctx context.Context, sql string) error
}

// record keeps sql and runs the hook, if set.
func (r *recorder) record(ctx context.Context, sql string) error {
	r.mu.Lock()
	r.sqls = append(r.sqls, sql)
	hook := r.hook
	r.mu.Unlock()
	if hook != nil {
		return hook(ctx, sql)
	}
	return nil
}

func (r *recorder) Query(ctx context.Context, sql string, args ...any) (*backend.Rows, error) {
	if err := r.record(ctx, sql); err != nil {
		return nil, err
	}
	return r.Backend.Query(ctx, sql, args...)
}

func (r *recorder) QueryConversions(ctx context.Context, sql string) (*backend.Rows, []backend.Conversion, error) {
	if err := r.record(ctx, sql); err != nil {
		return nil, nil, err
	}
	return r.Backend.(backend.ConversionReporter).QueryConversions(ctx, sql)
}

// take returns the statements recorded since the last call and sets the hook for the next.
func (r *recorder) take(hook func(ctx context.Context, sql string) error) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.sqls
	r.sqls, r.hook = nil, hook
	return out
}

// readsNoRow reports whether a statement is one of the checks that run before the charge:
// wrapped in LIMIT 0, so the database reads no row; DuckDB's plans of queries, which bind
// them without running them (exec's check that the unit and keys compare by their bytes, the
// check of private views' Parquet files); or the read of the policy generation that starts
// each statement (dpsql's own state, no data).
func readsNoRow(sql string) bool {
	return strings.HasSuffix(strings.TrimSpace(sql), "LIMIT 0") || strings.HasPrefix(sql, "SELECT generation FROM dpsql.policy ") ||
		strings.HasPrefix(sql, "SELECT json_serialize_plan(CAST($1 AS VARCHAR))")
}

// failing releases exactly, except that releasing a group of more than 50 units fails (or
// panics): a Go error after selection whose occurrence depends on the data.
type failing struct {
	testmode.Noiseless
	panic bool
}

type failingRelease struct {
	exec.Release
	panic bool
}

func (m failing) Prepare(p *plan.Plan) (exec.Release, error) {
	r, err := m.Noiseless.Prepare(p)
	if err != nil {
		return nil, err
	}
	return failingRelease{r, m.panic}, nil
}

func (r failingRelease) Value(j int, s exec.Summary) (exec.Value, error) {
	if s.Units > 50 {
		if r.panic {
			panic(fmt.Sprintf("release of a group of %d units", s.Units))
		}
		return exec.Value{}, fmt.Errorf("release of a group of %d units failed", s.Units)
	}
	return r.Release.Value(j, s)
}

// budgetEnv is a database with a private view people over raw(uid, city, salary): unit 1 has
// 3000 rows (so a self-join of people on uid takes minutes), units 3000..3199 one row each,
// in cities c0, c1, c2; a budget of epsilon 10. The backend is locked down for analysts.
type budgetEnv struct {
	b   backend.Backend
	rec *recorder
}

func setupSQL(d backend.Dialect) string {
	rows := "range(3200) AS t(i)"
	double := "DOUBLE"
	if d == backend.Postgres {
		rows, double = "generate_series(0, 3199) AS t(i)", "DOUBLE PRECISION"
	}
	return fmt.Sprintf(`CREATE TABLE raw AS SELECT CASE WHEN i < 3000 THEN 1 ELSE i END AS uid,
		'c' || CAST(i %% 3 AS VARCHAR) AS city, CAST(i AS %s) AS salary FROM %s;
	CREATE VIEW people OPTIONS(anonymization_userid_column='uid') AS SELECT * FROM raw;
	SET BUDGET OPTIONS(epsilon=10, delta=1e-3);`, double, rows)
}

// ownerBackend opens a new database of dialect d in owner mode (in memory for DuckDB).
func ownerBackend(t *testing.T, d backend.Dialect) backend.Backend {
	t.Helper()
	ctx := context.Background()
	var b backend.Backend
	var err error
	if d == backend.Postgres {
		b, err = postgres.Open(ctx, pg.Cluster(t).NewDatabase(t), postgres.Options{Mode: backend.Owner})
	} else {
		b, err = duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// newBudgetEnv sets the database up as the owner, running setupSQL and then the owner's
// statements in extra.
func newBudgetEnv(t *testing.T, d backend.Dialect, extra ...string) *budgetEnv {
	t.Helper()
	ctx := context.Background()
	b := ownerBackend(t, d)
	owner, err := engine.New(ctx, engine.Options{Backend: b, Mechanisms: testmode.Noiseless{}, Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Exec(ctx, setupSQL(d)+strings.Join(extra, ";\n")); err != nil {
		t.Fatal(err)
	}
	if err := owner.BecomeAnalyst(ctx); err != nil {
		t.Fatal(err)
	}
	return &budgetEnv{b: b, rec: &recorder{Backend: b}}
}

// analyst opens an analyst's engine over the recording backend.
func (env *budgetEnv) analyst(t *testing.T, m exec.Mechanisms, timeout time.Duration) *engine.Engine {
	t.Helper()
	e, err := engine.New(context.Background(), engine.Options{Backend: env.rec, Mechanisms: m, StatementTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (env *budgetEnv) spent(t *testing.T) ledger.Budget {
	t.Helper()
	st, err := store.NewLedgerStore(env.b).Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.Spent
}

func forBackends(t *testing.T, fn func(t *testing.T, d backend.Dialect)) {
	for _, d := range []backend.Dialect{backend.DuckDB, backend.Postgres} {
		t.Run(string(d), func(t *testing.T) { fn(t, d) })
	}
}

const (
	opts = "SELECT WITH ANONYMIZATION OPTIONS(epsilon=0.5, delta=1e-5, kappa=1) "
	// slow takes minutes: unit 1's 3000 rows joined three ways.
	slow = "a.city, ANON_SUM(a.salary + b.salary + c.salary CLAMPED BETWEEN 0 AND 10000) AS s FROM people a JOIN people b USING (uid) JOIN people c USING (uid) GROUP BY a.city"
	// plain releases the three cities (67 units each).
	plain = "city, ANON_SUM(salary CLAMPED BETWEEN 0 AND 10) AS s FROM people GROUP BY city"
)

// A query that cannot be paid never runs: the database only binds it (LIMIT 0), so its
// time and its error cannot depend on the data; a refused parameter or a mistake in the
// query costs nothing and reads nothing either.
func TestBudgetBeforeData(t *testing.T) {
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		env := newBudgetEnv(t, d)
		an := env.analyst(t, testmode.Noiseless{}, time.Minute)
		ctx := context.Background()
		env.rec.take(nil)
		for _, c := range []struct {
			name, sql, code string
		}{
			{"over budget", "SELECT WITH ANONYMIZATION OPTIONS(epsilon=20, delta=1e-5, kappa=1) " + slow, sqlerr.BudgetExhausted},
			{"kappa above the limit", "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1000000) " + slow, sqlerr.InvalidParameterValue},
			{"max_rows_contributed above the limit", "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-5, max_rows_contributed=1000000) city, COUNT(*) AS n FROM people GROUP BY city", sqlerr.InvalidParameterValue},
			{"type error in WHERE", opts + "city, ANON_COUNT(*, 1) AS n FROM people WHERE city + 1 > 0 GROUP BY city", ""},
			{"type error in HAVING", opts + "city, ANON_COUNT(*, 1) AS n FROM people GROUP BY city HAVING city > 1", ""},
		} {
			start := time.Now()
			_, err := an.Exec(ctx, c.sql)
			elapsed := time.Since(start)
			se, ok := sqlerr.As(err)
			switch {
			case !ok:
				t.Errorf("%s: %v, want an *sqlerr.Error", c.name, err)
			case c.code != "" && se.Code != c.code:
				t.Errorf("%s: %v (%s), want code %s", c.name, err, se.Code, c.code)
			case se.Code == sqlerr.FailedAfterData:
				t.Errorf("%s: failed after reading data: %v", c.name, err)
			case !se.Pos.IsValid():
				t.Errorf("%s: no position: %v", c.name, err)
			}
			if elapsed > 10*time.Second {
				t.Errorf("%s: took %v: the query ran", c.name, elapsed)
			}
			for _, sql := range env.rec.take(nil) {
				if !readsNoRow(sql) {
					t.Errorf("%s: read data before being paid for:\n%s", c.name, sql)
				}
			}
			if s := env.spent(t); s != (ledger.Budget{}) {
				t.Errorf("%s: charged %v", c.name, s)
			}
		}
	})
}

// Every failure once the query started reading private data was charged before it ran, and
// analysts see one error whatever the cause: the same code, message, hint and position, no
// cause attached.
func TestFailuresAfterDataChargedAndUniform(t *testing.T) {
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		env := newBudgetEnv(t, d)
		var errs []*sqlerr.Error
		var names []string
		want := ledger.Budget{}
		check := func(name string, e *engine.Engine, sql string, hook func(context.Context, string) error, cancel context.CancelFunc, ctx context.Context) {
			t.Helper()
			env.rec.take(hook)
			start := time.Now()
			_, err := e.Exec(ctx, sql)
			elapsed := time.Since(start)
			env.rec.take(nil)
			if cancel != nil {
				cancel()
			}
			se, ok := sqlerr.As(err)
			if !ok || se.Code != sqlerr.FailedAfterData {
				t.Errorf("%s: %v, want SQLSTATE %s", name, err, sqlerr.FailedAfterData)
				return
			}
			if elapsed > 30*time.Second || name == "timeout" && elapsed < time.Second {
				t.Errorf("%s: took %v", name, elapsed)
			}
			want.Epsilon += 0.5
			want.Delta += 1e-5
			if got := env.spent(t); !sameBudget(got, want) {
				t.Errorf("%s: spent %v, want %v: the failure was not charged", name, got, want)
			}
			errs, names = append(errs, se), append(names, name)
		}
		bg := context.Background()
		noiseless := env.analyst(t, testmode.Noiseless{}, time.Minute)

		// The statement timeout, on a query made slow on purpose.
		check("timeout", env.analyst(t, testmode.Noiseless{}, time.Second), opts+slow, nil, nil, bg)

		// A cancellation (an interrupt) as the first data query starts.
		ctx, cancel := context.WithCancel(bg)
		check("cancellation", noiseless, opts+plain, func(_ context.Context, sql string) error {
			if !readsNoRow(sql) {
				cancel()
			}
			return nil
		}, cancel, ctx)

		// A database error that quotes a private value.
		check("database error", noiseless, opts+plain, func(_ context.Context, sql string) error {
			if !readsNoRow(sql) {
				return errors.New("conversion failed for value 'secret-hiv-positive'")
			}
			return nil
		}, nil, bg)

		// Go errors and panics after selection.
		check("release error", env.analyst(t, failing{}, time.Minute), opts+plain, nil, nil, bg)
		check("release panic", env.analyst(t, failing{panic: true}, time.Minute), opts+plain, nil, nil, bg)

		// Too few data to estimate implicit bounds.
		check("implicit bounds without data", noiseless, opts+"ANON_SUM(salary) AS s FROM people WHERE uid = -5", nil, nil, bg)

		for i, se := range errs {
			if strings.Contains(se.Msg, "secret") || strings.Contains(se.Hint, "secret") {
				t.Errorf("%s: the error quotes the database: %v", names[i], se)
			}
			if se.Cause != nil {
				t.Errorf("%s: the analyst's error carries its cause: %v", names[i], se.Cause)
			}
			// A query with implicit bounds adds what they need to the hint: from its options,
			// the same whatever the cause (TestNeedsNoticesIgnoreData); the rest is the same.
			hint, needs, _ := strings.Cut(se.Hint, "; implicit bounds of ")
			if (needs != "") != (names[i] == "implicit bounds without data") {
				t.Errorf("%s: hint %q", names[i], se.Hint)
			}
			if i > 0 && (se.Msg != errs[0].Msg || hint != errs[0].Hint || se.Pos != errs[0].Pos || se.Rule != errs[0].Rule) {
				t.Errorf("%s and %s fail differently:\n%v\n%v", names[0], names[i], errs[0], se)
			}
		}
		if len(errs) > 0 && !strings.Contains(errs[0].Msg, "charged epsilon=0.5, delta=1e-05") {
			t.Errorf("the message does not say what was charged: %s", errs[0].Msg)
		}
		// The engine still works after all of this.
		if _, err := noiseless.Exec(bg, opts+plain); err != nil {
			t.Errorf("a query after the failures: %v", err)
		}
	})
}

func sameBudget(a, b ledger.Budget) bool {
	near := func(x, y float64) bool { return x-y < 1e-12 && y-x < 1e-12 }
	return near(a.Epsilon, b.Epsilon) && near(a.Delta, b.Delta)
}

// panicking panics while preparing a release, before any data is read.
type panicking struct{ testmode.Noiseless }

func (panicking) Prepare(*plan.Plan) (exec.Release, error) { panic("mechanism bug") }

// A panic before any data was read is a bug, not a reason to crash the caller: Exec returns
// an internal error (XX000) at the statement, with the panic as its cause, after the results
// of the statements before it; nothing is charged and the engine keeps working.
func TestPanicBecomesInternalError(t *testing.T) {
	env := newBudgetEnv(t, backend.DuckDB)
	e := env.analyst(t, panicking{}, time.Minute)
	script := "SHOW BUDGET; " + opts + plain
	res, err := e.Exec(context.Background(), script)
	se, ok := sqlerr.As(err)
	if !ok || se.Code != sqlerr.InternalError {
		t.Fatalf("%v, want SQLSTATE %s", err, sqlerr.InternalError)
	}
	var pe *engine.PanicError
	if !errors.As(err, &pe) || pe.Value != "mechanism bug" || len(pe.Stack) == 0 || !strings.Contains(se.Msg, "mechanism bug") {
		t.Errorf("cause %#v, message %q", se.Cause, se.Msg)
	}
	if se.Pos.Offset != strings.Index(script, "SELECT") {
		t.Errorf("position %+v, want the second statement's", se.Pos)
	}
	if len(res) != 1 {
		t.Errorf("%d results before the panic, want 1", len(res))
	}
	if s := env.spent(t); s != (ledger.Budget{}) {
		t.Errorf("charged %v", s)
	}
	if _, err := e.Exec(context.Background(), "SHOW BUDGET"); err != nil {
		t.Errorf("after the panic: %v", err)
	}
}

// An error of the post-processing query (the SQL over the released rows only) depends on
// released values only: the query was charged, and the cause is shown, not the uniform
// 2P003 (outside review). A timeout there stays uniform (TestFailuresAfterDataChargedAndUniform).
func TestPostProcessingErrorShown(t *testing.T) {
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		env := newBudgetEnv(t, d)
		e := env.analyst(t, testmode.Noiseless{}, time.Minute)
		for i, q := range []string{
			opts + "city, CAST(ANON_COUNT(*) * 1000 AS DECIMAL(4,0)) AS n FROM people GROUP BY city",
			// A nested part's own post-processing.
			"SELECT * FROM (" + opts + "city, CAST(ANON_COUNT(*) * 1000 AS DECIMAL(4,0)) AS n FROM people GROUP BY city) AS r",
		} {
			_, err := e.Exec(context.Background(), q)
			se, ok := sqlerr.As(err)
			if !ok || se.Code == sqlerr.FailedAfterData || !strings.Contains(se.Msg, "post-processing the released values failed; the query was charged epsilon=0.5") ||
				!strings.Contains(strings.ToLower(se.Msg), "decimal(4,0)") && !strings.Contains(se.Msg, "numeric field overflow") || se.Cause == nil {
				t.Errorf("%s: %v", q, err)
				continue
			}
			t.Logf("%s", se)
			if got, want := env.spent(t), (ledger.Budget{Epsilon: 0.5 * float64(i+1), Delta: 1e-5 * float64(i+1)}); !sameBudget(got, want) {
				t.Errorf("spent %v, want %v", got, want)
			}
		}
	})
}
