package dpsql_test

import (
	"context"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/sqlerr"
)

// TestUnderflowingEpsilonRefused: an epsilon whose share for an aggregate underflows to 0 is
// refused as an unusable privacy parameter (22023), before anything is charged, not reported
// as a database refusal (outside review).
func TestUnderflowingEpsilonRefused(t *testing.T) {
	ctx := context.Background()
	owner, err := dpsql.Open(ctx, dpsql.Config{Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	if _, err := owner.Exec(ctx, `CREATE TABLE t OPTIONS(anonymization_userid_column='uid') AS SELECT i AS uid FROM range(10) r(i);
		SET BUDGET OPTIONS(epsilon=1, delta=1e-5)`); err != nil {
		t.Fatal(err)
	}
	_, err = owner.Exec(ctx, `SELECT WITH ANONYMIZATION OPTIONS(epsilon=4.9e-324, delta=1e-6, kappa=1) ANON_COUNT(* CLAMPED BETWEEN 0 AND 1) FROM t`)
	if e, ok := sqlerr.As(err); !ok || e.Code != sqlerr.InvalidParameterValue {
		t.Errorf("epsilon 4.9e-324: %v, want SQLSTATE %s", err, sqlerr.InvalidParameterValue)
	}
}
