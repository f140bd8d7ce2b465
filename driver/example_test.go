package driver_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/driver"
)

// The owner sets a database file up through a Connector; analysts query it with sql.Open, and
// OnCharge reports what each query charged to the privacy budget.
func Example() {
	dir, err := os.MkdirTemp("", "dpsql-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "shop.duckdb")

	// The data owner: a private table whose privacy unit is customer_id, and a budget. (The
	// owner's pool is closed before analysts connect: in one process, a DuckDB file has owner
	// or analyst connections, not both.)
	owner := sql.OpenDB(driver.NewConnector(dpsql.Config{Database: path, Owner: true}))
	_, err = owner.Exec(`CREATE TABLE purchases OPTIONS(anonymization_userid_column='customer_id') AS
		SELECT i AS customer_id, 'item' || CAST(i % 3 AS VARCHAR) AS item FROM range(3000) AS t(i);
		SET BUDGET UNLIMITED -- for this example only: test data, no limit`)
	if err != nil {
		log.Fatal(err)
	}
	owner.Close()

	// An analyst.
	c := driver.NewConnector(dpsql.Config{Database: path})
	c.OnCharge = func(ctx context.Context, ch driver.Charge) {
		if ch.Remaining == nil {
			fmt.Printf("charged %s (no budget limit)\n", ch.Cost)
		} else {
			fmt.Printf("charged %s, remaining %s\n", ch.Cost, ch.Remaining)
		}
	}
	db := sql.OpenDB(c)
	defer db.Close()
	rows, err := db.Query(`SELECT WITH ANONYMIZATION OPTIONS(epsilon=0.5, delta=1e-6, kappa=1)
		item, ANON_COUNT(*) AS buyers FROM purchases WHERE customer_id >= @from GROUP BY item ORDER BY item`,
		sql.Named("from", 0))
	if err != nil {
		log.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var item string
		var buyers int64 // noisy: about 1000
		if err := rows.Scan(&item, &buyers); err != nil {
			log.Fatal(err)
		}
		fmt.Println(item)
	}
	if err := rows.Err(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// charged epsilon=0.5, delta=1e-06 (no budget limit)
	// item0
	// item1
	// item2
}
