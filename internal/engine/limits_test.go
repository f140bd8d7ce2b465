package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/internal/testmode"
	"github.com/dpsql/dpsql/ledger"
	"github.com/dpsql/dpsql/sqlerr"
)

// showLimits returns SHOW LIMITS as limit → [owner, session], NULL as "-".
func showLimits(t *testing.T, e *engine.Engine) map[string][2]string {
	t.Helper()
	res, err := e.Exec(context.Background(), "SHOW LIMITS")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]string{}
	for _, r := range res[0].Rows {
		var v [2]string
		for i, x := range r[1:] {
			v[i] = "-"
			if s, ok := x.(string); ok {
				v[i] = s
			}
		}
		out[r[0].(string)] = v
	}
	return out
}

// The owner's statement_timeout binds every analyst session: a looser setting of the process
// (a longer timeout, or none) does not loosen it, a stricter one tightens it; a slow query is
// cut at the owner's timeout and charged, with the uniform error. On PostgreSQL the server's
// statement_timeout is the stricter one too. The owner's own session has no limit.
func TestOwnerStatementTimeout(t *testing.T) {
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		ctx := context.Background()
		env := newBudgetEnv(t, d, "SET LIMITS OPTIONS(statement_timeout = '1s')")
		analyst := func(flag time.Duration) *engine.Engine {
			t.Helper()
			e, err := engine.New(ctx, engine.Options{Backend: env.b, Mechanisms: testmode.Noiseless{}, StatementTimeout: flag})
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
		for _, c := range []struct {
			flag time.Duration
			want string
		}{
			{time.Hour, "1s"}, {-1, "1s"}, {0, "1s"}, {300 * time.Millisecond, "300ms"},
		} {
			if got := showLimits(t, analyst(c.flag))["statement_timeout"]; got != [2]string{"1s", c.want} {
				t.Errorf("process timeout %v: SHOW LIMITS statement_timeout = %v, want owner 1s, session %s", c.flag, got, c.want)
			}
		}

		loose := analyst(time.Hour)
		if d == backend.Postgres {
			rows, err := env.b.Query(ctx, "SELECT current_setting('statement_timeout')")
			if err != nil || rows.Values[0][0] != "300ms" {
				t.Errorf("server-side statement_timeout of the analysts' backend: %v, %v; want the strictest, 300ms", rows, err)
			}
		}
		start := time.Now()
		_, err := loose.Exec(ctx, opts+slow)
		elapsed := time.Since(start)
		if se, ok := sqlerr.As(err); !ok || se.Code != sqlerr.FailedAfterData {
			t.Fatalf("slow query with the owner's 1s timeout and the process's 1h: %v, want SQLSTATE %s", err, sqlerr.FailedAfterData)
		}
		if elapsed > 20*time.Second {
			t.Errorf("the slow query ran %v: the owner's 1s timeout did not cut it", elapsed)
		}
		if got := env.spent(t); !sameBudget(got, ledger.Budget{Epsilon: 0.5, Delta: 1e-5}) {
			t.Errorf("spent %v after the timed-out query, want it charged epsilon=0.5, delta=1e-5", got)
		}
	})
}

// SET LIMITS is the owner's; its values are checked with errors that name the option and say
// how to fix it; SHOW LIMITS shows the owner's limits to analysts too.
func TestSetLimits(t *testing.T) {
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		ctx := context.Background()
		b := ownerBackend(t, d)
		owner, err := engine.New(ctx, engine.Options{Backend: b, Mechanisms: testmode.Noiseless{}, Owner: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ sql, code, msg, hint string }{
			{"SET LIMITS OPTIONS(statement_timeout = '0s')", sqlerr.InvalidParameterValue, "statement_timeout", "'60s'"},
			{"SET LIMITS OPTIONS(statement_timeout = '-5s')", sqlerr.InvalidParameterValue, "statement_timeout", "'60s'"},
			{"SET LIMITS OPTIONS(statement_timeout = '48h')", sqlerr.InvalidParameterValue, "outside", "24h"},
			{"SET LIMITS OPTIONS(statement_timeout = 'soon')", sqlerr.InvalidParameterValue, "not a duration", "'5m'"},
			{"SET LIMITS OPTIONS(statement_timeout = 60)", sqlerr.InvalidParameterValue, "in quotes", "'60s'"},
			{"SET LIMITS OPTIONS(memory_limit = '2')", sqlerr.InvalidParameterValue, "unit", "'2GB'"},
			{"SET LIMITS OPTIONS(memory_limit = '1KB')", sqlerr.InvalidParameterValue, "outside", "16MiB"},
			{"SET LIMITS OPTIONS(memory_limit = 2e9)", sqlerr.InvalidParameterValue, "in quotes", "'2GB'"},
			{"SET LIMITS OPTIONS(work_mem = '64MB')", sqlerr.InvalidParameterValue, "unknown limit work_mem", "statement_timeout and memory_limit"},
			{"SET LIMITS OPTIONS(statement_timeout = '1s', statement_timeout = '2s')", sqlerr.InvalidParameterValue, "twice", "SET LIMITS"},
			{"SET LIMITS OPTIONS()", sqlerr.InvalidParameterValue, "needs an option", "SET LIMITS"},
		} {
			if d == backend.Postgres && strings.Contains(c.sql, "memory_limit") {
				continue // refused as DuckDB's only, below
			}
			_, err := owner.Exec(ctx, c.sql)
			if se, ok := sqlerr.As(err); !ok || se.Code != c.code || !strings.Contains(se.Msg, c.msg) || !strings.Contains(se.Hint, c.hint) || !se.Pos.IsValid() {
				t.Errorf("%s: %v, want %s saying %q with a hint saying %q", c.sql, err, c.code, c.msg, c.hint)
			}
		}
		set := "SET LIMITS OPTIONS(statement_timeout = '90s', memory_limit = '2GB')"
		wantMem := [2]string{"2GB", ""}
		if d == backend.Postgres {
			_, err := owner.Exec(ctx, set)
			if se, ok := sqlerr.As(err); !ok || se.Code != sqlerr.FeatureNotSupported || !strings.Contains(se.Hint, "work_mem") {
				t.Errorf("memory_limit on PostgreSQL: %v, want it refused, pointing at work_mem", err)
			}
			set, wantMem = "SET LIMITS OPTIONS(statement_timeout = '90s', memory_limit = NULL)", [2]string{"-", "-"}
		}
		if res, err := owner.Exec(ctx, set); err != nil || len(res[0].Notices) == 0 {
			t.Fatalf("%s: %v", set, err)
		}
		got := showLimits(t, owner)
		if got["statement_timeout"] != [2]string{"1m30s", "-"} {
			t.Errorf("owner's SHOW LIMITS statement_timeout = %v, want the owner's 1m30s and none for the owner's session", got["statement_timeout"])
		}
		if got["memory_limit"][0] != wantMem[0] {
			t.Errorf("owner's SHOW LIMITS memory_limit = %v, want %s", got["memory_limit"], wantMem[0])
		}
		// Options not named keep their value; NULL removes one.
		if _, err := owner.Exec(ctx, "SET LIMITS OPTIONS(statement_timeout = '2m')"); err != nil {
			t.Fatal(err)
		}
		if got := showLimits(t, owner); got["statement_timeout"][0] != "2m" || got["memory_limit"][0] != wantMem[0] {
			t.Errorf("after setting statement_timeout alone: %v", got)
		}
		if err := owner.BecomeAnalyst(ctx); err != nil {
			t.Fatal(err)
		}
		if got := showLimits(t, owner)["statement_timeout"]; got != [2]string{"2m", "2m"} {
			t.Errorf("the analyst's SHOW LIMITS statement_timeout = %v, want the owner's 2m in force", got)
		}
		_, err = owner.Exec(ctx, "SET LIMITS OPTIONS(statement_timeout = NULL)")
		if se, ok := sqlerr.As(err); !ok || se.Code != sqlerr.InsufficientPrivilege {
			t.Errorf("an analyst's SET LIMITS: %v, want %s", err, sqlerr.InsufficientPrivilege)
		}
	})
}
