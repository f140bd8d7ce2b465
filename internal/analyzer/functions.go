package analyzer

import "strings"

// funcKind classifies a function name.
type funcKind int

const (
	unknownFunc funcKind = iota
	scalarFunc
	aggregateFunc // a plain (non-private) aggregate
	windowOnlyFunc
)

// scalarFuncs is the allowlist of scalar functions analysts may call. Everything else is
// refused, so analyst SQL never reaches a database function that reads files, settings or the
// environment. Names are lower case; the SQL generator spells them per dialect.
var scalarFuncs = setOf(
	// math
	"abs", "ceil", "ceiling", "floor", "round", "trunc", "sqrt", "cbrt", "exp", "ln", "log",
	"log10", "log2", "power", "pow", "sign", "mod", "greatest", "least", "pi", "sin", "cos",
	"tan", "asin", "acos", "atan", "atan2", "degrees", "radians", "isnan", "isinf", "isfinite",
	"even", "factorial", "gcd", "lcm",
	// strings
	"lower", "upper", "lcase", "ucase", "length", "char_length", "character_length", "substr",
	"substring", "trim", "ltrim", "rtrim", "replace", "concat", "concat_ws", "left", "right",
	"lpad", "rpad", "position", "strpos", "instr", "starts_with", "ends_with", "contains",
	"reverse", "repeat", "split_part", "regexp_matches", "regexp_replace", "regexp_extract",
	"regexp_full_match", "ascii", "chr", "md5", "format", "printf", "prefix", "suffix",
	"string_split", "array_length", "len",
	// conditionals
	"coalesce", "ifnull", "nullif", "if", "iff",
	// dates and times
	"date_trunc", "datetrunc", "date_part", "datepart", "year", "month", "day", "dayofweek",
	"dayofmonth", "dayofyear", "isodow", "hour", "minute", "second", "quarter", "week",
	"weekofyear", "yearweek", "date_diff", "datediff", "date_sub", "date_add", "strftime",
	"strptime", "make_date", "make_timestamp", "to_timestamp", "epoch", "epoch_ms", "age",
	"last_day", "monthname", "dayname", "current_date", "current_timestamp", "now",
	"to_days", "to_hours", "to_minutes", "to_seconds", "to_months", "to_years", "to_weeks",
	"extract",
	// misc
	"hash", "typeof",
)

// publicOnlyFuncs are GoogleSQL's JSON conversions, for reading released reports in an outer
// query: DOUBLE(json) and FLOAT64(json). They fail on a value
// of the wrong kind, so they are refused over private data (one row could make a query
// fail); over released and public values a failure reveals nothing private.
var publicOnlyFuncs = setOf("double", "float64")

// aggregateFuncs are the plain aggregates allowed inside FROM subqueries that group by the
// privacy unit, and in queries over public relations.
var aggregateFuncs = setOf(
	"count", "sum", "avg", "mean", "min", "max", "stddev", "stddev_pop", "stddev_samp",
	"var_pop", "var_samp", "variance", "median", "bool_and", "bool_or", "string_agg",
	"any_value", "arbitrary", "first", "last", "count_if", "countif", "mode", "product",
	"approx_count_distinct", "quantile_cont", "quantile_disc", "list", "array_agg",
	"arg_min", "arg_max", "min_by", "max_by", "bit_and", "bit_or", "every", "logical_and",
	"logical_or", "corr", "covar_pop", "covar_samp", "regr_slope", "regr_intercept",
	"percentile_cont", "percentile_disc", "kurtosis", "skewness", "entropy", "fsum", "sumkahan",
)

// perUnitAggregates are the plain aggregates allowed over private data (in a FROM subquery or
// CTE that groups by the privacy unit). They neither fail on some values nor grow with the
// data: sum and avg are printed over doubles on DuckDB and numerics on PostgreSQL
// (sqlgen.PrintData), where they cannot overflow. Left out: string_agg, list and array_agg
// (one unit's rows could build a value of any size, beyond the memory limit), and the
// variance family, corr, covar, regr, kurtosis, skewness and entropy, which raise "out of
// range" errors on extreme values.
var perUnitAggregates = setOf(
	"count", "sum", "avg", "mean", "min", "max", "median", "bool_and", "bool_or", "any_value",
	"arbitrary", "first", "last", "count_if", "countif", "mode", "approx_count_distinct",
	"quantile_cont", "quantile_disc", "arg_min", "arg_max", "min_by", "max_by",
	"every", "logical_and", "logical_or", "percentile_cont", "percentile_disc",
)

// withoutCount are the aggregates whose last argument, in DuckDB, may be a count of values to
// return (max(x, n), arg_max(a, b, n)), with the number of arguments they take without it.
// DuckDB fails on some counts even inside TRY, so the count is refused (checkCall).
var withoutCount = map[string]int{"min": 1, "max": 1, "arg_min": 2, "arg_max": 2, "min_by": 2, "max_by": 2}

// windowFuncs are the functions only valid with OVER.
var windowFuncs = setOf(
	"row_number", "rank", "dense_rank", "ntile", "lag", "lead", "first_value", "last_value",
	"nth_value", "percent_rank", "cume_dist",
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func classify(name string) funcKind {
	n := strings.ToLower(name)
	switch {
	case scalarFuncs[n]:
		return scalarFunc
	case aggregateFuncs[n]:
		return aggregateFunc
	case windowFuncs[n]:
		return windowOnlyFunc
	}
	return unknownFunc
}

// anonFunc maps the ANONYMIZATION syntax's function names to aggregates.
var anonFuncs = map[string]Func{
	"anon_count": CountRows, "anon_sum": Sum, "anon_avg": Avg,
	"anon_var_pop": VarPop, "anon_var": VarPop, "anon_variance": VarPop,
	"anon_stddev_pop": StddevPop, "anon_stddev": StddevPop,
	"anon_percentile_cont": Percentile, "anon_quantiles": Quantiles,
	"anon_median": Percentile, "anon_min": Percentile, "anon_max": Percentile, "anon_ntile": Percentile,
}

// dpFuncs maps the DIFFERENTIAL_PRIVACY syntax's function names to aggregates.
var dpFuncs = map[string]Func{
	"count": CountRows, "sum": Sum, "avg": Avg, "var_pop": VarPop, "stddev_pop": StddevPop,
	"percentile_cont": Percentile, "approx_quantiles": Quantiles,
}

// isAnonAggregate reports whether a call names an anonymized aggregate in the given syntax.
func isAnonAggregate(name string, syntax int) (Func, bool) {
	n := strings.ToLower(name)
	if f, ok := anonFuncs[n]; ok {
		return f, true
	}
	if syntax == 2 { // ast.DifferentialPrivacy
		f, ok := dpFuncs[n]
		return f, ok
	}
	return 0, false
}

// IsAggregate reports whether name is a plain aggregate function (for the SQL generator,
// which must not wrap aggregate calls the way it wraps scalar expressions).
func IsAggregate(name string) bool { return classify(name) == aggregateFunc }
