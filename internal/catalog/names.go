package catalog

import "unicode"

// SameName reports whether a and b are one name to dpsql: equal up to the case of ASCII
// letters, as DuckDB's binder and catalog compare identifiers and as PostgreSQL folds unquoted
// ones (dpsql refuses relations and columns whose names collide up to case there). "Ä" and
// "ä" are two names, as they are to DuckDB. Every comparison of relation, column, alias and
// CTE names uses it or NameKey, never strings.EqualFold or strings.ToLower: those also match
// non-ASCII letters the database tells apart ("ſ" and "s", "Ä" and "ä"), so the analyzer
// would check one column while the database read another (outside reviews moved the privacy
// unit onto another column that way, and onto a FROM item DuckDB binds laterally).
func SameName(a, b string) bool { return NameKey(a) == NameKey(b) }

// NameKey is the key of a name in maps: SameName(a, b) if and only if NameKey(a) == NameKey(b).
// It lower-cases ASCII letters only.
func NameKey(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

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
