package catalog

import (
	"strings"
	"unicode"
)

// SameName reports whether a and b are one name to dpsql: equal once lower-cased, as DuckDB
// compares identifiers (PostgreSQL compares quoted names exactly; dpsql refuses relations and
// columns whose names collide up to case there). Every comparison of relation, column,
// alias and CTE names uses it or NameKey, never strings.EqualFold: EqualFold also matches
// runes that lower-case apart ("ſ" and "s"), which the database tells apart, so the analyzer
// would check one column while the database read another (an outside review moved the
// privacy unit onto another column that way).
func SameName(a, b string) bool { return strings.ToLower(a) == strings.ToLower(b) }

// NameKey is the key of a name in maps: SameName(a, b) if and only if NameKey(a) == NameKey(b).
func NameKey(s string) string { return strings.ToLower(s) }

// ConfusableRune returns the first rune of name whose upper and lower cases do not map back
// to it (the long s "ſ", the Kelvin sign, the dotless and dotted i, the final sigma, titlecase
// digraphs...), and false when there is none. Case-insensitive comparisons disagree on such
// runes (Go's EqualFold, Unicode's folding, a database's lower-casing), so dpsql refuses them
// in the names it matches: an analyst's identifiers and the names of declared relations and
// their columns.
func ConfusableRune(name string) (rune, bool) {
	for _, r := range name {
		if unicode.ToLower(unicode.ToUpper(r)) != unicode.ToLower(r) || unicode.ToUpper(unicode.ToLower(r)) != unicode.ToUpper(r) {
			return r, true
		}
	}
	return 0, false
}
