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
// <> for NULL; the bytes of a constant are several tokens, kept in atoms).
type value struct {
	node  *node
	list  []value
	atoms []string
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

// atom returns the value's single token, or "" if it is not one.
func (v value) atom() string {
	if len(v.atoms) == 1 {
		return v.atoms[0]
	}
	return ""
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
	var toks []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			toks = append(toks, b.String())
			b.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			b.WriteByte(c)
			b.WriteByte(s[i+1])
			i++
		case c == ' ' || c == '\n' || c == '\t' || c == '\r':
			flush()
		case c == '(' || c == ')' || c == '{' || c == '}':
			flush()
			toks = append(toks, string(c))
		default:
			b.WriteByte(c)
		}
	}
	flush()
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
			x, err := p.value()
			if err != nil {
				return v, err
			}
			v.list = append(v.list, x)
		}
		p.i++
		return v, nil
	}
	var v value
	for p.i < len(p.toks) {
		t := p.peek()
		if t == "}" || t == ")" || t == "{" || t == "(" || strings.HasPrefix(t, ":") {
			break
		}
		v.atoms = append(v.atoms, t)
		p.i++
		if len(v.atoms) == 1 && !strings.HasPrefix(p.peek(), "[") {
			// One token, unless a constant's bytes follow ("4 [ 0 0 0 0 ]").
			break
		}
		if t == "]" {
			break
		}
	}
	return v, nil
}

func (p *treeParser) node() (*node, error) {
	p.i++ // {
	if p.i >= len(p.toks) {
		return nil, fmt.Errorf("postgres: parse tree: unclosed node")
	}
	n := &node{typ: p.toks[p.i]}
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
