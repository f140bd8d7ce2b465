package backend

import (
	"math/big"
	"reflect"
	"sort"
	"strings"
)

// Nested values as the backends give them: a LIST as []any, a STRUCT as map[string]any, a MAP
// as map[any]any. Go maps keep no order, so the printers (the command's, pgwire's) take their
// entries from Entries, which orders them the same way for both, and print them as DuckDB
// casts them to VARCHAR with NestedText, quoting values as DuckDB does so that no two values
// print the same.

// An Entry is one field of a STRUCT value or one entry of a MAP value: the field's name or
// the entry's key, its value, and the value's type ("" when the type does not say).
type Entry struct {
	Key  any // a STRUCT's field name (string) or a MAP's key
	Val  any
	Type string
}

// Entries are a STRUCT value's fields in the order of its type typ, then any the type does
// not name, sorted by name; or a MAP value's entries sorted by key (numbers by value, else by
// keyText, the key's text with the MAP's key type). isStruct tells which; a value of any
// other Go type has no entries.
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
		sort.Slice(rest, func(i, j int) bool { return rest[i].Key.(string) < rest[j].Key.(string) })
		return append(es, rest...), true
	case map[any]any:
		kt, vt := MapTypes(typ)
		texts := make(map[any]string, len(v))
		for k, x := range v {
			es = append(es, Entry{k, x, vt})
			if !isNumber(k) {
				texts[k] = keyText(k, kt)
			}
		}
		sort.Slice(es, func(i, j int) bool {
			a, b := es[i].Key, es[j].Key
			if isNumber(a) && isNumber(b) {
				return numberRat(a).Cmp(numberRat(b)) < 0
			}
			return texts[a] < texts[b]
		})
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
		case []any, map[string]any, map[any]any:
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
	es, isStruct := Entries(v, typ, child)
	parts := make([]string, len(es))
	for i, e := range es {
		if isStruct {
			parts[i] = quoteAlways(e.Key.(string)) + ": " + child(e.Val, e.Type)
		} else {
			kt, _ := MapTypes(typ)
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

func isNumber(x any) bool {
	switch x.(type) {
	case *big.Int, Decimal:
		return true
	}
	switch reflect.ValueOf(x).Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// numberRat is a number key as a rational, for ordering a MAP's entries by key; NaN and the
// infinities (no rational) order as 0, which only moves them among the entries.
func numberRat(x any) *big.Rat {
	r := new(big.Rat)
	switch x := x.(type) {
	case *big.Int:
		if x != nil {
			r.SetInt(x)
		}
		return r
	case Decimal:
		if q := x.Rat(); q != nil {
			return q
		}
		return r
	}
	switch v := reflect.ValueOf(x); {
	case v.CanInt():
		r.SetInt64(v.Int())
	case v.CanUint():
		r.SetUint64(v.Uint())
	case v.CanFloat():
		if r.SetFloat64(v.Float()) == nil {
			return new(big.Rat)
		}
	}
	return r
}
