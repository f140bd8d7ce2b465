package parser

import (
	"strings"
	"unicode/utf8"

	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/sqlerr"
)

// tokKind is the lexical class of a token.
type tokKind int

const (
	tEOF    tokKind = iota
	tIdent          // unquoted identifier or keyword
	tQIdent         // "quoted" or `backquoted` identifier (Val is the decoded name)
	tNumber         // 1, 1.5, .5, 1e-5
	tString         // 'text' (Val is the decoded text)
	tOp             // punctuation and operators, including characters the parser never accepts
)

// token is one lexical token. Text is the exact source text; Val is the decoded value for
// strings and quoted identifiers, the upper-cased word for unquoted identifiers, and the
// operator for operators (with != normalised to <>).
type token struct {
	Kind     tokKind
	Text     string
	Val      string
	Pos, End sqlerr.Pos
}

// is reports whether t is the unquoted keyword kw (upper case).
func (t token) is(kw string) bool { return t.Kind == tIdent && t.Val == kw }

// isOp reports whether t is the operator op.
func (t token) isOp(op string) bool { return t.Kind == tOp && t.Val == op }

// lexer turns SQL text into tokens. It is used once per source text; positions are
// computed incrementally.
type lexer struct {
	src  string
	off  int
	line int
	col  int
}

// lex returns all tokens of src, ending with a tEOF token. Characters no statement form
// accepts ('[', '$', '?', ...) become tOp tokens so that raw statements can still be split;
// the parser refuses them where it meets them. Lexing fails on an unterminated string,
// quoted identifier or comment, on a NUL byte and on invalid UTF-8.
func lex(src string) ([]token, error) {
	lx := &lexer{src: src, line: 1, col: 1}
	toks := make([]token, 0, len(src)/3+2) // SQL averages a token per 3 to 5 bytes
	for {
		t, err := lx.next()
		if err != nil {
			return toks, err
		}
		toks = append(toks, t)
		if t.Kind == tEOF {
			return toks, nil
		}
	}
}

func (lx *lexer) pos() sqlerr.Pos {
	return sqlerr.Pos{Offset: lx.off, Line: lx.line, Col: lx.col}
}

// advance moves past n bytes, keeping line and column (in runes) up to date.
func (lx *lexer) advance(n int) {
	end := lx.off + n
	for lx.off < end {
		c := lx.src[lx.off]
		if c == '\n' {
			lx.line++
			lx.col = 1
			lx.off++
			continue
		}
		if c < utf8.RuneSelf {
			lx.off++
		} else {
			_, size := utf8.DecodeRuneInString(lx.src[lx.off:])
			lx.off += size
		}
		lx.col++
	}
}

func (lx *lexer) errAt(p sqlerr.Pos, format string, args ...any) *sqlerr.Error {
	return sqlerr.New(p, sqlerr.SyntaxError, format, args...)
}

// checkRune refuses NUL bytes and invalid UTF-8 at the current offset.
func (lx *lexer) checkRune() error {
	c := lx.src[lx.off]
	if c == 0 {
		return lx.errAt(lx.pos(), "invalid NUL byte in SQL text")
	}
	if c >= utf8.RuneSelf {
		r, size := utf8.DecodeRuneInString(lx.src[lx.off:])
		if r == utf8.RuneError && size <= 1 {
			return lx.errAt(lx.pos(), "invalid UTF-8 in SQL text")
		}
	}
	return nil
}

// skipSpace skips white space and comments.
func (lx *lexer) skipSpace() error {
	for lx.off < len(lx.src) {
		c := lx.src[lx.off]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			lx.advance(1)
		case c == '-' && strings.HasPrefix(lx.src[lx.off:], "--"):
			for lx.off < len(lx.src) && lx.src[lx.off] != '\n' {
				if err := lx.checkRune(); err != nil {
					return err
				}
				lx.advance(1)
			}
		case c == '/' && strings.HasPrefix(lx.src[lx.off:], "/*"):
			start := lx.pos()
			lx.advance(2)
			for {
				if lx.off >= len(lx.src) {
					return lx.errAt(start, "unterminated /* comment").WithHint("close the comment with */")
				}
				if strings.HasPrefix(lx.src[lx.off:], "*/") {
					lx.advance(2)
					break
				}
				if err := lx.checkRune(); err != nil {
					return err
				}
				lx.advance(1)
			}
		default:
			return nil
		}
	}
	return nil
}

// The identifier character classes are shared with the printer (ast.IsBareIdent), so that
// every identifier the printer leaves unquoted lexes back as one identifier.
func isIdentStart(r rune) bool { return ast.IsIdentStart(r) }
func isIdentPart(r rune) bool  { return ast.IsIdentPart(r) }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (lx *lexer) next() (token, error) {
	if err := lx.skipSpace(); err != nil {
		return token{}, err
	}
	start := lx.pos()
	if lx.off >= len(lx.src) {
		return token{Kind: tEOF, Pos: start, End: start}, nil
	}
	if err := lx.checkRune(); err != nil {
		return token{}, err
	}
	c := lx.src[lx.off]
	r, size := utf8.DecodeRuneInString(lx.src[lx.off:])
	mk := func(k tokKind, val string) token {
		return token{Kind: k, Text: lx.src[start.Offset:lx.off], Val: val, Pos: start, End: lx.pos()}
	}
	switch {
	case isIdentStart(r):
		lx.advance(size)
		for lx.off < len(lx.src) {
			r, size := utf8.DecodeRuneInString(lx.src[lx.off:])
			if !isIdentPart(r) {
				break
			}
			lx.advance(size)
		}
		t := mk(tIdent, "")
		t.Val = strings.ToUpper(t.Text)
		return t, nil
	case isDigit(c) || c == '.' && lx.off+1 < len(lx.src) && isDigit(lx.src[lx.off+1]):
		return lx.number(start)
	case c == '\'':
		val, err := lx.quoted('\'', start, "string literal", "'")
		if err != nil {
			return token{}, err
		}
		return mk(tString, val), nil
	case c == '"' || c == '`':
		q := string(c)
		val, err := lx.quoted(c, start, "quoted identifier", q)
		if err != nil {
			return token{}, err
		}
		if val == "" {
			return token{}, lx.errAt(start, "zero-length quoted identifier")
		}
		return mk(tQIdent, val), nil
	}
	// Operators.
	two := ""
	if lx.off+1 < len(lx.src) {
		two = lx.src[lx.off : lx.off+2]
	}
	switch two {
	case "=>", "::", "||", "<>", "<=", ">=":
		lx.advance(2)
		return mk(tOp, two), nil
	case "!=":
		lx.advance(2)
		return mk(tOp, "<>"), nil
	}
	lx.advance(size)
	return mk(tOp, string(r)), nil
}

// number lexes 1, 1.5, 1., .5, 1e5, 1.5E-3. A letter right after a number is an error
// ("1abc"), as in PostgreSQL 15+, so that "SELECT 1abc" cannot silently mean "1 AS abc".
func (lx *lexer) number(start sqlerr.Pos) (token, error) {
	s := lx.src
	i := lx.off
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			i = j
		} else {
			return token{}, lx.errAt(start, "invalid exponent in numeric literal %q", s[start.Offset:j])
		}
	}
	lx.advance(i - lx.off)
	if lx.off < len(s) {
		r, _ := utf8.DecodeRuneInString(s[lx.off:])
		if isIdentPart(r) || r == '.' {
			return token{}, lx.errAt(lx.pos(), "trailing junk after numeric literal %q", s[start.Offset:lx.off]).
				WithHint("separate the number from the next word with a space")
		}
	}
	t := token{Kind: tNumber, Text: s[start.Offset:lx.off], Pos: start, End: lx.pos()}
	t.Val = t.Text
	return t, nil
}

// quoted lexes a string or quoted identifier delimited by q, where a doubled q stands for
// one q. It returns the decoded text.
func (lx *lexer) quoted(q byte, start sqlerr.Pos, what, delim string) (string, error) {
	lx.advance(1)
	var b strings.Builder
	for {
		if lx.off >= len(lx.src) {
			return "", lx.errAt(start, "unterminated %s", what).WithHint("close it with %s; write %s%s for a %s inside it", delim, delim, delim, delim)
		}
		if err := lx.checkRune(); err != nil {
			return "", err
		}
		c := lx.src[lx.off]
		if c == q {
			if lx.off+1 < len(lx.src) && lx.src[lx.off+1] == q {
				b.WriteByte(q)
				lx.advance(2)
				continue
			}
			lx.advance(1)
			return b.String(), nil
		}
		_, size := utf8.DecodeRuneInString(lx.src[lx.off:])
		b.WriteString(lx.src[lx.off : lx.off+size])
		lx.advance(size)
	}
}
