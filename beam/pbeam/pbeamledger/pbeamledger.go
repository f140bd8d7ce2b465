// Package pbeamledger charges a pbeam pipeline's privacy budget to the
// budget ledger of a dpsql database (a DuckDB file or a PostgreSQL URL), so
// that the pipeline and the database's SQL analysts share one budget that
// is never overspent.
//
// It is a package of its own so that pbeam does not link the database
// drivers (DuckDB is cgo): programs that charge a ledger import it; the
// workers that run the pipeline never need it.
//
//	spec, _ := pbeam.NewPrivacySpec(pbeam.PrivacySpecParams{...})
//	... construct every aggregation on spec ...
//	if err := pbeamledger.Charge(ctx, spec, "shop.duckdb", "weekly visits report"); err != nil {
//		log.Fatal(err) // nothing was charged; do not run the pipeline
//	}
//	beamx.Run(ctx, p)
//
// # Who may charge
//
// A pipeline charges as the database's analysts do, never as its owner:
// the database must have been set up by its owner (dpsql --owner, SET
// BUDGET OPTIONS(...)), and the charge goes through the same ledger rule
// and the same transaction as an SQL query's (internal/store). On DuckDB the
// file is opened in analyst mode for the charge and closed again; DuckDB
// lets one process at a time open a file for writing, so charge while no
// dpsql process holds it. On PostgreSQL connect with the role that answers
// analysts (dpsql_engine in docs/postgres.md): the charge calls
// dpsql.spend, the only way that role can change the budget, and it can
// only add.
package pbeamledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/backend/postgres"
	"github.com/dpsql/dpsql/beam/pbeam"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/ledger"
)

// Charge opens the ledger of database, a DuckDB file path or a postgres://
// (postgresql://) URL, and charges it with what spec's aggregations consumed
// (see pbeam.PrivacySpec.ChargeLedger for the rules: a spec is charged once,
// is sealed by the first attempt, and test-mode specs are refused).
// description is recorded with the charge for the owner's audit.
func Charge(ctx context.Context, spec *pbeam.PrivacySpec, database, description string) (err error) {
	if spec == nil {
		return errors.New("pbeamledger.Charge: the PrivacySpec is nil")
	}
	l, closeDB, err := Open(ctx, database)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeDB()) }()
	return spec.ChargeLedger(ctx, l, description)
}

// Open opens the ledger of database (a DuckDB file path or a PostgreSQL
// URL) as an analyst, for Status or for PrivacySpec.ChargeLedger; call
// closeDB when done. An in-memory DuckDB database ("" or ":memory:") has no
// budget to share and is refused.
func Open(ctx context.Context, database string) (l *ledger.Ledger, closeDB func() error, err error) {
	var b backend.Backend
	switch {
	case database == "" || database == ":memory:":
		return nil, nil, errors.New("pbeamledger: no database given; name the DuckDB file or the postgres:// URL whose budget the pipeline shares")
	case strings.HasPrefix(database, "postgres://") || strings.HasPrefix(database, "postgresql://"):
		b, err = postgres.Open(ctx, database, postgres.Options{Mode: backend.Analyst})
	default:
		// Opening a missing file would create an empty database.
		if _, err := os.Stat(database); err != nil {
			return nil, nil, fmt.Errorf("pbeamledger: %w; name an existing DuckDB file whose owner set a budget", err)
		}
		b, err = duckdb.Open(ctx, database, duckdb.Options{Mode: backend.Analyst})
	}
	if err != nil {
		return nil, nil, fmt.Errorf("pbeamledger: open %s: %w", redact(database), err)
	}
	l = ledger.New(store.NewLedgerStore(b))
	if _, err := l.Status(ctx); err != nil {
		err = fmt.Errorf("pbeamledger: %s has no dpsql budget ledger: %w", redact(database), err)
		if errors.Is(err, store.ErrNotInitialized) {
			err = fmt.Errorf("%w (the data owner must first open it with dpsql --owner and run SET BUDGET OPTIONS(epsilon=..., delta=...))", err)
		}
		return nil, nil, errors.Join(err, b.Close())
	}
	return l, b.Close, nil
}

// redact drops a URL's password from error messages.
func redact(database string) string {
	if i := strings.Index(database, "://"); i >= 0 {
		if at := strings.LastIndex(database, "@"); at > i {
			if colon := strings.Index(database[i+3:at], ":"); colon >= 0 {
				return database[:i+3+colon] + ":***" + database[at:]
			}
		}
	}
	return database
}
