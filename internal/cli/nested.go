package cli

import (
	"bytes"
	"sort"
	"strings"

	"github.com/dpsql/dpsql/backend"
)

// Nested values (LIST, STRUCT, MAP) print as DuckDB prints them: [a, b], {'b': 1, 'a': x} with
// a STRUCT's fields in the order of its type, and {k=1.5} for a MAP (its keys sorted by their
// text: the driver gives a MAP as a Go map, which keeps no order). In JSON a STRUCT is an
// object with its fields in order, a MAP an object keyed by its keys' text.

// entry is one field of a STRUCT or one entry of a MAP: its name or key's text, its value
// and the value's type ("" when unknown).
type entry struct {
	key string
	val any
	typ string
}

// entries are a STRUCT's fields (map[string]any) in the order of its type, then any the type
// does not name, sorted; or a MAP's entries (map[any]any) sorted by their keys' texts.
func entries(v any, typ string) []entry {
	var out []entry
	switch v := v.(type) {
	case map[string]any:
		seen := map[string]bool{}
		for _, f := range backend.StructFields(typ) {
			if x, ok := v[f.Name]; ok && !seen[f.Name] {
				out = append(out, entry{f.Name, x, f.Type})
				seen[f.Name] = true
			}
		}
		var rest []entry
		for k, x := range v {
			if !seen[k] {
				rest = append(rest, entry{k, x, ""})
			}
		}
		sort.Slice(rest, func(i, j int) bool { return rest[i].key < rest[j].key })
		out = append(out, rest...)
	case map[any]any:
		kt, vt := backend.MapTypes(typ)
		for k, x := range v {
			out = append(out, entry{text(k, kt), x, vt})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	}
	return out
}

// nestedText is a STRUCT or MAP value as DuckDB prints it: {'b': 1, 'a': x} and {k=1.5}.
func nestedText(v any, typ string) string {
	es := entries(v, typ)
	parts := make([]string, len(es))
	for i, e := range es {
		if _, isStruct := v.(map[string]any); isStruct {
			parts[i] = "'" + e.key + "': " + text(e.val, e.typ)
		} else {
			parts[i] = e.key + "=" + text(e.val, e.typ)
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// appendJSONObject writes a STRUCT or MAP value as a JSON object.
func appendJSONObject(b *bytes.Buffer, v any, typ string) {
	b.WriteByte('{')
	for i, e := range entries(v, typ) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(jsonString(e.key))
		b.WriteByte(':')
		appendJSON(b, e.val, e.typ)
	}
	b.WriteByte('}')
}
