package zetasql

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dpsql/dpsql/backend"
)

// Expected is a parsed reference result: the column types and the rows, in order when
// Ordered.
type Expected struct {
	Types   []string
	Rows    [][]any
	Ordered bool
}

// ParseExpected reads ZetaSQL's printed result, "ARRAY<STRUCT<T1, name T2>>[known order:{v, v},
// ...]". Values come back as nil, bool, string, json.Number (numbers), []any (arrays), any
// (a JSON value) or protoMsg (a PROTO value in text format).
func ParseExpected(s string) (*Expected, error) {
	p := &valueParser{s: s}
	if !p.eat("ARRAY<STRUCT<") {
		return nil, fmt.Errorf("not a table value: %.40q", s)
	}
	inner, err := p.until('>')
	if err != nil {
		return nil, err
	}
	e := &Expected{}
	for _, col := range splitTop(inner, ',') {
		e.Types = append(e.Types, columnType(col))
	}
	if !p.eat(">>") || !p.eat("[") {
		return nil, fmt.Errorf("malformed table type near %.40q", p.rest())
	}
	if p.eat("known order:") {
		e.Ordered = true
	} else {
		p.eat("unknown order:")
	}
	for !p.eat("]") {
		if len(e.Rows) > 0 && !p.eat(",") {
			return nil, fmt.Errorf("expected ',' between rows near %.40q", p.rest())
		}
		if !p.eat("{") {
			return nil, fmt.Errorf("expected a row near %.40q", p.rest())
		}
		var row []any
		for i, typ := range e.Types {
			if i > 0 && !p.eat(",") {
				return nil, fmt.Errorf("expected ',' between values near %.40q", p.rest())
			}
			v, err := p.value(typ)
			if err != nil {
				return nil, err
			}
			row = append(row, v)
		}
		if !p.eat("}") {
			return nil, fmt.Errorf("expected the end of a row near %.40q", p.rest())
		}
		e.Rows = append(e.Rows, row)
	}
	return e, nil
}

// columnType drops a column's name: "int64_val INT64" → "INT64".
func columnType(col string) string {
	col = strings.TrimSpace(col)
	depth := 0
	for i, r := range col {
		switch r {
		case '<':
			depth++
		case '>':
			depth--
		case ' ':
			if depth == 0 {
				return strings.TrimSpace(col[i+1:])
			}
		}
	}
	return col
}

// splitTop splits s at sep outside angle brackets.
func splitTop(s string, sep rune) []string {
	var parts []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '<':
			depth++
		case '>':
			depth--
		case sep:
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

type valueParser struct {
	s   string
	pos int
}

func (p *valueParser) rest() string { return p.s[p.pos:] }

func (p *valueParser) skipSpace() {
	for p.pos < len(p.s) && strings.ContainsRune(" \t\n\r", rune(p.s[p.pos])) {
		p.pos++
	}
}

// eat consumes tok (after spaces) when it comes next.
func (p *valueParser) eat(tok string) bool {
	p.skipSpace()
	if strings.HasPrefix(p.rest(), tok) {
		p.pos += len(tok)
		return true
	}
	return false
}

// until returns the text up to the closing bracket that balances the ones already open: it
// reads a type's parameters, "INT64, x DOUBLE" of STRUCT<INT64, x DOUBLE>.
func (p *valueParser) until(closer byte) (string, error) {
	depth := 0
	for i := p.pos; i < len(p.s); i++ {
		switch p.s[i] {
		case '<':
			depth++
		case closer:
			if depth == 0 {
				out := p.s[p.pos:i]
				p.pos = i
				return out, nil
			}
			depth--
		}
	}
	return "", fmt.Errorf("unbalanced type %.40q", p.rest())
}

func (p *valueParser) value(typ string) (any, error) {
	p.skipSpace()
	if strings.HasPrefix(p.rest(), "NULL") {
		p.pos += 4
		return nil, nil
	}
	switch {
	case typ == "JSON":
		dec := json.NewDecoder(strings.NewReader(p.rest()))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("JSON value near %.40q: %v", p.rest(), err)
		}
		p.pos += int(dec.InputOffset())
		return v, nil
	case strings.HasPrefix(typ, "PROTO<"):
		if !p.eat("{") {
			return nil, fmt.Errorf("expected a PROTO value near %.40q", p.rest())
		}
		end := matchingBrace(p.s, p.pos)
		if end < 0 {
			return nil, fmt.Errorf("unbalanced PROTO value near %.40q", p.rest())
		}
		msg, err := ParseTextProto(p.s[p.pos:end])
		p.pos = end + 1
		return msg, err
	case strings.HasPrefix(typ, "ARRAY<"):
		elem := strings.TrimSuffix(strings.TrimPrefix(typ, "ARRAY<"), ">")
		if !p.eat("[") {
			return nil, fmt.Errorf("expected an array near %.40q", p.rest())
		}
		p.eat("known order:")
		p.eat("unknown order:")
		arr := []any{}
		for !p.eat("]") {
			if len(arr) > 0 && !p.eat(",") {
				return nil, fmt.Errorf("expected ',' in an array near %.40q", p.rest())
			}
			v, err := p.value(elem)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		return arr, nil
	}
	if strings.HasPrefix(p.rest(), `"`) {
		s, n, err := quoted(p.rest())
		p.pos += n
		return s, err
	}
	start := p.pos
	for p.pos < len(p.s) && !strings.ContainsRune(",}]", rune(p.s[p.pos])) {
		p.pos++
	}
	tok := strings.TrimSpace(p.s[start:p.pos])
	switch tok {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return json.Number(tok), nil
}

// quoted reads a double-quoted string with backslash escapes; n is the length consumed.
func quoted(s string) (string, int, error) {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			out, err := strconv.Unquote(s[:i+1])
			return out, i + 1, err
		}
	}
	return "", len(s), fmt.Errorf("unterminated string %.40q", s)
}

// matchingBrace finds the '}' closing a '{' just before start, skipping quoted strings.
func matchingBrace(s string, start int) int {
	depth := 0
	for i := start; i < len(s); i++ {
		switch s[i] {
		case '"':
			_, n, err := quoted(s[i:])
			if err != nil {
				return -1
			}
			i += n - 1
		case '{':
			depth++
		case '}':
			if depth == 0 {
				return i
			}
			depth--
		}
	}
	return -1
}

// protoMsg is a message in protobuf text format: each field's values in order.
type protoMsg map[string][]any

// ParseTextProto reads protobuf text format ("value { float_value: 11 }"): scalars as
// json.Number, strings or bools, submessages as protoMsg.
func ParseTextProto(s string) (protoMsg, error) {
	p := &valueParser{s: s}
	msg, err := p.textProto()
	if err == nil && strings.TrimSpace(p.rest()) != "" {
		err = fmt.Errorf("text proto: unexpected %.40q", p.rest())
	}
	return msg, err
}

func (p *valueParser) textProto() (protoMsg, error) {
	msg := protoMsg{}
	for {
		p.skipSpace()
		if p.pos >= len(p.s) || p.s[p.pos] == '}' {
			return msg, nil
		}
		start := p.pos
		for p.pos < len(p.s) && (p.s[p.pos] == '_' || p.s[p.pos] == '.' || isAlnum(p.s[p.pos])) {
			p.pos++
		}
		name := p.s[start:p.pos]
		if name == "" {
			return nil, fmt.Errorf("text proto: expected a field near %.40q", p.rest())
		}
		colon := p.eat(":")
		if p.eat("{") {
			sub, err := p.textProto()
			if err != nil {
				return nil, err
			}
			if !p.eat("}") {
				return nil, fmt.Errorf("text proto: unclosed %s", name)
			}
			msg[name] = append(msg[name], sub)
			continue
		}
		if !colon {
			return nil, fmt.Errorf("text proto: expected ':' after %s", name)
		}
		p.skipSpace()
		if strings.HasPrefix(p.rest(), `"`) {
			s, n, err := quoted(p.rest())
			if err != nil {
				return nil, err
			}
			p.pos += n
			msg[name] = append(msg[name], s)
			continue
		}
		start = p.pos
		for p.pos < len(p.s) && !strings.ContainsRune(" \t\n\r}", rune(p.s[p.pos])) {
			p.pos++
		}
		tok := p.s[start:p.pos]
		switch tok {
		case "true":
			msg[name] = append(msg[name], true)
		case "false":
			msg[name] = append(msg[name], false)
		default:
			msg[name] = append(msg[name], json.Number(tok))
		}
	}
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// Match compares dpsql's rows with the reference result. Numbers agree within a relative
// 1e-9 (and 1e-12 absolute: noise of scale 1e-19 at epsilon 1e20 is "no noise"); rows are
// compared as a multiset unless the reference result is ordered.
func (e *Expected) Match(rows [][]any) (bool, string) {
	if len(rows) != len(e.Rows) {
		return false, fmt.Sprintf("%d rows, want %d", len(rows), len(e.Rows))
	}
	for _, r := range rows {
		if len(r) != len(e.Types) {
			return false, fmt.Sprintf("%d columns, want %d", len(r), len(e.Types))
		}
	}
	if e.Ordered {
		for i := range rows {
			if ok, why := e.rowMatches(e.Rows[i], rows[i]); !ok {
				return false, fmt.Sprintf("row %d: %s", i+1, why)
			}
		}
		return true, ""
	}
	used := make([]bool, len(rows))
	var assign func(i int) bool
	assign = func(i int) bool {
		if i == len(e.Rows) {
			return true
		}
		for j := range rows {
			if !used[j] {
				if ok, _ := e.rowMatches(e.Rows[i], rows[j]); ok {
					used[j] = true
					if assign(i + 1) {
						return true
					}
					used[j] = false
				}
			}
		}
		return false
	}
	if assign(0) {
		return true, ""
	}
	return false, "rows differ: got " + formatRows(rows)
}

func (e *Expected) rowMatches(want, got []any) (bool, string) {
	for i := range want {
		g := got[i]
		switch {
		case e.Types[i] == "JSON":
			if s, ok := g.(string); ok {
				dec := json.NewDecoder(strings.NewReader(s))
				dec.UseNumber()
				var v any
				if err := dec.Decode(&v); err != nil {
					return false, fmt.Sprintf("column %d: not JSON: %q", i+1, s)
				}
				g = v
			}
		case strings.HasPrefix(e.Types[i], "PROTO<"):
			if s, ok := g.(string); ok {
				msg, err := ParseTextProto(s)
				if err != nil {
					return false, fmt.Sprintf("column %d: %v", i+1, err)
				}
				g = msg
			}
		}
		if !equal(want[i], g) {
			return false, fmt.Sprintf("column %d: got %s, want %s", i+1, show(got[i]), show(want[i]))
		}
	}
	return true, ""
}

// equal compares a reference value with one of dpsql's (or a parsed JSON/proto value).
func equal(want, got any) bool {
	switch w := want.(type) {
	case nil:
		return got == nil
	case json.Number:
		g, ok := number(got)
		if !ok {
			return false
		}
		f, err := parseNumber(string(w))
		if err != nil {
			return false
		}
		return close(f, g)
	case bool:
		g, ok := got.(bool)
		return ok && g == w
	case string:
		g, ok := got.(string)
		return ok && g == w
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !equal(w[i], g[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		g, ok := got.(map[string]any)
		return ok && equalMaps(w, g)
	case protoMsg:
		g, ok := got.(protoMsg)
		return ok && equalMaps(w, g)
	}
	return false
}

// equalMaps compares two JSON objects or two proto messages field by field.
func equalMaps[V any](want, got map[string]V) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if !equal(v, any(got[k])) {
			return false
		}
	}
	return true
}

func parseNumber(s string) (float64, error) {
	switch strings.ToLower(s) {
	case "inf", "+inf":
		return math.Inf(1), nil
	case "-inf":
		return math.Inf(-1), nil
	case "nan":
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, 64)
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case *big.Int:
		f, _ := new(big.Float).SetInt(x).Float64()
		return f, true
	case backend.Decimal:
		return x.Float64(), true
	case json.Number:
		f, err := parseNumber(string(x))
		return f, err == nil
	}
	return 0, false
}

func close(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	if a == b {
		return true
	}
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))+1e-12
}

func show(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return strconv.Quote(x)
	case time.Time:
		return x.Format(time.RFC3339)
	}
	return fmt.Sprint(v)
}

func formatRows(rows [][]any) string {
	var out []string
	for _, r := range rows {
		var vals []string
		for _, v := range r {
			vals = append(vals, show(v))
		}
		out = append(out, "{"+strings.Join(vals, ", ")+"}")
	}
	sort.Strings(out)
	s := strings.Join(out, ", ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
