package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/internal/testmode"
	"github.com/dpsql/dpsql/sqlerr"
)

// openWithBudget returns an analyst's engine over a table of three units, one of whom
// (uid 3) has rows in two groups, after the owner ran budget (a SET BUDGET statement).
func openWithBudget(t *testing.T, budget string) *engine.Engine {
	t.Helper()
	ctx := context.Background()
	b, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(ctx, engine.Options{Backend: b, Mechanisms: testmode.Noiseless{}, Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if _, err := e.Exec(ctx, `CREATE TABLE t OPTIONS(anonymization_userid_column='uid') AS
		SELECT * FROM (VALUES (1, 'a'), (2, 'a'), (3, 'a'), (3, 'b')) AS t(uid, k);
		`+budget); err != nil {
		t.Fatal(err)
	}
	if err := e.BecomeAnalyst(ctx); err != nil {
		t.Fatal(err)
	}
	return e
}

// A missing or NULL kappa (ZetaSQL: contributions across groups are not bounded) runs only
// where the owner lifted the budget; elsewhere it is refused before anything is charged, the
// same way whatever the data, unless the query has no GROUP BY (kappa = 1 is then exact).
func TestUnboundedKappaNeedsUnlimitedBudget(t *testing.T) {
	ctx := context.Background()
	grouped := []string{
		`SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=0.9) k, ANON_COUNT(*) FROM t GROUP BY k`,
		`SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=0.9, kappa=NULL) k, ANON_COUNT(*) FROM t GROUP BY k`,
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1e20, delta=0.9, max_groups_contributed=NULL) k, COUNT(*) FROM t GROUP BY k`,
	}
	limited := openWithBudget(t, "SET BUDGET OPTIONS(epsilon=1e30, delta=0.99)")
	for _, q := range grouped {
		_, err := limited.Exec(ctx, q)
		se, ok := sqlerr.As(err)
		if !ok || se.Rule != "contributions-bounded-across-groups" || !strings.Contains(se.Hint, "kappa=1") {
			t.Errorf("%s\nunder a budget: %v, want the contributions-bounded-across-groups refusal with its fix", q, err)
		}
	}
	st, err := limited.Exec(ctx, "SHOW BUDGET")
	if err != nil {
		t.Fatal(err)
	}
	if spent := st[0].Rows[1][1].(float64); spent != 0 {
		t.Errorf("refusals spent epsilon %v", spent)
	}
	// Without GROUP BY a unit reaches one group: allowed under any budget.
	res, err := limited.Exec(ctx, `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=0.5) ANON_COUNT(*) FROM t`)
	if err != nil {
		t.Fatalf("no GROUP BY, no kappa: %v", err)
	}
	if got := res[0].Rows[0][0]; got != int64(4) {
		t.Errorf("ANON_COUNT(*) = %v, want 4", got)
	}

	unlimited := openWithBudget(t, "SET BUDGET UNLIMITED")
	for _, q := range grouped {
		res, err := unlimited.Exec(ctx, q)
		if err != nil {
			t.Fatalf("%s\nunder SET BUDGET UNLIMITED: %v", q, err)
		}
		// Unit 3 contributes to both groups: nothing is sampled away.
		got := map[string]int64{}
		for _, r := range res[0].Rows {
			got[r[0].(string)] = r[1].(int64)
		}
		if got["a"] != 3 || got["b"] != 1 {
			t.Errorf("%s\n= %v, want a=3, b=1", q, got)
		}
	}
}

// delta = 1 is accepted (ZetaSQL's domain is [0, 1]) and releases every group, even the one
// row of a query without GROUP BY over no rows; a budget whose delta is below 1 refuses it.
func TestDeltaOne(t *testing.T) {
	ctx := context.Background()
	q := `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=1, kappa=1) ANON_COUNT(* CLAMPED BETWEEN 0 AND 1) FROM t WHERE uid > 1000`
	limited := openWithBudget(t, "SET BUDGET OPTIONS(epsilon=1e30, delta=0.99)")
	if _, err := limited.Exec(ctx, q); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Errorf("delta=1 under a budget of delta 0.9: %v, want a budget refusal", err)
	}
	unlimited := openWithBudget(t, "SET BUDGET UNLIMITED")
	res, err := unlimited.Exec(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(res[0].Rows) != 1 || res[0].Rows[0][0] != int64(0) {
		t.Errorf("empty input with delta=1: %v, want one row with 0", res[0].Rows)
	}
}

// Under SET BUDGET UNLIMITED, SHOW BUDGET shows no total and no remainder (NULL), not the
// stored 0 (outside review), and what was spent as recorded.
func TestShowBudgetUnlimited(t *testing.T) {
	ctx := context.Background()
	e := openWithBudget(t, "SET BUDGET UNLIMITED")
	if _, err := e.Exec(ctx, "SELECT WITH ANONYMIZATION OPTIONS(epsilon=0.5, delta=1e-5, kappa=1) k, ANON_COUNT(*) FROM t GROUP BY k"); err != nil {
		t.Fatal(err)
	}
	res, err := e.Exec(ctx, "SHOW BUDGET")
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(res[0].Rows)
	if want := "[[total <nil> <nil>] [spent 0.5 1e-05] [remaining <nil> <nil>]]"; got != want {
		t.Errorf("SHOW BUDGET: %s, want %s", got, want)
	}
}
