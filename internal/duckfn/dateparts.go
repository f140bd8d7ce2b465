// Package duckfn records what DuckDB's functions do on which types where dpsql's guarantee
// depends on it and DuckDB's own documentation is silent: the errors that DuckDB raises at
// run time, row by row, that TRY does not catch, and the optimizers analysts' sessions run
// without. Both the total form of analysts' expressions (internal/sqlgen) and the check of
// owners' private views (internal/store) read it.
package duckfn

import "strings"

// The types DatePartFails knows, as DuckDB's typeof spells them.
const (
	Date        = "DATE"
	Timestamp   = "TIMESTAMP"
	TimestampS  = "TIMESTAMP_S"
	TimestampMS = "TIMESTAMP_MS"
	TimestampNS = "TIMESTAMP_NS"
	TimestampTZ = "TIMESTAMP WITH TIME ZONE"
	Time        = "TIME"
	TimeTZ      = "TIME WITH TIME ZONE"
	Interval    = "INTERVAL"
)

// TemporalTypes are the types a date part can be taken of.
var TemporalTypes = []string{Date, Timestamp, TimestampS, TimestampMS, TimestampNS, TimestampTZ, Time, TimeTZ, Interval}

// partAliases maps DuckDB's spellings of a date part to one name.
var partAliases = map[string]string{}

func init() {
	for canonical, spellings := range map[string][]string{
		"year":         {"year", "yr", "y", "years", "yrs"},
		"month":        {"month", "mon", "months", "mons"},
		"day":          {"day", "days", "d", "dayofmonth"},
		"decade":       {"decade", "dec", "decades", "decs"},
		"century":      {"century", "cent", "centuries", "c"},
		"millennium":   {"millennium", "mil", "millenniums", "millennia", "mils", "millenium"},
		"microseconds": {"microseconds", "microsecond", "us", "usec", "usecs", "usecond", "useconds"},
		"milliseconds": {"milliseconds", "millisecond", "ms", "msec", "msecs", "msecond", "mseconds"},
		"second":       {"second", "sec", "seconds", "secs", "s"},
		"minute":       {"minute", "min", "minutes", "mins", "m"},
		"hour":         {"hour", "hr", "hours", "hrs", "h"},
		"epoch":        {"epoch"},
		"dow":          {"dow", "dayofweek", "weekday"},
		"isodow":       {"isodow"},
		"week":         {"week", "weeks", "w", "weekofyear"},
		"doy":          {"doy", "dayofyear"},
		"quarter":      {"quarter", "quarters"},
		"yearweek":     {"yearweek"},
		"era":          {"era"},
		"timezone":     {"timezone"},
		"tzhour":       {"timezone_hour"},
		"tzminute":     {"timezone_minute"},
		"julian":       {"julian", "jd"},
		"isoyear":      {"isoyear"},
	} {
		for _, s := range spellings {
			partAliases[s] = canonical
		}
	}
}

// timeParts are the parts date_diff counts between two TIMEs.
var timeParts = map[string]bool{"microseconds": true, "milliseconds": true, "second": true, "minute": true, "hour": true, "epoch": true}

// DatePartFails reports whether DuckDB's fn ("date_part", which EXTRACT and the functions
// named after a part, such as dayofweek, also are; "date_diff", which date_sub also is;
// "date_trunc") with the constant part fails at run time on a value of type typ, with "not
// implemented", which TRY does not catch: date_part('dow', iv) of an INTERVAL,
// date_diff('day', t1, t2) of TIMEs, date_trunc('era', d). Measured on DuckDB 1.5 for every
// part and type (an outside review found the first); a part it does not know counts as
// failing on every type.
func DatePartFails(fn, part, typ string) bool {
	p, ok := partAliases[strings.ToLower(strings.TrimSpace(part))]
	if !ok {
		return true
	}
	tz := p == "timezone" || p == "tzhour" || p == "tzminute"
	switch strings.ToLower(fn) {
	case "date_part":
		switch typ {
		case Date:
			return tz
		case Interval:
			switch p {
			case "dow", "isodow", "week", "doy", "yearweek", "era", "isoyear":
				return true
			}
			return tz
		case Time, TimeTZ:
			return p == "era" || p == "isoyear"
		}
		return false
	case "date_diff", "date_trunc":
		if typ == Time && fn == "date_diff" {
			return !timeParts[p]
		}
		return tz || p == "era"
	}
	return true
}

// RangeFails reports whether DuckDB's fn (as DateFunction names it, or "last_day") of part
// can raise a conversion error ("Date out of range", "Date and time not in timestamp range")
// on an extreme value of its type, which TRY catches: date_trunc and date_diff of every part,
// last_day, and the week-based parts (week, yearweek, isoyear) of the earliest DATEs
// (measured on DuckDB 1.5 at the ends of each type's range: an outside review found them in
// private views, where they had counted as unable to fail).
func RangeFails(fn, part string) bool {
	switch strings.ToLower(fn) {
	case "date_trunc", "date_diff", "last_day":
		return true
	case "date_part":
		switch partAliases[strings.ToLower(strings.TrimSpace(part))] {
		case "week", "yearweek", "isoyear":
			return true
		}
	}
	return false
}

// NamedPart returns the part a function named after one reads (dayofweek: "dow"), and
// whether name is such a function.
func NamedPart(name string) (string, bool) {
	switch n := strings.ToLower(name); n {
	case "year", "month", "day", "dayofmonth", "decade", "century", "millennium", "microsecond",
		"millisecond", "second", "minute", "hour", "epoch", "dayofweek", "weekday", "isodow",
		"week", "weekofyear", "dayofyear", "quarter", "yearweek", "era", "isoyear", "timezone",
		"timezone_hour", "timezone_minute", "julian":
		return n, true
	}
	return "", false
}

// DateFunction returns the function DatePartFails knows that name spells ("datediff" and
// "date_sub" are "date_diff"), and whether name is one of them: their first argument is the
// part.
func DateFunction(name string) (string, bool) {
	fn, ok := map[string]string{"date_part": "date_part", "datepart": "date_part",
		"date_diff": "date_diff", "datediff": "date_diff", "date_sub": "date_diff", "datesub": "date_diff",
		"date_trunc": "date_trunc", "datetrunc": "date_trunc"}[strings.ToLower(name)]
	return fn, ok
}

// RangeFromStatistics returns which argument of a call of name with args arguments DuckDB's
// optimizer derives the result's range from, failing while planning when one stored date lies
// beyond year 290308 or at the least TIMESTAMP (an outside review): date_trunc's value and
// yearweek's. -1 for any other call. DuckDB keeps no statistics for TRY(x). Analyst sessions
// plan without statistics propagation (backend/duckdb), which closes this for every function;
// sqlgen still reads these arguments as TRY(x) so that owner sessions, which keep it, agree.
func RangeFromStatistics(name string, args int) int {
	switch strings.ToLower(name) {
	case "date_trunc", "datetrunc":
		if args == 2 {
			return 1
		}
	case "yearweek":
		if args == 1 {
			return 0
		}
	}
	return -1
}
