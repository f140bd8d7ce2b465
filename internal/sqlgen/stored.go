package sqlgen

import (
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/internal/ast"
)

// NormaliseStored is DuckDB's expression x of type typ (a type as DuckDB prints it, from the
// catalog) with every value in it, at any depth, that DuckDB's equality takes as one with
// values written otherwise read as one canonical value: floats as v + 0, so that -0.0 reads
// as 0.0, and NaN as the NaN 'nan' gives (no sign), and intervals as normalized_interval(v)
// ('30 days' as '1 month'). DuckDB's storage compresses a run of values it finds equal into
// the first of them, and a Parquet file's dictionary keeps one of them: the 0.0s stored after
// one person's -0.0 read back as -0.0, the NaNs after one person's -nan as -nan, the '30 days'
// written to Parquet after one person's '1 month' as '1 month', and a cast to text (or
// date_part) showed it in everyone's rows (ast.TableName.PrivateColumns; outside reviews).
// Lists and arrays are rebuilt with list_transform, structs field by field, maps entry by
// entry (their keys are unique by equality, so no two become one; a stored map with
// duplicate or NULL keys reads as NULL), unions member by member; a NULL at any level stays
// NULL, and the type is unchanged. None of these can fail on a value. A type with no such
// value in it, or one it cannot parse, gives x as it is (ok false).
func NormaliseStored(x, typ string) (expr string, ok bool) {
	t, rest, err := parseType(typ)
	if err != nil || strings.TrimSpace(rest) != "" || !t.hasInexact() {
		return x, false
	}
	return t.normalise(x, 0), true
}

// duckType is a DuckDB type: a base type (name: its text, parameters included), a list or
// array of elem, a STRUCT or UNION of fields, or a MAP of fields[0]
// (key) and fields[1] (value). text is the type as written, for casts back to it.
type duckType struct {
	kind   typeKind
	name   string
	elem   *duckType
	fields []typeField
	text   string
}

type typeKind int

const (
	baseType typeKind = iota
	listType
	arrayType
	structType
	mapType
	unionType
)

type typeField struct {
	name string
	typ  *duckType
}

// floatNames are DuckDB's floating-point types (and their aliases).
var floatNames = map[string]bool{"DOUBLE": true, "FLOAT": true, "REAL": true, "FLOAT4": true, "FLOAT8": true, "DOUBLE PRECISION": true}

// hasInexact reports whether t is or nests a float or an interval (NormaliseStored).
func (t *duckType) hasInexact() bool {
	switch t.kind {
	case baseType:
		n := strings.ToUpper(t.name)
		return floatNames[n] || n == "INTERVAL"
	case listType, arrayType:
		return t.elem.hasInexact()
	}
	for _, f := range t.fields {
		if f.typ.hasInexact() {
			return true
		}
	}
	return false
}

// normalise prints x with its floats and intervals read as canonical values
// (NormaliseStored); depth names the lambdas' parameters apart.
func (t *duckType) normalise(x string, depth int) string {
	if !t.hasInexact() {
		return x
	}
	e := fmt.Sprintf("_dp_e%d", depth)
	switch t.kind {
	case baseType:
		if strings.EqualFold(t.name, "INTERVAL") {
			return "normalized_interval(" + x + ")"
		}
		// isnan costs nothing measurable beside a bare sum of 10^7 floats, but the CASE
		// cost a tenth to a fifth of the plain query in the stage: a float the query only
		// sums is read as stored (ast.TableName.SignBlind).
		return "(CASE WHEN isnan(" + x + ") THEN CAST('nan' AS " + t.name + ") ELSE " + x + " + CAST(0 AS " + t.name + ") END)"
	case listType:
		return fmt.Sprintf("list_transform(%s, lambda %s: %s)", x, e, t.elem.normalise(e, depth+1))
	case arrayType:
		return fmt.Sprintf("CAST(list_transform(%s, lambda %s: %s) AS %s)", x, e, t.elem.normalise(e, depth+1), t.text)
	case structType:
		var fields []string
		for _, f := range t.fields {
			v := fmt.Sprintf("struct_extract(%s, %s)", x, ast.QuoteString(f.name))
			fields = append(fields, ast.QuoteString(f.name)+": "+f.typ.normalise(v, depth+1))
		}
		return fmt.Sprintf("CASE WHEN %s IS NULL THEN NULL ELSE {%s} END", x, strings.Join(fields, ", "))
	case mapType:
		k := t.fields[0].typ.normalise("struct_extract("+e+", 'key')", depth+1)
		v := t.fields[1].typ.normalise("struct_extract("+e+", 'value')", depth+1)
		// A stored map need not be one map_from_entries accepts: a cast of its keys (ALTER
		// TABLE ... TYPE, TRY_CAST) can leave two equal keys, or a NULL one. Rebuilding it
		// failed the query on that one row, and keeping it as it is kept the -0.0 the
		// storage gave its values (outside reviews); DuckDB has no other way to build a map,
		// so such a map reads as NULL, which changes its own row only.
		return fmt.Sprintf("TRY(map_from_entries(list_transform(map_entries(%s), lambda %s: {'key': %s, 'value': %s})))", x, e, k, v)
	default: // unionType
		var whens []string
		for _, f := range t.fields {
			v := f.typ.normalise(fmt.Sprintf("union_extract(%s, %s)", x, ast.QuoteString(f.name)), depth+1)
			whens = append(whens, fmt.Sprintf("WHEN %s THEN CAST(union_value(%s := %s) AS %s)", ast.QuoteString(f.name), ast.QuoteIdent(f.name), v, t.text))
		}
		return fmt.Sprintf("CASE union_tag(%s) %s END", x, strings.Join(whens, " "))
	}
}

// parseType parses the type at the start of s and returns it and the rest of s.
func parseType(s string) (*duckType, string, error) {
	s = strings.TrimLeft(s, " ")
	start := s
	var t *duckType
	upper := strings.ToUpper(s)
	switch {
	case strings.HasPrefix(upper, "STRUCT(") || strings.HasPrefix(upper, "UNION("):
		kind := structType
		if strings.HasPrefix(upper, "UNION(") {
			kind = unionType
		}
		fields, rest, err := parseFields(s[strings.IndexByte(s, '(')+1:])
		if err != nil {
			return nil, "", err
		}
		t, s = &duckType{kind: kind, fields: fields}, rest
	case strings.HasPrefix(upper, "MAP("):
		key, rest, err := parseType(s[len("MAP("):])
		if err != nil {
			return nil, "", err
		}
		rest = strings.TrimLeft(rest, " ")
		if !strings.HasPrefix(rest, ",") {
			return nil, "", fmt.Errorf("sqlgen: no value type in MAP type %q", start)
		}
		value, rest, err := parseType(rest[1:])
		if err != nil {
			return nil, "", err
		}
		rest = strings.TrimLeft(rest, " ")
		if !strings.HasPrefix(rest, ")") {
			return nil, "", fmt.Errorf("sqlgen: MAP type %q not closed", start)
		}
		t, s = &duckType{kind: mapType, fields: []typeField{{"key", key}, {"value", value}}}, rest[1:]
	default:
		n := baseEnd(s)
		if n == 0 {
			return nil, "", fmt.Errorf("sqlgen: no type at %q", start)
		}
		t, s = &duckType{kind: baseType, name: strings.TrimSpace(s[:n])}, s[n:]
	}
	t.text = strings.TrimSpace(start[:len(start)-len(s)])
	for strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return nil, "", fmt.Errorf("sqlgen: unclosed [ in type %q", start)
		}
		kind := listType
		if strings.TrimSpace(s[1:end]) != "" {
			kind = arrayType
		}
		s = s[end+1:]
		t = &duckType{kind: kind, elem: t, text: strings.TrimSpace(start[:len(start)-len(s)])}
	}
	return t, s, nil
}

// parseFields parses "name TYPE, ...)" (a STRUCT's or UNION's members, names bare or in
// double quotes) and returns them and what follows the closing parenthesis.
func parseFields(s string) ([]typeField, string, error) {
	var fields []typeField
	for {
		s = strings.TrimLeft(s, " ")
		var name string
		if strings.HasPrefix(s, `"`) {
			i := 1
			for ; i < len(s); i++ {
				if s[i] == '"' {
					if i+1 < len(s) && s[i+1] == '"' {
						i++
						continue
					}
					break
				}
			}
			if i >= len(s) {
				return nil, "", fmt.Errorf("sqlgen: unclosed name in type near %q", s)
			}
			name, s = strings.ReplaceAll(s[1:i], `""`, `"`), s[i+1:]
		} else {
			i := strings.IndexByte(s, ' ')
			if i <= 0 {
				return nil, "", fmt.Errorf("sqlgen: no member name in type near %q", s)
			}
			name, s = s[:i], s[i:]
		}
		typ, rest, err := parseType(s)
		if err != nil {
			return nil, "", err
		}
		fields = append(fields, typeField{name, typ})
		rest = strings.TrimLeft(rest, " ")
		switch {
		case strings.HasPrefix(rest, ","):
			s = rest[1:]
		case strings.HasPrefix(rest, ")"):
			return fields, rest[1:], nil
		default:
			return nil, "", fmt.Errorf("sqlgen: unexpected %q in a type's members", rest)
		}
	}
}

// baseEnd is the length of the base type at the start of s: up to a comma, closing
// parenthesis or [ at depth 0, outside quotes (DECIMAL(18,3), ENUM('a, b'), TIMESTAMP WITH
// TIME ZONE).
func baseEnd(s string) int {
	depth := 0
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				if i+1 < len(s) && s[i+1] == quote {
					i++
				} else {
					quote = 0
				}
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			if depth == 0 {
				return i
			}
			depth--
		case (c == ',' || c == '[') && depth == 0:
			return i
		}
	}
	return len(s)
}
