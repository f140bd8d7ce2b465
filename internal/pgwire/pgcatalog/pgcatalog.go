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
	"github.com/dpsql/dpsql/sqlerr"
)

// ErrRefused is wrapped by the error of a query that Query will not run: not one SELECT,
// naming something that is not part of the catalog model, or calling a function that reads
// outside the model.
var ErrRefused = errors.New("pgcatalog: refused")

// Timeout bounds one catalog query (a client's introspection takes milliseconds).
const Timeout = 5 * time.Second

// Bounds of a catalog query, which costs no budget: the rows and the bytes of result text it
// may return (a larger result is refused, never cut), and how many run at once server-wide
// (each holds its result, converted to Go values, in memory).
const (
	MaxRows       = 10000
	MaxBytes      = 8 << 20
	MaxConcurrent = 8
)

// ErrTooLarge is wrapped by the error of a query whose result exceeds MaxRows or MaxBytes.
var ErrTooLarge = errors.New("catalog query result too large")

// running holds a token per catalog query being run.
var running = make(chan struct{}, MaxConcurrent)

// userError words Query's errors for the client, with a SQLSTATE: a catalog query the
// emulation does not answer (0A000), a result too large (54000), a query that ran out of time
// (57014; the caller's own cancellation is left for the caller to word). Everything here comes
// from the client's text and the model, never from data.
func userError(ctx context.Context, err error) error {
	switch _, isSQL := sqlerr.As(err); {
	case err == nil || isSQL || ctx.Err() != nil:
		return err
	case errors.Is(err, ErrTooLarge):
		return &sqlerr.Error{Code: "54000", Msg: err.Error(), Cause: err,
			Hint: "narrow the catalog query (a WHERE on the relation's name)"}
	case errors.Is(err, context.DeadlineExceeded):
		return &sqlerr.Error{Code: sqlerr.QueryCanceled, Cause: err,
			Msg: fmt.Sprintf("canceling catalog query: catalog queries run at most %v", Timeout)}
	}
	return &sqlerr.Error{Code: sqlerr.FeatureNotSupported, Cause: err,
		Msg:  "this catalog query is not answered: " + clientNames.Replace(strings.TrimPrefix(err.Error(), "pgcatalog: ")),
		Hint: "dpsql serve answers the catalog queries of psql, JDBC and information_schema from a model of the relations you may name; SHOW TABLES lists them"}
}

// clientNames puts back the schema names a client wrote where the rewrite's own ones show in
// an error: the model's pg_catalog is schema pgcat, its information_schema pginfo.
var clientNames = strings.NewReplacer(catSchema+".", "pg_catalog.", catSchema+" .", "pg_catalog .",
	infoSchema+".", "information_schema.", infoSchema+" .", "information_schema .")

// Query answers a query over pg_catalog / information_schema (psql's backslash commands, JDBC's
// DatabaseMetaData, BI tools' introspection) from a model of the relations rels, never from the
// real database: a client learns names, columns and types of what it may name, nothing else.
func Query(ctx context.Context, sql string, rels []*catalog.Relation) (res *engine.Result, err error) {
	defer func() { err = userError(ctx, err) }()
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
	select {
	case running <- struct{}{}:
		defer func() { <-running }()
	case <-ctx.Done():
		return nil, fmt.Errorf("pgcatalog: waiting for a turn: %w", ctx.Err())
	}
	// A context of its own: the deferred userError must see the caller's, not this one,
	// which is cancelled by the time it runs.
	qctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	names, err := check(qctx, m.db, text)
	if err != nil {
		return nil, err
	}
	n, size := 0, 0
	rows, err := m.db.QueryEach(qctx, func(row []any) error {
		n++
		for _, v := range row {
			size += valueSize(v)
		}
		if n > MaxRows || size > MaxBytes {
			return fmt.Errorf("%w (at most %d rows and %d MiB)", ErrTooLarge, MaxRows, MaxBytes>>20)
		}
		return nil
	}, text)
	if err != nil {
		return nil, fmt.Errorf("pgcatalog: %w", err)
	}
	res = &engine.Result{Statement: sql, Rows: rows.Values, Tag: fmt.Sprintf("SELECT %d", len(rows.Values))}
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

// valueSize approximates the bytes of v in a result's text: strings and blobs by their length,
// lists and structs by their elements, anything else as a number.
func valueSize(v any) int {
	switch v := v.(type) {
	case string:
		return len(v) + 1
	case []byte:
		return 2*len(v) + 3
	case []any:
		n := 2
		for _, e := range v {
			n += valueSize(e) + 1
		}
		return n
	case map[string]any:
		n := 2
		for k, e := range v {
			n += len(k) + valueSize(e) + 3
		}
		return n
	}
	return 8
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

// allowedFuncs are the DuckDB functions (scalar, aggregate and window) a catalog query may
// call besides the model's own (schema pgfn, pginfo): those the captured client queries of
// testdata use (TestAllowedFuncsCoverTestdata lists them) and plain helpers whose result is no
// larger than their arguments, or than the rows they aggregate. Anything that reads outside
// the model (settings, files, DuckDB's catalog) or whose output size an argument sets (repeat,
// lpad, format widths, range, list_resize, ...) is not here.
var allowedFuncs = map[string]bool{}

func init() {
	for _, f := range strings.Fields(`
		+ - * / // % || ~~ !~~ ~~* !~~* ~~~ !~~~ ^@
		nullif ifnull coalesce greatest least
		lower upper lcase ucase length char_length character_length octet_length strlen len
		substring substr left right concat concat_ws position strpos instr contains
		starts_with ends_with prefix suffix trim ltrim rtrim btrim replace
		regexp_full_match regexp_matches like_escape ilike_escape not_like_escape not_ilike_escape
		abs sign round floor ceil ceiling to_hex
		list_value array_to_string array_length array_extract list_extract list_contains
		array_contains list_has array_has list_position array_position
		count count_star min max sum avg bool_or bool_and any_value first last string_agg array_agg list
		row_number rank dense_rank unnest
		typeof
	`) {
		allowedFuncs[f] = true
	}
}

// maxSeries bounds the rows a generate_series call of a catalog query may produce.
const maxSeries = 10000

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
				return fmt.Errorf("%w: %q is not a pg_catalog or information_schema table that dpsql serve answers; a catalog query reads only those", ErrRefused, name)
			}
		case "TABLE_FUNCTION":
			if err := vetTableFunc(v, ctes); err != nil {
				return err
			}
			// The function node itself is vetted here, its arguments and alias below.
			for k, c := range v {
				if k == "function" {
					f, _ := c.(map[string]any)
					c = f["children"]
				}
				if err := vet(c, ctes); err != nil {
					return err
				}
			}
			return nil
		case "RECURSIVE_CTE_NODE":
			// A recursive CTE grows rows or strings without a bound the query text sets.
			return fmt.Errorf("%w: WITH RECURSIVE in a catalog query", ErrRefused)
		case "SHOW_REF", "COLUMN_DATA_REF", "DELIM_GET":
			return fmt.Errorf("%w: %s in a catalog query", ErrRefused, str(v, "type"))
		}
		switch str(v, "class") {
		case "FUNCTION", "WINDOW":
			if err := vetFunc(v); err != nil {
				return err
			}
		case "LAMBDA":
			return fmt.Errorf("%w: lambda in a catalog query", ErrRefused)
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

// vetFunc refuses a call of a function that is neither the model's nor allowed.
func vetFunc(v map[string]any) error {
	name, schema := strings.ToLower(str(v, "function_name")), strings.ToLower(str(v, "schema"))
	switch {
	case str(v, "catalog") != "":
		return fmt.Errorf("%w: function %s.%s", ErrRefused, str(v, "catalog"), name)
	case schema == funcSchema && funcNames[name], schema == infoSchema && infoFuncNames[name]:
		return nil
	case schema != "" || !allowedFuncs[name]:
		return fmt.Errorf("%w: function %s is not answered in a catalog query", ErrRefused, name)
	case name == "replace":
		// replace('pg_temp_', 'pg_toast_temp_'): constant patterns only, and not nested, so
		// that replacing grows a string at most once, by a factor the text sets.
		args, _ := v["children"].([]any)
		if len(args) != 3 || !isConstant(args[1]) || !isConstant(args[2]) || calls(args[0], "replace") {
			return fmt.Errorf("%w: replace in a catalog query takes constant patterns and is not nested", ErrRefused)
		}
	}
	return nil
}

// vetTableFunc allows generate_series(a, b) whose bounds are small constants or the length
// of a model list (array_upper(x, 1), as psql and pgjdbc call it), and unnest.
func vetTableFunc(v map[string]any, ctes map[string]bool) error {
	f, _ := v["function"].(map[string]any)
	name := strings.ToLower(str(f, "function_name"))
	if f == nil || str(f, "class") != "FUNCTION" || str(f, "schema") != "" || str(f, "catalog") != "" {
		return fmt.Errorf("%w: table function %s in a catalog query", ErrRefused, name)
	}
	args, _ := f["children"].([]any)
	switch name {
	case "unnest":
		if len(args) == 1 {
			return nil
		}
	case "generate_series":
		if len(args) == 2 && seriesBound(args[0]) && seriesBound(args[1]) {
			return nil
		}
		return fmt.Errorf("%w: generate_series in a catalog query takes two bounds within ±%d or array_upper(list, 1)", ErrRefused, maxSeries/2)
	}
	return fmt.Errorf("%w: table function %s in a catalog query", ErrRefused, name)
}

// seriesBound: an integer constant within ±maxSeries/2, or pgfn.array_upper(x, 1) of a column
// or current_schemas (a model list: a few elements).
func seriesBound(a any) bool {
	m, _ := a.(map[string]any)
	if n, ok := constInt(m); ok {
		return n >= -maxSeries/2 && n <= maxSeries/2
	}
	if str(m, "class") != "FUNCTION" || str(m, "schema") != funcSchema || str(m, "function_name") != "array_upper" {
		return false
	}
	args, _ := m["children"].([]any)
	if len(args) != 2 {
		return false
	}
	if n, ok := constInt(args[1]); !ok || n != 1 {
		return false
	}
	x, _ := args[0].(map[string]any)
	for str(x, "class") == "CAST" {
		x, _ = x["child"].(map[string]any)
	}
	switch str(x, "class") {
	case "COLUMN_REF":
		return true
	case "FUNCTION":
		return str(x, "schema") == funcSchema && str(x, "function_name") == "current_schemas"
	}
	return false
}

func constInt(a any) (int64, bool) {
	m, _ := a.(map[string]any)
	if str(m, "class") != "CONSTANT" {
		return 0, false
	}
	val, _ := m["value"].(map[string]any)
	n, ok := val["value"].(float64)
	if !ok || n != float64(int64(n)) {
		return 0, false
	}
	return int64(n), true
}

func isConstant(a any) bool {
	m, _ := a.(map[string]any)
	return str(m, "class") == "CONSTANT"
}

// calls reports whether the tree v calls the function name.
func calls(v any, name string) bool {
	switch v := v.(type) {
	case map[string]any:
		if str(v, "class") == "FUNCTION" && strings.EqualFold(str(v, "function_name"), name) {
			return true
		}
		for _, c := range v {
			if calls(c, name) {
				return true
			}
		}
	case []any:
		for _, c := range v {
			if calls(c, name) {
				return true
			}
		}
	}
	return false
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
