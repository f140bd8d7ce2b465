package backend

import "strings"

// Type names as DuckDB spells them in Rows.Types, taken apart for nested values: a list's
// element type, a STRUCT's fields in order, a MAP's key and value types. Both the DuckDB
// backend (converting nested values by their types) and the command's printers use them.

// ElemType is the element type of a list or fixed-size array type ("INTEGER[]" and
// "INTEGER[3]" give "INTEGER"), or "".
func ElemType(typ string) string {
	t := strings.TrimSpace(typ)
	if strings.HasSuffix(t, "[]") {
		return strings.TrimSuffix(t, "[]")
	}
	if i := strings.LastIndexByte(t, '['); i > 0 && strings.HasSuffix(t, "]") && !strings.ContainsAny(t[i:], "(\"") {
		return t[:i]
	}
	return ""
}

// StructField is one field of a STRUCT type.
type StructField struct{ Name, Type string }

// StructFields are the fields of a STRUCT type (`STRUCT("a" INTEGER, b VARCHAR)`, names quoted
// or bare), in order; nil when typ is not one.
func StructFields(typ string) []StructField {
	t := strings.TrimSpace(typ)
	if !strings.HasPrefix(strings.ToUpper(t), "STRUCT(") || !strings.HasSuffix(t, ")") {
		return nil
	}
	var out []StructField
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
		out = append(out, StructField{Name: name, Type: strings.TrimSpace(rest)})
	}
	return out
}

// MapTypes are the key and value types of a MAP type (`MAP(VARCHAR, INTEGER)`), or "".
func MapTypes(typ string) (key, val string) {
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

// splitTop splits s at the commas outside parentheses, brackets, double quotes and single
// quotes (an ENUM's values).
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
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
