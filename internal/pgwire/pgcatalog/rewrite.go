package pgcatalog

import (
	"fmt"
	"strings"
)

// Token kinds of the PostgreSQL lexer below.
const (
	tSpace  = iota // white space and comments
	tString        // '...', E'...', $tag$...$tag$
	tQIdent        // "..."
	tIdent         // identifiers and keywords
	tNumber        //
	tParam         // $1
	tOp            // operators (runs of + - * / < > = ~ ! @ # % ^ & | ` ?)
	tPunct         // ( ) [ ] , ; . :: :
)

type token struct {
	kind int
	text string
}

const opChars = "+-*/<>=~!@#%^&|`?"

// lex splits PostgreSQL SQL text into tokens; concatenating their texts gives sql back.
func lex(sql string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(sql) {
		c := sql[i]
		start := i
		kind := tPunct
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			for i < len(sql) && strings.IndexByte(" \t\n\r\f\v", sql[i]) >= 0 {
				i++
			}
			kind = tSpace
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
			kind = tSpace
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			depth := 0
			for i < len(sql) {
				if strings.HasPrefix(sql[i:], "/*") {
					depth++
					i += 2
				} else if strings.HasPrefix(sql[i:], "*/") {
					depth--
					i += 2
					if depth == 0 {
						break
					}
				} else {
					i++
				}
			}
			if depth != 0 {
				return nil, fmt.Errorf("unterminated comment")
			}
			kind = tSpace
		case c == '\'' || ((c == 'e' || c == 'E') && i+1 < len(sql) && sql[i+1] == '\''):
			escapes := c != '\''
			if escapes {
				i++
			}
			if i = closeQuote(sql, i, '\'', escapes); i < 0 {
				return nil, fmt.Errorf("unterminated string literal")
			}
			kind = tString
		case c == '"':
			if i = closeQuote(sql, i, '"', false); i < 0 {
				return nil, fmt.Errorf("unterminated quoted identifier")
			}
			kind = tQIdent
		case c == '$' && i+1 < len(sql) && sql[i+1] >= '0' && sql[i+1] <= '9':
			i++
			for i < len(sql) && sql[i] >= '0' && sql[i] <= '9' {
				i++
			}
			kind = tParam
		case c == '$':
			j := i + 1
			for j < len(sql) && isIdentChar(sql[j]) {
				j++
			}
			if j >= len(sql) || sql[j] != '$' {
				return nil, fmt.Errorf("unexpected $")
			}
			tag := sql[i : j+1]
			end := strings.Index(sql[j+1:], tag)
			if end < 0 {
				return nil, fmt.Errorf("unterminated dollar-quoted string")
			}
			i = j + 1 + end + len(tag)
			kind = tString
		case isIdentStart(c):
			for i < len(sql) && isIdentChar(sql[i]) {
				i++
			}
			kind = tIdent
		case c >= '0' && c <= '9' || (c == '.' && i+1 < len(sql) && sql[i+1] >= '0' && sql[i+1] <= '9'):
			for i < len(sql) && (sql[i] >= '0' && sql[i] <= '9' || sql[i] == '.' || sql[i] == 'e' || sql[i] == 'E' ||
				((sql[i] == '+' || sql[i] == '-') && (sql[i-1] == 'e' || sql[i-1] == 'E'))) {
				if sql[i] == '.' && i+1 < len(sql) && sql[i+1] == '.' {
					break
				}
				i++
			}
			kind = tNumber
		case c == ':' && strings.HasPrefix(sql[i:], "::"):
			i += 2
		case strings.IndexByte(opChars, c) >= 0:
			for i < len(sql) && strings.IndexByte(opChars, sql[i]) >= 0 {
				if strings.HasPrefix(sql[i:], "--") || strings.HasPrefix(sql[i:], "/*") {
					break
				}
				i++
			}
			// PostgreSQL: a multi-character operator ends in + or - only if it holds one
			// of ~ ! @ # % ^ & | ` ?.
			op := sql[start:i]
			for len(op) > 1 && strings.ContainsAny(op[len(op)-1:], "+-") && !strings.ContainsAny(op, "~!@#%^&|`?") {
				op = op[:len(op)-1]
			}
			i = start + len(op)
			kind = tOp
		default:
			i++
		}
		toks = append(toks, token{kind, sql[start:i]})
	}
	return toks, nil
}

// closeQuote returns the index after the quote that closes the one at i (a doubled quote is
// one character; with escapes, so is a backslash and the character after it), or -1.
func closeQuote(sql string, i int, q byte, escapes bool) int {
	for i++; i < len(sql); i++ {
		switch {
		case escapes && sql[i] == '\\':
			i++
		case sql[i] == q && i+1 < len(sql) && sql[i+1] == q:
			i++
		case sql[i] == q:
			return i + 1
		}
	}
	return -1
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isIdentChar(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' || c == '$' }

// name is the identifier a token names: unquoted ones folded to lower case as PostgreSQL
// does, quoted ones as written; "" for other tokens.
func (t token) name() string {
	switch t.kind {
	case tIdent:
		return strings.ToLower(t.text)
	case tQIdent:
		return strings.ReplaceAll(t.text[1:len(t.text)-1], `""`, `"`)
	}
	return ""
}

func (t token) is(s string) bool {
	return (t.kind == tIdent && strings.EqualFold(t.text, s)) || (t.kind != tIdent && t.kind != tQIdent && t.kind != tString && t.text == s)
}

// stmt holds the significant tokens of a statement (no spaces or comments) while it is
// rewritten; the rewritten text joins them with single spaces.
type stmt struct{ t []token }

func (s *stmt) at(i int) token {
	if i < 0 || i >= len(s.t) {
		return token{kind: tSpace}
	}
	return s.t[i]
}

func (s *stmt) replace(i, j int, with ...token) {
	s.t = append(s.t[:i], append(with, s.t[j:]...)...)
}

func (s *stmt) String() string {
	var b strings.Builder
	for i, t := range s.t {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t.text)
	}
	return b.String()
}

func ident(s string) token { return token{tIdent, s} }
func punct(s string) token { return token{tPunct, s} }

// matching returns the index of the parenthesis that closes the one at i (or -1).
func (s *stmt) matching(i int) int {
	depth := 0
	for j := i; j < len(s.t); j++ {
		switch s.t[j].text {
		case "(", "[":
			if s.t[j].kind == tPunct {
				depth++
			}
		case ")", "]":
			if s.t[j].kind == tPunct {
				depth--
				if depth == 0 {
					return j
				}
			}
		}
	}
	return -1
}

// opening returns the index of the parenthesis that opens the one closing at i (or -1).
func (s *stmt) opening(i int) int {
	depth := 0
	for j := i; j >= 0; j-- {
		if s.t[j].kind != tPunct {
			continue
		}
		switch s.t[j].text {
		case ")", "]":
			depth++
		case "(", "[":
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// operandStart returns where the operand that ends at token i starts: a literal, a (dotted)
// name, a function call, a parenthesized expression, each possibly subscripted.
func (s *stmt) operandStart(i int) int {
	for {
		t := s.at(i)
		switch {
		case t.kind == tPunct && (t.text == ")" || t.text == "]"):
			o := s.opening(i)
			if o < 0 {
				return -1
			}
			i = o
			if p := s.at(i - 1); p.kind == tIdent || p.kind == tQIdent || (p.kind == tPunct && (p.text == ")" || p.text == "]")) {
				if p.kind == tIdent && isKeyword(p.text) {
					return i
				}
				i--
				continue
			}
			return i
		case t.kind == tIdent || t.kind == tQIdent:
			if s.at(i - 1).is(".") {
				i -= 2
				continue
			}
			return i
		case t.kind == tString || t.kind == tNumber || t.kind == tParam:
			return i
		}
		return -1
	}
}

// isKeyword reports the reserved words that can precede a parenthesis without being a
// function name.
func isKeyword(w string) bool {
	switch strings.ToLower(w) {
	case "select", "from", "where", "and", "or", "not", "in", "on", "as", "when", "then", "else", "case",
		"join", "exists", "any", "all", "some", "using", "by", "having", "with", "is", "between", "like",
		"ilike", "union", "intersect", "except", "values", "return", "end", "distinct", "over", "filter":
		return true
	}
	return false
}

// castType maps PostgreSQL type names used in casts to DuckDB's. The reg* types are handled
// by the cast rewrite itself.
var castType = map[string]string{
	"oid": "BIGINT", "int2": "SMALLINT", "int4": "INTEGER", "int8": "BIGINT", "int": "INTEGER",
	"text": "VARCHAR", "name": "VARCHAR", "char": "VARCHAR", "bpchar": "VARCHAR", "varchar": "VARCHAR",
	"bool": "BOOLEAN", "float4": "FLOAT", "float8": "DOUBLE", "xid": "BIGINT", "cid": "BIGINT",
	"regoper": "VARCHAR", "regoperator": "VARCHAR", "regprocedure": "VARCHAR", "regrole": "VARCHAR",
	"regconfig": "VARCHAR", "regdictionary": "VARCHAR", "aclitem": "VARCHAR", "pg_node_tree": "VARCHAR",
	"int2vector": "SMALLINT[]", "oidvector": "BIGINT[]", "sql_identifier": "VARCHAR",
	"character_data": "VARCHAR", "cardinal_number": "INTEGER", "yes_or_no": "VARCHAR",
}

// regTypes are the reg* types: a literal cast to one is a lookup by name, any other operand
// cast to one is shown by name.
var regTypes = map[string][2]string{ // type -> {from literal, from oid}
	"regclass":     {"regclass_in", "regclass_out"},
	"regtype":      {"regtype_in", "format_type"},
	"regnamespace": {"regnamespace_in", "regnamespace_out"},
	"regproc":      {"", ""},
	"regrole":      {"", ""},
}

// rewrite turns the PostgreSQL text of a catalog query into DuckDB text over the model.
func rewrite(sql string) (string, error) {
	all, err := lex(sql)
	if err != nil {
		return "", err
	}
	s := &stmt{}
	for _, t := range all {
		if t.kind != tSpace {
			s.t = append(s.t, t)
		}
	}
	// OPERATOR(pg_catalog.~) -> ~ ; COLLATE x[.y] -> nothing.
	for i := 0; i < len(s.t); i++ {
		if s.at(i).is("operator") && s.at(i+1).is("(") {
			j := s.matching(i + 1)
			if j > 0 && s.at(j-1).kind == tOp {
				s.replace(i, j+1, s.t[j-1])
			}
		}
		if s.at(i).is("collate") && (s.at(i+1).kind == tIdent || s.at(i+1).kind == tQIdent) {
			j := i + 2
			for s.at(j).is(".") && (s.at(j+1).kind == tIdent || s.at(j+1).kind == tQIdent) {
				j += 2
			}
			s.replace(i, j)
			i--
		}
	}
	for i := 0; i < len(s.t); i++ {
		t := s.at(i)
		// PostgreSQL folds unquoted names to lower case (so do aliases).
		if t.kind == tIdent {
			s.t[i].text = strings.ToLower(t.text)
			t = s.t[i]
		}
		// Schema qualifiers: pg_catalog.x -> pgcat.x for tables and the model's functions;
		// other pg_catalog functions are DuckDB's own (the check below vets them).
		if (t.kind == tIdent || t.kind == tQIdent) && s.at(i+1).is(".") && !s.at(i-1).is(".") {
			n, name := t.name(), s.at(i+2).name()
			fn := s.at(i + 3).is("(")
			switch {
			case n == "pg_catalog" && fn && !funcNames[name]:
				s.replace(i, i+2)
				i--
				continue
			case n == "pg_catalog" && fn:
				s.t[i] = ident(funcSchema)
			case n == "pg_catalog":
				s.t[i] = ident(catSchema)
			case n == "information_schema" && fn && !infoFuncNames[name]:
				s.replace(i, i+2)
				i--
				continue
			case n == "information_schema":
				s.t[i] = ident(infoSchema)
			}
			continue
		}
		// Unqualified calls of the model's functions.
		if t.kind == tIdent && !s.at(i-1).is(".") && !s.at(i-1).is("::") {
			switch {
			case s.at(i+1).is("(") && funcNames[t.text]:
				s.replace(i, i+1, ident(funcSchema), punct("."), t)
				i += 2
			case (t.text == "current_schema" || t.text == "current_catalog") && !s.at(i+1).is("(") && !s.at(i-1).is("as"):
				fn := "current_schema"
				if t.text == "current_catalog" {
					fn = "current_database"
				}
				s.replace(i, i+1, ident(funcSchema), punct("."), ident(fn), punct("("), punct(")"))
				i += 4
			}
		}
	}
	// Casts.
	for i := 0; i < len(s.t); i++ {
		if !s.at(i).is("::") {
			continue
		}
		j := i + 1
		if (s.at(j).name() == "pg_catalog" || s.at(j).name() == "information_schema" ||
			s.at(j).name() == catSchema || s.at(j).name() == funcSchema || s.at(j).name() == infoSchema) && s.at(j+1).is(".") {
			j += 2
		}
		typ := s.at(j).name()
		if typ == "" {
			continue
		}
		end := j + 1
		if reg, ok := regTypes[typ]; ok {
			start := s.operandStart(i - 1)
			if start < 0 {
				return "", fmt.Errorf("cannot rewrite the cast to %s", typ)
			}
			operand := append([]token(nil), s.t[start:i]...)
			var repl []token
			switch {
			case len(operand) == 1 && operand[0].kind == tString:
				v := operand[0].text
				if strings.HasPrefix(v, "'") {
					// 'pg_catalog.x' names x; quotes around parts are dropped.
					v = strings.Trim(v[1:len(v)-1], `"`)
					if k := strings.LastIndexByte(v, '.'); k >= 0 {
						v = strings.Trim(v[k+1:], `"`)
					}
					v = "'" + v + "'"
				}
				if reg[0] == "" {
					repl = []token{{tString, v}}
				} else if isNumeric(v) {
					repl = []token{{tNumber, strings.Trim(v, "'")}}
				} else {
					repl = []token{ident(funcSchema), punct("."), ident(reg[0]), punct("("), {tString, v}, punct(")")}
				}
			case reg[1] == "":
				repl = operand
			default:
				repl = append([]token{ident(funcSchema), punct("."), ident(reg[1]), punct("(")}, operand...)
				if reg[1] == "format_type" {
					repl = append(repl, punct(","), ident("null"))
				}
				repl = append(repl, punct(")"))
			}
			s.replace(start, end, repl...)
			i = start + len(repl) - 1
			continue
		}
		if d, ok := castType[typ]; ok {
			s.replace(i+1, end, ident(d))
		} else if j > i+1 {
			s.replace(i+1, j) // DuckDB's own type of that name
		}
	}
	// Regular expression operators: PostgreSQL's ~ finds a match anywhere, DuckDB's matches
	// the whole string, so a literal pattern p becomes (?s).*(?:p).*
	for i := 0; i < len(s.t); i++ {
		t := s.at(i)
		if t.kind != tOp || (t.text != "~" && t.text != "!~" && t.text != "~*" && t.text != "!~*") {
			continue
		}
		p := s.at(i + 1)
		if p.kind != tString || strings.HasPrefix(p.text, "$") {
			continue
		}
		flags := "(?s)"
		if strings.HasSuffix(t.text, "*") {
			flags = "(?is)"
			s.t[i].text = strings.TrimSuffix(t.text, "*")
		}
		prefix := ""
		body := p.text
		if body[0] == 'e' || body[0] == 'E' {
			prefix, body = body[:1], body[1:]
		}
		s.t[i+1].text = prefix + "'" + flags + ".*(?:" + body[1:len(body)-1] + ").*'"
	}
	// Set-returning functions in FROM with a table alias only: PostgreSQL names their column
	// after the alias, DuckDB does not.
	for i := 0; i < len(s.t); i++ {
		t := s.at(i)
		if t.kind != tIdent || (t.text != "generate_series" && t.text != "unnest") || !s.at(i+1).is("(") || !inFrom(s, i) {
			continue
		}
		j := s.matching(i + 1)
		if j < 0 {
			continue
		}
		k := j + 1
		if s.at(k).is("as") {
			k++
		}
		a := s.at(k)
		if (a.kind == tIdent && !isKeyword(a.text) && !isClause(a.text)) || a.kind == tQIdent {
			if !s.at(k + 1).is("(") {
				s.replace(k+1, k+1, punct("("), a, punct(")"))
			}
		}
	}
	return s.String(), nil
}

func isNumeric(lit string) bool {
	v := strings.Trim(lit, "'")
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
}

// isClause reports words that may follow a FROM item.
func isClause(w string) bool {
	switch w {
	case "where", "group", "order", "limit", "offset", "left", "right", "full", "inner", "cross", "natural",
		"window", "qualify", "fetch", "for", "lateral", "with":
		return true
	}
	return false
}

// inFrom reports whether the token at i is in a FROM clause: the nearest clause keyword
// before it at the same parenthesis depth is FROM or JOIN.
func inFrom(s *stmt, i int) bool {
	depth := 0
	for j := i - 1; j >= 0; j-- {
		t := s.t[j]
		if t.kind == tPunct {
			switch t.text {
			case ")":
				depth++
			case "(":
				if depth == 0 {
					return false
				}
				depth--
			}
			continue
		}
		if depth > 0 || t.kind != tIdent {
			continue
		}
		switch t.text {
		case "from", "join":
			return true
		case "select", "where", "on", "having", "group", "order", "using", "set", "values", "returning":
			return false
		}
	}
	return false
}
