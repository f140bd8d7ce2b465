package dpsql_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/pgtest"
	"github.com/dpsql/dpsql/sqlerr"
)

var pg pgtest.Shared

func TestMain(m *testing.M) {
	if os.Getenv("DPSQL_SPENDER_URL") != "" {
		os.Exit(spender(os.Getenv("DPSQL_SPENDER_URL")))
	}
	pgtest.Main(m, &pg)
}

const spendQuery = `SELECT WITH ANONYMIZATION OPTIONS(epsilon=0.1, delta=1e-7, kappa=1)
	k, ANON_COUNT(DISTINCT uid) AS n FROM events GROUP BY k`

// spender is the body of a child process: it opens the database as an analyst and runs the
// query until the budget refuses it, printing one line per success.
func spender(url string) int {
	ctx := context.Background()
	db, err := dpsql.Open(ctx, dpsql.Config{Database: url})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer db.Close()
	for i := 0; i < 100; i++ {
		if _, err := db.Exec(ctx, spendQuery); err != nil {
			if se, ok := sqlerr.As(err); ok && se.Code == sqlerr.BudgetExhausted {
				return 0
			}
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		fmt.Println("spent")
	}
	return 0
}

// TestLedgerTwoProcesses runs two dpsql processes against one PostgreSQL database with a
// budget for exactly 10 queries: together they must run 10, never 11.
func TestLedgerTwoProcesses(t *testing.T) {
	url := pg.Cluster(t).NewDatabase(t)
	ctx := context.Background()
	owner, err := dpsql.Open(ctx, dpsql.Config{Database: url, Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = owner.Exec(ctx, `CREATE TABLE events OPTIONS(anonymization_userid_column='uid') AS
		SELECT g AS uid, g % 3 AS k FROM generate_series(1, 300) AS g;
		SET BUDGET OPTIONS(epsilon=1.0, delta=1e-5)`)
	owner.Close()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	outs := make([]string, 2)
	for i := range outs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "DPSQL_SPENDER_URL="+url)
			out, err := cmd.Output()
			if err != nil {
				var stderr []byte
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = ee.Stderr
				}
				t.Errorf("process %d: %v\n%s", i, err, stderr)
			}
			outs[i] = string(out)
		}(i)
	}
	wg.Wait()
	total := strings.Count(outs[0], "spent") + strings.Count(outs[1], "spent")
	t.Logf("process 1 ran %d queries, process 2 %d", strings.Count(outs[0], "spent"), strings.Count(outs[1], "spent"))
	if total != 10 {
		t.Errorf("the two processes ran %d queries of epsilon 0.1 on a budget of 1 (%d + %d)",
			total, strings.Count(outs[0], "spent"), strings.Count(outs[1], "spent"))
	}
	check, err := dpsql.Open(ctx, dpsql.Config{Database: url})
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()
	res, err := check.Exec(ctx, "SHOW BUDGET")
	if err != nil {
		t.Fatal(err)
	}
	spent := res[0].Rows[1][1].(float64)
	if spent > 1.0+1e-12 {
		t.Errorf("spent epsilon %g, more than the total 1", spent)
	}
}
