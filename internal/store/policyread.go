package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/catalog"
)

// policyRead is what LoadCatalog reads before it checks anything: the policy's relations
// (name, kind, privacy unit, ordered by name), the database's relations they may name
// (tablesOf's keys; only those a policy names need be there), the stored columns of declared
// views (DuckDB) and the public domains' rows (relation, column, spec). domains is nil when
// they are to be read later (LoadCatalog reads them after its checks then).
type policyRead struct {
	relations [][]any
	tables    map[string]*table
	declared  map[string][]catalog.Column
	domains   [][]any
	// readDomains is set when domains holds the rows already read.
	readDomains bool
}

// readPolicy reads the policy and the relations it names, statement by statement: the path
// of PostgreSQL, and DuckDB's when its shorter read fails (readPolicyDuckDB), so that every
// error is the one each read explains.
func readPolicy(ctx context.Context, q backend.Querier) (*policyRead, error) {
	if dialectOf(q) == backend.Postgres {
		// A failed read would abort a PostgreSQL transaction: check the schema first.
		if err := requireInit(ctx, q); err != nil {
			return nil, err
		}
	}
	// On DuckDB every session loads the catalog as it starts, and the look-up of the schema
	// in the catalog costs more than the reads: the schema is checked only when a read fails.
	pol, err := q.Query(ctx, `SELECT name, kind, privacy_unit FROM dpsql.relations ORDER BY name`)
	if err != nil {
		return nil, explain(ctx, q, fmt.Errorf("store: read dpsql.relations: %w", err))
	}
	tabs, err := tablesOf(ctx, q)
	if err != nil {
		return nil, err
	}
	declared, err := declaredColumns(ctx, q)
	if err != nil {
		return nil, explain(ctx, q, err)
	}
	return &policyRead{relations: pol.Values, tables: tabs, declared: declared}, nil
}

// policyReadDuckDB reads, in one statement, dpsql's policy tables and the list of the
// database's relations (base tables, then views), each row tagged by its part.
const policyReadDuckDB = `SELECT 0 AS part, name AS a, kind AS b, privacy_unit AS c, CAST(NULL AS BIGINT) AS n
		FROM dpsql.relations
	UNION ALL SELECT 1, relation, column_name, type, position FROM dpsql.view_columns
	UNION ALL SELECT 2, relation, column_name, spec, NULL FROM dpsql.domains
	UNION ALL SELECT 3, schema_name, table_name, database_name, CASE WHEN schema_name = 'main' THEN 1 ELSE 0 END
		FROM duckdb_tables()
		WHERE database_name = current_database() AND schema_name NOT IN ('dpsql', 'information_schema', 'pg_catalog')
	UNION ALL SELECT 4, schema_name, view_name, database_name, CASE WHEN schema_name = 'main' THEN 1 ELSE 0 END
		FROM duckdb_views()
		WHERE database_name = current_database() AND schema_name NOT IN ('dpsql', 'information_schema', 'pg_catalog')
	ORDER BY part, a, n`

// readPolicyDuckDB is readPolicy in two statements on DuckDB: the policy's tables with the
// list of relations (policyReadDuckDB), then the columns of the relations the policy names
// only, from pragma_table_info. tablesOf reads every column of the database from
// duckdb_columns(), which in a new DuckDB instance costs about 9 ms, most of it for the
// system's own views; each session of the dpsql command is a new instance (issue 16, fixed
// costs). It returns nil, and no error, when anything is not as this path expects (a read
// fails, a name holds a double quote, which pragma_table_info's name parser drops, two
// relations that go by one name): readPolicy then reads again, statement by statement, and
// explains what is wrong (table.nameable).
func readPolicyDuckDB(ctx context.Context, q backend.Querier) *policyRead {
	rows, err := q.Query(ctx, policyReadDuckDB)
	if err != nil {
		return nil
	}
	out := &policyRead{tables: map[string]*table{}, declared: map[string][]catalog.Column{}, readDomains: true}
	// Base tables by database, schema and name, as duckdb_columns() names them.
	baseTables := map[[3]string]*table{}
	for _, r := range rows.Values {
		part, err := asInt(r[0])
		if err != nil {
			return nil
		}
		a, b, c := asString(r[1]), asString(r[2]), r[3]
		switch part {
		case 0:
			out.relations = append(out.relations, []any{a, b, c})
		case 1:
			out.declared[a] = append(out.declared[a], catalog.Column{Name: b, Type: asString(c)})
		case 2:
			out.domains = append(out.domains, []any{a, b, c})
		case 3, 4:
			current, err := asInt(r[4])
			if err != nil {
				return nil
			}
			t := relationNamed(asString(c), a, b, current != 0, part == 4)
			key := strings.ToLower(t.name)
			if _, dup := out.tables[key]; dup || strings.ContainsRune(a+b+asString(c), '"') {
				return nil
			}
			out.tables[key] = t
			if part == 3 {
				baseTables[[3]string{asString(c), a, b}] = t
			}
		}
	}
	// The columns of the relations the policy names, in one statement.
	// The names are parameters: no text dpsql sends names a relation but the statements that
	// bind a query without reading rows (internal/leaks checks what reaches the database).
	var parts []string
	var declared []*table
	var names []any
	fromColumns := map[*table]bool{} // the base tables read from duckdb_columns()
	for _, r := range out.relations {
		t, ok := out.tables[strings.ToLower(asString(r[0]))]
		if !ok {
			continue // a relation that does not exist: LoadCatalog reports it
		}
		if len(out.relations) > columnsReadAt && !t.view {
			fromColumns[t] = true
			continue
		}
		parts = append(parts, fmt.Sprintf("SELECT %d AS i, cid, name, type, dflt_value IS NOT NULL FROM pragma_table_info(CAST($%d AS VARCHAR))", len(declared), len(declared)+1))
		declared, names = append(declared, t), append(names, t.ref)
	}
	if len(fromColumns) > 0 && !readBaseColumns(ctx, q, baseTables, fromColumns) {
		return nil
	}
	if len(parts) == 0 {
		return out
	}
	cols, err := q.Query(ctx, strings.Join(parts, "\nUNION ALL ")+"\nORDER BY i, cid", names...)
	if err != nil {
		return nil
	}
	for _, r := range cols.Values {
		i, err := asInt(r[0])
		if err != nil || i < 0 || int(i) >= len(declared) {
			return nil
		}
		t := declared[i]
		t.columns = append(t.columns, catalog.Column{Name: asString(r[2]), Type: asString(r[3])})
		t.computed = t.computed || r[4] == true
	}
	return out
}

// columnsReadAt is the number of declared relations past which readPolicyDuckDB reads the
// columns of base tables from duckdb_columns(), one scan of the catalog (4 to 9 ms in a new
// DuckDB instance), rather than from one pragma_table_info per relation in a UNION ALL (about
// 0.2 ms a relation: 32-39 ms for 200). Views are always read through pragma_table_info, which
// binds them (and fails for a view whose table is gone, where duckdb_columns() shows the
// columns it was created with).
var columnsReadAt = 16

// readBaseColumns sets the columns of the tables in want, base tables keyed in byName by
// database, schema and name, from duckdb_columns(), as pragma_table_info gives them (type,
// and whether a default or generated expression makes the table computed). It reports
// whether every table got its columns.
func readBaseColumns(ctx context.Context, q backend.Querier, byName map[[3]string]*table, want map[*table]bool) bool {
	cols, err := q.Query(ctx, `SELECT database_name, schema_name, table_name, column_name, data_type, column_default IS NOT NULL
		FROM duckdb_columns()
		WHERE database_name = current_database() AND schema_name NOT IN ('dpsql', 'information_schema', 'pg_catalog')
		ORDER BY database_name, schema_name, table_name, column_index`)
	if err != nil {
		return false
	}
	for _, r := range cols.Values {
		t := byName[[3]string{asString(r[0]), asString(r[1]), asString(r[2])}]
		if !want[t] {
			continue
		}
		t.columns = append(t.columns, catalog.Column{Name: asString(r[3]), Type: asString(r[4])})
		t.computed = t.computed || r[5] == true
	}
	for t := range want {
		if len(t.columns) == 0 {
			return false
		}
	}
	return true
}
