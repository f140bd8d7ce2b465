package store

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/sqlerr"
)

// TestPolicyReadPathsAgree: DuckDB's short read of the policy (two statements, columns from
// pragma_table_info) finds what the statement-by-statement read finds (columns from
// duckdb_columns()) for every relation a policy names: base tables and views, in the current
// schema and another, names with spaces and single quotes, every kind of type, a
// replaced view, a temporary table shadowing a declared one, public domains and the stored
// columns of declared views. A name holding a double quote, which pragma_table_info's name
// parser drops, takes the long read.
func TestPolicyReadPathsAgree(t *testing.T) {
	ctx := context.Background()
	d := ownerInMemory(t)
	run := func(stmts ...string) {
		t.Helper()
		for _, s := range stmts {
			if err := d.Exec(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	run(
		`CREATE TABLE base (uid BIGINT, k VARCHAR, amount DECIMAL(10,2), e ENUM('flu', 'FLU'), s STRUCT("A b" INTEGER, c VARCHAR[]),
			m MAP(VARCHAR, INTEGER), t VARCHAR COLLATE NOCASE, u UNION(n INTEGER, s VARCHAR), arr INTEGER[3], ts TIMESTAMPTZ)`,
		`CREATE VIEW v AS SELECT uid, k, amount FROM base`,
		`CREATE SCHEMA "s p"`,
		`CREATE TABLE "s p"."it's here" (uid INTEGER, "b c" DOUBLE)`,
		`CREATE VIEW "s p".w AS SELECT uid, "b c" * 2 AS twice FROM "s p"."it's here"`,
		`CREATE TABLE items (item VARCHAR)`,
		`CREATE TABLE hidden (x INTEGER)`,
	)
	for _, p := range [][2]string{{"base", "uid"}, {"v", "uid"}, {`s p.it's here`, "uid"}, {"s p.w", "uid"}} {
		if err := SetPrivate(ctx, d, p[0], p[1]); err != nil {
			t.Fatalf("SetPrivate(%s): %v", p[0], err)
		}
	}
	if err := SetPublic(ctx, d, "items"); err != nil {
		t.Fatal(err)
	}
	if err := SetDomain(ctx, d, "base", "k", "('a', 'b')"); err != nil {
		t.Fatal(err)
	}
	// The view replaced since it was declared (its stored columns stay), and a temporary table
	// named like a declared one (the owner's session sees it first; the catalog must not).
	run(`CREATE OR REPLACE VIEW v AS SELECT uid, k, CAST(amount AS DOUBLE) AS amount, 1 AS extra FROM base`,
		`CREATE TEMP TABLE items (other INTEGER)`)

	compare := func(t *testing.T) {
		t.Helper()
		short := readPolicyDuckDB(ctx, d)
		if short == nil {
			t.Fatal("the short read gave up")
		}
		long, err := readPolicy(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(short.relations, long.relations) {
			t.Errorf("relations: short %v, long %v", short.relations, long.relations)
		}
		if !reflect.DeepEqual(short.declared, long.declared) {
			t.Errorf("declared view columns: short %v, long %v", short.declared, long.declared)
		}
		for _, r := range long.relations {
			key := strings.ToLower(asString(r[0]))
			if s, l := short.tables[key], long.tables[key]; !reflect.DeepEqual(s, l) {
				t.Errorf("%s: short %+v, long %+v", key, s, l)
			}
		}
		var domains [][]any
		rows, err := d.Query(ctx, `SELECT relation, column_name, spec FROM dpsql.domains`)
		if err != nil {
			t.Fatal(err)
		}
		domains = rows.Values
		if !reflect.DeepEqual(short.domains, domains) || !short.readDomains {
			t.Errorf("domains: short %v, want %v", short.domains, domains)
		}
	}
	compare(t)
	short := readPolicyDuckDB(ctx, d)
	if got := len(short.tables[`s p.it's here`].columns); got != 2 {
		t.Errorf("the quoted relation has %d columns, want 2", got)
	}
	if got := short.tables["items"].columns; len(got) != 1 || got[0].Name != "item" {
		t.Errorf("items: %v, want the table's column, not the temporary table's", got)
	}

	// A relation the policy names that no longer exists: both reads leave it out.
	run(`DROP VIEW "s p".w`)
	compare(t)

	// A double quote in a name: the short read gives up, the catalog still loads.
	run(`CREATE TABLE "we""ird" (uid INTEGER)`)
	if err := SetPrivate(ctx, d, `we"ird`, "uid"); err != nil {
		t.Fatal(err)
	}
	if readPolicyDuckDB(ctx, d) != nil {
		t.Error("the short read went on with a double quote in a name")
	}
	run(`CREATE VIEW "s p".w AS SELECT uid FROM "s p"."it's here"`)
	cat, err := LoadCatalog(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if rel, ok := cat.Lookup(`we"ird`); !ok || len(rel.Columns) != 1 {
		t.Errorf("we\"ird: %+v, %v", rel, ok)
	}
}

// TestDottedNamesRefused: dpsql names relations schema.name and prints "a.b" as "a"."b",
// table b of schema (or database) a: a relation whose name (or whose schema's, outside the
// current schema) holds a dot cannot be declared, and a declared relation that another
// relation shadows that way (table t of schema s, and a table named "s.t") stops the catalog
// from loading. A privacy unit column with a dot in its name is quoted whole and checked.
func TestDottedNamesRefused(t *testing.T) {
	ctx := context.Background()
	d := ownerInMemory(t)
	for _, s := range []string{
		`CREATE TABLE "a.b" (uid INTEGER, x INTEGER)`,
		`CREATE SCHEMA "s.x"`,
		`CREATE TABLE "s.x".v (uid INTEGER)`,
		`CREATE TABLE ab ("u.id" INTEGER, x INTEGER)`,
		`CREATE TABLE cd ("u.id" VARCHAR COLLATE NOCASE, x INTEGER)`,
		`CREATE SCHEMA s`,
		`CREATE TABLE s.t (uid INTEGER, secret VARCHAR)`,
	} {
		if err := d.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	code := func(err error) string {
		if se, ok := sqlerr.As(err); ok {
			return se.Code + " " + se.Rule
		}
		return fmt.Sprint(err)
	}
	for _, r := range []string{"a.b", "s.x.v"} {
		if err := SetPrivate(ctx, d, r, "uid"); code(err) != sqlerr.InvalidName+" " {
			t.Errorf("SetPrivate(%s): %v, want %s", r, err, sqlerr.InvalidName)
		}
		if err := SetPublic(ctx, d, r); code(err) != sqlerr.InvalidName+" " {
			t.Errorf("SetPublic(%s): %v, want %s", r, err, sqlerr.InvalidName)
		}
	}
	if err := SetPrivate(ctx, d, "ab", "u.id"); err != nil {
		t.Errorf("SetPrivate(ab, u.id): %v", err)
	}
	if err := SetPrivate(ctx, d, "cd", "u.id"); code(err) != sqlerr.PrivacyViolation+" "+RuleUnitCollation {
		t.Errorf("SetPrivate of a collated unit u.id: %v, want the rule %s", err, RuleUnitCollation)
	}
	// s.t declared, then a table named "s.t" made: both go by s.t.
	if err := SetPrivate(ctx, d, "s.t", "uid"); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCatalog(ctx, d); err != nil {
		t.Fatalf("LoadCatalog: %v", err)
	}
	if err := d.Exec(ctx, `CREATE TABLE "s.t" (code VARCHAR)`); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCatalog(ctx, d); code(err) != sqlerr.AmbiguousColumn+" " {
		t.Errorf("LoadCatalog with s.t and \"s.t\": %v, want %s", err, sqlerr.AmbiguousColumn)
	}
	if err := SetPublic(ctx, d, "s.t"); code(err) != sqlerr.AmbiguousColumn+" " {
		t.Errorf("SetPublic(s.t) with s.t and \"s.t\": %v, want %s", err, sqlerr.AmbiguousColumn)
	}
}

// ownerInMemory is an owner's in-memory database with dpsql's tables.
func ownerInMemory(t *testing.T) *duckdb.DB {
	t.Helper()
	d, err := duckdb.Open(context.Background(), "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := Init(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	return d
}

// planCounter counts the plans a Querier is asked to serialize, and the statements that read
// duckdb_columns().
type planCounter struct {
	backend.Querier
	plans, columnReads int
}

func (p *planCounter) Query(ctx context.Context, query string, args ...any) (*backend.Rows, error) {
	p.plans += strings.Count(query, "json_serialize_plan(")
	p.columnReads += strings.Count(query, "duckdb_columns()")
	return p.Querier.Query(ctx, query, args...)
}

// Only a text unit can be compared by a collation: loading the catalog asks DuckDB for the
// plan of the units of text type only, and still refuses a collated one.
func TestUnitPlansForTextOnly(t *testing.T) {
	ctx := context.Background()
	d := ownerInMemory(t)
	for _, s := range []string{
		`CREATE TABLE ints (uid BIGINT, x INTEGER)`,
		`CREATE TABLE decs (uid DECIMAL(18,3), x INTEGER)`,
		`CREATE TABLE texts (uid VARCHAR, x INTEGER)`,
		`CREATE TABLE nocase (uid VARCHAR, x INTEGER)`,
	} {
		if err := d.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	for _, r := range []string{"ints", "decs", "texts", "nocase"} {
		if err := SetPrivate(ctx, d, r, "uid"); err != nil {
			t.Fatal(err)
		}
	}
	pc := &planCounter{Querier: d}
	if _, err := LoadCatalog(ctx, pc); err != nil {
		t.Fatal(err)
	}
	if pc.plans != 2 {
		t.Errorf("plans serialized to load the catalog: %d, want 2 (the text units)", pc.plans)
	}
	if err := d.Exec(ctx, `ALTER TABLE nocase ALTER uid SET DATA TYPE VARCHAR COLLATE NOCASE`); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCatalog(ctx, d); err == nil || !strings.Contains(err.Error(), "nocase.uid") {
		t.Errorf("LoadCatalog with a collated text unit: %v, want the collation refused", err)
	}
}

// Past columnsReadAt declared relations, the columns of base tables come from one scan of
// duckdb_columns() instead of one pragma_table_info each: the catalog is the same either way,
// types, defaults and generated columns (computed) included.
func TestBaseColumnsReadEitherWay(t *testing.T) {
	ctx := context.Background()
	d := ownerInMemory(t)
	stmts := []string{
		`CREATE TYPE mood AS ENUM ('a', 'b')`,
		`CREATE SCHEMA s`,
		`CREATE TABLE s."Odd T" (uid BIGINT DEFAULT 7, g DOUBLE GENERATED ALWAYS AS (CAST(uid AS DOUBLE)), m mood,
			d DECIMAL(18,3), l INTEGER[], st STRUCT(a VARCHAR, b MAP(VARCHAR, INTEGER)), ts TIMESTAMPTZ)`,
		`CREATE VIEW vv AS SELECT uid, g * 1.5 AS h FROM s."Odd T"`,
	}
	for i := 0; i < 20; i++ {
		stmts = append(stmts, fmt.Sprintf(`CREATE TABLE t%d (uid VARCHAR, k INTEGER, v DOUBLE)`, i))
	}
	for _, s := range stmts {
		if err := d.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	for _, r := range []string{"s.Odd T", "vv"} {
		if err := SetPrivate(ctx, d, r, "uid"); err != nil {
			t.Fatalf("SetPrivate(%s): %v", r, err)
		}
	}
	for i := 0; i < 20; i++ {
		if err := SetPrivate(ctx, d, fmt.Sprintf("t%d", i), "uid"); err != nil {
			t.Fatal(err)
		}
	}
	defer func(n int) { columnsReadAt = n }(columnsReadAt)
	load := func(at int) string {
		columnsReadAt = at
		pc := &planCounter{Querier: d}
		read := readPolicyDuckDB(ctx, pc)
		if read == nil {
			t.Fatalf("readPolicyDuckDB with columnsReadAt = %d fell back", at)
		}
		if want := map[bool]int{true: 1, false: 0}[at < 22]; pc.columnReads != want {
			t.Errorf("columnsReadAt = %d: %d reads of duckdb_columns(), want %d", at, pc.columnReads, want)
		}
		c, err := LoadCatalog(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, key := range []string{`s."Odd T"`, "s.odd t", "vv", "t0", "t19"} {
			if tb := read.tables[strings.ToLower(strings.ReplaceAll(key, `"`, ""))]; tb != nil {
				out = append(out, fmt.Sprintf("%s %v %v %+v", tb.name, tb.view, tb.computed, tb.columns))
			}
		}
		for _, rel := range c.Relations() {
			out = append(out, fmt.Sprintf("%+v", *rel))
		}
		return fmt.Sprint(out)
	}
	pragma, columns := load(1000), load(0)
	if pragma != columns {
		t.Errorf("catalog through pragma_table_info:\n%s\nthrough duckdb_columns():\n%s", pragma, columns)
	}
	if !strings.Contains(columns, "true") || !strings.Contains(columns, "DECIMAL(18,3)") {
		t.Errorf("the catalog lacks the computed table or its types: %s", columns)
	}
}
