package backend

import (
	"sort"
	"strings"
)

// Nested values as the backends give them: a STRUCT as map[string]any, a MAP as map[any]any.
// Go maps keep no order, so the printers (the command's, pgwire's) take their entries from
// Entries, which orders them the same way for both, and print them as DuckDB does with
// NestedText.

// An Entry is one field of a STRUCT value or one entry of a MAP value: the field's name or
// the entry's key as text, its value, and the value's type ("" when the type does not say).
type Entry struct {
	Key  string
	Val  any
	Type string
}

// Entries are a STRUCT value's fields in the order of its type typ, then any the type does
// not name, sorted by name; or a MAP value's entries sorted by their keys' texts, each key
// printed by keyText with the MAP's key type. isStruct tells which; a value of any other Go
// type has no entries.
func Entries(v any, typ string, keyText func(key any, keyType string) string) (es []Entry, isStruct bool) {
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
		sort.Slice(rest, func(i, j int) bool { return rest[i].Key < rest[j].Key })
		return append(es, rest...), true
	case map[any]any:
		kt, vt := MapTypes(typ)
		for k, x := range v {
			es = append(es, Entry{keyText(k, kt), x, vt})
		}
		sort.Slice(es, func(i, j int) bool { return es[i].Key < es[j].Key })
	}
	return es, false
}

// NestedText is a STRUCT or MAP value of type typ as DuckDB prints it, {'b': 1, 'a': x} and
// {k=1.5}, each key and value printed by text with its type.
func NestedText(v any, typ string, text func(v any, typ string) string) string {
	es, isStruct := Entries(v, typ, text)
	parts := make([]string, len(es))
	for i, e := range es {
		if isStruct {
			parts[i] = "'" + e.Key + "': " + text(e.Val, e.Type)
		} else {
			parts[i] = e.Key + "=" + text(e.Val, e.Type)
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
