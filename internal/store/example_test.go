package store_test

import (
	"context"
	"fmt"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/ledger"
)

// The owner declares a private view and a budget; an analyst's query is charged once.
func Example() {
	ctx := context.Background()
	db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	for _, s := range []string{
		"CREATE TABLE visits (uid BIGINT, shop VARCHAR, amount DOUBLE)",
		"CREATE VIEW v AS SELECT uid, shop, amount FROM visits",
	} {
		if err := db.Exec(ctx, s); err != nil {
			fmt.Println(err)
			return
		}
	}
	if err := store.Init(ctx, db); err != nil {
		fmt.Println(err)
		return
	}
	if err := store.SetPrivate(ctx, db, "v", "uid"); err != nil {
		fmt.Println(err)
		return
	}
	cat, err := store.LoadCatalog(ctx, db)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range cat.Relations() {
		fmt.Println(r.Name, r.Kind, r.PrivacyUnit, len(r.Columns), "columns")
	}
	_, visible := cat.Lookup("visits")
	fmt.Println("base table visible:", visible)

	l := ledger.New(store.NewLedgerStore(db))
	if err := l.SetTotal(ctx, ledger.Budget{Epsilon: 1, Delta: 1e-5}, false); err != nil {
		fmt.Println(err)
		return
	}
	sp, err := l.Prepare(ledger.Budget{Epsilon: 0.75, Delta: 1e-6}, "SELECT WITH ANONYMIZATION ...")
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := sp.Commit(ctx)
	fmt.Println("remaining:", st.Remaining(), err)
	_, err = sp.Commit(ctx)
	fmt.Println(err)
	sp, _ = l.Prepare(ledger.Budget{Epsilon: 0.5, Delta: 1e-6}, "another query")
	_, err = sp.Commit(ctx)
	fmt.Println(err)
	// Output:
	// v private uid 3 columns
	// base table visible: false
	// remaining: epsilon=0.25, delta=9e-06 <nil>
	// ledger: this spend was already committed; prepare a new one
	// privacy budget exhausted: this query costs epsilon=0.5, delta=1e-06; the database has epsilon=0.25, delta=9e-06 left; hint: lower epsilon (or delta) in the query's OPTIONS, or ask the data owner to raise the budget
}
