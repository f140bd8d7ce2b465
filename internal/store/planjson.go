package store

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Reading DuckDB's serialized plans (json_serialize_plan): the checks of private relations'
// plans (fileformat.go, storedfloats.go, totalviews.go) walk them as decoded JSON. An
// expression is an object with an "expression_class"; its type is its "return_type" (a
// constant's, its value's "type"); the walks go in a fixed order (sorted keys), so a refusal
// names the same expression every time.

// isExpression reports whether a node of a serialized plan is an expression.
func isExpression(v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	_, ok = m["expression_class"].(string)
	return m, ok
}

// subExpressions returns the expressions directly under expression e (its children, a CASE's
// branches, an aggregate's filter and ordering), in a fixed order.
func subExpressions(e map[string]any) []map[string]any {
	var out []map[string]any
	var collect func(v any)
	collect = func(v any) {
		if m, ok := isExpression(v); ok {
			out = append(out, m)
			return
		}
		switch x := v.(type) {
		case map[string]any:
			for _, k := range sortedKeys(x) {
				collect(x[k])
			}
		case []any:
			for _, y := range x {
				collect(y)
			}
		}
	}
	for _, k := range sortedKeys(e) {
		if k != "return_type" && k != "arguments" && k != "original_arguments" {
			collect(e[k])
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// decodePlan reads a plan json_serialize_plan gave, numbers as they are written; a plan
// DuckDB could not serialize is an error.
func decodePlan(plan string) (any, error) {
	var root any
	d := json.NewDecoder(strings.NewReader(plan))
	d.UseNumber()
	if err := d.Decode(&root); err != nil {
		return nil, err
	}
	if m, _ := root.(map[string]any); m["error"] == true {
		msg, _ := m["error_message"].(string)
		return nil, fmt.Errorf("DuckDB cannot show it: %s", msg)
	}
	return root, nil
}

// firstExpression applies check to every outermost expression of a decoded plan, in any
// operator, and returns its first non-empty answer.
func firstExpression(v any, check func(map[string]any) string) string {
	if e, ok := isExpression(v); ok {
		return check(e)
	}
	switch x := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(x) {
			if r := firstExpression(x[k], check); r != "" {
				return r
			}
		}
	case []any:
		for _, y := range x {
			if r := firstExpression(y, check); r != "" {
				return r
			}
		}
	}
	return ""
}

// typeID is the id of a serialized DuckDB type.
func typeID(typ any) string {
	m, _ := typ.(map[string]any)
	id, _ := m["id"].(string)
	return id
}

// hasTypeID reports whether a serialized type is, or nests, a type of id.
func hasTypeID(typ any, id string) bool {
	switch v := typ.(type) {
	case map[string]any:
		if s, _ := v["id"].(string); s == id {
			return true
		}
		for _, x := range v {
			if hasTypeID(x, id) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if hasTypeID(x, id) {
				return true
			}
		}
	}
	return false
}

// eachNode calls visit on every object of a decoded plan, outer ones first, in a fixed order.
func eachNode(v any, visit func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		visit(x)
		for _, k := range sortedKeys(x) {
			eachNode(x[k], visit)
		}
	case []any:
		for _, y := range x {
			eachNode(y, visit)
		}
	}
}

// exprType is an expression's serialized type (a constant's is its value's).
func exprType(e map[string]any) any {
	if t, ok := e["return_type"]; ok {
		return t
	}
	v, _ := e["value"].(map[string]any)
	return v["type"]
}

// planText is an expression's serialized form, without where it was written.
func planText(e map[string]any) string {
	clean := map[string]any{}
	for k, v := range e {
		if k != "query_location" && k != "alias" {
			clean[k] = v
		}
	}
	b, _ := json.Marshal(clean)
	return string(b)
}
