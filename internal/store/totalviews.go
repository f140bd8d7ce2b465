package store

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/dpsql/dpsql/sqlerr"
)

// RuleTotalViews is the rule a private DuckDB view breaks when its SQL can fail on a value.
const RuleTotalViews = "private-views-total"

// An analyst's expressions over private rows are printed in a total form (sqlgen.PrintData):
// whether a query fails must not depend on one person's row. A private view's own SQL runs
// inside the analyst's query, and DuckDB pushes the analyst's WHERE below it: a view's
// CAST(code AS INTEGER) failed only when the target's 'n/a' row passed salary > 50, an exact
// bit about the target's salary at any epsilon (outside review, 2026-11-29). Every view
// reading private rows is no better: it would fail whenever the target is there.
//
// So in the bound plan of a private view (json_serialize_plan, which reads no row) every
// expression that DuckDB evaluates on values must be one that cannot fail: a column, a
// constant, a comparison, AND, OR, NOT, IS NULL, IN, BETWEEN, CASE, COALESCE, TRY(...) and
// TRY_CAST around anything, a cast that always succeeds (to the same type, to text from
// anything but a blob, to a wider integer, to DOUBLE from a number), arithmetic on floats, a
// few string, list and struct functions, and the aggregates count, min, max, first,
// any_value, list, and sum and avg of floats and of integers up to 64 bits. Anything else
// (integer arithmetic, which overflows; casts that parse or narrow; a scalar subquery, which
// DuckDB fails when it returns two rows) is refused until the owner wraps it in TRY(...).

// totalFunctions are the scalar functions that cannot fail on any value of their arguments.
var totalFunctions = map[string]bool{
	"struct_extract": true, "struct_extract_at": true, "struct_pack": true, "row": true,
	"list_value": true, "list_extract": true, "list_element": true, "array_extract": true,
	"array_value": true, "normalized_interval": true, "||": true, "concat": true,
	"lower": true, "upper": true, "length": true, "trim": true, "ltrim": true, "rtrim": true,
	"prefix": true, "suffix": true, "starts_with": true, "contains": true, "~~": true,
	"!~~": true, "hash": true,
}

// totalAggregates are the aggregates (and window functions) that cannot fail whatever they
// aggregate; sum and avg are decided by their argument's type (expressionFails).
var totalAggregates = map[string]bool{
	"count": true, "count_star": true, "min": true, "max": true, "first": true, "last": true,
	"any_value": true, "list": true, "array_agg": true, "bool_and": true, "bool_or": true,
	"arg_min": true, "arg_max": true, "row_number": true, "rank": true, "dense_rank": true,
	"first_value": true, "last_value": true, "percent_rank": true, "cume_dist": true,
}

// integerWidth is the width in bits of DuckDB's integer types, negative for unsigned ones.
var integerWidth = map[string]int{"TINYINT": 8, "SMALLINT": 16, "INTEGER": 32, "BIGINT": 64,
	"HUGEINT": 128, "UTINYINT": -8, "USMALLINT": -16, "UINTEGER": -32, "UBIGINT": -64, "UHUGEINT": -128}

// typeID is the id of a serialized DuckDB type.
func typeID(typ any) string {
	m, _ := typ.(map[string]any)
	id, _ := m["id"].(string)
	return id
}

// castAlwaysSucceeds reports whether DuckDB's cast of a value of type from to type to cannot
// fail.
func castAlwaysSucceeds(from, to any) bool {
	if reflect.DeepEqual(from, to) {
		return true
	}
	f, t := typeID(from), typeID(to)
	switch {
	case t == "VARCHAR":
		// A blob that is not UTF-8 fails; nested blobs are printed escaped, but keep it
		// simple.
		return !hasTypeID(from, "BLOB")
	case t == "DOUBLE":
		return integerWidth[f] != 0 || f == "FLOAT" || f == "DECIMAL"
	case integerWidth[t] != 0 && integerWidth[f] != 0:
		wf, wt := integerWidth[f], integerWidth[t]
		if wt < 0 {
			return wf < 0 && wf > wt // unsigned to a wider unsigned
		}
		if wf < 0 {
			return -wf < wt // unsigned to a wider signed
		}
		return wf < wt
	}
	return false
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

// floatTypes are the types whose arithmetic cannot fail (IEEE: an overflow is an infinity).
var floatTypes = map[string]bool{"FLOAT": true, "DOUBLE": true}

// expressionFails returns a description of the first expression in e, outside TRY, that can
// fail on a value, or "".
func expressionFails(e map[string]any) string {
	class, _ := e["expression_class"].(string)
	typ, _ := e["type"].(string)
	name, _ := e["name"].(string)
	if !readsValues(e) {
		// What reads no value fails for every row or none (INTERVAL 1 DAY binds as
		// to_days(CAST(trunc(1.0) AS INTEGER))).
		return ""
	}
	if class == "BOUND_OPERATOR" && typ == "OPERATOR_TRY" {
		return failsInsideTry(e)
	}
	subs := subExpressions(e)
	for _, s := range subs {
		if r := expressionFails(s); r != "" {
			return r
		}
	}
	ret := typeID(e["return_type"])
	ok := false
	switch class {
	case "BOUND_REF", "BOUND_COLUMN_REF", "BOUND_CONSTANT", "BOUND_PARAMETER", "BOUND_CONJUNCTION",
		"BOUND_COMPARISON", "BOUND_BETWEEN", "BOUND_CASE", "BOUND_UNNEST", "BOUND_REF_LAMBDA":
		ok = true
	case "BOUND_OPERATOR":
		switch typ {
		case "OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL", "OPERATOR_NOT", "OPERATOR_COALESCE",
			"COMPARE_IN", "COMPARE_NOT_IN":
			ok = true
		}
	case "BOUND_CAST":
		try, _ := e["try_cast"].(bool)
		child, _ := isExpression(e["child"])
		constant := child != nil && child["expression_class"] == "BOUND_CONSTANT"
		ok = try || constant || child != nil && castAlwaysSucceeds(child["return_type"], e["return_type"])
	case "BOUND_FUNCTION":
		switch {
		case totalFunctions[name]:
			ok = true
		case name == "+" || name == "-" || name == "*" || name == "/" || name == "abs":
			ok = floatTypes[ret]
		}
	case "BOUND_AGGREGATE", "BOUND_WINDOW":
		switch {
		case totalAggregates[name]:
			ok = true
		case name == "sum" || name == "avg" || name == "mean":
			ok = len(subs) >= 1
			for _, s := range subs[:min(1, len(subs))] {
				arg := typeID(s["return_type"])
				w := integerWidth[arg]
				ok = floatTypes[arg] || w != 0 && w >= -64 && w <= 64
			}
		}
	}
	if ok {
		return ""
	}
	what := describe(class, typ, name, e)
	if class == "BOUND_CAST" {
		child, _ := isExpression(e["child"])
		if child != nil {
			what = "a cast from " + typeID(child["return_type"]) + " to " + ret
		}
	}
	return what
}

// failsInsideTry describes the first expression under e that DuckDB fails even inside TRY
// (outside reviews; the analyzer refuses the same in analysts' queries): LIKE ... ESCAPE
// with a pattern ending in the escape character, time_bucket with a zero width,
// array_length with a dimension out of range, a cast to GEOMETRY (its parse error).
func failsInsideTry(e map[string]any) string {
	class, _ := e["expression_class"].(string)
	name, _ := e["name"].(string)
	switch {
	case class == "BOUND_FUNCTION" && (strings.HasSuffix(name, "like_escape") || name == "time_bucket" ||
		name == "array_length" && len(subExpressions(e)) > 1):
		return name + "() (which fails even inside TRY)"
	case class == "BOUND_CAST" && hasTypeID(e["return_type"], "GEOMETRY"):
		return "a cast to GEOMETRY (which fails even inside TRY)"
	}
	for _, s := range subExpressions(e) {
		if r := failsInsideTry(s); r != "" {
			return r
		}
	}
	return ""
}

// readsValues reports whether expression e reads a column (of its operator's input).
func readsValues(e map[string]any) bool {
	if c, _ := e["expression_class"].(string); c == "BOUND_REF" || c == "BOUND_COLUMN_REF" || c == "BOUND_REF_LAMBDA" || c == "BOUND_LAMBDA_REF" {
		return true
	}
	for _, s := range subExpressions(e) {
		if readsValues(s) {
			return true
		}
	}
	return false
}

// planFails checks the serialized plan of private view rel: every expression in it, in any
// operator, must be total (RuleTotalViews), and no operator may fail on the rows: a scalar
// subquery (a SINGLE join, which DuckDB fails when it meets two rows) or a recursive CTE
// (whose depth, and memory, the rows decide).
func planFails(rel, plan string) error {
	root, err := decodePlan(plan)
	if err != nil {
		return totalViewError(rel, "a plan dpsql cannot read ("+err.Error()+")")
	}
	if what := failingOperator(root); what != "" {
		return totalViewError(rel, what)
	}
	if what := firstExpression(root, expressionFails); what != "" {
		return totalViewError(rel, what)
	}
	return nil
}

// failingOperator describes the first operator of a decoded plan that can fail on the rows.
func failingOperator(v any) string {
	switch x := v.(type) {
	case map[string]any:
		if x["join_type"] == "SINGLE" {
			return "a scalar subquery (DuckDB fails one that returns two rows; write it as a LEFT JOIN)"
		}
		if t, _ := x["type"].(string); t == "LOGICAL_RECURSIVE_CTE" {
			return "a recursive CTE (the rows decide how deep it goes)"
		}
		for _, k := range sortedKeys(x) {
			if r := failingOperator(x[k]); r != "" {
				return r
			}
		}
	case []any:
		for _, y := range x {
			if r := failingOperator(y); r != "" {
				return r
			}
		}
	}
	return ""
}

func totalViewError(rel, what string) error {
	return sqlerr.Privacy(sqlerr.Pos{}, RuleTotalViews,
		fmt.Sprintf("private view %s evaluates %s, which can fail on one person's value: an analyst's WHERE chooses the rows it runs on, so whether a query fails would tell about that person", rel, what),
		"wrap the expression in TRY(...) (or write TRY_CAST), which gives NULL in the failing row only, or compute it into a table (docs/privacy-rules.md)")
}
