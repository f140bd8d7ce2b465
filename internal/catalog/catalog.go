package catalog

import (
	"fmt"
	"sort"
	"strings"
)

// Kind is what the owner declared a relation to be. The zero value, Hidden, is what every
// relation the owner did not declare is: invisible to analysts.
type Kind int

const (
	// Hidden relations cannot be named by analysts.
	Hidden Kind = iota
	// Private relations may only be read through anonymized aggregation; every row is owned
	// by the unit in the relation's PrivacyUnit column.
	Private
	// Public relations hold no private data and may be read and joined freely.
	Public
)

func (k Kind) String() string {
	switch k {
	case Hidden:
		return "hidden"
	case Private:
		return "private"
	case Public:
		return "public"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// ParseKind is the inverse of Kind.String for Private and Public (case-insensitive).
func ParseKind(s string) (Kind, bool) {
	switch strings.ToLower(s) {
	case "private":
		return Private, true
	case "public":
		return Public, true
	}
	return Hidden, false
}

// Column is a column of a relation. Type is the database's name of its type as declared in
// the database's catalog: on DuckDB spelled exactly as DuckDB spells it (ENUM labels and
// STRUCT field names keep their case, so the type can be cast to), on PostgreSQL upper case.
// Compare types case-insensitively.
type Column struct {
	Name string
	Type string
}

// Relation is a table or view with its policy.
type Relation struct {
	// Name is the relation's name as analysts write it ("professors", or "schema.table" for
	// a relation outside the default schema).
	Name string
	Kind Kind
	// PrivacyUnit is the column that says which unit owns each row; Private relations only.
	PrivacyUnit string
	Columns     []Column
	// View is set for a view. DuckDB binds a view's query again at every read, so a view
	// over files can read with other types than the ones its catalog entry, and Columns,
	// hold: the SQL dpsql generates reads a DuckDB view with its declared column types
	// (internal/sqlgen), never the live ones.
	View bool
	// Computed is set for a DuckDB table with generated columns, which DuckDB computes at
	// every read (and checks on INSERT, not after an UPDATE): reading it can fail, as reading
	// a view can.
	Computed bool
	// ReadsParquet is set for a DuckDB view that reads Parquet files: files can join its glob
	// at any time, so they are checked again before each anonymized query
	// (store.CheckPrivateViewFiles).
	ReadsParquet bool
	// Domains holds the owner's public domains, by lower-case column name: the SQL text of a
	// list of values, a range or a public column. Grouping only by columns with a public
	// domain releases every value of the domain and spends nothing on partition selection.
	Domains map[string]string
}

// Domain returns the public domain declared for a column, if any.
func (r *Relation) Domain(column string) (string, bool) {
	d, ok := r.Domains[NameKey(column)]
	return d, ok
}

// Column finds a column by name, case-insensitively like SQL identifiers.
func (r *Relation) Column(name string) (Column, bool) {
	for _, c := range r.Columns {
		if SameName(c.Name, name) {
			return c, true
		}
	}
	return Column{}, false
}

// Catalog is a set of relations keyed by case-insensitive name. It is immutable after New and
// safe for concurrent use.
type Catalog struct {
	byName map[string]*Relation
	sorted []*Relation
}

// New returns a catalog of the Private and Public relations among rels; Hidden ones are left
// out, so Lookup never finds them. If two relations have the same name (ignoring case), the
// later one wins.
func New(rels ...*Relation) *Catalog {
	c := &Catalog{byName: make(map[string]*Relation, len(rels))}
	for _, r := range rels {
		if r == nil || (r.Kind != Private && r.Kind != Public) {
			continue
		}
		c.byName[NameKey(r.Name)] = r
	}
	for _, r := range c.byName {
		c.sorted = append(c.sorted, r)
	}
	sort.Slice(c.sorted, func(i, j int) bool {
		return strings.ToLower(c.sorted[i].Name) < strings.ToLower(c.sorted[j].Name)
	})
	return c
}

// Lookup finds a Private or Public relation by name, case-insensitively. Hidden relations are
// never found.
func (c *Catalog) Lookup(name string) (*Relation, bool) {
	r, ok := c.byName[NameKey(name)]
	return r, ok
}

// Relations lists the Private and Public relations sorted by name (case-insensitively).
func (c *Catalog) Relations() []*Relation {
	return append([]*Relation(nil), c.sorted...)
}
