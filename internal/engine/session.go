package engine

import (
	"context"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/catalog"
)

// Relations lists the relations this session may name, as the catalog declares them (for
// clients' introspection: psql's \dt and \d, JDBC's DatabaseMetaData).
func (e *Engine) Relations(ctx context.Context) ([]*catalog.Relation, error) {
	return e.cat.Relations(), ctx.Err()
}

// Dialect is the backend's SQL dialect.
func (e *Engine) Dialect() backend.Dialect { return e.b.Dialect() }
