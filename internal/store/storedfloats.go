package store

import (
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/sqlerr"
)

// RuleStoredFloats is the rule a private DuckDB view, or a private table's generated column,
// breaks when it computes from a stored floating-point or interval value something that
// shows how that value was written.
const RuleStoredFloats = "private-views-stored-floats"

// DuckDB's storage compresses a run of values it finds equal into the first of them, and a
// Parquet file's dictionary keeps one of them: -0.0 equals 0.0, -nan equals nan, '1 month'
// equals '30 days', so the 0.0s stored after one person's -0.0 read back as -0.0, the NaNs
// written to Parquet after one person's -nan as -nan, the '30 days' after one person's
// '1 month' as '1 month' (outside reviews, 2026-11-29). dpsql reads every float and interval
// of a private relation as one canonical value (sqlgen.NormaliseStored), but the owner's own
// SQL runs before that read: a private view's CAST(x AS VARCHAR), to_json(x), 1/x or
// date_part('day', iv), or a generated column computing the same, showed the target's
// spelling in everyone's rows only when that person's row was there.
//
// So in the bound plan of a private relation (DuckDB's json_serialize_plan, which binds it and
// reads no row), a value computed from a stored float or interval may only be used in ways
// that cannot tell equal values apart: passed through (dpsql normalises it at the read),
// compared, tested for NULL, a float used in arithmetic whose result is again a float (divided
// by a value not itself from one: 1/x turns a zero's sign into an infinity's; interval
// arithmetic shows the spelling, '1 month' / 7 against '30 days' / 7), rounded or cast to
// another number type, chosen by CASE, COALESCE, least or greatest, aggregated by count, min,
// max, first, list (and a float by sum or avg), put in a list, struct, map or union (which
// keep it as it is, normalised at the read), a field or element taken from it.
// Everything else is refused, whatever the rows: the plan's operators and types do not depend
// on them.

// inexactTyped reports whether a serialized DuckDB type is, or nests, a FLOAT, a DOUBLE or
// an INTERVAL: the types whose equal values can be written otherwise.
func inexactTyped(typ any) bool {
	return hasTypeID(typ, "FLOAT") || hasTypeID(typ, "DOUBLE") || hasTypeID(typ, "INTERVAL")
}

// spellingBlind lists what may take a value computed from a stored float or interval, by
// expression class, then by function name or expression type ("" for every one of the class).
var spellingBlind = map[string]map[string]bool{
	"BOUND_REF":         {"": true},
	"BOUND_COLUMN_REF":  {"": true},
	"BOUND_COMPARISON":  {"": true},
	"BOUND_BETWEEN":     {"": true},
	"BOUND_CASE":        {"": true},
	"BOUND_CONJUNCTION": {"": true},
	"BOUND_OPERATOR": {"OPERATOR_IS_NULL": true, "OPERATOR_IS_NOT_NULL": true, "COMPARE_IN": true,
		"COMPARE_NOT_IN": true, "OPERATOR_COALESCE": true, "OPERATOR_NOT": true, "OPERATOR_TRY": true},
	"BOUND_FUNCTION": {"struct_extract": true, "struct_extract_at": true, "array_extract": true, "list_extract": true,
		"list_element": true,
		// Containers keep the value as it is, which dpsql normalises at the read.
		"list_value": true, "array_value": true, "struct_pack": true, "row": true, "map": true,
		"map_from_entries": true, "union_value": true,
		// DuckDB binds it around intervals it compares or groups: one value per equal ones.
		"normalized_interval": true},
	"BOUND_AGGREGATE": {"count": true, "count_star": true, "sum": true, "avg": true, "min": true,
		"max": true, "first": true, "any_value": true, "list": true, "array_agg": true},
	"BOUND_UNNEST": {"": true},
	// BOUND_CAST: only a float, to a number (storedFloatUse).
}

// arithmetic lists the functions that may take a value computed from a stored float or
// interval when their result is again one (see storedFloatUse): date + iv is refused.
var arithmetic = map[string]bool{"+": true, "-": true, "*": true, "/": true, "abs": true, "round": true,
	"floor": true, "ceil": true, "ceiling": true, "trunc": true, "least": true, "greatest": true}

// numberTypes are the types a stored float may be cast to: none shows the sign of a zero.
var numberTypes = map[string]bool{"FLOAT": true, "DOUBLE": true, "DECIMAL": true, "BOOLEAN": true,
	"TINYINT": true, "SMALLINT": true, "INTEGER": true, "BIGINT": true, "HUGEINT": true,
	"UTINYINT": true, "USMALLINT": true, "UINTEGER": true, "UBIGINT": true, "UHUGEINT": true}

// storedFloatUse walks expression e and returns whether its value is computed from a stored
// float or interval (tainted), or the first use of one that could show how it was written.
func storedFloatUse(e map[string]any) (tainted bool, refused string) {
	class, _ := e["expression_class"].(string)
	typ, _ := e["type"].(string)
	name, _ := e["name"].(string)
	subs := subExpressions(e)
	taint := make([]bool, len(subs))
	fromStored := false
	for i, s := range subs {
		t, r := storedFloatUse(s)
		if r != "" {
			return false, r
		}
		taint[i], fromStored = t, fromStored || t
	}
	inexact := inexactTyped(e["return_type"])
	switch {
	case class == "BOUND_REF" || class == "BOUND_COLUMN_REF":
		// A column of another operator: it may hold a stored value as read.
		return inexact, ""
	case !fromStored:
		return false, ""
	}
	kinds := spellingBlind[class]
	ok := kinds[""] || kinds[name] || (class == "BOUND_OPERATOR" && kinds[typ])
	switch {
	case class == "BOUND_CAST":
		ok = numberTypes[typeID(e["return_type"])] && len(subs) == 1 && scalarFloat(subs[0]["return_type"])
	case class == "BOUND_FUNCTION" && arithmetic[name]:
		// x / 2 keeps a zero a zero; 1 / x turns its sign into an infinity's. Interval
		// arithmetic shows the spelling: '1 month' / 7 and '30 days' / 7 differ, and so do
		// '1 month' - '1 day' and '29 days' after normalized_interval (second review).
		ok = scalarFloat(e["return_type"]) && (name != "/" || len(subs) == 2 && !taint[1])
		for i, s := range subs {
			ok = ok && (!taint[i] || scalarFloat(s["return_type"]))
		}
	case (class == "BOUND_AGGREGATE" || class == "BOUND_WINDOW") && (name == "sum" || name == "avg"):
		// A sum of floats is a float; an average of intervals divides them (above).
		for i, s := range subs {
			ok = ok && (!taint[i] || scalarFloat(s["return_type"]))
		}
	}
	if !ok {
		return false, describe(class, typ, name, e)
	}
	return inexact, ""
}

// scalarFloat reports whether a serialized type is FLOAT or DOUBLE itself.
func scalarFloat(typ any) bool { return floatTypes[typeID(typ)] }

// describe names a refused expression for the error.
func describe(class, typ, name string, e map[string]any) string {
	switch class {
	case "BOUND_CAST":
		return "a cast to " + typeID(e["return_type"])
	case "BOUND_FUNCTION", "BOUND_AGGREGATE", "BOUND_WINDOW":
		if op, _ := e["is_operator"].(bool); op && name == "/" {
			return "a division, as the divisor"
		} else if op {
			return "the operator " + name
		} else if name != "" {
			return name + "()"
		}
	}
	if typ != "" {
		return strings.ToLower(typ)
	}
	return strings.ToLower(class)
}

// planShowsFloatSigns checks the decoded plan of private relation rel: every expression in
// it, in any operator (RuleStoredFloats).
func planShowsFloatSigns(rel string, root any) error {
	refused := firstExpression(root, func(e map[string]any) string {
		_, r := storedFloatUse(e)
		return r
	})
	if refused != "" {
		return storedFloatsError(rel, refused)
	}
	return nil
}

func storedFloatsError(rel, what string) error {
	return sqlerr.Privacy(sqlerr.Pos{}, RuleStoredFloats,
		fmt.Sprintf("private relation %s passes a value read from a stored floating-point or interval column to %s: DuckDB's storage (and a Parquet file's dictionary) can give the values stored after one person's -0.0, -nan or '1 month' back written as that person's, and this could show it in everyone's rows", rel, what),
		"pass the column through and leave the computation to analysts' queries, where dpsql reads stored floats and intervals as canonical values, or store the computed value in a table (docs/privacy-rules.md)")
}
