package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/catalog"
)

// viewColumnsTable holds, on DuckDB, the columns and types a declared view had when the owner
// declared it. DuckDB binds a view's query again at every read and writes the types it finds
// back into its catalog (information_schema.columns; a checkpoint persists them), so a view
// over files (a Parquet glob gaining a file with a wider type) would change its public
// schema, and whether analysts' queries bind, with its files. (Private views over CSV or JSON,
// whose parse follows every row, are refused outright: fileformat.go.) The catalog dpsql loads
// takes a view's columns from here instead; PostgreSQL fixes a view's types when it is
// created and needs no such table.
const viewColumnsTable = "view_columns"

var viewColumnsStmts = []string{
	`CREATE TABLE IF NOT EXISTS dpsql.view_columns (
		relation TEXT NOT NULL,
		position BIGINT NOT NULL,
		column_name TEXT NOT NULL,
		type TEXT NOT NULL,
		PRIMARY KEY (relation, position)
	)`,
}

// recordColumns stores the columns of t, a relation the owner is declaring, if it is a view on
// DuckDB, replacing any earlier record; for a table it removes the record.
func recordColumns(ctx context.Context, q backend.Querier, t *table) error {
	if dialectOf(q) != backend.DuckDB {
		return nil
	}
	key := strings.ToLower(t.name)
	if err := q.Exec(ctx, `DELETE FROM dpsql.view_columns WHERE relation = $1`, key); err != nil {
		return fmt.Errorf("store: write dpsql.view_columns: %w", err)
	}
	if !t.view {
		return nil
	}
	for i, c := range t.columns {
		if err := q.Exec(ctx, `INSERT INTO dpsql.view_columns (relation, position, column_name, type) VALUES ($1, $2, $3, $4)`,
			key, int64(i+1), c.Name, c.Type); err != nil {
			return fmt.Errorf("store: write dpsql.view_columns: %w", err)
		}
	}
	return nil
}

// forgetColumns removes the stored columns of a relation whose policy is removed.
func forgetColumns(ctx context.Context, q backend.Querier, key string) error {
	if dialectOf(q) != backend.DuckDB {
		return nil
	}
	if err := q.Exec(ctx, `DELETE FROM dpsql.view_columns WHERE relation = $1`, key); err != nil {
		return fmt.Errorf("store: write dpsql.view_columns: %w", err)
	}
	return nil
}

// recordDeclaredViews stores the current columns of every declared view that has none stored:
// the views an earlier dpsql declared, when Init creates dpsql.view_columns. Their types are
// fixed from then on.
func recordDeclaredViews(ctx context.Context, q backend.Querier) error {
	pol, err := q.Query(ctx, `SELECT name FROM dpsql.relations
		WHERE name NOT IN (SELECT relation FROM dpsql.view_columns)`)
	if err != nil {
		return fmt.Errorf("store: read dpsql.relations: %w", err)
	}
	if len(pol.Values) == 0 {
		return nil
	}
	tabs, err := tablesOf(ctx, q)
	if err != nil {
		return err
	}
	for _, r := range pol.Values {
		if t := tabs[asString(r[0])]; t != nil && t.view {
			if err := recordColumns(ctx, q, t); err != nil {
				return err
			}
		}
	}
	return nil
}

// declaredColumns reads the stored columns of declared views on DuckDB, by relation key.
func declaredColumns(ctx context.Context, q backend.Querier) (map[string][]catalog.Column, error) {
	if dialectOf(q) != backend.DuckDB {
		return nil, nil
	}
	rows, err := q.Query(ctx, `SELECT relation, column_name, type FROM dpsql.view_columns ORDER BY relation, position`)
	if err != nil {
		return nil, fmt.Errorf("store: read dpsql.view_columns: %w", err)
	}
	out := map[string][]catalog.Column{}
	for _, r := range rows.Values {
		k := asString(r[0])
		out[k] = append(out[k], catalog.Column{Name: asString(r[1]), Type: asString(r[2])})
	}
	return out, nil
}

// declaredStill is a DuckDB view's columns as the owner declared them (their names and types),
// not as its last binding left them in information_schema, keeping only those the view still
// has: a view the owner replaced without the privacy unit column must fail to load as a table
// would, and a column it no longer has cannot be read. Columns it gained stay hidden until the
// owner declares it again.
func declaredStill(declared, live []catalog.Column) []catalog.Column {
	has := map[string]bool{}
	for _, c := range live {
		has[strings.ToLower(c.Name)] = true
	}
	var out []catalog.Column
	for _, c := range declared {
		if has[strings.ToLower(c.Name)] {
			out = append(out, c)
		}
	}
	return out
}
