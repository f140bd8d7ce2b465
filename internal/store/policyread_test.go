package store

import (
	"context"
	"errors"
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
// schema and another, names with spaces, dots and single quotes, every kind of type, a
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
		`CREATE SCHEMA "s p.x"`,
		`CREATE TABLE "s p.x"."it's.here" (uid INTEGER, "b c" DOUBLE)`,
		`CREATE VIEW "s p.x".w AS SELECT uid, "b c" * 2 AS twice FROM "s p.x"."it's.here"`,
		`CREATE TABLE items (item VARCHAR)`,
		`CREATE TABLE hidden (x INTEGER)`,
	)
	for _, p := range [][2]string{{"base", "uid"}, {"v", "uid"}, {`s p.x.it's.here`, "uid"}, {"s p.x.w", "uid"}} {
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
	if got := len(short.tables[`s p.x.it's.here`].columns); got != 2 {
		t.Errorf("the quoted relation has %d columns, want 2", got)
	}
	if got := short.tables["items"].columns; len(got) != 1 || got[0].Name != "item" {
		t.Errorf("items: %v, want the table's column, not the temporary table's", got)
	}

	// A relation the policy names that no longer exists: both reads leave it out.
	run(`DROP VIEW "s p.x".w`)
	compare(t)

	// A double quote in a name: the short read gives up, the catalog still loads.
	run(`CREATE TABLE "we""ird" (uid INTEGER)`)
	if err := SetPrivate(ctx, d, `we"ird`, "uid"); err != nil {
		t.Fatal(err)
	}
	if readPolicyDuckDB(ctx, d) != nil {
		t.Error("the short read went on with a double quote in a name")
	}
	run(`CREATE VIEW "s p.x".w AS SELECT uid FROM "s p.x"."it's.here"`)
	cat, err := LoadCatalog(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if rel, ok := cat.Lookup(`we"ird`); !ok || len(rel.Columns) != 1 {
		t.Errorf("we\"ird: %+v, %v", rel, ok)
	}
}

// TestDottedNamesChecked: a relation or unit column whose name holds a dot is declared, and
// checked, under its own name (the checks once split names at every dot, and could not
// declare a table named "a.b"); a collated unit there is still refused.
func TestDottedNamesChecked(t *testing.T) {
	ctx := context.Background()
	d := ownerInMemory(t)
	for _, s := range []string{
		`CREATE TABLE "a.b" ("u.id" INTEGER, x INTEGER)`,
		`CREATE TABLE "c.d" ("u.id" VARCHAR COLLATE NOCASE, x INTEGER)`,
		`CREATE SCHEMA "s.t"`,
		`CREATE VIEW "s.t"."v.w" AS SELECT "u.id", x FROM "a.b"`,
	} {
		if err := d.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	for _, r := range []string{"a.b", "s.t.v.w"} {
		if err := SetPrivate(ctx, d, r, "u.id"); err != nil {
			t.Errorf("SetPrivate(%s): %v", r, err)
		}
	}
	var se *sqlerr.Error
	if err := SetPrivate(ctx, d, "c.d", "u.id"); !errors.As(err, &se) || se.Rule != RuleUnitCollation {
		t.Errorf("SetPrivate of a collated unit in c.d: %v, want the rule %s", err, RuleUnitCollation)
	}
	if _, err := LoadCatalog(ctx, d); err != nil {
		t.Errorf("LoadCatalog: %v", err)
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
