package cli

import (
	"bytes"

	"github.com/dpsql/dpsql/backend"
)

// Nested values (LIST, STRUCT, MAP) print as DuckDB casts them to VARCHAR: [a, 'b, c'],
// {'b': 1, 'a': x} with a STRUCT's fields in the order of its type, and {k=1.5} for a MAP (its
// entries in DuckDB's order, backend.Map), with strings quoted where DuckDB quotes them so
// that no two values print the same. In JSON a STRUCT is an object with its fields in order,
// a MAP an object keyed by its keys' text, in the map's order.

// nestedText is a LIST, STRUCT or MAP value as DuckDB prints it.
func nestedText(v any, typ string) string { return backend.NestedText(v, typ, text) }

// appendJSONObject writes a STRUCT or MAP value as a JSON object.
func appendJSONObject(b *bytes.Buffer, v any, typ string) {
	b.WriteByte('{')
	es, isStruct := backend.Entries(v, typ)
	kt, _ := backend.MapTypes(typ)
	for i, e := range es {
		if i > 0 {
			b.WriteByte(',')
		}
		if isStruct {
			b.Write(jsonString(e.Key.(string)))
		} else {
			b.Write(jsonString(text(e.Key, kt)))
		}
		b.WriteByte(':')
		appendJSON(b, e.Val, e.Type)
	}
	b.WriteByte('}')
}
