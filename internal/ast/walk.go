package ast

import "reflect"

// Children returns the direct children of n in source order, without nil ones. Identifiers
// (names of columns, tables, functions, aliases, options) are children too.
func Children(n Node) []Node {
	var c children
	switch n := n.(type) {
	case *QueryStmt:
		c.add(n.Query)
	case *ExplainStmt:
		c.add(n.Query)
	case *CreateStmt:
		c.idents(n.Name)
		for _, o := range n.Options {
			c.add(o)
		}
	case *AlterOptionsStmt:
		c.idents(n.Name)
		if n.Column != nil {
			c.add(n.Column)
		}
		for _, o := range n.Options {
			c.add(o)
		}
	case *SetBudgetStmt:
		for _, o := range n.Options {
			c.add(o)
		}
	case *SetLimitsStmt:
		for _, o := range n.Options {
			c.add(o)
		}
	case *CreateAnalystStmt:
		c.add(n.Name)
		if n.Password != nil {
			c.add(n.Password)
		}
		for _, o := range n.Options {
			c.add(o)
		}
	case *AlterAnalystStmt:
		c.add(n.Name)
		if n.Password != nil {
			c.add(n.Password)
		}
		for _, o := range n.Options {
			c.add(o)
		}
	case *DropAnalystStmt:
		c.add(n.Name)
	case *Option:
		c.add(n.Name)
		c.expr(n.Value)
	case *Query:
		for _, w := range n.With {
			c.add(w)
		}
		c.setExpr(n.Body)
		for _, o := range n.OrderBy {
			c.add(o)
		}
		c.expr(n.Limit)
		c.expr(n.Offset)
	case *CTE:
		c.add(n.Name)
		c.idents(n.Columns)
		c.add(n.Query)
	case *SetOp:
		c.setExpr(n.Left)
		c.setExpr(n.Right)
	case *ParenQuery:
		c.add(n.Query)
	case *Select:
		if n.Anon != nil {
			c.add(n.Anon)
		}
		for _, it := range n.Items {
			c.add(it)
		}
		for _, t := range n.From {
			c.table(t)
		}
		c.expr(n.Where)
		if n.GroupBy != nil {
			c.add(n.GroupBy)
		}
		c.expr(n.Having)
		c.expr(n.Qualify)
		for _, w := range n.Windows {
			c.add(w)
		}
	case *AnonClause:
		for _, o := range n.Options {
			c.add(o)
		}
	case *SelectItem:
		c.idents(n.StarTable)
		c.expr(n.Expr)
		if n.Alias != nil {
			c.add(n.Alias)
		}
		c.idents(n.Except)
	case *GroupBy:
		for _, e := range n.Items {
			c.expr(e)
		}
	case *OrderItem:
		c.expr(n.Expr)
	case *NamedWindow:
		c.add(n.Name)
		if n.Spec != nil {
			c.add(n.Spec)
		}
	case *WindowSpec:
		if n.Name != nil {
			c.add(n.Name)
		}
		for _, e := range n.PartitionBy {
			c.expr(e)
		}
		for _, o := range n.OrderBy {
			c.add(o)
		}
		if n.Frame != nil {
			c.add(n.Frame)
		}
	case *WindowFrame:
		c.add(n.Start)
		if n.End != nil {
			c.add(n.End)
		}
	case *FrameBound:
		c.expr(n.Offset)
	case *TableAlias:
		c.add(n.Name)
		c.idents(n.Columns)
	case *TableName:
		c.idents(n.Name)
		c.alias(n.Alias)
	case *SubqueryTable:
		c.add(n.Query)
		c.alias(n.Alias)
	case *Unnest:
		c.expr(n.Expr)
		c.alias(n.Alias)
	case *TableFunc:
		c.idents(n.Name)
		for _, a := range n.Args {
			c.expr(a)
		}
		for _, a := range n.NamedArgs {
			c.add(a)
		}
		c.alias(n.Alias)
	case *Join:
		c.table(n.Left)
		c.table(n.Right)
		c.expr(n.On)
		c.idents(n.Using)
	case *ColumnRef:
		c.idents(n.Parts)
	case *Interval:
		c.expr(n.Value)
	case *Unary:
		c.expr(n.X)
	case *Binary:
		c.expr(n.L)
		c.expr(n.R)
	case *IsNull:
		c.expr(n.X)
	case *Between:
		c.expr(n.X)
		c.expr(n.Lo)
		c.expr(n.Hi)
	case *InList:
		c.expr(n.X)
		for _, e := range n.List {
			c.expr(e)
		}
	case *InSubquery:
		c.expr(n.X)
		c.add(n.Query)
	case *Like:
		c.expr(n.X)
		c.expr(n.Pattern)
		c.expr(n.Escape)
	case *Case:
		c.expr(n.Operand)
		for _, w := range n.Whens {
			c.add(w)
		}
		c.expr(n.Else)
	case *When:
		c.expr(n.Cond)
		c.expr(n.Result)
	case *Cast:
		c.expr(n.X)
		if n.Type != nil {
			c.add(n.Type)
		}
	case *FuncCall:
		c.idents(n.Name)
		for _, a := range n.Args {
			c.expr(a)
		}
		for _, a := range n.NamedArgs {
			c.add(a)
		}
		if n.Clamped != nil {
			c.add(n.Clamped)
		}
		if n.Report != nil {
			c.add(n.Report)
		}
		c.expr(n.Filter)
		if n.Over != nil {
			c.add(n.Over)
		}
		c.idents(n.Fields)
	case *NamedArg:
		c.add(n.Name)
		c.expr(n.Value)
	case *Clamp:
		c.expr(n.Lo)
		c.expr(n.Hi)
	case *Report:
		if n.Format != nil {
			c.add(n.Format)
		}
	case *Extract:
		c.expr(n.X)
	case *Tuple:
		for _, e := range n.Elems {
			c.expr(e)
		}
	case *Paren:
		c.expr(n.X)
	case *Subscript:
		c.expr(n.X)
		c.expr(n.Index)
	case *FieldAccess:
		c.expr(n.X)
		c.add(n.Field)
	case *ArrayLit:
		for _, e := range n.Elems {
			c.expr(e)
		}
	case *Subquery:
		c.add(n.Query)
	case *Exists:
		c.add(n.Query)
	}
	return c.list
}

type children struct{ list []Node }

// add appends n unless it is nil.
func (c *children) add(n Node) {
	if n != nil && !isNilPtr(n) {
		c.list = append(c.list, n)
	}
}

func (c *children) idents(ids []*Ident) {
	for _, id := range ids {
		if id != nil {
			c.list = append(c.list, id)
		}
	}
}

func (c *children) alias(a *TableAlias) {
	if a != nil {
		c.list = append(c.list, a)
	}
}

func (c *children) expr(e Expr) {
	if e != nil && !isNilPtr(e) {
		c.list = append(c.list, e)
	}
}

func (c *children) setExpr(s SetExpr) {
	if s != nil && !isNilPtr(s) {
		c.list = append(c.list, s)
	}
}

func (c *children) table(t TableExpr) {
	if t != nil && !isNilPtr(t) {
		c.list = append(c.list, t)
	}
}

// isNilPtr reports whether n is a typed nil pointer stored in an interface.
func isNilPtr(n Node) bool {
	v := reflect.ValueOf(n)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// Walk calls fn for n and, if fn returns true, walks n's children in source order.
func Walk(n Node, fn func(Node) bool) {
	if n == nil || isNilPtr(n) || !fn(n) {
		return
	}
	for _, c := range Children(n) {
		Walk(c, fn)
	}
}

// Inspect is like go/ast.Inspect: it calls fn(n); if that returns true it inspects n's
// children and then calls fn(nil), so fn can keep a stack of the nodes it is inside.
func Inspect(n Node, fn func(Node) bool) {
	if n == nil || isNilPtr(n) || !fn(n) {
		return
	}
	for _, c := range Children(n) {
		Inspect(c, fn)
	}
	fn(nil)
}

// Collect returns all nodes of type T in n (n included) in source order. If skip is not
// nil, the subtrees of nodes for which it returns true are not searched (for example, to
// stay out of subqueries: func(n Node) bool { _, ok := n.(*Query); return ok }).
func Collect[T Node](n Node, skip func(Node) bool) []T {
	var out []T
	Walk(n, func(m Node) bool {
		if t, ok := m.(T); ok {
			out = append(out, t)
		}
		return skip == nil || m == n || !skip(m)
	})
	return out
}

// Unparen is x without the parentheses around it.
func Unparen(x Expr) Expr {
	for {
		p, ok := x.(*Paren)
		if !ok {
			return x
		}
		x = p.X
	}
}
