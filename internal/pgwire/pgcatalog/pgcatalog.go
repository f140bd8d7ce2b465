// Package pgcatalog answers the queries that PostgreSQL clients send about the database's
// catalog (pg_catalog, information_schema: psql's \dt and \d, JDBC's DatabaseMetaData) from
// the relations an analyst may name, without touching the data.
//
// This file is a stub that package pgwire calls; the emulation replaces it.
package pgcatalog

import (
	"context"
	"strings"

	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/sqlerr"
)

// Query answers sql, a catalog query (IsCatalogQuery), over rels.
func Query(ctx context.Context, sql string, rels []*catalog.Relation) (*engine.Result, error) {
	return nil, sqlerr.New(sqlerr.Pos{}, sqlerr.FeatureNotSupported, "catalog queries are not supported yet")
}

// IsCatalogQuery reports whether sql reads PostgreSQL's catalog (pg_catalog.,
// information_schema. or a pg_ relation).
func IsCatalogQuery(sql string) bool {
	s := strings.ToLower(sql)
	return strings.Contains(s, "pg_catalog.") || strings.Contains(s, "information_schema.") ||
		strings.Contains(s, "pg_")
}
