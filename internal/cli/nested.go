package cli

import (
	"bytes"
	"sort"
	"strings"
)

// Nested values (LIST, STRUCT, MAP) print as DuckDB prints them: [a, b], {'b': 1, 'a': x} with
// a STRUCT's fields in the order of its type, and {k=1.5} for a MAP (its keys sorted by their
// text: the driver gives a MAP as a Go map, which keeps no order). In JSON a STRUCT is an
// object with its fields in order, a MAP an object keyed by its keys' text.

// elemType is the element type of a list type ("INTEGER[]" gives "INTEGER"), or "".
func elemType(typ string) string {
	t := strings.TrimSpace(typ)
	if strings.HasSuffix(t, "[]") {
		return strings.TrimSuffix(t, "[]")
	}
	if i := strings.LastIndexByte(t, '['); i > 0 && strings.HasSuffix(t, "]") && !strings.ContainsAny(t[i:], "(\"") {
		return t[:i] // a fixed-size ARRAY: INTEGER[3]
	}
	return ""
}

// structField is one field of a STRUCT type.
type structField struct{ name, typ string }

// structFields are the fields of a STRUCT type as the driver spells it (`STRUCT("a" INTEGER,
// b VARCHAR)`), in order; nil when typ is not one.
func structFields(typ string) []structField {
	t := strings.TrimSpace(typ)
	if !strings.HasPrefix(strings.ToUpper(t), "STRUCT(") || !strings.HasSuffix(t, ")") {
		return nil
	}
	var out []structField
	for _, part := range splitTop(t[len("STRUCT(") : len(t)-1]) {
		part = strings.TrimSpace(part)
		var name, rest string
		if strings.HasPrefix(part, `"`) {
			i := 1
			var nb strings.Builder
			for i < len(part) {
				if part[i] == '"' {
					if i+1 < len(part) && part[i+1] == '"' {
						nb.WriteByte('"')
						i += 2
						continue
					}
					break
				}
				nb.WriteByte(part[i])
				i++
			}
			name, rest = nb.String(), part[min(i+1, len(part)):]
		} else {
			name, rest, _ = strings.Cut(part, " ")
		}
		out = append(out, structField{name: name, typ: strings.TrimSpace(rest)})
	}
	return out
}

// mapTypes are the key and value types of a MAP type (`MAP(VARCHAR, INTEGER)`), or "".
func mapTypes(typ string) (key, val string) {
	t := strings.TrimSpace(typ)
	if !strings.HasPrefix(strings.ToUpper(t), "MAP(") || !strings.HasSuffix(t, ")") {
		return "", ""
	}
	parts := splitTop(t[len("MAP(") : len(t)-1])
	if len(parts) != 2 {
		return "", ""
	}
	return strings.TrimSpace(parts[0]), strings.TrimSpace(parts[1])
}

// splitTop splits s at the commas outside parentheses, brackets and double quotes.
func splitTop(s string) []string {
	var out []string
	depth, quoted, start := 0, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '(' || c == '[':
			depth++
		case c == ')' || c == ']':
			depth--
		case c == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// structText is a STRUCT value as DuckDB prints it.
func structText(v map[string]any, typ string) string {
	fields := orderedFields(v, typ)
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = "'" + f.name + "': " + text(v[f.name], f.typ)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// orderedFields are v's fields in the order of its type, then any the type does not name,
// sorted.
func orderedFields(v map[string]any, typ string) []structField {
	var out []structField
	seen := map[string]bool{}
	for _, f := range structFields(typ) {
		if _, ok := v[f.name]; ok && !seen[f.name] {
			out = append(out, f)
			seen[f.name] = true
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
		out = append(out, structField{name: k})
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
	kt, vt := mapTypes(typ)
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
