package ast

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// IsReserved reports whether word (any case) is a reserved keyword of dpsql's grammar: it
// cannot be a bare column name or alias and the printer quotes identifiers spelled like it.
// The parser and the printer share this list so that everything printed parses back.
func IsReserved(word string) bool {
	switch strings.ToUpper(word) {
	case "ALL", "AND", "ANY", "AS", "ASC", "BETWEEN", "BY", "CASE", "CAST", "CREATE", "CROSS",
		"DESC", "DISTINCT", "ELSE", "END", "EXCEPT", "EXISTS", "FALSE", "FETCH", "FOR", "FROM",
		"FULL", "GROUP", "HAVING", "ILIKE", "IN", "INNER", "INTERSECT", "INTO", "IS", "JOIN",
		"LATERAL", "LEFT", "LIKE", "LIMIT", "NATURAL", "NOT", "NULL", "OFFSET", "ON", "OR",
		"ORDER", "OUTER", "OVER", "PIVOT", "QUALIFY", "RIGHT", "SELECT", "SOME", "TABLESAMPLE",
		"THEN", "TRUE", "UNION", "UNPIVOT", "USING", "WHEN", "WHERE", "WINDOW", "WITH":
		return true
	}
	return false
}

// IsFuncKeyword reports whether the reserved word (any case) may still name a function when
// followed by "(" (LEFT(s, 3), RIGHT(s, 3)); such names print unquoted.
func IsFuncKeyword(word string) bool {
	switch strings.ToUpper(word) {
	case "LEFT", "RIGHT":
		return true
	}
	return false
}

// IsIdentStart reports whether r may begin an unquoted identifier.
func IsIdentStart(r rune) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' ||
		r >= utf8.RuneSelf && unicode.IsLetter(r)
}

// IsIdentPart reports whether r may continue an unquoted identifier.
func IsIdentPart(r rune) bool {
	return IsIdentStart(r) || r >= '0' && r <= '9' || r == '$' ||
		r >= utf8.RuneSelf && (unicode.IsDigit(r) || unicode.IsMark(r))
}

// IsBareIdent reports whether name lexes as one unquoted identifier and is not reserved,
// i.e. whether it may be printed without quotes.
func IsBareIdent(name string) bool {
	if name == "" || !utf8.ValidString(name) {
		return false
	}
	for i, r := range name {
		if i == 0 && !IsIdentStart(r) || !IsIdentPart(r) {
			return false
		}
	}
	return !IsReserved(name)
}

// QuoteIdent returns name in double quotes with embedded quotes doubled.
func QuoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// QuoteString returns s as a SQL string literal: in single quotes with embedded quotes
// doubled. Backslashes are not escapes (standard_conforming_strings), so nothing else can
// end the literal.
func QuoteString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
