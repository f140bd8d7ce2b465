package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/ledger"
	"github.com/dpsql/dpsql/sqlerr"
)

func newLedger(t *testing.T, b backend.Backend) *ledger.Ledger {
	t.Helper()
	if err := store.Init(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	return ledger.New(store.NewLedgerStore(b))
}

func TestLedgerNoBudget(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, owner(t, ""))
	st, err := l.Status(ctx)
	if err != nil || st.Set {
		t.Fatalf("fresh status %+v, %v", st, err)
	}
	sp, _ := l.Prepare(ledger.Budget{Epsilon: 1}, "q")
	if _, err := sp.Commit(ctx); !isCode(err, sqlerr.ObjectNotInPrerequisite) {
		t.Fatalf("spend without budget: %v", err)
	}
}

func isCode(err error, code string) bool {
	e, ok := sqlerr.As(err)
	return ok && e.Code == code
}

// spendConcurrently commits n spends of cost from goroutines spread over the ledgers and
// returns how many succeeded; every failure must be a budget refusal.
func spendConcurrently(t *testing.T, ls []*ledger.Ledger, n int, cost ledger.Budget) int {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sp, err := ls[i%len(ls)].Prepare(cost, "SELECT WITH ANONYMIZATION ...")
			if err != nil {
				t.Error(err)
				return
			}
			_, err = sp.Commit(context.Background())
			switch {
			case err == nil:
				mu.Lock()
				ok++
				mu.Unlock()
			case !isCode(err, sqlerr.BudgetExhausted):
				t.Errorf("unexpected spend error: %v", err)
			}
		}()
	}
	wg.Wait()
	return ok
}

func TestLedgerConcurrentSpendsNeverOverspend(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "l.db")
	a := owner(t, path)
	b := owner(t, path) // a second handle on the same instance: real transaction conflicts
	la, lb := newLedger(t, a), ledger.New(store.NewLedgerStore(b))
	if err := la.SetTotal(ctx, ledger.Budget{Epsilon: 1, Delta: 1e-5}, false); err != nil {
		t.Fatal(err)
	}
	// 0.1 ten times is 0.9999999999999999 in float64: exactly ten fit.
	ok := spendConcurrently(t, []*ledger.Ledger{la, lb, la, lb}, 24, ledger.Budget{Epsilon: 0.1, Delta: 1e-7})
	if ok != 10 {
		t.Errorf("%d spends of 0.1 succeeded out of a budget of 1, want 10", ok)
	}
	st, err := la.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Spent.Epsilon > 1+1e-12 || st.Spent.Epsilon < 0.99 {
		t.Errorf("spent %v", st.Spent)
	}
	charges, err := store.NewLedgerStore(a).Charges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(charges) != ok {
		t.Errorf("%d charges recorded for %d spends", len(charges), ok)
	}
	sum := 0.0
	for _, c := range charges {
		sum += c.Cost.Epsilon
		if c.Query == "" || c.At.IsZero() {
			t.Errorf("charge lacks audit data: %+v", c)
		}
	}
	if sum != st.Spent.Epsilon {
		t.Errorf("charges sum to %v, budget row says %v", sum, st.Spent.Epsilon)
	}
}

func TestLedgerDeltaLimits(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, owner(t, ""))
	if err := l.SetTotal(ctx, ledger.Budget{Epsilon: 100, Delta: 1e-6}, false); err != nil {
		t.Fatal(err)
	}
	ok := spendConcurrently(t, []*ledger.Ledger{l}, 6, ledger.Budget{Epsilon: 1, Delta: 4e-7})
	if ok != 2 {
		t.Errorf("%d spends of delta 4e-7 out of 1e-6, want 2", ok)
	}
}

func TestLedgerDurableAndFailedQueriesFree(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "dur.db")
	d := owner(t, path)
	l := newLedger(t, d)
	if err := l.SetTotal(ctx, ledger.Budget{Epsilon: 2, Delta: 1e-5}, false); err != nil {
		t.Fatal(err)
	}
	sp, _ := l.Prepare(ledger.Budget{Epsilon: 0.5, Delta: 1e-6}, "q1")
	if _, err := sp.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// A failed query: prepared, never committed.
	if _, err := l.Prepare(ledger.Budget{Epsilon: 1}, "failed"); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopen as an analyst: the budget and spend are still there, and analysts can spend.
	a := open(t, path, duckdb.Options{Mode: backend.Analyst})
	l = ledger.New(store.NewLedgerStore(a))
	st, err := l.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := ledger.Status{Set: true, Total: ledger.Budget{Epsilon: 2, Delta: 1e-5}, Spent: ledger.Budget{Epsilon: 0.5, Delta: 1e-6}}
	if st != want {
		t.Fatalf("after reopen: %+v, want %+v", st, want)
	}
	sp, _ = l.Prepare(ledger.Budget{Epsilon: 1.5}, "q2")
	st, err = sp.Commit(ctx)
	if err != nil {
		t.Fatalf("analyst spend: %v", err)
	}
	if st.Spent.Epsilon != 2 {
		t.Errorf("status after spend: %+v", st)
	}
	sp, _ = l.Prepare(ledger.Budget{Epsilon: 0.01}, "q3")
	_, err = sp.Commit(ctx)
	if !isCode(err, sqlerr.BudgetExhausted) {
		t.Fatalf("spend past the total: %v", err)
	}
	a.Close()

	d = owner(t, path)
	l = ledger.New(store.NewLedgerStore(d))
	if st, err := l.Status(ctx); err != nil || st.Spent.Epsilon != 2 {
		t.Fatalf("after second reopen: %+v, %v", st, err)
	}
	// Raising the budget keeps what was spent.
	if err := l.SetTotal(ctx, ledger.Budget{Epsilon: 3, Delta: 1e-5}, false); err != nil {
		t.Fatal(err)
	}
	if st, _ := l.Status(ctx); st.Remaining().Epsilon != 1 {
		t.Errorf("after raising: %+v", st)
	}
	// Unlimited: recorded, never refused.
	if err := l.SetTotal(ctx, ledger.Budget{}, true); err != nil {
		t.Fatal(err)
	}
	sp, _ = l.Prepare(ledger.Budget{Epsilon: 50}, "big")
	if st, err := sp.Commit(ctx); err != nil || st.Spent.Epsilon != 52 || !st.Unlimited {
		t.Fatalf("unlimited spend: %+v, %v", st, err)
	}
}

// TestLedgerChargesRecorded: each spend's charge is recorded whole (its own id, time, cost and
// query text), in order, also across two handles whose spends conflict; the insert finds the
// next id itself.
func TestLedgerChargesRecorded(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	a, b := owner(t, path), owner(t, path)
	la, lb := newLedger(t, a), ledger.New(store.NewLedgerStore(b))
	if err := la.SetTotal(ctx, ledger.Budget{Epsilon: 10, Delta: 1e-5}, false); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Second)
	var want []ledger.Charge
	for i, l := range []*ledger.Ledger{la, lb, la, lb, lb} {
		c := ledger.Charge{Cost: ledger.Budget{Epsilon: 0.125 * float64(i+1), Delta: 1e-7}, Query: fmt.Sprintf("q%d 'quoted'", i)}
		sp, err := l.Prepare(c.Cost, c.Query)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sp.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		want = append(want, c)
	}
	spendConcurrently(t, []*ledger.Ledger{la, lb}, 6, ledger.Budget{Epsilon: 0.01})
	charges, err := store.NewLedgerStore(a).Charges(ctx)
	if err != nil || len(charges) != len(want)+6 {
		t.Fatalf("charges %+v, %v", charges, err)
	}
	for i, w := range want {
		c := charges[i]
		if c.Cost != w.Cost || c.Query != w.Query || c.At.Before(before) || c.At.After(time.Now().Add(time.Second)) {
			t.Errorf("charge %d: %+v, want %+v", i, c, w)
		}
	}
	rows, err := a.Query(ctx, "SELECT count(DISTINCT id), count(*), min(id), max(id) FROM dpsql.charges")
	if err != nil || !reflect.DeepEqual(rows.Values[0], []any{int64(11), int64(11), int64(1), int64(11)}) {
		t.Errorf("charge ids: %v, %v", rows, err)
	}
}

// indexChargesAsBefore turns dpsql.charges into the layout an earlier dpsql gave it on
// DuckDB, its id a primary key, keeping its rows.
var indexChargesAsBefore = []string{
	`CREATE TABLE dpsql.indexed (id BIGINT PRIMARY KEY, charged_at TIMESTAMP NOT NULL,
		epsilon DOUBLE PRECISION NOT NULL, delta DOUBLE PRECISION NOT NULL, query TEXT NOT NULL, analyst TEXT)`,
	`INSERT INTO dpsql.indexed SELECT * FROM dpsql.charges`,
	`DROP TABLE dpsql.charges`,
	`ALTER TABLE dpsql.indexed RENAME TO charges`,
}

// On DuckDB dpsql.charges has no index (its checkpoint after each charge rewrote the whole
// index); a table an earlier dpsql made with a primary key is copied into one without when the
// owner opens the database, every row kept in order, unless the database is read-only.
func TestChargesWithoutIndexOnDuckDB(t *testing.T) {
	ctx := context.Background()
	primaryKeys := func(t *testing.T, q backend.Querier) int64 {
		t.Helper()
		rows, err := q.Query(ctx, `SELECT count(*) FROM duckdb_constraints()
			WHERE schema_name = 'dpsql' AND table_name = 'charges' AND constraint_type = 'PRIMARY KEY'`)
		if err != nil {
			t.Fatal(err)
		}
		return rows.Values[0][0].(int64)
	}
	path := filepath.Join(t.TempDir(), "c.db")
	d := owner(t, path)
	l := newLedger(t, d)
	if n := primaryKeys(t, d); n != 0 {
		t.Errorf("a new database's dpsql.charges has %d primary keys, want none", n)
	}
	if err := l.SetTotal(ctx, ledger.Budget{Epsilon: 10}, false); err != nil {
		t.Fatal(err)
	}
	spend := func(t *testing.T, l *ledger.Ledger, query string) {
		t.Helper()
		sp, err := l.Prepare(ledger.Budget{Epsilon: 0.5}, query)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sp.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	spend(t, l, "q1")
	// The layout of an earlier dpsql: the id a primary key, charges of an account among them.
	exec(t, d, indexChargesAsBefore...)
	exec(t, d, `INSERT INTO dpsql.charges VALUES (2, TIMESTAMP '2026-01-02 03:04:05', 0.25, 1e-7, 'q2', 'ann')`)
	d.Close()

	ro := open(t, path, duckdb.Options{Mode: backend.Owner, ReadOnly: true})
	if err := store.Init(ctx, ro); err != nil {
		t.Fatalf("Init on a read-only database with the old layout: %v", err)
	}
	if n := primaryKeys(t, ro); n != 1 {
		t.Errorf("the read-only database's primary keys: %d, want 1 (kept)", n)
	}
	ro.Close()

	d = owner(t, path)
	l = newLedger(t, d)
	if n := primaryKeys(t, d); n != 0 {
		t.Errorf("after the owner's Init: %d primary keys, want none", n)
	}
	spend(t, l, "q3")
	charges, err := store.NewLedgerStore(d).Charges(ctx)
	if err != nil || len(charges) != 3 {
		t.Fatalf("charges after the copy: %+v, %v", charges, err)
	}
	for i, want := range []string{"q1", "q2", "q3"} {
		if charges[i].Query != want {
			t.Errorf("charge %d: %+v, want the query %s", i, charges[i], want)
		}
	}
	if charges[1].Analyst != "ann" || charges[1].Cost != (ledger.Budget{Epsilon: 0.25, Delta: 1e-7}) ||
		!charges[1].At.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("the earlier charge after the copy: %+v", charges[1])
	}
	rows, err := d.Query(ctx, "SELECT list(id ORDER BY id) FROM dpsql.charges")
	if err != nil || fmt.Sprint(rows.Values[0][0]) != "[1 2 3]" {
		t.Errorf("ids after the copy: %v, %v", rows, err)
	}
	if err := store.Init(ctx, d); err != nil {
		t.Errorf("a second Init: %v", err)
	}

	// A copy that cannot be made (a table of the schema refers to the charges' ids) leaves the
	// indexed table, and the database opens.
	exec(t, d, indexChargesAsBefore...)
	exec(t, d, `CREATE TABLE dpsql.audit_notes (charge BIGINT REFERENCES dpsql.charges (id), note TEXT)`,
		`INSERT INTO dpsql.audit_notes VALUES (2, 'checked')`)
	d.Close()
	d = owner(t, path)
	l = newLedger(t, d)
	if n := primaryKeys(t, d); n != 1 {
		t.Errorf("with a reference to the charges: %d primary keys, want 1 (kept)", n)
	}
	spend(t, l, "q4")
	if charges, err := store.NewLedgerStore(d).Charges(ctx); err != nil || len(charges) != 4 {
		t.Errorf("charges with the index kept: %+v, %v", charges, err)
	}
}

// The copy of an indexed ledger keeps the charges another DB of the same file commits while
// it runs (an outside review: without the copy's write of the budget row they were lost,
// since DuckDB lets a table be dropped after rows were added to it).
func TestChargesCopyKeepsConcurrentSpends(t *testing.T) {
	ctx := context.Background()
	during := 0 // spends committed while Init ran, over the rounds
	for round := 0; round < 3; round++ {
		path := filepath.Join(t.TempDir(), "c.db")
		a := owner(t, path)
		l := newLedger(t, a)
		if err := l.SetTotal(ctx, ledger.Budget{}, true); err != nil {
			t.Fatal(err)
		}
		exec(t, a, indexChargesAsBefore...)
		exec(t, a, `INSERT INTO dpsql.charges SELECT i + 1, TIMESTAMP '2026-01-01', 0.1, 0, 'old ' || i, NULL FROM range(50000) r(i)`,
			`UPDATE dpsql.budget SET spends = 50000`)
		b := owner(t, path)
		lb := ledger.New(store.NewLedgerStore(b))
		done := make(chan struct{})
		spent := make(chan int)
		go func() {
			n := 0
			for {
				select {
				case <-done:
					spent <- n
					return
				default:
				}
				sp, err := lb.Prepare(ledger.Budget{Epsilon: 0.01}, "during")
				if err != nil {
					t.Error(err)
				} else if _, err := sp.Commit(ctx); err == nil {
					n++
				}
			}
		}()
		if err := store.Init(ctx, a); err != nil {
			t.Fatal(err)
		}
		close(done)
		n := <-spent
		during += n
		rows, err := a.Query(ctx, `SELECT (SELECT count(*) FROM dpsql.charges), (SELECT count(DISTINCT id) FROM dpsql.charges),
			(SELECT spends FROM dpsql.budget)`)
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(50000 + n); rows.Values[0][0] != want || rows.Values[0][1] != want || rows.Values[0][2] != want {
			t.Errorf("round %d: %d spends committed during Init; charges, distinct ids, spends = %v, want %d each",
				round, n, rows.Values[0], want)
		}
		a.Close()
		b.Close()
	}
	if during == 0 {
		t.Error("no spend committed while Init copied the charges: the test tested nothing")
	}
}

// ownersSpending opens a database of two owner DBs of one file (one DuckDB instance), with a
// total of 10 and an account ann allowed 10, and returns them and a spend of epsilon 2 by ann
// through the second DB.
func ownersSpending(t *testing.T) (a, b *duckdb.DB, spend func() error) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	a = owner(t, path)
	if err := newLedger(t, a).SetTotal(ctx, ledger.Budget{Epsilon: 10}, false); err != nil {
		t.Fatal(err)
	}
	ten := 10.0
	if err := a.Tx(ctx, func(q backend.Querier) error {
		return store.CreateAnalyst(ctx, q, store.Analyst{Name: "ann", Verifier: verifier(t, "s3cret"), AllowanceEpsilon: &ten})
	}); err != nil {
		t.Fatal(err)
	}
	b = owner(t, path)
	lb := ledger.New(store.NewLedgerStore(b)).For("ann")
	return a, b, func() error {
		sp, err := lb.Prepare(ledger.Budget{Epsilon: 2}, "ann's query")
		if err != nil {
			return err
		}
		_, err = sp.Commit(ctx)
		return err
	}
}

// A change of the total and a spend by two DBs of one file never both commit when the change
// was checked against what the spend had not yet spent: DuckDB finds write conflicts column
// by column, and the total (checked not to go below what was spent) was written in other
// columns than the spend's, so the total 1 was committed beside a spend of 2.
func TestSetTotalConflictsWithASpend(t *testing.T) {
	ctx := context.Background()
	a, _, spend := ownersSpending(t)
	attempts := 0
	_, err := store.NewLedgerStore(a).SetTotal(ctx, ledger.Budget{Epsilon: 1}, false, func(st ledger.Status) error {
		attempts++
		if attempts == 1 {
			// The spend commits after the change read the status, before it writes.
			if err := spend(); err != nil {
				t.Errorf("the spend: %v", err)
			}
		}
		if ledger.BelowSpent(ledger.Budget{Epsilon: 1}, st.Spent) {
			return errors.New("below what was spent")
		}
		return nil
	})
	st, serr := ledger.New(store.NewLedgerStore(a)).Status(ctx)
	if serr != nil {
		t.Fatal(serr)
	}
	if err == nil || st.Total.Epsilon != 10 || st.Spent.Epsilon != 2 || attempts < 2 {
		t.Errorf("SetTotal: %v after %d attempts; total %g, spent %g; want it refused on its second attempt, total 10 and spent 2",
			err, attempts, st.Total.Epsilon, st.Spent.Epsilon)
	}
}

// The same for a change of an account's allowance (ALTER ANALYST), checked against what the
// account spent, and a spend of the account.
func TestAllowanceConflictsWithASpend(t *testing.T) {
	ctx := context.Background()
	a, _, spend := ownersSpending(t)
	attempts := 0
	one := 1.0
	err := a.Tx(ctx, func(q backend.Querier) error {
		attempts++
		ann, _, err := store.LookupAnalyst(ctx, q, "ann")
		if err != nil {
			return err
		}
		if attempts == 1 {
			if err := spend(); err != nil {
				t.Errorf("the spend: %v", err)
			}
		}
		if ledger.BelowSpent(ledger.Budget{Epsilon: 1}, ann.Spent) {
			return errors.New("below what was spent")
		}
		ann.AllowanceEpsilon = &one
		return store.UpdateAnalyst(ctx, q, ann)
	})
	ann, _, lerr := store.LookupAnalyst(ctx, a, "ann")
	if lerr != nil {
		t.Fatal(lerr)
	}
	if err == nil || ann.AllowanceEpsilon == nil || *ann.AllowanceEpsilon != 10 || ann.Spent.Epsilon != 2 || attempts < 2 {
		t.Errorf("ALTER ANALYST: %v after %d attempts; allowance %v, spent %g; want it refused on its second attempt, allowance 10 and spent 2",
			err, attempts, ann.AllowanceEpsilon, ann.Spent.Epsilon)
	}
}
