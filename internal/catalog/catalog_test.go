package catalog

import (
	"reflect"
	"testing"
)

func TestLookupHidesUndeclared(t *testing.T) {
	prof := &Relation{Name: "Professors", Kind: Private, PrivacyUnit: "id",
		Columns: []Column{{"id", "BIGINT"}, {"Item", "VARCHAR"}}}
	items := &Relation{Name: "items", Kind: Public, Columns: []Column{{"item", "VARCHAR"}}}
	base := &Relation{Name: "professors_base", Columns: []Column{{"id", "BIGINT"}}} // Hidden
	odd := &Relation{Name: "odd", Kind: Kind(7)}
	c := New(items, nil, base, prof, odd)

	for _, name := range []string{"professors", "PROFESSORS", "Professors"} {
		if r, ok := c.Lookup(name); !ok || r != prof {
			t.Errorf("Lookup(%q) = %v, %v", name, r, ok)
		}
	}
	for _, name := range []string{"professors_base", "odd", "nope"} {
		if r, ok := c.Lookup(name); ok {
			t.Errorf("Lookup(%q) found %v; hidden and unknown relations must not be found", name, r)
		}
	}
	if got := c.Relations(); !reflect.DeepEqual(got, []*Relation{items, prof}) {
		t.Errorf("Relations() = %v", got)
	}
	// Relations returns a copy.
	c.Relations()[0] = nil
	if c.Relations()[0] != items {
		t.Error("Relations exposes the catalog's slice")
	}
}

func TestColumn(t *testing.T) {
	r := &Relation{Name: "t", Kind: Public, Columns: []Column{{"Uid", "BIGINT"}, {"v", "DOUBLE"}}}
	if c, ok := r.Column("UID"); !ok || c.Name != "Uid" || c.Type != "BIGINT" {
		t.Errorf("Column(UID) = %v, %v", c, ok)
	}
	if _, ok := r.Column("w"); ok {
		t.Error("Column(w) found")
	}
}

func TestDuplicateNamesLaterWins(t *testing.T) {
	a := &Relation{Name: "t", Kind: Public}
	b := &Relation{Name: "T", Kind: Private, PrivacyUnit: "u"}
	c := New(a, b)
	if r, _ := c.Lookup("t"); r != b {
		t.Errorf("Lookup = %v, want the later relation", r)
	}
	if n := len(c.Relations()); n != 1 {
		t.Errorf("%d relations, want 1", n)
	}
}

func TestKind(t *testing.T) {
	for _, k := range []Kind{Private, Public} {
		if got, ok := ParseKind(k.String()); !ok || got != k {
			t.Errorf("ParseKind(%q) = %v, %v", k.String(), got, ok)
		}
	}
	if _, ok := ParseKind("hidden"); ok {
		t.Error("ParseKind(hidden) accepted; hidden is the absence of a policy")
	}
}
