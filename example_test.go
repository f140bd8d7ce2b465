package dpsql_test

import (
	"context"
	"fmt"

	"github.com/dpsql/dpsql"
)

// A query's charge and the budget left after it are fields of its result (Charge and
// Remaining, in epsilon and delta), not only the text of a notice: a program can keep its own
// account of what it spent, or stop before the budget runs out.
func ExampleResult_charge() {
	ctx := context.Background()
	db, err := dpsql.Open(ctx, dpsql.Config{Database: ":memory:", Owner: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	if _, err := db.Exec(ctx, `CREATE TABLE visits OPTIONS(anonymization_userid_column='uid') AS
			SELECT i AS uid, i % 3 AS day FROM range(1000) t(i);
		SET BUDGET OPTIONS(epsilon=3, delta=1e-5)`); err != nil {
		fmt.Println(err)
		return
	}
	if err := db.BecomeAnalyst(ctx); err != nil {
		fmt.Println(err)
		return
	}
	res, err := db.Exec(ctx, `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-6, kappa=1)
		day, ANON_COUNT(*) AS visits FROM visits GROUP BY day`)
	if err != nil {
		fmt.Println(err)
		return
	}
	r := res[0]
	fmt.Printf("charged epsilon %g, delta %g\n", r.Charge.Epsilon, r.Charge.Delta)
	fmt.Printf("left: epsilon %g, delta %g\n", r.Remaining.Epsilon, r.Remaining.Delta)

	// Statements that spend nothing have no charge.
	res, err = db.Exec(ctx, `SHOW BUDGET`)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("SHOW BUDGET charged:", res[0].Charge)
	// Output:
	// charged epsilon 1, delta 1e-06
	// left: epsilon 2, delta 9e-06
	// SHOW BUDGET charged: <nil>
}
