package backend

import (
	"sort"
	"strings"
)

// Nested values as the backends give them: a LIST as []any, a STRUCT as map[string]any, a MAP
// as Map (its entries in order). A Go map keeps no order, so the printers (the command's,
// pgwire's) take a STRUCT's fields from Entries, in the order of its type, and print nested
// values as DuckDB casts them to VARCHAR with NestedText, quoting values as DuckDB does so
// that no two values print the same.

// A Map is a MAP value: its entries in the database's order. DuckDB keeps the order a MAP was
// built in, and two MAPs with the same entries in another order are different values (they
// are grouped apart), so the order is kept rather than sorted.
type Map []MapEntry

// A MapEntry is one entry of a MAP value.
type MapEntry struct{ Key, Value any }

// An Entry is one field of a STRUCT value or one entry of a MAP value: the field's name or
// the entry's key, its value, and the value's type ("" when the type does not say).
type Entry struct {
	Key  any // a STRUCT's field name (string) or a MAP's key
	Val  any
	Type string
}

// Entries are a STRUCT value's fields in the order of its type typ, then any the type does
// not name, sorted by name; or a MAP value's entries in order. isStruct tells which; a value
// of any other Go type has no entries.
func Entries(v any, typ string) (es []Entry, isStruct bool) {
	switch v := v.(type) {
	case map[string]any:
		seen := map[string]bool{}
		for _, f := range StructFields(typ) {
			if x, ok := v[f.Name]; ok && !seen[f.Name] {
				es = append(es, Entry{f.Name, x, f.Type})
				seen[f.Name] = true
			}
		}
		var rest []Entry
		for k, x := range v {
			if !seen[k] {
				rest = append(rest, Entry{k, x, ""})
			}
		}
		sort.Slice(rest, func(i, j int) bool { return rest[i].Key.(string) < rest[j].Key.(string) })
		return append(es, rest...), true
	case Map:
		_, vt := MapTypes(typ)
		for _, e := range v {
			es = append(es, Entry{e.Key, e.Value, vt})
		}
	}
	return es, false
}

// NestedText is a LIST, STRUCT or MAP value of type typ as DuckDB casts it to VARCHAR:
// [a, 'b c,d'], {'b': 1, 'a': x} and {k=1.5}. Scalars inside are printed by text with their
// types and quoted where DuckDB quotes them (QuoteNested); a STRUCT's field names are always
// quoted.
func NestedText(v any, typ string, text func(v any, typ string) string) string {
	child := func(x any, t string) string {
		switch x.(type) {
		case nil:
			return "NULL"
		case []any, map[string]any, Map:
			return NestedText(x, t, text)
		}
		return QuoteNested(text(x, t))
	}
	if xs, ok := v.([]any); ok {
		parts := make([]string, len(xs))
		for i, x := range xs {
			parts[i] = child(x, ElemType(typ))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	es, isStruct := Entries(v, typ)
	kt, _ := MapTypes(typ)
	parts := make([]string, len(es))
	for i, e := range es {
		if isStruct {
			parts[i] = quoteAlways(e.Key.(string)) + ": " + child(e.Val, e.Type)
		} else {
			parts[i] = child(e.Key, kt) + "=" + child(e.Val, e.Type)
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// QuoteNested is the text s of a scalar inside a nested value as DuckDB writes it there: in
// single quotes, with \ and ' escaped by a backslash, when it is empty, reads as NULL (in any
// case), starts or ends with white space, or holds one of "'(),:=[]{}; else as it is. So the
// string 'NULL' is not NULL, and 'a, b' is not two values.
func QuoteNested(s string) string {
	if s == "" || strings.EqualFold(s, "null") || strings.ContainsAny(s, `"'(),:=[]{}`) ||
		strings.TrimSpace(s[:1]) == "" || strings.TrimSpace(s[len(s)-1:]) == "" {
		return quoteAlways(s)
	}
	return s
}

func quoteAlways(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
