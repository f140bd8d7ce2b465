package store

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/sqlerr"
)

// table is a relation of the database with its columns in order.
type table struct {
	// name is the relation as analysts name it: "t" in the schema their sessions start in
	// (DuckDB's main, whatever the owner's session set; PostgreSQL's current schema), else
	// "schema.t".
	name string
	// ref is the relation in SQL, each part quoted: "db"."schema"."t" on DuckDB (never a
	// temporary relation of the session), "schema"."t" on PostgreSQL.
	ref     string
	columns []catalog.Column
	// view is set for views (and anything else that is not a base table: reading it as a
	// view costs nothing, missing a view would not be safe).
	view bool
	// computed is set when a column has a default or a generated expression (DuckDB).
	computed bool
	// parquet is set by checkPrivatePlans for a view whose plan reads Parquet files.
	parquet bool
	// dotted is set when name holds a dot that is not the schema's: "a.b" would be read as
	// table b of schema (or database) a (see nameable).
	dotted bool
	// ambiguous lists other relations (their refs) that go by this one's name up to case.
	ambiguous []string
}

// relationNamed is the entry of relation name in schema (of database db on DuckDB, "" on
// PostgreSQL), current when schema is the current schema, without columns.
func relationNamed(db, schema, name string, current, view bool) *table {
	t := &table{name: name, ref: quoteIdent(schema) + "." + quoteIdent(name), view: view,
		dotted: strings.Contains(name, ".") || (!current && strings.Contains(schema, "."))}
	if !current {
		t.name = schema + "." + name
	}
	if db != "" {
		t.ref = quoteIdent(db) + "." + t.ref
	}
	return t
}

// tablesOf reads the relations and columns of the database from information_schema,
// excluding the dpsql schema and the system schemas, in one query. Keys are lower-case names.
//
// A column's type is the one the database's catalog holds, which for a view is fixed when
// the view is created (and which analysts see in SHOW TABLES): DuckDB spells its types with
// the case that matters (ENUM('flu') is not ENUM('FLU'), STRUCT field names), so they are
// kept as they are; PostgreSQL's information_schema spells them in lower case and holds no
// labels (an enum is USER-DEFINED), so they are upper-cased as dpsql always showed them.
func tablesOf(ctx context.Context, q backend.Querier) (map[string]*table, error) {
	query := `SELECT c.table_schema, c.table_name, c.column_name, c.data_type,
			CASE WHEN c.table_schema = current_schema() THEN 1 ELSE 0 END,
			CASE WHEN t.table_type = 'BASE TABLE' THEN 0 ELSE 1 END, '',
			CASE WHEN c.column_default IS NULL THEN 0 ELSE 1 END
		FROM information_schema.columns AS c
			LEFT JOIN information_schema.tables AS t ON t.table_catalog = c.table_catalog
				AND t.table_schema = c.table_schema AND t.table_name = c.table_name
		WHERE c.table_catalog = current_database()
			AND c.table_schema NOT IN ('dpsql', 'information_schema', 'pg_catalog')
		ORDER BY c.table_schema, c.table_name, c.ordinal_position`
	if dialectOf(q) == backend.DuckDB {
		// The same rows from the catalog functions information_schema's views are built on:
		// about 6 ms against 10 ms for every session's start (issue 16, fixed costs).
		query = `SELECT c.schema_name, c.table_name, c.column_name, c.data_type,
			CASE WHEN c.schema_name = 'main' THEN 1 ELSE 0 END,
			CASE WHEN t.table_name IS NULL THEN 1 ELSE 0 END, c.database_name,
			CASE WHEN c.column_default IS NULL THEN 0 ELSE 1 END
		FROM duckdb_columns() AS c
			LEFT JOIN duckdb_tables() AS t ON t.database_name = c.database_name
				AND t.schema_name = c.schema_name AND t.table_name = c.table_name
		WHERE c.database_name = current_database()
			AND c.schema_name NOT IN ('dpsql', 'information_schema', 'pg_catalog')
		ORDER BY c.schema_name, c.table_name, c.column_index`
	}
	rows, err := q.Query(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("store: read columns: %w", err)
	}
	upper := dialectOf(q) == backend.Postgres
	out := map[string]*table{}
	for _, r := range rows.Values {
		schema, name := asString(r[0]), asString(r[1])
		current, err := asInt(r[4])
		if err != nil {
			return nil, err
		}
		view, err := asInt(r[5])
		if err != nil {
			return nil, err
		}
		nt := relationNamed(asString(r[6]), schema, name, current != 0, view != 0)
		key := strings.ToLower(nt.name)
		t := out[key]
		if t == nil {
			t = nt
			out[key] = t
		} else if t.ref != nt.ref {
			// Two relations that go by one name: names that differ only in case (possible
			// in PostgreSQL with quoted names), or "s.t" for table t of schema s and for a
			// table named "s.t". dpsql matches names case-insensitively and names relations
			// schema.name, so it cannot tell which one a policy or a query means. Policies on
			// them are refused (see nameable).
			t.ambiguous = append(t.ambiguous, nt.ref)
			continue
		}
		typ := asString(r[3])
		if upper {
			typ = strings.ToUpper(typ)
		}
		t.columns = append(t.columns, catalog.Column{Name: asString(r[2]), Type: typ})
		if computed, err := asInt(r[7]); err != nil {
			return nil, err
		} else if computed != 0 && dialectOf(q) == backend.DuckDB {
			t.computed = true
		}
	}
	return out, nil
}

// LoadCatalog reads the privacy policy and the columns of the relations it names. Relations
// without a policy are hidden and not part of the catalog. A policy naming a relation that no
// longer exists, or a privacy unit column that no longer exists, is an error that names them.
func LoadCatalog(ctx context.Context, q backend.Querier) (*catalog.Catalog, error) {
	var read *policyRead
	if dialectOf(q) == backend.DuckDB {
		read = readPolicyDuckDB(ctx, q)
	}
	if read == nil {
		var err error
		if read, err = readPolicy(ctx, q); err != nil {
			return nil, err
		}
	}
	tabs, declared := read.tables, read.declared
	var rels []*catalog.Relation
	var missing, badUnit []string
	var planned, privates []*table
	var plannedRels []*catalog.Relation
	var units []string
	for _, r := range read.relations {
		name, kindText, unit := asString(r[0]), asString(r[1]), asString(r[2])
		kind, ok := catalog.ParseKind(kindText)
		if !ok {
			return nil, fmt.Errorf("store: relation %s has unknown kind %q in dpsql.relations", name, kindText)
		}
		t := tabs[strings.ToLower(name)]
		if t == nil {
			missing = append(missing, name)
			continue
		}
		if err := t.nameable(); err != nil {
			return nil, err
		}
		rel := &catalog.Relation{Name: t.name, Kind: kind, Columns: t.columns, View: t.view, Computed: t.computed && !t.view}
		if cols, ok := declared[strings.ToLower(name)]; ok && t.view {
			rel.Columns = declaredStill(cols, t.columns)
		}
		if kind == catalog.Private {
			if t.planned() {
				planned = append(planned, t)
				plannedRels = append(plannedRels, rel)
			}
			c, ok := rel.Column(unit)
			if !ok {
				badUnit = append(badUnit, fmt.Sprintf("%s.%s", name, unit))
				continue
			}
			rel.PrivacyUnit = c.Name
			privates, units = append(privates, t), append(units, c.Name)
		}
		rels = append(rels, rel)
	}
	// A private view the owner replaced after declaring it is checked again: analysts' reads
	// of it must not depend on a format detected from its rows, nor show a stored zero's
	// sign, and neither may a private table's generated columns (checkPrivatePlans).
	if err := checkPrivatePlans(ctx, q, planned...); err != nil {
		return nil, err
	}
	for i, t := range planned {
		plannedRels[i].ReadsParquet = t.parquet
	}
	// And a unit column the owner gave a collation since (checkUnitsExact).
	if err := checkUnitsExact(ctx, q, privates, units); err != nil {
		return nil, err
	}
	if !read.readDomains {
		rows, err := q.Query(ctx, `SELECT relation, column_name, spec FROM dpsql.domains`)
		if err != nil {
			return nil, explain(ctx, q, fmt.Errorf("store: read dpsql.domains: %w", err))
		}
		read.domains = rows.Values
	}
	if err := attachDomains(read.domains, rels); err != nil {
		return nil, err
	}
	if len(missing) > 0 || len(badUnit) > 0 {
		var parts []string
		if len(missing) > 0 {
			parts = append(parts, "relations that do not exist: "+strings.Join(missing, ", "))
		}
		if len(badUnit) > 0 {
			parts = append(parts, "privacy unit columns that do not exist: "+strings.Join(badUnit, ", "))
		}
		hint := "the data owner must recreate them or remove their policy"
		if dialectOf(q) == backend.Postgres && len(missing) > 0 {
			// information_schema hides relations the connected role may not read.
			hint += "; on PostgreSQL, relations the connected role has no SELECT right on look missing too: " +
				"the owner must GRANT SELECT on every declared relation to the engine role (docs/postgres.md)"
		}
		return nil, sqlerr.New(sqlerr.Pos{}, sqlerr.UndefinedTable,
			"the privacy policy names %s", strings.Join(parts, "; ")).WithHint("%s", hint)
	}
	return catalog.New(rels...), nil
}

// resolve finds relation in the database, or returns an UndefinedTable error. On DuckDB the
// owner's session must be in schema main, where analysts' sessions start: dpsql names
// relations as they see them, so "t" declared from another schema would name main.t.
func resolve(ctx context.Context, q backend.Querier, relation string) (*table, error) {
	if dialectOf(q) == backend.DuckDB {
		rows, err := q.Query(ctx, `SELECT current_schema()`)
		if err != nil {
			return nil, fmt.Errorf("store: read the current schema: %w", err)
		}
		if len(rows.Values) == 1 && asString(rows.Values[0][0]) != "main" {
			return nil, sqlerr.New(sqlerr.Pos{}, sqlerr.InvalidName,
				"this session's schema is %q: dpsql names relations as analysts' sessions do, from schema main, so %q would name another relation than DuckDB finds here", asString(rows.Values[0][0]), relation).
				WithHint("SET schema = 'main' first, and name a relation of another schema as schema.name")
		}
	}
	tabs, err := tablesOf(ctx, q)
	if err != nil {
		return nil, err
	}
	t := tabs[strings.ToLower(relation)]
	if t != nil {
		if err := t.nameable(); err != nil {
			return nil, err
		}
	}
	if t == nil {
		names := make([]string, 0, len(tabs))
		for _, t := range tabs {
			names = append(names, t.name)
		}
		sort.Strings(names)
		e := sqlerr.New(sqlerr.Pos{}, sqlerr.UndefinedTable, "relation %q does not exist", relation)
		if len(names) > 0 {
			e.WithHint("existing relations: %s", strings.Join(names, ", "))
		}
		return nil, e
	}
	return t, nil
}

const upsert = `INSERT INTO dpsql.relations (name, kind, privacy_unit) VALUES ($1, $2, $3)
	ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, privacy_unit = excluded.privacy_unit`

// SetPrivate marks relation private with privacyUnit as its privacy unit column, which must
// exist. It replaces any earlier policy of the relation.
func SetPrivate(ctx context.Context, q backend.Querier, relation, privacyUnit string) error {
	if err := requireInit(ctx, q); err != nil {
		return err
	}
	t, err := resolve(ctx, q, relation)
	if err != nil {
		return err
	}
	rel := catalog.Relation{Name: t.name, Columns: t.columns}
	c, ok := rel.Column(privacyUnit)
	if !ok {
		names := make([]string, len(t.columns))
		for i, c := range t.columns {
			names[i] = c.Name
		}
		return sqlerr.New(sqlerr.Pos{}, sqlerr.UndefinedColumn,
			"relation %s has no column %q to be its privacy unit", t.name, privacyUnit).
			WithHint("its columns are: %s", strings.Join(names, ", "))
	}
	if err := checkTypesNamed(ctx, q, t); err != nil {
		return err
	}
	if t.planned() {
		if err := checkPrivatePlans(ctx, q, t); err != nil {
			return err
		}
	}
	if err := checkUnitsExact(ctx, q, []*table{t}, []string{c.Name}); err != nil {
		return err
	}
	if err := q.Exec(ctx, upsert, strings.ToLower(t.name), catalog.Private.String(), c.Name); err != nil {
		return err
	}
	if err := recordColumns(ctx, q, t); err != nil {
		return err
	}
	return BumpPolicy(ctx, q)
}

// checkTypesNamed refuses, on DuckDB, a relation with a column whose type DuckDB names in a
// form it cannot read back: a struct whose fields have no names (STRUCT(UTINYINT, BIGINT), as
// a DuckDB UNION written to Parquet reads back). dpsql names each column's type in the SQL it
// generates (a view's declared types, casts of values), so every analyst query on such a
// relation would fail on a syntax error.
func checkTypesNamed(ctx context.Context, q backend.Querier, t *table) error {
	if dialectOf(q) != backend.DuckDB || len(t.columns) == 0 {
		return nil
	}
	// DuckDB's parser alone (json_serialize_sql binds nothing and reports a syntax error in
	// its answer): a type it parses may still lack casts, which dpsql's casts handle.
	args := make([]any, len(t.columns))
	parses := make([]string, len(t.columns))
	for i, c := range t.columns {
		args[i] = "SELECT CAST(NULL AS " + c.Type + ")"
		parses[i] = fmt.Sprintf("json_extract_string(json_serialize_sql(CAST($%d AS VARCHAR)), '$.error')", i+1)
	}
	rows, err := q.Query(ctx, "SELECT "+strings.Join(parses, ", "), args...)
	if err != nil {
		return fmt.Errorf("store: parse the types of %s's columns: %w", t.name, err)
	}
	if len(rows.Values) != 1 {
		return fmt.Errorf("store: parse the types of %s's columns: %d rows", t.name, len(rows.Values))
	}
	for i, c := range t.columns {
		if asString(rows.Values[0][i]) != "false" {
			return sqlerr.New(sqlerr.Pos{}, sqlerr.FeatureNotSupported,
				"column %s of relation %s has type %s, which DuckDB cannot read back when dpsql names it (a struct whose fields have no names, as a UNION written to Parquet reads back)", c.Name, t.name, c.Type).
				WithHint("select what it holds as columns of their own in a view (struct_extract_at(%s, 2) AS ...), and declare that view", c.Name)
		}
	}
	return nil
}

// SetPublic marks relation public, replacing any earlier policy of it.
func SetPublic(ctx context.Context, q backend.Querier, relation string) error {
	if err := requireInit(ctx, q); err != nil {
		return err
	}
	t, err := resolve(ctx, q, relation)
	if err != nil {
		return err
	}
	if err := q.Exec(ctx, upsert, strings.ToLower(t.name), catalog.Public.String(), nil); err != nil {
		return err
	}
	if err := recordColumns(ctx, q, t); err != nil {
		return err
	}
	return BumpPolicy(ctx, q)
}

// Unset removes relation's policy, hiding it from analysts. It works for relations that no
// longer exist too; a relation without a policy is an error.
func Unset(ctx context.Context, q backend.Querier, relation string) error {
	if err := requireInit(ctx, q); err != nil {
		return err
	}
	key := strings.ToLower(relation)
	rows, err := q.Query(ctx, `SELECT name FROM dpsql.relations WHERE name = $1`, key)
	if err != nil {
		return fmt.Errorf("store: read dpsql.relations: %w", err)
	}
	if len(rows.Values) == 0 {
		return sqlerr.New(sqlerr.Pos{}, sqlerr.UndefinedTable, "relation %q has no privacy policy to remove", relation)
	}
	if err := q.Exec(ctx, `DELETE FROM dpsql.relations WHERE name = $1`, key); err != nil {
		return err
	}
	if err := forgetColumns(ctx, q, key); err != nil {
		return err
	}
	return BumpPolicy(ctx, q)
}

// nameable refuses a relation dpsql cannot name without naming another: one whose name or a
// column's holds a rune case-insensitive comparisons disagree on (catalog.ConfusableRune),
// one whose name holds
// a dot ("a.b" is printed "a"."b", table b of schema or database a, which may be a hidden or
// private relation), or one whose name another relation repeats up to case.
func (t *table) nameable() error {
	if len(t.ambiguous) > 0 {
		return sqlerr.New(sqlerr.Pos{}, sqlerr.AmbiguousColumn,
			"relations %s and %s both go by the name %q (dpsql matches names without regard to case, and a dot separates the schema): dpsql cannot tell them apart", t.ref, t.ambiguous[0], t.name).
			WithHint("the data owner must rename one of them")
	}
	names := []string{t.name}
	for _, c := range t.columns {
		names = append(names, c.Name)
	}
	for _, n := range names {
		if r, bad := catalog.ConfusableRune(n); bad {
			return sqlerr.New(sqlerr.Pos{}, sqlerr.InvalidName,
				"relation %s has the name %q, which holds %q (%U), a character whose upper and lower cases do not map back to it: dpsql and the database could match it to different names", t.ref, n, r, r).
				WithHint("the data owner must rename it without that character and declare the relation again")
		}
	}
	if t.dotted {
		return sqlerr.New(sqlerr.Pos{}, sqlerr.InvalidName,
			"relation %s has a dot in its name (or its schema's): dpsql names relations schema.name, so %q would read another relation", t.ref, t.name).
			WithHint("the data owner must rename it, or its schema, without a dot (ALTER TABLE ... RENAME TO ...) and declare it again")
	}
	return nil
}

// attachDomains attaches the owner's public domains (rows of dpsql.domains: relation,
// column, spec) to the relations they belong to.
func attachDomains(domains [][]any, rels []*catalog.Relation) error {
	byName := map[string]*catalog.Relation{}
	for _, r := range rels {
		byName[strings.ToLower(r.Name)] = r
	}
	for _, r := range domains {
		rel := byName[asString(r[0])]
		if rel == nil {
			continue // the relation is hidden: its domains are not used
		}
		c, ok := rel.Column(asString(r[1]))
		if !ok {
			return sqlerr.New(sqlerr.Pos{}, sqlerr.UndefinedColumn,
				"the public domain of %s.%s names a column that no longer exists", rel.Name, asString(r[1])).
				WithHint("the data owner must remove it: ALTER TABLE %s ALTER COLUMN %s SET OPTIONS(public_domain = NULL)", rel.Name, asString(r[1]))
		}
		if rel.Domains == nil {
			rel.Domains = map[string]string{}
		}
		rel.Domains[catalog.NameKey(c.Name)] = asString(r[2])
	}
	return nil
}

// SetDomain declares the public domain of a relation's column: spec is the SQL text of the
// domain (a list of values, a range or a public column; the engine validates it). An empty
// spec removes the declaration.
func SetDomain(ctx context.Context, q backend.Querier, relation, column, spec string) error {
	if err := requireInit(ctx, q); err != nil {
		return err
	}
	t, err := resolve(ctx, q, relation)
	if err != nil {
		return err
	}
	rel := catalog.Relation{Name: t.name, Columns: t.columns}
	c, ok := rel.Column(column)
	if !ok {
		return sqlerr.New(sqlerr.Pos{}, sqlerr.UndefinedColumn, "relation %s has no column %q", t.name, column)
	}
	key := strings.ToLower(t.name)
	if err := q.Exec(ctx, `DELETE FROM dpsql.domains WHERE relation = $1 AND column_name = $2`, key, c.Name); err != nil {
		return err
	}
	if spec != "" {
		if err := q.Exec(ctx, `INSERT INTO dpsql.domains (relation, column_name, spec) VALUES ($1, $2, $3)`, key, c.Name, spec); err != nil {
			return err
		}
	}
	return BumpPolicy(ctx, q)
}
