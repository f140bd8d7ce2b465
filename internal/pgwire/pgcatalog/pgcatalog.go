package pgcatalog

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/engine"
)

// ErrRefused is wrapped by the error of a query that Query will not run: not one SELECT,
// naming something that is not part of the catalog model, or calling a function that reads
// outside the model.
var ErrRefused = errors.New("pgcatalog: refused")

// Timeout bounds one catalog query (a client's introspection takes milliseconds).
const Timeout = 5 * time.Second

// Query answers a query over pg_catalog / information_schema (psql's backslash commands, JDBC's
// DatabaseMetaData, BI tools' introspection) from a model of the relations rels, never from the
// real database: a client learns names, columns and types of what it may name, nothing else.
func Query(ctx context.Context, sql string, rels []*catalog.Relation) (*engine.Result, error) {
	text, err := rewrite(sql)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	// The model of a relation set is built once (tens of milliseconds, longer under load);
	// the timeout bounds the query.
	m, err := models.acquire(ctx, rels)
	if err != nil {
		return nil, err
	}
	defer models.release(m)
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	names, err := check(ctx, m.db, text)
	if err != nil {
		return nil, err
	}
	rows, err := m.db.Query(ctx, text)
	if err != nil {
		return nil, fmt.Errorf("pgcatalog: %w", err)
	}
	res := &engine.Result{Statement: sql, Rows: rows.Values, Tag: fmt.Sprintf("SELECT %d", len(rows.Values))}
	if res.Rows == nil {
		res.Rows = [][]any{}
	}
	for i, c := range rows.Columns {
		if names != nil && i < len(names) {
			c = names[i]
		}
		res.Columns = append(res.Columns, engine.Column{Name: c, Type: rows.Types[i]})
	}
	return res, nil
}

// IsCatalogQuery reports whether sql reads pg_catalog or information_schema (or calls
// catalog functions such as pg_catalog.pg_table_is_visible, format_type, pg_get_userbyid,
// obj_description, current_schemas, ...), i.e. whether Query should answer it.
func IsCatalogQuery(sql string) bool {
	toks, err := lex(sql)
	if err != nil {
		return false
	}
	var sig []token
	for _, t := range toks {
		if t.kind != tSpace {
			sig = append(sig, t)
		}
	}
	for i, t := range sig {
		n := t.name()
		if n == "" {
			continue
		}
		call := i+1 < len(sig) && sig[i+1].is("(")
		switch {
		case n == "pg_catalog" || n == "information_schema":
			return true
		case strings.HasPrefix(n, "pg_") && (call || catNames[n]):
			return true
		case call && funcNames[n]:
			return true
		case t.kind == tIdent && (n == "current_schema" || n == "current_catalog"):
			return true
		}
	}
	return false
}

// tableFuncs are the table functions a catalog query may call.
var tableFuncs = map[string]bool{"generate_series": true, "range": true, "unnest": true}

// deniedFuncs are DuckDB functions a catalog query may not call: they read settings, the
// environment, files or the database's own catalog rather than the model.
var deniedFuncs = map[string]bool{
	"current_setting": true, "getenv": true, "which_secret": true, "query": true, "query_table": true,
	"sniff_csv": true, "glob": true, "read_text": true, "read_blob": true, "nextval": true, "currval": true,
	"setseed": true, "current_database": true, "current_schema": true, "current_schemas": true,
	"version": true, "current_catalog": true, "current_query": true, "json_serialize_sql": true,
	"json_deserialize_sql": true, "json_serialize_plan": true, "json_execute_serialized_sql": true,
	"get_current_timestamp": false,
}

func denied(name string) bool {
	n := strings.ToLower(name)
	for _, p := range []string{"duckdb_", "pragma_", "read_", "parquet_", "iceberg_", "delta_", "sqlite_", "postgres_",
		"mysql_", "icu_", "json_execute", "enable_", "disable_", "checkpoint", "force_"} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return deniedFuncs[n]
}

// check parses text with DuckDB's parser (json_serialize_sql, which serialises SELECT
// statements only) and refuses it unless it is exactly one SELECT that reads only the model's
// tables, calls only allowed table functions, and no function that reads outside the model.
// It returns PostgreSQL's names for the result columns (nil when the select list has a star).
func check(ctx context.Context, db *duckdb.DB, text string) ([]string, error) {
	rows, err := db.Query(ctx, "SELECT json_serialize_sql($1::VARCHAR)::VARCHAR", text)
	if err != nil {
		return nil, fmt.Errorf("pgcatalog: %w", err)
	}
	if len(rows.Values) != 1 {
		return nil, fmt.Errorf("%w: cannot parse", ErrRefused)
	}
	s, _ := rows.Values[0][0].(string)
	var tree struct {
		Error      bool
		Message    string `json:"error_message"`
		Statements []struct {
			Node map[string]any
		}
	}
	if err := json.Unmarshal([]byte(s), &tree); err != nil {
		return nil, fmt.Errorf("pgcatalog: %w", err)
	}
	if tree.Error {
		return nil, fmt.Errorf("%w: only one SELECT over pg_catalog or information_schema is answered: %s", ErrRefused, tree.Message)
	}
	if len(tree.Statements) != 1 {
		return nil, fmt.Errorf("%w: the text holds %d statements; only one SELECT is answered", ErrRefused, len(tree.Statements))
	}
	ctes := map[string]bool{}
	collectCTEs(tree.Statements[0].Node, ctes)
	if err := vet(tree.Statements[0].Node, ctes); err != nil {
		return nil, err
	}
	return columnNames(tree.Statements[0].Node), nil
}

func collectCTEs(v any, ctes map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		if cm, ok := v["cte_map"].(map[string]any); ok {
			if entries, ok := cm["map"].([]any); ok {
				for _, e := range entries {
					if em, ok := e.(map[string]any); ok {
						if k, ok := em["key"].(string); ok {
							ctes[strings.ToLower(k)] = true
						}
					}
				}
			}
		}
		for _, c := range v {
			collectCTEs(c, ctes)
		}
	case []any:
		for _, c := range v {
			collectCTEs(c, ctes)
		}
	}
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// vet walks the parse tree and refuses what a catalog query may not do.
func vet(v any, ctes map[string]bool) error {
	switch v := v.(type) {
	case map[string]any:
		switch str(v, "type") {
		case "BASE_TABLE":
			cat, schema, table := str(v, "catalog_name"), strings.ToLower(str(v, "schema_name")), strings.ToLower(str(v, "table_name"))
			ok := cat == "" && (schema == catSchema && catNames[table] || schema == infoSchema && infoNames[table] ||
				schema == "" && (ctes[table] || catNames[table]))
			if !ok {
				name := table
				if schema != "" {
					name = schema + "." + table
				}
				return fmt.Errorf("%w: %q is not a pg_catalog or information_schema table; a catalog query reads only those", ErrRefused, name)
			}
		case "TABLE_FUNCTION":
			f, _ := v["function"].(map[string]any)
			if f == nil || str(f, "schema") != "" || str(f, "catalog") != "" || !tableFuncs[strings.ToLower(str(f, "function_name"))] {
				return fmt.Errorf("%w: table function %s in a catalog query", ErrRefused, str(f, "function_name"))
			}
		case "SHOW_REF", "COLUMN_DATA_REF", "DELIM_GET":
			return fmt.Errorf("%w: %s in a catalog query", ErrRefused, str(v, "type"))
		}
		if str(v, "class") == "FUNCTION" {
			name, schema := strings.ToLower(str(v, "function_name")), strings.ToLower(str(v, "schema"))
			switch {
			case str(v, "catalog") != "":
				return fmt.Errorf("%w: function %s.%s", ErrRefused, str(v, "catalog"), name)
			case schema == funcSchema && funcNames[name], schema == infoSchema && infoFuncNames[name]:
			case schema == "" && !denied(name):
			default:
				return fmt.Errorf("%w: function %s is not answered in a catalog query", ErrRefused, name)
			}
		}
		for _, c := range v {
			if err := vet(c, ctes); err != nil {
				return err
			}
		}
	case []any:
		for _, c := range v {
			if err := vet(c, ctes); err != nil {
				return err
			}
		}
	}
	return nil
}

// columnNames names the result columns as PostgreSQL would (aliases, column names, function
// names, "?column?"), from the first SELECT of the statement; nil when it has a star.
func columnNames(node map[string]any) []string {
	for str(node, "type") == "SET_OPERATION_NODE" {
		l, ok := node["left"].(map[string]any)
		if !ok {
			return nil
		}
		node = l
	}
	list, ok := node["select_list"].([]any)
	if !ok {
		return nil
	}
	var names []string
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok || str(m, "class") == "STAR" {
			return nil
		}
		names = append(names, exprName(m))
	}
	return names
}

func exprName(m map[string]any) string {
	if a := str(m, "alias"); a != "" {
		return a
	}
	switch str(m, "class") {
	case "COLUMN_REF":
		if cs, ok := m["column_names"].([]any); ok && len(cs) > 0 {
			s, _ := cs[len(cs)-1].(string)
			return s
		}
	case "FUNCTION":
		n := str(m, "function_name")
		switch n {
		case "regclass_out", "regnamespace_out", "regclass_in", "regtype_in", "regnamespace_in":
			if cs, ok := m["children"].([]any); ok && len(cs) == 1 {
				if c, ok := cs[0].(map[string]any); ok {
					return exprName(c)
				}
			}
		}
		return n
	case "CAST":
		if c, ok := m["child"].(map[string]any); ok {
			if n := exprName(c); n != "?column?" {
				return n
			}
		}
		if t, ok := m["cast_type"].(map[string]any); ok {
			return pgTypeName(str(t, "id"))
		}
	case "CASE":
		return "case"
	case "OPERATOR":
		if str(m, "type") == "OPERATOR_COALESCE" {
			return "coalesce"
		}
	case "SUBQUERY":
		switch str(m, "subquery_type") {
		case "EXISTS":
			return "exists"
		case "SCALAR":
		default:
			return "?column?"
		}
		if q, ok := m["subquery"].(map[string]any); ok {
			if n, ok := q["node"].(map[string]any); ok {
				if names := columnNames(n); len(names) == 1 {
					return names[0]
				}
			}
		}
	}
	return "?column?"
}

func pgTypeName(duck string) string {
	switch duck {
	case "VARCHAR":
		return "text"
	case "BIGINT":
		return "int8"
	case "INTEGER":
		return "int4"
	case "SMALLINT":
		return "int2"
	case "BOOLEAN":
		return "bool"
	case "DOUBLE":
		return "float8"
	case "FLOAT":
		return "float4"
	}
	return strings.ToLower(duck)
}

// modelCacheSize bounds how many model databases are kept (one per distinct relation set).
const modelCacheSize = 16

// model is a private in-memory DuckDB holding the model of one relation set, locked down
// (analyst mode: no external access, configuration locked, one SELECT per query, read-only
// transactions).
type model struct {
	key     string
	db      *duckdb.DB
	err     error
	ready   chan struct{}
	refs    int
	evicted bool
	elem    *list.Element
}

type cache struct {
	mu    sync.Mutex
	byKey map[string]*model
	lru   *list.List // front: most recently used
}

// builds bounds the models built at once.
var builds = make(chan struct{}, 2)

var models = &cache{byKey: map[string]*model{}, lru: list.New()}

// relsKey identifies a relation set by what the model shows of it.
func relsKey(rels []*catalog.Relation) string {
	var b strings.Builder
	for _, r := range catalog.New(rels...).Relations() {
		fmt.Fprintf(&b, "%q %d %q", r.Name, r.Kind, r.PrivacyUnit)
		for _, c := range r.Columns {
			fmt.Fprintf(&b, " %q %q", c.Name, c.Type)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func (c *cache) acquire(ctx context.Context, rels []*catalog.Relation) (*model, error) {
	key := relsKey(rels)
	c.mu.Lock()
	m := c.byKey[key]
	build := m == nil
	if build {
		m = &model{key: key, ready: make(chan struct{})}
		m.elem = c.lru.PushFront(m)
		c.byKey[key] = m
		for c.lru.Len() > modelCacheSize {
			old := c.lru.Remove(c.lru.Back()).(*model)
			delete(c.byKey, old.key)
			old.evicted = true
			if old.refs == 0 && old.db != nil {
				old.db.Close()
			}
		}
	} else if !m.evicted {
		c.lru.MoveToFront(m.elem)
	}
	m.refs++
	c.mu.Unlock()
	if build {
		// Builds take turns: many new relation sets at once would otherwise share two cores
		// and all be slow.
		builds <- struct{}{}
		m.db, m.err = newModel(context.WithoutCancel(ctx), rels)
		<-builds
		close(m.ready)
	}
	select {
	case <-m.ready:
	case <-ctx.Done():
		c.release(m)
		return nil, ctx.Err()
	}
	if m.err != nil {
		c.mu.Lock()
		if c.byKey[key] == m {
			delete(c.byKey, key)
			c.lru.Remove(m.elem)
			m.evicted = true
		}
		c.mu.Unlock()
		c.release(m)
		return nil, m.err
	}
	return m, nil
}

func (c *cache) release(m *model) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m.refs--
	if m.evicted && m.refs == 0 && m.db != nil {
		m.db.Close()
		m.db = nil
	}
}

// newModel opens a private in-memory DuckDB (never the data's database), fills it with the
// model of rels and locks it down.
func newModel(ctx context.Context, rels []*catalog.Relation) (*duckdb.DB, error) {
	db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner, Threads: 1, MemoryLimit: "128MB"})
	if err != nil {
		return nil, fmt.Errorf("pgcatalog: %w", err)
	}
	stmts := append(modelSQL(rels), "SET search_path = '"+catSchema+",main'")
	for _, s := range stmts {
		if err := db.Exec(ctx, s); err != nil {
			return nil, errors.Join(fmt.Errorf("pgcatalog: building the model: %s: %w", firstLine(s), err), db.Close())
		}
	}
	if err := db.BecomeAnalyst(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("pgcatalog: %w", err), db.Close())
	}
	return db, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	if len(s) > 120 {
		return s[:120]
	}
	return s
}
