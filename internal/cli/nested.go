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

// structText is a STRUCT value as DuckDB prints it.
func structText(v map[string]any, typ string) string {
	fields := orderedFields(v, typ)
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = "'" + f.Name + "': " + text(v[f.Name], f.Type)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// orderedFields are v's fields in the order of its type, then any the type does not name,
// sorted.
func orderedFields(v map[string]any, typ string) []backend.StructField {
	var out []backend.StructField
	seen := map[string]bool{}
	for _, f := range backend.StructFields(typ) {
		if _, ok := v[f.Name]; ok && !seen[f.Name] {
			out = append(out, f)
			seen[f.Name] = true
		}
	}
	var rest []string
	for k := range v {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		out = append(out, backend.StructField{Name: k})
	}
	return out
}

// mapEntries are a MAP's entries with their keys' texts, sorted by them.
func mapEntries(v map[any]any, keyType string) (keys []string, vals []any) {
	type entry struct {
		k string
		v any
	}
	es := make([]entry, 0, len(v))
	for k, e := range v {
		es = append(es, entry{text(k, keyType), e})
	}
	sort.Slice(es, func(i, j int) bool { return es[i].k < es[j].k })
	for _, e := range es {
		keys, vals = append(keys, e.k), append(vals, e.v)
	}
	return keys, vals
}

// mapText is a MAP value as DuckDB prints it.
func mapText(v map[any]any, typ string) string {
	kt, vt := backend.MapTypes(typ)
	keys, vals := mapEntries(v, kt)
	parts := make([]string, len(keys))
	for i := range keys {
		parts[i] = keys[i] + "=" + text(vals[i], vt)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// appendJSONObject writes a STRUCT or MAP value as a JSON object.
func appendJSONObject(b *bytes.Buffer, keys []string, vals []any, types []string) {
	b.WriteByte('{')
	for i := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(jsonString(keys[i]))
		b.WriteByte(':')
		appendJSON(b, vals[i], types[i])
	}
	b.WriteByte('}')
}
