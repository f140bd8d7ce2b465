package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/ledger"
	"github.com/dpsql/dpsql/sqlerr"
)

// Analysts' accounts (dpsql serve) live in dpsql.analysts: one row per account, with the
// SCRAM-SHA-256 verifier of its password (never the password), whether it logs in with the
// data owner's rights, its allowance inside the database's total (NULL: no per-analyst limit)
// and what it spent, and its session limits. dpsql.charges names the account of each charge
// (NULL: a session without an account). dpsql.policy holds the policy generation, which every
// policy change increments in its own transaction, so that open sessions reload the catalog
// at their next statement (PolicyGeneration).
//
// These came after the other tables: a database an earlier dpsql initialised has none of them
// until its owner opens it (Init adds them); until then it has no accounts, and analysts'
// sessions without an account work as before.
var accountsStmts = []string{
	`CREATE TABLE IF NOT EXISTS dpsql.analysts (
		name TEXT PRIMARY KEY,
		verifier TEXT NOT NULL,
		is_owner BOOLEAN NOT NULL DEFAULT FALSE,
		allowance_epsilon DOUBLE PRECISION,
		allowance_delta DOUBLE PRECISION,
		spent_epsilon DOUBLE PRECISION NOT NULL DEFAULT 0,
		spent_delta DOUBLE PRECISION NOT NULL DEFAULT 0,
		statement_timeout_ms BIGINT,
		max_concurrent_queries BIGINT,
		created_at TIMESTAMP NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS dpsql.policy (
		id BIGINT PRIMARY KEY,
		generation BIGINT NOT NULL
	)`,
	`INSERT INTO dpsql.policy (id, generation) VALUES (1, 0) ON CONFLICT (id) DO NOTHING`,
	`ALTER TABLE dpsql.charges ADD COLUMN IF NOT EXISTS analyst TEXT`,
}

// accountTables are the tables Init adds for accounts.
var accountTables = []string{"analysts", "policy"}

// Analyst is an analyst's account.
type Analyst struct {
	// Name is the account's name, lower case.
	Name string
	// Verifier is the password's SCRAM-SHA-256 verifier in PostgreSQL's stored form
	// (internal/scram), never the password.
	Verifier string
	// Owner accounts log in with the data owner's rights; they have no allowance.
	Owner bool
	// AllowanceEpsilon and AllowanceDelta are the account's allowance inside the database's
	// total; nil means no per-analyst limit (the database's total still applies).
	AllowanceEpsilon, AllowanceDelta *float64
	// Spent is what the account's queries were charged.
	Spent ledger.Budget
	// StatementTimeout bounds each statement of the account's sessions (0: none besides the
	// data owner's SET LIMITS and the server's defaults).
	StatementTimeout time.Duration
	// MaxConcurrentQueries bounds the account's statements running at once over all its
	// sessions (0: no limit); the server enforces it.
	MaxConcurrentQueries int64
	// CreatedAt is when the account was created (UTC).
	CreatedAt time.Time
}

// Remaining is what the allowance has left (never negative); nil for a component without a
// per-analyst limit.
func (a Analyst) Remaining() (epsilon, delta *float64) {
	rem := func(limit *float64, spent float64) *float64 {
		if limit == nil {
			return nil
		}
		r := max(*limit-spent, 0)
		return &r
	}
	return rem(a.AllowanceEpsilon, a.Spent.Epsilon), rem(a.AllowanceDelta, a.Spent.Delta)
}

const analystColumns = `name, verifier, is_owner, allowance_epsilon, allowance_delta, spent_epsilon, spent_delta,
	statement_timeout_ms, max_concurrent_queries, created_at`

// hasAccounts reports whether the database has the account tables and the analyst column
// of dpsql.charges. On PostgreSQL it reads the system catalog, which shows them to a role
// without rights on them.
func hasAccounts(ctx context.Context, q backend.Querier) (bool, error) {
	var query string
	if dialectOf(q) == backend.Postgres {
		query = `SELECT (SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
				WHERE n.nspname = 'dpsql' AND c.relkind = 'r' AND c.relname IN ('analysts', 'policy'))
			+ (SELECT count(*) FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
				JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
				WHERE n.nspname = 'dpsql' AND c.relname = 'charges' AND a.attname = 'analyst' AND NOT a.attisdropped)`
	} else {
		query = `SELECT (SELECT count(*) FROM information_schema.tables
				WHERE table_schema = 'dpsql' AND table_catalog = current_database() AND table_name IN ('analysts', 'policy'))
			+ (SELECT count(*) FROM information_schema.columns
				WHERE table_schema = 'dpsql' AND table_catalog = current_database() AND table_name = 'charges' AND column_name = 'analyst')`
	}
	rows, err := q.Query(ctx, query)
	if err != nil {
		return false, fmt.Errorf("store: look for dpsql.analysts: %w", err)
	}
	n, err := asInt(rows.Values[0][0])
	return n == int64(len(accountTables))+1, err
}

// noAccounts is the owner's error on a database without account tables (its owner opens it
// with this dpsql to add them; an owner's engine always does).
func noAccounts() error {
	return &sqlerr.Error{Code: sqlerr.ObjectNotInPrerequisite,
		Msg:  "this database has no analyst accounts yet: its dpsql schema was created by an earlier version of dpsql",
		Hint: "the data owner must open it once with --owner (this version), which adds dpsql.analysts"}
}

// readable turns PostgreSQL's permission error on the table what into one that names the grant.
func readable(err error, what string) error {
	var state interface{ SQLState() string }
	if errors.As(err, &state) && state.SQLState() == "42501" {
		return &sqlerr.Error{Code: sqlerr.InsufficientPrivilege, Cause: err,
			Msg:  "this role cannot read " + what,
			Hint: "the owner must run GRANT SELECT ON " + what + " TO the role dpsql answers analysts with (docs/postgres.md, \"Setting it up\")"}
	}
	return fmt.Errorf("store: read %s: %w", what, err)
}

// LookupAnalyst reads the account name (lower case), for the server's log-in and limits. ok
// is false when there is no such account, also on a database without accounts (an earlier
// dpsql's, not yet opened by its owner).
func LookupAnalyst(ctx context.Context, q backend.Querier, name string) (a Analyst, ok bool, err error) {
	// The server reads the account before every statement: the table is looked for (in the
	// catalog, which costs more than the read) only when the read fails.
	rows, err := q.Query(ctx, `SELECT `+analystColumns+` FROM dpsql.analysts WHERE name = $1`, name)
	if err != nil {
		if has, herr := hasAccounts(ctx, q); herr == nil && !has {
			return a, false, nil
		}
		return a, false, readable(err, "dpsql.analysts")
	}
	if len(rows.Values) == 0 {
		return a, false, nil
	}
	a, err = analystOf(rows.Values[0])
	return a, err == nil, err
}

// ListAnalysts reads every account, by name.
func ListAnalysts(ctx context.Context, q backend.Querier) ([]Analyst, error) {
	if has, err := hasAccounts(ctx, q); err != nil || !has {
		return nil, err
	}
	rows, err := q.Query(ctx, `SELECT `+analystColumns+` FROM dpsql.analysts ORDER BY name`)
	if err != nil {
		return nil, readable(err, "dpsql.analysts")
	}
	out := make([]Analyst, 0, len(rows.Values))
	for _, r := range rows.Values {
		a, err := analystOf(r)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func analystOf(r []any) (Analyst, error) {
	a := Analyst{Name: asString(r[0]), Verifier: asString(r[1])}
	var err error
	if a.Owner, err = asBool(r[2]); err != nil {
		return a, err
	}
	optFloat := func(v any) (*float64, error) {
		if v == nil {
			return nil, nil
		}
		f, err := asFloat(v)
		return &f, err
	}
	if a.AllowanceEpsilon, err = optFloat(r[3]); err != nil {
		return a, err
	}
	if a.AllowanceDelta, err = optFloat(r[4]); err != nil {
		return a, err
	}
	if a.Spent.Epsilon, err = asFloat(r[5]); err != nil {
		return a, err
	}
	if a.Spent.Delta, err = asFloat(r[6]); err != nil {
		return a, err
	}
	if r[7] != nil {
		ms, err := asInt(r[7])
		if err != nil {
			return a, err
		}
		a.StatementTimeout = time.Duration(ms) * time.Millisecond
	}
	if r[8] != nil {
		if a.MaxConcurrentQueries, err = asInt(r[8]); err != nil {
			return a, err
		}
	}
	if t, ok := r[9].(time.Time); ok {
		a.CreatedAt = t.UTC()
	}
	return a, nil
}

// settings are the columns CreateAnalyst and UpdateAnalyst write, in order.
func (a Analyst) settings() []any {
	opt := func(p *float64) any {
		if p == nil {
			return nil
		}
		return *p
	}
	var ms, conc any
	if a.StatementTimeout > 0 {
		ms = a.StatementTimeout.Milliseconds()
	}
	if a.MaxConcurrentQueries > 0 {
		conc = a.MaxConcurrentQueries
	}
	return []any{a.Name, a.Verifier, a.Owner, opt(a.AllowanceEpsilon), opt(a.AllowanceDelta), ms, conc}
}

func (a Analyst) valid() error {
	switch {
	case a.Name == "" || a.Name != strings.ToLower(a.Name):
		return fmt.Errorf("store: an analyst's name must be non-empty and lower case, got %q", a.Name)
	case !strings.HasPrefix(a.Verifier, "SCRAM-SHA-256$"):
		return errors.New("store: an analyst's password must be stored as a SCRAM-SHA-256 verifier")
	case a.Owner && (a.AllowanceEpsilon != nil || a.AllowanceDelta != nil):
		return errors.New("store: an owner account has no allowance")
	}
	return nil
}

// CreateAnalyst creates the account a (Spent and CreatedAt are ignored: nothing spent, now).
// An existing account of that name is a DuplicateObject error. Run it in the owner's b.Tx.
func CreateAnalyst(ctx context.Context, q backend.Querier, a Analyst) error {
	if err := a.valid(); err != nil {
		return err
	}
	if has, err := hasAccounts(ctx, q); err != nil || !has {
		if err == nil {
			err = noAccounts()
		}
		return err
	}
	if _, exists, err := LookupAnalyst(ctx, q, a.Name); err != nil || exists {
		if err == nil {
			err = sqlerr.New(sqlerr.Pos{}, sqlerr.DuplicateObject, "analyst %s already exists", a.Name).
				WithHint("choose another name, change it with ALTER ANALYST %s SET OPTIONS(...) or PASSWORD '...', or DROP ANALYST %s first", a.Name, a.Name)
		}
		return err
	}
	return q.Exec(ctx, `INSERT INTO dpsql.analysts (name, verifier, is_owner, allowance_epsilon, allowance_delta,
			statement_timeout_ms, max_concurrent_queries, spent_epsilon, spent_delta, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 0, 0, $8)`, append(a.settings(), time.Now().UTC())...)
}

// UpdateAnalyst replaces the settings of the account a.Name (verifier, owner flag, allowance,
// limits; not what it spent). A missing account is an UndefinedObject error. Run it in the
// owner's b.Tx, after LookupAnalyst read the account to change.
func UpdateAnalyst(ctx context.Context, q backend.Querier, a Analyst) error {
	if err := a.valid(); err != nil {
		return err
	}
	if _, exists, err := LookupAnalyst(ctx, q, a.Name); err != nil || !exists {
		if err == nil {
			err = undefinedAnalyst(a.Name)
		}
		return err
	}
	if dialectOf(q) == backend.DuckDB {
		// The column every spend writes, so that a spend of the account committed after this
		// transaction read it conflicts with this change: DuckDB finds write conflicts column
		// by column, and the allowance checked against what the account had spent could
		// otherwise end below it (TestAllowanceConflictsWithASpend).
		if err := q.Exec(ctx, `UPDATE dpsql.budget SET spends = spends + 1 WHERE id = 1`); err != nil {
			return err
		}
	}
	return q.Exec(ctx, `UPDATE dpsql.analysts SET verifier = $2, is_owner = $3, allowance_epsilon = $4,
		allowance_delta = $5, statement_timeout_ms = $6, max_concurrent_queries = $7 WHERE name = $1`, a.settings()...)
}

// DropAnalyst deletes the account name and reports whether it existed. Its charges stay in
// dpsql.charges (with its name) and in the database's spent total; a session of the account
// that is still open can no longer spend.
func DropAnalyst(ctx context.Context, q backend.Querier, name string) (bool, error) {
	_, exists, err := LookupAnalyst(ctx, q, name)
	if err != nil || !exists {
		return false, err
	}
	return true, q.Exec(ctx, `DELETE FROM dpsql.analysts WHERE name = $1`, name)
}

func undefinedAnalyst(name string) error {
	return sqlerr.New(sqlerr.Pos{}, sqlerr.UndefinedObject, "analyst %s does not exist", name).
		WithHint("SHOW ANALYSTS lists the accounts; CREATE ANALYST %s PASSWORD '...' creates it", name)
}

// readAccount reads the account of a charge or status: Exists false when there is none.
func readAccount(ctx context.Context, q backend.Querier, name string) (*ledger.AccountStatus, error) {
	a, ok, err := LookupAnalyst(ctx, q, name)
	if err != nil {
		return nil, err
	}
	acc := &ledger.AccountStatus{Name: name, Exists: ok}
	if ok {
		acc.Spent = a.Spent
		if a.AllowanceEpsilon != nil {
			acc.LimitEpsilon, acc.Allowance.Epsilon = true, *a.AllowanceEpsilon
		}
		if a.AllowanceDelta != nil {
			acc.LimitDelta, acc.Allowance.Delta = true, *a.AllowanceDelta
		}
	}
	return acc, nil
}

// PolicyGeneration reads the policy generation, which every change of the privacy policy
// increments in its transaction (BumpPolicy): a session whose catalog was loaded at another
// generation must load it again before its next statement. A database without dpsql.policy
// (an earlier dpsql's, not yet opened by its owner) is at generation 0.
func PolicyGeneration(ctx context.Context, q backend.Querier) (int64, error) {
	rows, err := q.Query(ctx, `SELECT generation FROM dpsql.policy WHERE id = 1`)
	if err != nil {
		if has, herr := hasAccounts(ctx, q); herr == nil && !has {
			return 0, nil
		}
		return 0, readable(err, "dpsql.policy")
	}
	if len(rows.Values) != 1 {
		return 0, errors.New("store: dpsql.policy has no row")
	}
	return asInt(rows.Values[0][0])
}

// BumpPolicy increments the policy generation. Every statement that changes what the catalog
// says (a relation's policy, a public domain, the owner's DDL) calls it in its transaction.
func BumpPolicy(ctx context.Context, q backend.Querier) error {
	return q.Exec(ctx, `UPDATE dpsql.policy SET generation = generation + 1 WHERE id = 1`)
}
