package store

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/duckfn"
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
// constant, a comparison, AND, OR, NOT, IS NULL, IN, BETWEEN, CASE, COALESCE, a cast that
// always succeeds (to the same type, to text from anything but a blob, to a wider integer,
// to DOUBLE from a number; TRY_CAST), arithmetic on floats, the string, list, struct and
// date-part functions of totalFunctions, and the aggregates of totalAggregates with their
// usual arguments (max(x, n) fails for some n), sum and avg of floats and of integers up to
// 64 bits. Integer arithmetic, math functions and casts that parse or narrow must be inside
// TRY(...), which gives NULL in a failing row; TRY does not catch every error of every
// function (a second review: "not implemented" for AT TIME ZONE with an unknown zone,
// list_reduce of an empty list, date_part of a part the type lacks), so inside TRY only
// casts, arithmetic and math functions (tryCatchable) are added. DuckDB's optimizer moves a
// subexpression that appears twice out of the TRY around it (common subexpressions): such a
// repetition of a fallible expression is refused. A constant expression is checked like any
// other (DuckDB leaves one that fails unfolded and evaluates it on every row that reaches it),
// except small numeric constants cast or truncated (INTERVAL 1 DAY binds as
// to_days(CAST(trunc(1.0) AS INTEGER))) and casts of constants that DuckDB, asked in one
// statement, makes (d >= '2020-01-01'). Scalar subqueries (which DuckDB fails when they
// return two rows) and recursive CTEs (whose depth the rows decide) are refused. Third and
// fourth reviews added: positions and lengths fit 32 bits (positional); a date part is a
// constant the value's type has (internal/duckfn); two fallible expressions reading the same
// columns through the same function count as one repetition, since DuckDB folds constants
// before it merges them (fallibleKey); TRY_CAST to a MAP fails on equal keys; a window
// frame's offsets are constants. A private table's generated columns are checked the same
// way: DuckDB does not check them again when an UPDATE changes what they read.
//
// The bound plan is read, not the optimized one: the optimizer's choices follow the tables'
// statistics, which one person's value can move, and the refusal must not.

// totalFunctions are the scalar functions that cannot fail on any value of their arguments
// (nor build a value of any size from one: repeat, lpad and list_resize are not here).
var totalFunctions = setOfNames(
	"struct_extract", "struct_extract_at", "struct_pack", "row", "list_value", "list_extract",
	"list_element", "array_extract", "array_value", "normalized_interval", "||", "concat",
	"list_concat", "list_cat", "array_concat", "array_cat", "len", "list_contains", "list_has",
	"array_contains", "lower", "upper", "lcase", "ucase", "length", "strlen", "char_length",
	"character_length", "trim", "ltrim", "rtrim", "prefix", "suffix", "starts_with",
	"ends_with", "contains", "~~", "!~~", "substr", "substring", "left", "right", "split_part",
	"concat_ws", "md5", "strpos", "position", "instr", "reverse", "hash", "least", "greatest",
	"monthname", "dayname")

// positional are the functions whose arguments after the first are positions or lengths:
// DuckDB fails on one outside 32 bits ("Substring offset/length outside of supported range",
// third review), so those must be narrower integers or small constants.
var positional = setOfNames("substr", "substring", "left", "right", "split_part", "list_extract",
	"list_element", "array_extract", "struct_extract_at")

// tryCatchable are the functions whose errors TRY catches (out of range, conversion, a map's
// duplicate or NULL keys), allowed inside TRY besides totalFunctions.
var tryCatchable = setOfNames("+", "-", "*", "/", "//", "%", "abs", "round", "floor", "ceil",
	"ceiling", "trunc", "sqrt", "cbrt", "exp", "ln", "log", "log10", "log2", "power", "pow",
	"sign", "mod", "even", "gcd", "lcm", "map", "map_from_entries")

// totalAggregates are the aggregates and window functions that cannot fail whatever they
// aggregate, with the number of arguments they take then; sum and avg are decided by their
// argument's type (totalHere).
var totalAggregates = map[string]int{
	"count": 1, "count_star": 0, "min": 1, "max": 1, "first": 1, "last": 1, "any_value": 1,
	"list": 1, "array_agg": 1, "bool_and": 1, "bool_or": 1, "mode": 1, "arg_min": 2,
	"arg_max": 2, "min_by": 2, "max_by": 2, "first_value": 1, "last_value": 1,
}

// totalWindows are the window functions, by their expression type, that cannot fail.
var totalWindows = setOfNames("WINDOW_ROW_NUMBER", "WINDOW_RANK", "WINDOW_RANK_DENSE",
	"WINDOW_PERCENT_RANK", "WINDOW_CUME_DIST", "WINDOW_FIRST_VALUE", "WINDOW_LAST_VALUE")

func setOfNames(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// integerWidth is the width in bits of DuckDB's integer types, negative for unsigned ones.
var integerWidth = map[string]int{"TINYINT": 8, "SMALLINT": 16, "INTEGER": 32, "BIGINT": 64,
	"HUGEINT": 128, "UTINYINT": -8, "USMALLINT": -16, "UINTEGER": -32, "UBIGINT": -64, "UHUGEINT": -128}

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
	case t == "LIST" && f == "LIST":
		return castAlwaysSucceeds(childType(from), childType(to))
	case t == "STRUCT" && f == "STRUCT":
		// Field by field, the same names in the same order.
		fc, tc := structFields(from), structFields(to)
		if len(fc) != len(tc) || len(fc) == 0 {
			return false
		}
		for i := range fc {
			if fc[i]["first"] != tc[i]["first"] || !castAlwaysSucceeds(fc[i]["second"], tc[i]["second"]) {
				return false
			}
		}
		return true
	case t == "DECIMAL":
		// To as many digits or more on each side of the point.
		wt, st, ok := decimalWidth(to)
		if !ok {
			return false
		}
		if wf, sf, ok := decimalWidth(from); ok && f == "DECIMAL" {
			return st >= sf && wt-st >= wf-sf
		}
		return integerDigits[f] != 0 && wt-st >= integerDigits[f]
	}
	return false
}

// childType is a serialized LIST type's element type.
func childType(typ any) any {
	m, _ := typ.(map[string]any)
	info, _ := m["type_info"].(map[string]any)
	return info["child_type"]
}

// structFields are a serialized STRUCT type's fields: "first" its name, "second" its type.
func structFields(typ any) []map[string]any {
	m, _ := typ.(map[string]any)
	info, _ := m["type_info"].(map[string]any)
	var out []map[string]any
	for _, c := range asList(info["child_types"]) {
		c, _ := c.(map[string]any)
		out = append(out, c)
	}
	return out
}

// integerDigits is the number of decimal digits the largest value of an integer type has.
var integerDigits = map[string]int{"TINYINT": 3, "SMALLINT": 5, "INTEGER": 10, "BIGINT": 19,
	"HUGEINT": 39, "UTINYINT": 3, "USMALLINT": 5, "UINTEGER": 10, "UBIGINT": 20, "UHUGEINT": 39}

// decimalWidth returns a serialized DECIMAL type's width and scale.
func decimalWidth(typ any) (width, scale int, ok bool) {
	m, _ := typ.(map[string]any)
	info, _ := m["type_info"].(map[string]any)
	w, err1 := strconv.Atoi(fmt.Sprint(info["width"]))
	s, err2 := strconv.Atoi(fmt.Sprint(info["scale"]))
	return w, s, typeID(typ) == "DECIMAL" && err1 == nil && err2 == nil
}

// floatTypes are the types whose arithmetic cannot fail (IEEE: an overflow is an infinity).
var floatTypes = map[string]bool{"FLOAT": true, "DOUBLE": true}

// expressionFails returns a description of the first expression in e, outside TRY, that can
// fail on a value, or "". repeated counts the fallible expressions of the plan by what they
// compute (repeatedFallible).
func (c *viewCheck) expressionFails(e map[string]any) string {
	class, _ := e["expression_class"].(string)
	typ, _ := e["type"].(string)
	name, _ := e["name"].(string)
	if smallConstant(e) {
		return ""
	}
	if isTry(e) {
		return c.failsInsideTry(e)
	}
	subs := subExpressions(e)
	for _, s := range subs {
		if r := c.expressionFails(s); r != "" {
			return r
		}
	}
	if c.totalHere(e, subs) {
		return ""
	}
	what := describe(class, typ, name, e)
	if class == "BOUND_CAST" {
		if child, ok := isExpression(e["child"]); ok {
			what = "a cast from " + typeID(exprType(child)) + " to " + typeID(e["return_type"])
		}
	}
	return what
}

// totalHere reports whether expression e cannot fail itself (its subexpressions subs apart).
func (c *viewCheck) totalHere(e map[string]any, subs []map[string]any) bool {
	class, _ := e["expression_class"].(string)
	typ, _ := e["type"].(string)
	name, _ := e["name"].(string)
	ret := typeID(e["return_type"])
	switch class {
	case "BOUND_REF", "BOUND_COLUMN_REF", "BOUND_CONSTANT", "BOUND_PARAMETER", "BOUND_CONJUNCTION",
		"BOUND_COMPARISON", "BOUND_BETWEEN", "BOUND_CASE", "BOUND_UNNEST", "BOUND_REF_LAMBDA":
		return true
	case "BOUND_OPERATOR":
		switch typ {
		case "OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL", "OPERATOR_NOT", "OPERATOR_COALESCE",
			"COMPARE_IN", "COMPARE_NOT_IN":
			return true
		}
	case "BOUND_CAST":
		// TRY_CAST to a MAP still fails on two equal keys ("Map keys must be unique", a fourth
		// review), and to GEOMETRY on its parse errors; TRY(CAST(...)) catches the first.
		// TRY_CAST between date and time types still fails on some values (TIMESTAMP
		// 'infinity' to TIME, the largest DATE to TIMESTAMPTZ, a TIMESTAMP beyond
		// TIMESTAMP_NS's range: a fifth review); TRY(TRY_CAST(...)) catches them.
		try, _ := e["try_cast"].(bool)
		child, ok := isExpression(e["child"])
		tryWorks := try && !hasTypeID(e["return_type"], "GEOMETRY") && !hasTypeID(e["return_type"], "MAP") &&
			!(ok && hasDatetime(exprType(child)) && hasDatetime(e["return_type"]))
		return tryWorks || ok && castAlwaysSucceeds(exprType(child), e["return_type"]) || c.castWorks[planText(e)]
	case "BOUND_FUNCTION":
		if !likeConstant(name, subs) {
			return false
		}
		if positional[name] {
			for _, s := range subs[min(1, len(subs)):] {
				if !fitsInt32(s) {
					return false
				}
			}
		}
		if fn, part, works, ok := dateCall(name, subs); ok {
			// Outside TRY, also no conversion error on an extreme value (duckfn.RangeFails).
			return works && !duckfn.RangeFails(fn, part)
		}
		switch {
		case totalFunctions[name]:
			return true
		case strings.HasPrefix(name, "__internal_compress") || strings.HasPrefix(name, "__internal_decompress"):
			return true
		case name == "+" || name == "-" || name == "*" || name == "/" || name == "abs" ||
			name == "round" || name == "floor" || name == "ceil" || name == "trunc":
			return floatTypes[ret] // IEEE: an overflow is an infinity
		}
	case "BOUND_WINDOW":
		// A frame's offsets read from a column fail on a negative one ("Invalid GROUPS
		// PRECEDING value", a fourth review): they must be constants.
		for _, k := range []string{"start_expr", "end_expr", "offset_expr"} {
			if x, ok := isExpression(e[k]); ok && x["expression_class"] != "BOUND_CONSTANT" && !smallConstant(x) {
				return false
			}
		}
		if totalWindows[typ] {
			return true
		}
		return totalAggregate(name, subs)
	case "BOUND_AGGREGATE":
		return totalAggregate(name, subs)
	}
	return false
}

// datetimeTypes are DuckDB's date and time types, as its plans spell them.
var datetimeTypes = []string{duckfn.Date, duckfn.Time, "TIME_NS", duckfn.TimeTZ, duckfn.Timestamp,
	duckfn.TimestampS, duckfn.TimestampMS, duckfn.TimestampNS, duckfn.TimestampTZ}

// hasDatetime reports whether typ is, or nests, a date or time type.
func hasDatetime(typ any) bool {
	for _, id := range datetimeTypes {
		if hasTypeID(typ, id) {
			return true
		}
	}
	return false
}

// likeConstant reports whether a call of name is not a LIKE (~~, !~~, ~~*, !~~*, ~~~) or
// matches a constant pattern: DuckDB matches a pattern read from a row recursively, one frame
// per %, which crashed the process past its stack or ran for minutes past the statement
// timeout on one row's strings (an outside review).
func likeConstant(name string, subs []map[string]any) bool {
	switch name {
	case "~~", "!~~", "~~*", "!~~*", "~~~", "like_escape", "not_like_escape", "ilike_escape", "not_ilike_escape":
		return len(subs) >= 2 && subs[1]["expression_class"] == "BOUND_CONSTANT"
	}
	return true
}

// dateCall reads a call of a date function (a part by name, year(x); date_part, date_trunc,
// date_diff and their spellings with a constant part; last_day): the function as duckfn
// names it, its part, and whether DuckDB never raises "not implemented" on it, which TRY
// does not catch (a part the value's type lacks); ok is false for any other call.
// Conversion errors on extreme values, which TRY catches, are duckfn.RangeFails.
func dateCall(name string, subs []map[string]any) (fn, part string, works, ok bool) {
	if part, isPart := duckfn.NamedPart(name); isPart && len(subs) == 1 {
		return "date_part", part, !duckfn.DatePartFails("date_part", part, typeID(subs[0]["return_type"])), true
	}
	if fn, isFn := duckfn.DateFunction(name); isFn {
		if len(subs) < 2 || subs[0]["expression_class"] != "BOUND_CONSTANT" {
			return fn, "", false, true
		}
		part := constantText(subs[0])
		return fn, part, !duckfn.DatePartFails(fn, part, typeID(subs[1]["return_type"])), true
	}
	if name == "last_day" {
		return name, "", true, true
	}
	return "", "", false, false
}

// constantText is the text of a constant expression e, or "".
func constantText(e map[string]any) string {
	if e["expression_class"] != "BOUND_CONSTANT" {
		return ""
	}
	v, _ := e["value"].(map[string]any)
	s, _ := v["value"].(string)
	return s
}

// isTry reports whether expression e is TRY(...).
func isTry(e map[string]any) bool {
	return e["expression_class"] == "BOUND_OPERATOR" && e["type"] == "OPERATOR_TRY"
}

// fitsInt32 reports whether e's values fit 32 bits: a narrower integer, or a small constant,
// cast to a wider type or not.
func fitsInt32(e map[string]any) bool {
	if smallConstant(e) {
		return true
	}
	if w := integerWidth[typeID(e["return_type"])]; w >= -16 && w <= 32 && w != 0 {
		return true
	}
	child, ok := isExpression(e["child"])
	return e["expression_class"] == "BOUND_CAST" && ok && fitsInt32(child)
}

// totalAggregate reports whether aggregate name over subs cannot fail.
func totalAggregate(name string, subs []map[string]any) bool {
	if n, ok := totalAggregates[name]; ok {
		return len(subs) <= max(n, 1)
	}
	if name == "sum" || name == "avg" || name == "mean" {
		if len(subs) != 1 {
			return false
		}
		arg := typeID(subs[0]["return_type"])
		w := integerWidth[arg]
		return floatTypes[arg] || w != 0 && w >= -64 && w <= 64
	}
	return false
}

// smallConstant reports whether e is a numeric constant of at most a million in size, cast to
// a number, negated or truncated, or an interval of such a number (INTERVAL 1 DAY binds as
// to_days(CAST(trunc(1.0) AS INTEGER))): none of these fails.
func smallConstant(e map[string]any) bool {
	class, _ := e["expression_class"].(string)
	name, _ := e["name"].(string)
	switch class {
	case "BOUND_CONSTANT":
		v, _ := e["value"].(map[string]any)
		n, ok := v["value"].(json.Number)
		f, err := n.Float64()
		return ok && err == nil && f >= -1e6 && f <= 1e6
	case "BOUND_CAST":
		child, ok := isExpression(e["child"])
		return ok && smallConstant(child) && numberTypes[typeID(e["return_type"])]
	case "BOUND_FUNCTION":
		subs := subExpressions(e)
		if len(subs) != 1 || !smallConstant(subs[0]) {
			return false
		}
		switch name {
		case "trunc", "-", "to_years", "to_months", "to_weeks", "to_days", "to_hours",
			"to_minutes", "to_seconds", "to_milliseconds", "to_microseconds":
			return true
		}
	}
	return false
}

// failsInsideTry describes the first expression under e (the body of a TRY) that TRY does not
// make total: a function outside totalFunctions and tryCatchable (TRY does not catch every
// error of every function; among them LIKE ... ESCAPE, time_bucket, array_length(l, d), AT
// TIME ZONE, list_reduce), a cast to GEOMETRY, or a fallible expression that appears twice in
// the plan, which DuckDB computes once, outside the TRY.
func (c *viewCheck) failsInsideTry(e map[string]any) string {
	if smallConstant(e) {
		return ""
	}
	class, _ := e["expression_class"].(string)
	name, _ := e["name"].(string)
	subs := subExpressions(e)
	switch class {
	case "BOUND_FUNCTION":
		if !likeConstant(name, subs) {
			return "LIKE with a pattern that is not a constant (DuckDB's matcher for it recursed past its stack on one row, or ran for minutes: it crashes or hangs, even inside TRY)"
		}
		if _, _, works, ok := dateCall(name, subs); ok && !works {
			return name + "() of a part its value's type lacks (which fails even inside TRY)"
		} else if !ok && !totalFunctions[name] && !tryCatchable[name] {
			return name + "() (whose errors TRY does not catch)"
		}
	case "BOUND_CAST":
		if hasTypeID(e["return_type"], "GEOMETRY") {
			return "a cast to GEOMETRY (which fails even inside TRY)"
		}
	case "BOUND_OPERATOR":
		if typ, _ := e["type"].(string); typ == "OPERATOR_COALESCE" {
			// COALESCE converting an argument to the common type inside TRY crashed DuckDB
			// 1.5 (a segmentation fault) when one value did not convert (a fifth review).
			for _, s := range subs {
				if s["expression_class"] == "BOUND_CAST" && !c.totalHere(s, subExpressions(s)) {
					return "coalesce() of arguments of different types inside TRY (DuckDB crashes when converting one fails; write CASE WHEN a IS NOT NULL THEN a ELSE b END)"
				}
			}
		}
	}
	if !c.totalHere(e, subs) && c.repeated[fallibleKey(e)] > 1 {
		return "an expression that appears twice inside TRY (DuckDB computes it once, outside the TRY; compute it once in a subquery)"
	}
	for _, s := range subs {
		if r := c.failsInsideTry(s); r != "" {
			return r
		}
	}
	return ""
}

// fallibleKey names what a fallible expression computes, up to the shape of its operands:
// its class, function and type, and the columns it reads. DuckDB folds constants before it
// looks for common subexpressions, so CAST(CASE WHEN true THEN c END AS INTEGER) met
// CAST(c AS INTEGER) and left its TRY (third review); two fallible expressions with one key
// are taken as one.
func fallibleKey(e map[string]any) string {
	class, _ := e["expression_class"].(string)
	name, _ := e["name"].(string)
	ret, _ := json.Marshal(e["return_type"])
	refs := map[string]bool{}
	var collect func(x map[string]any)
	collect = func(x map[string]any) {
		if c, _ := x["expression_class"].(string); c == "BOUND_REF" || c == "BOUND_COLUMN_REF" {
			b, _ := json.Marshal([]any{x["index"], x["binding"], x["depth"]})
			refs[string(b)] = true
		}
		for _, s := range subExpressions(x) {
			collect(s)
		}
	}
	collect(e)
	keys := make([]string, 0, len(refs))
	for k := range refs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return class + "|" + name + "|" + string(ret) + "|" + strings.Join(keys, ",")
}

// repeatedFallible counts, by fallibleKey, the expressions of a decoded plan that cannot be shown
// total by themselves (their subexpressions apart).
func (c *viewCheck) repeatedFallible(root any) map[string]int {
	counts := map[string]int{}
	eachNode(root, func(x map[string]any) {
		if _, ok := isExpression(x); ok && !smallConstant(x) && !c.totalHere(x, subExpressions(x)) {
			counts[fallibleKey(x)]++
		}
	})
	return counts
}

// viewCheck is the state of planFails over one plan: the fallible expressions it counts by
// what they compute (repeatedFallible), and the casts of constants DuckDB was seen to make
// (castWorks, by planText; constantCasts).
type viewCheck struct {
	repeated  map[string]int
	castWorks map[string]bool
}

// planFails checks the decoded plan of private relation rel: every expression in it, in any
// operator, must be total (RuleTotalViews), and no operator may fail on the rows: a scalar
// subquery (a SINGLE join, which DuckDB fails when it meets two rows) or a recursive CTE
// (whose depth, and memory, the rows decide). castWorks holds the casts of constants that
// DuckDB makes (checkConstantCasts): a constant that fails is evaluated on every row that
// reaches it, one that does not is as good as its value.
func planFails(rel string, root any, castWorks map[string]bool) error {
	if what := failingOperator(root); what != "" {
		return totalViewError(rel, what)
	}
	c := &viewCheck{castWorks: castWorks}
	c.repeated = c.repeatedFallible(root)
	if what := firstExpression(root, c.expressionFails); what != "" {
		return totalViewError(rel, what)
	}
	return nil
}

// typeSQL spells a serialized type in SQL, for the types without parameters and DECIMAL.
func typeSQL(t any) (string, bool) {
	m, _ := t.(map[string]any)
	id, _ := m["id"].(string)
	info, _ := m["type_info"].(map[string]any)
	switch {
	case id == "" || id == "INVALID" || strings.ContainsAny(id, `"';()`):
		return "", false
	case id == "DECIMAL":
		w, _ := info["width"].(json.Number)
		sc, _ := info["scale"].(json.Number)
		return fmt.Sprintf("DECIMAL(%s,%s)", w, sc), w != "" && sc != ""
	case m["type_info"] != nil:
		return "", false
	}
	return id, true
}

// constantCast is a cast of a constant in a plan: key is the cast's planText, value the
// constant's text (unless null), from and to the types in SQL.
type constantCast struct {
	key, value, from, to string
	null                 bool
}

// constantCasts returns the casts of a constant in a decoded plan that dpsql can ask DuckDB
// about: a constant of a type typeSQL spells, to such a type.
func constantCasts(root any) []constantCast {
	var out []constantCast
	eachNode(root, func(x map[string]any) {
		child, ok := isExpression(x["child"])
		if !ok || x["expression_class"] != "BOUND_CAST" || child["expression_class"] != "BOUND_CONSTANT" {
			return
		}
		val, _ := child["value"].(map[string]any)
		from, ok1 := typeSQL(val["type"])
		to, ok2 := typeSQL(x["return_type"])
		if !ok1 || !ok2 {
			return
		}
		c := constantCast{key: planText(x), from: from, to: to}
		c.null, _ = val["is_null"].(bool)
		switch y := val["value"].(type) {
		case string:
			c.value = y
		case json.Number:
			c.value = decimalText(y.String(), val["type"])
		case bool:
			c.value = fmt.Sprint(y)
		default:
			c.null = c.null || y == nil
		}
		out = append(out, c)
	})
	return out
}

// decimalText is a serialized constant's text: a DECIMAL's value is serialized unscaled.
func decimalText(n string, t any) string {
	m, _ := t.(map[string]any)
	info, _ := m["type_info"].(map[string]any)
	sc, _ := info["scale"].(json.Number)
	scale, err := sc.Int64()
	if m["id"] != "DECIMAL" || err != nil || scale <= 0 {
		return n
	}
	neg := strings.HasPrefix(n, "-")
	digits := strings.TrimPrefix(n, "-")
	for int64(len(digits)) <= scale {
		digits = "0" + digits
	}
	out := digits[:int64(len(digits))-scale] + "." + digits[int64(len(digits))-scale:]
	if neg {
		out = "-" + out
	}
	return out
}

// checkConstantCasts asks DuckDB, in one statement that reads no row, which of casts succeed.
func checkConstantCasts(ctx context.Context, q backend.Querier, casts []constantCast) (map[string]bool, error) {
	works := map[string]bool{}
	var cols []string
	var args []any
	var asked []constantCast
	for _, c := range casts {
		if c.null {
			works[c.key] = true
			continue
		}
		args = append(args, c.value)
		n := len(args)
		cols = append(cols, fmt.Sprintf("TRY_CAST(TRY_CAST(CAST($%d AS VARCHAR) AS %s) AS %s) IS NOT NULL", n, c.from, c.to))
		asked = append(asked, c)
	}
	if len(cols) == 0 {
		return works, nil
	}
	rows, err := q.Query(ctx, "SELECT "+strings.Join(cols, ", "), args...)
	if err != nil {
		return nil, err
	}
	if len(rows.Values) != 1 {
		return nil, fmt.Errorf("%d rows", len(rows.Values))
	}
	for i, c := range asked {
		if rows.Values[0][i] == true {
			works[c.key] = true
		}
	}
	return works, nil
}

// failingOperator describes the first operator of a decoded plan that can fail on the rows.
func failingOperator(root any) string {
	what := ""
	eachNode(root, func(x map[string]any) {
		switch {
		case what != "":
		case x["join_type"] == "SINGLE":
			what = "a scalar subquery (DuckDB fails one that returns two rows; write it as a LEFT JOIN)"
		case x["type"] == "LOGICAL_RECURSIVE_CTE":
			what = "a recursive CTE (the rows decide how deep it goes)"
		}
	})
	return what
}

func totalViewError(rel, what string) error {
	return sqlerr.Privacy(sqlerr.Pos{}, RuleTotalViews,
		fmt.Sprintf("private view %s evaluates %s, which can fail on one person's value: an analyst's WHERE chooses the rows it runs on, so whether a query fails would tell about that person", rel, what),
		"wrap the expression in TRY(...) (or write TRY_CAST), which gives NULL in the failing row only, or compute it into a table (docs/privacy-rules.md)")
}
