package pgwire

import (
	"strings"
	"unicode/utf8"
)

// A stmtSpan is one statement of a Query message: its text is query[start:end], without
// the ';' that ends it.
type stmtSpan struct{ start, end int }

// splitStatements cuts a query string at the semicolons outside quotes, dollar quotes and
// comments. Statements that hold only spaces and comments are dropped.
func splitStatements(q string) []stmtSpan {
	var out []stmtSpan
	start := 0
	add := func(end int) {
		if !blank(q[start:end]) {
			out = append(out, stmtSpan{start, end})
		}
	}
	for i := 0; i < len(q); {
		switch c := q[i]; {
		case c == ';':
			add(i)
			i++
			start = i
		default:
			i = skipToken(q, i)
		}
	}
	add(len(q))
	return out
}

// skipToken returns the index after the quoted string, comment or single byte at q[i].
func skipToken(q string, i int) int {
	c := q[i]
	switch {
	case c == '\'':
		backslash := i > 0 && (q[i-1] == 'e' || q[i-1] == 'E') && (i < 2 || !isIdent(q[i-2]))
		return skipQuoted(q, i, '\'', backslash)
	case c == '"':
		return skipQuoted(q, i, '"', false)
	case c == '-' && i+1 < len(q) && q[i+1] == '-':
		if j := strings.IndexByte(q[i:], '\n'); j >= 0 {
			return i + j + 1
		}
		return len(q)
	case c == '/' && i+1 < len(q) && q[i+1] == '*':
		depth := 0
		for j := i; j+1 < len(q); {
			switch {
			case q[j] == '/' && q[j+1] == '*':
				depth++
				j += 2
			case q[j] == '*' && q[j+1] == '/':
				depth--
				j += 2
				if depth == 0 {
					return j
				}
			default:
				j++
			}
		}
		return len(q)
	case c == '$' && (i == 0 || !isIdent(q[i-1])):
		j := i + 1
		for j < len(q) && isIdent(q[j]) && !(j == i+1 && q[j] >= '0' && q[j] <= '9') {
			j++
		}
		if j < len(q) && q[j] == '$' {
			tag := q[i : j+1]
			if k := strings.Index(q[j+1:], tag); k >= 0 {
				return j + 1 + k + len(tag)
			}
			return len(q)
		}
		return i + 1
	default:
		return i + 1
	}
}

func skipQuoted(q string, i int, quote byte, backslash bool) int {
	for j := i + 1; j < len(q); j++ {
		switch q[j] {
		case '\\':
			if backslash {
				j++
			}
		case quote:
			if j+1 < len(q) && q[j+1] == quote {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(q)
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// blank reports whether s holds only spaces and comments.
func blank(s string) bool {
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '-' && i+1 < len(s) && s[i+1] == '-', c == '/' && i+1 < len(s) && s[i+1] == '*':
			i = skipToken(s, i)
		default:
			return false
		}
	}
	return true
}

// A token of a session statement: a word (upper-cased, quotes removed for identifiers),
// a string literal's value, a number or one punctuation byte.
type token struct {
	val    string
	quoted bool // a string literal or quoted identifier
}

// tokens reads s, stopping (ok false) at anything it does not know.
func tokens(s string) (out []token, ok bool) {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '-' && i+1 < len(s) && s[i+1] == '-', c == '/' && i+1 < len(s) && s[i+1] == '*':
			i = skipToken(s, i)
		case c == '\'' || c == '"':
			j := skipQuoted(s, i, c, false)
			if j-i < 2 || s[j-1] != c {
				return nil, false
			}
			out = append(out, token{val: strings.ReplaceAll(s[i+1:j-1], string([]byte{c, c}), string(c)), quoted: true})
			i = j
		case isIdent(c) || c == '-' || c == '+' || c == '.':
			j := i + 1
			for j < len(s) && (isIdent(s[j]) || s[j] == '.' || (s[j] == '-' || s[j] == '+') && (s[j-1] == 'e' || s[j-1] == 'E') && isDigit(s[i])) {
				j++
			}
			out = append(out, token{val: strings.ToUpper(s[i:j])})
			i = j
		default:
			_, n := utf8.DecodeRuneInString(s[i:])
			out = append(out, token{val: s[i : i+n]})
			i += n
		}
	}
	return out, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' }

// maxParam is the highest $n in q outside quotes and comments.
func maxParam(q string) int {
	max := 0
	for i := 0; i < len(q); {
		if q[i] == '$' && (i == 0 || !isIdent(q[i-1])) {
			j := i + 1
			n := 0
			for j < len(q) && q[j] >= '0' && q[j] <= '9' && n < 1<<16 {
				n = n*10 + int(q[j]-'0')
				j++
			}
			if j > i+1 {
				if n > max {
					max = n
				}
				i = j
				continue
			}
		}
		i = skipToken(q, i)
	}
	return max
}

// runePos is the 1-based character position of byte offset off in q.
func runePos(q string, off int) int {
	if off < 0 {
		off = 0
	}
	if off > len(q) {
		off = len(q)
	}
	return utf8.RuneCountInString(q[:off]) + 1
}
