package cli

import (
	"bytes"

	"github.com/dpsql/dpsql/backend"
)

// Nested values (LIST, STRUCT, MAP) print as DuckDB prints them: [a, b], {'b': 1, 'a': x} with
// a STRUCT's fields in the order of its type, and {k=1.5} for a MAP (its keys sorted by their
// text: the driver gives a MAP as a Go map, which keeps no order; backend.Entries). In JSON a
// STRUCT is an object with its fields in order, a MAP an object keyed by its keys' text.

// nestedText is a STRUCT or MAP value as DuckDB prints it: {'b': 1, 'a': x} and {k=1.5}.
func nestedText(v any, typ string) string { return backend.NestedText(v, typ, text) }

// appendJSONObject writes a STRUCT or MAP value as a JSON object.
func appendJSONObject(b *bytes.Buffer, v any, typ string) {
	b.WriteByte('{')
	es, _ := backend.Entries(v, typ, text)
	for i, e := range es {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(jsonString(e.Key))
		b.WriteByte(':')
		appendJSON(b, e.Val, e.Type)
	}
	b.WriteByte('}')
}
