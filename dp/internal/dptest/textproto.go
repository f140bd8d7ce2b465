package dptest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode"
)

// Message is a parsed text-format protobuf message: its fields in order.
type Message struct {
	Fields []Field
}

// Field is one name and value. Exactly one of Msg and Scalars is set; a
// scalar field written as a list [a, b] yields several Scalars, and "[]"
// yields none.
type Field struct {
	Name    string
	Msg     *Message
	Scalars []Scalar
	Line    int
}

// Scalar is one scalar token: a number, an enum identifier or a string.
type Scalar struct {
	Text   string // the token, unquoted for strings
	Quoted bool
}

// ParseTextProtoFile reads and parses a file.
func ParseTextProtoFile(path string) (*Message, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := ParseTextProto(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s:%w", path, err)
	}
	return m, nil
}

// ParseTextProto parses the text format of one top-level message.
func ParseTextProto(src string) (*Message, error) {
	p := &parser{src: src, line: 1}
	m, err := p.message(false)
	if err != nil {
		return nil, err
	}
	return m, nil
}

type parser struct {
	src  string
	pos  int
	line int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%d: %s", p.line, fmt.Sprintf(format, args...))
}

// skip skips spaces and # comments.
func (p *parser) skip() {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '\n':
			p.line++
			p.pos++
		case c == ' ' || c == '\t' || c == '\r':
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

func (p *parser) peek() byte {
	p.skip()
	if p.pos >= len(p.src) {
		return 0
	}
	return p.src[p.pos]
}

func isIdent(c byte) bool {
	return c == '_' || c == '.' || c == '-' || c == '+' || unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c))
}

func (p *parser) word() string {
	start := p.pos
	for p.pos < len(p.src) && isIdent(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

func (p *parser) message(nested bool) (*Message, error) {
	m := &Message{}
	for {
		c := p.peek()
		switch {
		case c == 0:
			if nested {
				return nil, p.errorf("unexpected end of input: missing '}'")
			}
			return m, nil
		case c == '}':
			if !nested {
				return nil, p.errorf("unexpected '}'")
			}
			p.pos++
			return m, nil
		}
		line := p.line
		name := p.word()
		if name == "" {
			return nil, p.errorf("expected a field name, found %q", string(c))
		}
		f := Field{Name: name, Line: line}
		c = p.peek()
		if c == ':' {
			p.pos++
			c = p.peek()
		}
		switch {
		case c == '{':
			p.pos++
			sub, err := p.message(true)
			if err != nil {
				return nil, err
			}
			f.Msg = sub
		case c == '[':
			p.pos++
			f.Scalars = []Scalar{}
			for {
				if p.peek() == ']' {
					p.pos++
					break
				}
				s, err := p.scalar()
				if err != nil {
					return nil, err
				}
				f.Scalars = append(f.Scalars, s)
				switch p.peek() {
				case ',':
					p.pos++
				case ']':
				default:
					return nil, p.errorf("expected ',' or ']' in the list of %s", name)
				}
			}
		default:
			s, err := p.scalar()
			if err != nil {
				return nil, err
			}
			f.Scalars = []Scalar{s}
		}
		m.Fields = append(m.Fields, f)
		if c := p.peek(); c == ',' || c == ';' {
			p.pos++
		}
	}
}

func (p *parser) scalar() (Scalar, error) {
	c := p.peek()
	if c == '"' || c == '\'' {
		// Adjacent string literals concatenate, as in protobuf.
		var sb strings.Builder
		for c == '"' || c == '\'' {
			end := p.pos + 1
			for end < len(p.src) && p.src[end] != c {
				if p.src[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(p.src) {
				return Scalar{}, p.errorf("unterminated string")
			}
			s, err := strconv.Unquote(`"` + strings.ReplaceAll(p.src[p.pos+1:end], `"`, `\"`) + `"`)
			if err != nil {
				return Scalar{}, p.errorf("bad string literal: %v", err)
			}
			sb.WriteString(s)
			p.pos = end + 1
			c = p.peek()
		}
		return Scalar{Text: sb.String(), Quoted: true}, nil
	}
	w := p.word()
	if w == "" {
		return Scalar{}, p.errorf("expected a value, found %q", string(c))
	}
	return Scalar{Text: w}, nil
}

// fields returns the fields with the given name.
func (m *Message) fields(name string) []Field {
	var out []Field
	for _, f := range m.Fields {
		if f.Name == name {
			out = append(out, f)
		}
	}
	return out
}

// Has reports whether the field is present.
func (m *Message) Has(name string) bool { return len(m.fields(name)) > 0 }

// Messages returns every sub-message with the given name (a repeated field).
func (m *Message) Messages(name string) []*Message {
	var out []*Message
	for _, f := range m.fields(name) {
		if f.Msg != nil {
			out = append(out, f.Msg)
		}
	}
	return out
}

// Message returns the last sub-message with the given name, or an empty
// message if there is none (as protobuf does for unset fields).
func (m *Message) Message(name string) *Message {
	ms := m.Messages(name)
	if len(ms) == 0 {
		return &Message{}
	}
	return ms[len(ms)-1]
}

func (m *Message) last(name string) (Scalar, bool) {
	fs := m.fields(name)
	for i := len(fs) - 1; i >= 0; i-- {
		if n := len(fs[i].Scalars); n > 0 {
			return fs[i].Scalars[n-1], true
		}
	}
	return Scalar{}, false
}

// Float returns a float field, or def if it is absent. It fails if the
// value is not a number.
func (m *Message) Float(name string, def float64) (float64, error) {
	s, ok := m.last(name)
	if !ok {
		return def, nil
	}
	return parseFloat(name, s)
}

func parseFloat(name string, s Scalar) (float64, error) {
	t := s.Text
	switch strings.ToLower(t) {
	case "inf", "infinity":
		t = "+Inf"
	case "-inf", "-infinity":
		t = "-Inf"
	case "nan":
		t = "NaN"
	default:
		// Protobuf allows a float suffix: 1.5f.
		t = strings.TrimSuffix(strings.TrimSuffix(t, "f"), "F")
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return 0, fmt.Errorf("field %s: %q is not a number", name, s.Text)
	}
	return v, nil
}

// Int returns an integer field, or def if it is absent.
func (m *Message) Int(name string, def int64) (int64, error) {
	s, ok := m.last(name)
	if !ok {
		return def, nil
	}
	v, err := strconv.ParseInt(s.Text, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("field %s: %q is not an integer", name, s.Text)
	}
	return v, nil
}

// String returns a string field, or def if it is absent.
func (m *Message) String(name, def string) string {
	s, ok := m.last(name)
	if !ok {
		return def
	}
	return s.Text
}

// Enum returns an enum field's identifier, or def if it is absent.
func (m *Message) Enum(name, def string) string { return m.String(name, def) }

// Floats returns all values of a repeated numeric field, in order, across
// every occurrence of the field.
func (m *Message) Floats(name string) ([]float64, error) {
	out := []float64{}
	for _, f := range m.fields(name) {
		for _, s := range f.Scalars {
			v, err := parseFloat(name, s)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// Ints returns all values of a repeated integer field.
func (m *Message) Ints(name string) ([]int64, error) {
	out := []int64{}
	for _, f := range m.fields(name) {
		for _, s := range f.Scalars {
			v, err := strconv.ParseInt(s.Text, 0, 64)
			if err != nil {
				return nil, fmt.Errorf("field %s: %q is not an integer", name, s.Text)
			}
			out = append(out, v)
		}
	}
	return out, nil
}
