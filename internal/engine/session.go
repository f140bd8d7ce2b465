package engine

import (
	"context"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/catalog"
)

// Relations lists the relations this session may name, as the catalog declares them now (for
// clients' introspection: psql's \d, JDBC's DatabaseMetaData): the catalog is reloaded first
// if another session changed the policy, as before a statement.
func (e *Engine) Relations(ctx context.Context) ([]*catalog.Relation, error) {
	if err := e.refresh(ctx); err != nil {
		return nil, err
	}
	if e.catErr != nil {
		return nil, e.catErr
	}
	return e.cat.Relations(), nil
}

// Dialect is the backend's SQL dialect.
func (e *Engine) Dialect() backend.Dialect { return e.b.Dialect() }
