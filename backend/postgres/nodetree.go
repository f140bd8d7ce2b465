package postgres

import (
	"fmt"
	"strings"
)

// A node is one node of a PostgreSQL node tree as debug_print_rewritten prints it
// ({FUNCEXPR :funcid 1746 :args (...) ...}): its type and its fields in order.
type node struct {
	typ    string
	fields []field
}

type field struct {
	name string
	val  value
}

// A value is a field's value: a node, a list of values, or one token (a number, a name,
// <> for NULL). A constant's bytes ("4 [ 0 0 0 0 ]") are skipped: atom is their length.
type value struct {
	node *node
	list []value
	atom string
}

// get returns the value of field name ("funcid", without the colon).
func (n *node) get(name string) value {
	for _, f := range n.fields {
		if f.name == name {
			return f.val
		}
	}
	return value{}
}

// children calls fn on every node directly inside v, in order.
func (v value) children(fn func(*node)) {
	if v.node != nil {
		fn(v.node)
	}
	for _, x := range v.list {
		x.children(fn)
	}
}

// walk calls fn on n and every node below it, depth first; fn returns false to skip a
// node's subtree.
func (n *node) walk(fn func(*node) bool) {
	if !fn(n) {
		return
	}
	for _, f := range n.fields {
		f.val.children(func(c *node) { c.walk(fn) })
	}
}

// parseNodeTrees parses the text of a node tree, or of a list of them (the rewritten
// queries of one statement). The text is PostgreSQL's outfuncs format, possibly broken into
// lines (format_node_dump): tokens are separated by white space and the characters ( ) { },
// except where a backslash escapes the next character.
func parseNodeTrees(s string) ([]*node, error) {
	toks := tokenize(s)
	p := &treeParser{toks: toks}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	if p.i != len(p.toks) {
		return nil, fmt.Errorf("postgres: parse tree: text after the tree at token %d of %d", p.i, len(p.toks))
	}
	var out []*node
	v.children(func(n *node) { out = append(out, n) })
	if len(out) == 0 {
		return nil, fmt.Errorf("postgres: parse tree: no node in %.40q", s)
	}
	return out, nil
}

func tokenize(s string) []string {
	toks := make([]string, 0, len(s)/5)
	start := -1 // the current token's first byte, or -1 between tokens
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\n', '\t', '\r', '(', ')', '{', '}':
			if start >= 0 {
				toks = append(toks, s[start:i])
				start = -1
			}
			if c != ' ' && c != '\n' && c != '\t' && c != '\r' {
				toks = append(toks, s[i:i+1])
			}
		case '\\':
			// An escaped character (a space or a bracket in a name) belongs to the token.
			if start < 0 {
				start = i
			}
			i++
		default:
			if start < 0 {
				start = i
			}
		}
	}
	if start >= 0 {
		toks = append(toks, s[start:])
	}
	return toks
}

type treeParser struct {
	toks []string
	i    int
}

func (p *treeParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

// value reads one field value: a node, a list, or the tokens up to the next field name or
// closing bracket.
func (p *treeParser) value() (value, error) {
	switch p.peek() {
	case "{":
		n, err := p.node()
		return value{node: n}, err
	case "(":
		p.i++
		var v value
		for p.peek() != ")" {
			if p.i >= len(p.toks) {
				return v, fmt.Errorf("postgres: parse tree: unclosed list")
			}
			before := p.i
			x, err := p.value()
			if err != nil {
				return v, err
			}
			if p.i == before {
				return v, fmt.Errorf("postgres: parse tree: %q in a list", p.peek())
			}
			v.list = append(v.list, x)
		}
		p.i++
		return v, nil
	}
	var v value
	if t := p.peek(); t == "" || t == "}" || t == ")" || strings.HasPrefix(t, ":") {
		return v, nil
	}
	v.atom = p.toks[p.i]
	p.i++
	if p.peek() == "[" {
		for p.i < len(p.toks) && p.toks[p.i] != "]" {
			p.i++
		}
		p.i++
	}
	return v, nil
}

func (p *treeParser) node() (*node, error) {
	p.i++ // {
	if p.i >= len(p.toks) {
		return nil, fmt.Errorf("postgres: parse tree: unclosed node")
	}
	n := &node{typ: p.toks[p.i], fields: make([]field, 0, 12)}
	p.i++
	for p.peek() != "}" {
		if p.i >= len(p.toks) {
			return nil, fmt.Errorf("postgres: parse tree: unclosed node %s", n.typ)
		}
		name := p.peek()
		if !strings.HasPrefix(name, ":") {
			return nil, fmt.Errorf("postgres: parse tree: %q where a field of %s was expected", name, n.typ)
		}
		p.i++
		var v value
		if t := p.peek(); t != "}" && !strings.HasPrefix(t, ":") {
			var err error
			if v, err = p.value(); err != nil {
				return nil, err
			}
		}
		n.fields = append(n.fields, field{name: name[1:], val: v})
	}
	p.i++
	return n, nil
}
