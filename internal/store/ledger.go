package store

import (
	"context"
	"fmt"
	"time"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/ledger"
)

var _ ledger.Store = (*LedgerStore)(nil)

// LedgerStore keeps the budget in dpsql.budget and dpsql.charges. It implements ledger.Store.
//
// On DuckDB, Spend runs in one b.Tx: it first increments dpsql.budget.spends, so two
// concurrent spends always write the same row and conflict (serializable isolation then aborts
// one, which Tx retries). Then it reads the status, calls allow, adds the cost to the spent
// totals and inserts the charge.
//
// On PostgreSQL, Spend calls dpsql.spend (see Init) in one b.Tx: the function validates the
// cost, locks the budget row, applies the ledger's rule itself and records the charge, so the
// role dpsql connects as needs no write right on dpsql's tables. allow is applied to the status
// the function read as well, and the transaction rolls back unless both agree, so the rule
// (and the refusal's wording) is the ledger's on both backends. The charge's time is the
// server's clock, not Charge.At.
type LedgerStore struct {
	b backend.Backend
}

// NewLedgerStore returns the ledger store of the database b.
func NewLedgerStore(b backend.Backend) *LedgerStore { return &LedgerStore{b: b} }

var _ ledger.AccountStore = (*LedgerStore)(nil)

// Status reads the budget.
func (s *LedgerStore) Status(ctx context.Context) (ledger.Status, error) {
	st, err := readStatus(ctx, s.b)
	return st, explain(ctx, s.b, err)
}

// StatusOf reads the budget and the account of analyst (Account.Exists false if there is no
// such account).
func (s *LedgerStore) StatusOf(ctx context.Context, analyst string) (ledger.Status, error) {
	st, err := readStatus(ctx, s.b)
	if err == nil {
		st.Account, err = readAccount(ctx, s.b, analyst)
	}
	return st, explain(ctx, s.b, err)
}

func readStatus(ctx context.Context, q backend.Querier) (ledger.Status, error) {
	rows, err := q.Query(ctx, `SELECT `+statusColumns+` FROM dpsql.budget WHERE id = 1`)
	if err != nil {
		return ledger.Status{}, fmt.Errorf("store: read dpsql.budget: %w", err)
	}
	return statusOf(rows)
}

// statusColumns are the columns of dpsql.budget statusOf reads.
const statusColumns = `is_set, unlimited, total_epsilon, total_delta, spent_epsilon, spent_delta`

// statusOf reads the budget from the one row of statusColumns.
func statusOf(rows *backend.Rows) (ledger.Status, error) {
	if len(rows.Values) != 1 {
		return ledger.Status{}, notInitialized()
	}
	r := rows.Values[0]
	var st ledger.Status
	var err error
	if st.Set, err = asBool(r[0]); err != nil {
		return st, err
	}
	if st.Unlimited, err = asBool(r[1]); err != nil {
		return st, err
	}
	for i, p := range []*float64{&st.Total.Epsilon, &st.Total.Delta, &st.Spent.Epsilon, &st.Spent.Delta} {
		if *p, err = asFloat(r[2+i]); err != nil {
			return st, err
		}
	}
	return st, nil
}

// SetTotal sets the total budget (or lifts the limit) and marks the budget set, if allow
// accepts the status read in the same transaction. What was spent stays spent. On PostgreSQL
// the budget row is locked first (dpsql.spend locks it too), so no charge is committed between
// the check and the change; on DuckDB the change writes the column every spend writes
// (spends), and one of two concurrent transactions aborts.
func (s *LedgerStore) SetTotal(ctx context.Context, total ledger.Budget, unlimited bool, allow func(ledger.Status) error) (ledger.Status, error) {
	var after ledger.Status
	err := s.b.Tx(ctx, func(q backend.Querier) error {
		if s.b.Dialect() == backend.Postgres {
			if _, err := q.Query(ctx, `SELECT id FROM dpsql.budget WHERE id = 1 FOR UPDATE`); err != nil {
				return err
			}
		}
		st, err := readStatus(ctx, q)
		if err != nil {
			return err
		}
		if err := allow(st); err != nil {
			return err
		}
		// spends too: DuckDB finds write conflicts column by column, so a change that did not
		// write the column every spend writes committed beside a spend it had not seen, and a
		// total below what was spent could result (TestSetTotalConflictsWithASpend).
		if err := q.Exec(ctx, `UPDATE dpsql.budget SET is_set = TRUE, unlimited = $1,
			total_epsilon = $2, total_delta = $3, spends = spends + 1 WHERE id = 1`, unlimited, total.Epsilon, total.Delta); err != nil {
			return err
		}
		st.Set, st.Unlimited, st.Total = true, unlimited, total
		after = st
		return nil
	})
	if err != nil {
		return ledger.Status{}, explain(ctx, s.b, err)
	}
	return after, nil
}

// Spend records c if allow accepts the status read in the same transaction, and returns the
// status after the charge. If allow refuses, nothing is recorded and allow's error is
// returned unchanged.
func (s *LedgerStore) Spend(ctx context.Context, c ledger.Charge, allow func(ledger.Status) error) (ledger.Status, error) {
	if s.b.Dialect() == backend.Postgres {
		return s.spendPostgres(ctx, c, allow)
	}
	var after ledger.Status
	err := s.b.Tx(ctx, func(q backend.Querier) error {
		// The increment, then the read: an UPDATE ... RETURNING would save a statement, but
		// DuckDB does not make it conflict with a plain UPDATE of the same row (SetTotal's, or
		// a spend's second write), so a spend committed while another DB of the file changed
		// the budget, and one of the two writes was lost (TestSetTotalConflictsWithASpend).
		if err := q.Exec(ctx, `UPDATE dpsql.budget SET spends = spends + 1 WHERE id = 1`); err != nil {
			return fmt.Errorf("store: write dpsql.budget: %w", err)
		}
		st, err := readStatus(ctx, q)
		if err != nil {
			return err
		}
		var analyst any
		if c.Analyst != "" {
			// The budget row is written first by every spend, so spends of one account
			// conflict there too: the account's row is read and written after it.
			analyst = c.Analyst
			if st.Account, err = readAccount(ctx, q, c.Analyst); err != nil {
				return err
			}
		}
		if err := allow(st); err != nil {
			return err
		}
		st.Spent.Epsilon = ledger.AddSpent(st.Spent.Epsilon, c.Cost.Epsilon)
		st.Spent.Delta = ledger.AddSpent(st.Spent.Delta, c.Cost.Delta)
		if err := q.Exec(ctx, `UPDATE dpsql.budget SET spent_epsilon = $1, spent_delta = $2 WHERE id = 1`,
			st.Spent.Epsilon, st.Spent.Delta); err != nil {
			return err
		}
		if a := st.Account; a != nil {
			a.Spent.Epsilon = ledger.AddSpent(a.Spent.Epsilon, c.Cost.Epsilon)
			a.Spent.Delta = ledger.AddSpent(a.Spent.Delta, c.Cost.Delta)
			if err := q.Exec(ctx, `UPDATE dpsql.analysts SET spent_epsilon = $2, spent_delta = $3 WHERE name = $1`,
				a.Name, a.Spent.Epsilon, a.Spent.Delta); err != nil {
				return err
			}
		}
		// The charge's id is the next one, found by the insert itself (the budget row written
		// above serialises spends, so no two take the same id).
		insert := `INSERT INTO dpsql.charges (id, charged_at, epsilon, delta, query)
			SELECT COALESCE(MAX(id), 0) + 1, $1, $2, $3, $4 FROM dpsql.charges`
		args := []any{c.At.UTC(), c.Cost.Epsilon, c.Cost.Delta, c.Query}
		if analyst != nil {
			insert = `INSERT INTO dpsql.charges (id, charged_at, epsilon, delta, query, analyst)
				SELECT COALESCE(MAX(id), 0) + 1, $1, $2, $3, $4, $5 FROM dpsql.charges`
			args = append(args, analyst)
		}
		if err := q.Exec(ctx, insert, args...); err != nil {
			return err
		}
		after = st
		return nil
	})
	if err != nil {
		return ledger.Status{}, explain(ctx, s.b, err)
	}
	return after, nil
}

// Charges lists the recorded charges in the order they were made, for the owner's audit.
func (s *LedgerStore) Charges(ctx context.Context) ([]ledger.Charge, error) {
	analyst := "NULL"
	if has, err := hasAccounts(ctx, s.b); err != nil {
		return nil, explain(ctx, s.b, err)
	} else if has {
		analyst = "analyst"
	}
	rows, err := s.b.Query(ctx, `SELECT charged_at, epsilon, delta, query, `+analyst+` FROM dpsql.charges ORDER BY id`)
	if err != nil {
		return nil, explain(ctx, s.b, fmt.Errorf("store: read dpsql.charges: %w", err))
	}
	out := make([]ledger.Charge, 0, len(rows.Values))
	for _, r := range rows.Values {
		var c ledger.Charge
		if t, ok := r[0].(time.Time); ok {
			c.At = t.UTC()
		}
		if c.Cost.Epsilon, err = asFloat(r[1]); err != nil {
			return nil, err
		}
		if c.Cost.Delta, err = asFloat(r[2]); err != nil {
			return nil, err
		}
		c.Query = asString(r[3])
		c.Analyst = asString(r[4])
		out = append(out, c)
	}
	return out, nil
}

// spendPostgres charges c through dpsql.spend.
func (s *LedgerStore) spendPostgres(ctx context.Context, c ledger.Charge, allow func(ledger.Status) error) (ledger.Status, error) {
	var after ledger.Status
	err := s.b.Tx(ctx, func(q backend.Querier) error {
		// Without an account, the function every version of the schema has (a database whose
		// owner has not upgraded it yet has no accounts, and its sessions keep working).
		query, args := `SELECT recorded, budget_set, budget_unlimited, total_epsilon, total_delta,
				spent_epsilon, spent_delta
			FROM dpsql.spend($1, $2, $3)`, []any{c.Cost.Epsilon, c.Cost.Delta, c.Query}
		if c.Analyst != "" {
			query, args = `SELECT recorded, budget_set, budget_unlimited, total_epsilon, total_delta,
					spent_epsilon, spent_delta, account_found, allowance_epsilon, allowance_delta,
					account_spent_epsilon, account_spent_delta
				FROM dpsql.spend($1, $2, $3, $4)`, append(args, c.Analyst)
		}
		rows, err := q.Query(ctx, query, args...)
		if err != nil {
			return fmt.Errorf("store: spend: %w", err)
		}
		if len(rows.Values) != 1 {
			return fmt.Errorf("store: dpsql.spend returned %d rows", len(rows.Values))
		}
		r := rows.Values[0]
		recorded, err := asBool(r[0])
		if err != nil {
			return err
		}
		var st ledger.Status
		if st.Set, err = asBool(r[1]); err != nil {
			return err
		}
		if st.Unlimited, err = asBool(r[2]); err != nil {
			return err
		}
		for i, p := range []*float64{&st.Total.Epsilon, &st.Total.Delta, &st.Spent.Epsilon, &st.Spent.Delta} {
			if *p, err = asFloat(r[3+i]); err != nil {
				return err
			}
		}
		if c.Analyst != "" {
			if st.Account, err = accountOf(c.Analyst, r[7:]); err != nil {
				return err
			}
		}
		if err := allow(st); err != nil {
			return err // rolls back the charge if the function made it
		}
		if !recorded {
			return fmt.Errorf("store: dpsql.spend refused a charge of %s that the ledger allows (budget: %+v); "+
				"the data owner should open the database with --owner once to update the function", c.Cost, st)
		}
		st.Spent.Epsilon = ledger.AddSpent(st.Spent.Epsilon, c.Cost.Epsilon)
		st.Spent.Delta = ledger.AddSpent(st.Spent.Delta, c.Cost.Delta)
		if a := st.Account; a != nil {
			a.Spent.Epsilon = ledger.AddSpent(a.Spent.Epsilon, c.Cost.Epsilon)
			a.Spent.Delta = ledger.AddSpent(a.Spent.Delta, c.Cost.Delta)
		}
		after = st
		return nil
	})
	if err != nil {
		return ledger.Status{}, explain(ctx, s.b, err)
	}
	return after, nil
}

// accountOf reads the account columns dpsql.spend returns: found, allowance epsilon and delta
// (NULL: no limit), spent epsilon and delta.
func accountOf(name string, r []any) (*ledger.AccountStatus, error) {
	found, err := asBool(r[0])
	if err != nil {
		return nil, err
	}
	a := &ledger.AccountStatus{Name: name, Exists: found}
	if !found {
		return a, nil
	}
	if r[1] != nil {
		a.LimitEpsilon = true
		if a.Allowance.Epsilon, err = asFloat(r[1]); err != nil {
			return nil, err
		}
	}
	if r[2] != nil {
		a.LimitDelta = true
		if a.Allowance.Delta, err = asFloat(r[2]); err != nil {
			return nil, err
		}
	}
	if a.Spent.Epsilon, err = asFloat(r[3]); err != nil {
		return nil, err
	}
	if a.Spent.Delta, err = asFloat(r[4]); err != nil {
		return nil, err
	}
	return a, nil
}
