package ast

import (
	"fmt"
	"strings"
)

// Format prints n as canonical SQL on one line: keywords in upper case, identifiers quoted
// only when needed, AS before every alias, strings in single quotes with ” doubled. A tree
// produced by the parser prints to text that parses back to the same tree (modulo spans);
// a tree built by hand gets the parentheses its operator precedence needs.
func Format(n Node) string {
	var p Printer
	p.Print(n)
	return p.String()
}

// Printer prints syntax trees as SQL. The zero Printer prints canonical SQL (as Format);
// the SQL generator sets Hook to change how some nodes print for a dialect (column
// references, function names, casts, identifiers, ...) and reuses the rest.
//
// Hook is called for every node before it is printed, including *Ident nodes; it returns
// true if it printed the node itself (with p.WriteString, p.Print and p.Default), false to
// let the printer print it. Parentheses needed by operator precedence are written by the
// parent before Hook is called; a hook that prints a node as a different operator must add
// its own parentheses.
type Printer struct {
	Hook func(p *Printer, n Node) bool

	b strings.Builder
}

// String returns what has been printed so far.
func (p *Printer) String() string { return p.b.String() }

// Reset discards what has been printed.
func (p *Printer) Reset() { p.b.Reset() }

// WriteString appends s. Where the end of the text so far and the start of s would run
// together into a comment ("-" "-" or "/" "*"), a space is put between them, so that no
// combination of printed nodes can comment out the rest of a statement.
func (p *Printer) WriteString(s string) {
	if s == "" {
		return
	}
	if n := p.b.Len(); n > 0 {
		last := p.b.String()[n-1]
		if last == '-' && s[0] == '-' || last == '/' && s[0] == '*' || last == '*' && s[0] == '/' {
			p.b.WriteByte(' ')
		}
	}
	p.b.WriteString(s)
}

// Print prints n, consulting Hook first. A nil node prints nothing.
func (p *Printer) Print(n Node) {
	if n == nil || isNilPtr(n) {
		return
	}
	if p.Hook != nil && p.Hook(p, n) {
		return
	}
	p.Default(n)
}

// Expr prints e, in parentheses if its precedence is below minPrec (see Precedence).
func (p *Printer) Expr(e Expr, minPrec int) {
	if Precedence(e) < minPrec {
		p.WriteString("(")
		p.Print(e)
		p.WriteString(")")
		return
	}
	p.Print(e)
}

// Precedence levels of expressions, lowest first. Precedence returns the level of an
// expression's outermost operator; operands of an operator at level L are printed in
// parentheses if they bind more loosely than L requires.
const (
	PrecOr      = 1
	PrecAnd     = 2
	PrecNot     = 3
	PrecCompare = 4 // = <> < <= > >= IS IN LIKE BETWEEN
	PrecConcat  = 5 // ||
	PrecAdd     = 6 // + -
	PrecMul     = 7 // * / %
	PrecUnary   = 8 // unary - + ~
	PrecCast    = 9 // x::type
	PrecPrimary = 10
)

// BinaryPrecedence is the precedence of a Binary operator (PrecPrimary if unknown).
func BinaryPrecedence(op string) int {
	switch op {
	case "OR":
		return PrecOr
	case "AND":
		return PrecAnd
	case "=", "<>", "!=", "<", "<=", ">", ">=", "IS DISTINCT FROM", "IS NOT DISTINCT FROM":
		return PrecCompare
	case "||":
		return PrecConcat
	case "+", "-":
		return PrecAdd
	case "*", "/", "%":
		return PrecMul
	}
	return PrecCompare
}

// Precedence returns the precedence level of e's outermost operator.
func Precedence(e Expr) int {
	switch e := e.(type) {
	case *Binary:
		return BinaryPrecedence(e.Op)
	case *Unary:
		if e.Op == "NOT" {
			return PrecNot
		}
		return PrecUnary
	case *Exists:
		if e.Not {
			return PrecNot
		}
	case *IsNull, *Between, *InList, *InSubquery, *Like:
		return PrecCompare
	case *Cast:
		if e.Colon {
			return PrecCast
		}
	}
	return PrecPrimary
}

// Ident prints an identifier (through Hook).
func (p *Printer) Ident(id *Ident) { p.Print(id) }

// identText is the default spelling of an identifier.
func identText(id *Ident) string {
	if !id.Quoted && IsBareIdent(id.Name) {
		return id.Name
	}
	return QuoteIdent(id.Name)
}

// Name prints a dotted name a.b.c.
func (p *Printer) Name(parts []*Ident) {
	for i, id := range parts {
		if i > 0 {
			p.WriteString(".")
		}
		p.Print(id)
	}
}

func (p *Printer) identList(ids []*Ident) {
	p.WriteString("(")
	for i, id := range ids {
		if i > 0 {
			p.WriteString(", ")
		}
		p.Print(id)
	}
	p.WriteString(")")
}

func (p *Printer) exprList(list []Expr) {
	for i, e := range list {
		if i > 0 {
			p.WriteString(", ")
		}
		p.Expr(e, 0)
	}
}

func (p *Printer) options(opts []*Option) {
	p.WriteString("OPTIONS(")
	for i, o := range opts {
		if i > 0 {
			p.WriteString(", ")
		}
		p.Print(o)
	}
	p.WriteString(")")
}

func (p *Printer) orderList(items []*OrderItem) {
	for i, o := range items {
		if i > 0 {
			p.WriteString(", ")
		}
		p.Print(o)
	}
}

// setOpPrec is the binding power of a set operation (INTERSECT binds tighter).
func setOpPrec(s SetExpr) int {
	if op, ok := s.(*SetOp); ok {
		if op.Op == "INTERSECT" {
			return 2
		}
		return 1
	}
	return 3
}

// setOperand prints a set operation's operand, in parentheses if it binds more loosely
// than minPrec.
func (p *Printer) setOperand(s SetExpr, minPrec int) {
	if setOpPrec(s) < minPrec {
		p.WriteString("(")
		p.Print(s)
		p.WriteString(")")
		return
	}
	p.Print(s)
}

// Default prints n the canonical way, without consulting Hook for n itself (its children
// still go through Print). Hooks call it to wrap or fall back to the default.
func (p *Printer) Default(n Node) {
	switch n := n.(type) {
	case nil:
		// nothing
	case *Ident:
		p.WriteString(identText(n))

	// ---- statements ----
	case *QueryStmt:
		p.Print(n.Query)
	case *ExplainStmt:
		p.WriteString("EXPLAIN ")
		p.Print(n.Query)
	case *CreateStmt:
		p.WriteString("CREATE ")
		if n.OrReplace {
			p.WriteString("OR REPLACE ")
		}
		if n.Temp {
			p.WriteString("TEMP ")
		}
		p.WriteString(n.Kind + " ")
		p.Name(n.Name)
		if n.Options != nil {
			p.WriteString(" ")
			p.options(n.Options)
		}
		p.WriteString(" AS ")
		p.WriteString(n.Body)
	case *AlterOptionsStmt:
		p.WriteString("ALTER " + n.Kind + " ")
		p.Name(n.Name)
		if n.Column != nil {
			p.WriteString(" ALTER COLUMN ")
			p.Print(n.Column)
		}
		p.WriteString(" SET ")
		p.options(n.Options)
	case *SetBudgetStmt:
		if n.Unlimited {
			p.WriteString("SET BUDGET UNLIMITED")
		} else {
			p.WriteString("SET BUDGET ")
			p.options(n.Options)
		}
	case *SetLimitsStmt:
		p.WriteString("SET LIMITS ")
		p.options(n.Options)
	case *ShowStmt:
		p.WriteString("SHOW " + n.What)
	case *CreateAnalystStmt:
		p.WriteString("CREATE ANALYST ")
		p.Print(n.Name)
		p.WriteString(" PASSWORD " + RedactedPassword)
		if len(n.Options) > 0 {
			p.WriteString(" ")
			p.options(n.Options)
		}
	case *AlterAnalystStmt:
		p.WriteString("ALTER ANALYST ")
		p.Print(n.Name)
		if n.Password != nil {
			p.WriteString(" PASSWORD " + RedactedPassword)
		}
		if n.Options != nil {
			p.WriteString(" SET ")
			p.options(n.Options)
		}
	case *DropAnalystStmt:
		p.WriteString("DROP ANALYST ")
		if n.IfExists {
			p.WriteString("IF EXISTS ")
		}
		p.Print(n.Name)
	case *RawStmt:
		p.WriteString(n.Text)
	case *ReleasedRows:
		p.WriteString(n.SQL)
	case *Option:
		p.Print(n.Name)
		p.WriteString(" = ")
		p.Expr(n.Value, 0)

	// ---- queries ----
	case *Query:
		if len(n.With) > 0 {
			p.WriteString("WITH ")
			for i, c := range n.With {
				if i > 0 {
					p.WriteString(", ")
				}
				p.Print(c)
			}
			p.WriteString(" ")
		}
		p.Print(n.Body)
		if len(n.OrderBy) > 0 {
			p.WriteString(" ORDER BY ")
			p.orderList(n.OrderBy)
		}
		if n.Limit != nil {
			p.WriteString(" LIMIT ")
			p.Expr(n.Limit, 0)
		}
		if n.Offset != nil {
			p.WriteString(" OFFSET ")
			p.Expr(n.Offset, 0)
		}
	case *CTE:
		p.Print(n.Name)
		if len(n.Columns) > 0 {
			p.WriteString(" ")
			p.identList(n.Columns)
		}
		p.WriteString(" AS (")
		p.Print(n.Query)
		p.WriteString(")")
	case *SetOp:
		prec := setOpPrec(n)
		p.setOperand(n.Left, prec)
		p.WriteString(" " + n.Op + " ")
		if n.All {
			p.WriteString("ALL ")
		}
		p.setOperand(n.Right, prec+1)
	case *ParenQuery:
		p.WriteString("(")
		p.Print(n.Query)
		p.WriteString(")")
	case *Select:
		p.WriteString("SELECT ")
		if n.Anon != nil {
			p.Print(n.Anon)
			p.WriteString(" ")
		}
		if n.Distinct {
			p.WriteString("DISTINCT ")
		}
		for i, it := range n.Items {
			if i > 0 {
				p.WriteString(", ")
			}
			p.Print(it)
		}
		if len(n.From) > 0 {
			p.WriteString(" FROM ")
			for i, t := range n.From {
				if i > 0 {
					p.WriteString(", ")
				}
				p.Print(t)
			}
		}
		if n.Where != nil {
			p.WriteString(" WHERE ")
			p.Expr(n.Where, 0)
		}
		if n.GroupBy != nil {
			p.WriteString(" ")
			p.Print(n.GroupBy)
		}
		if n.Having != nil {
			p.WriteString(" HAVING ")
			p.Expr(n.Having, 0)
		}
		if n.Qualify != nil {
			p.WriteString(" QUALIFY ")
			p.Expr(n.Qualify, 0)
		}
		if len(n.Windows) > 0 {
			p.WriteString(" WINDOW ")
			for i, w := range n.Windows {
				if i > 0 {
					p.WriteString(", ")
				}
				p.Print(w)
			}
		}
	case *AnonClause:
		if n.Syntax == DifferentialPrivacy {
			p.WriteString("WITH DIFFERENTIAL_PRIVACY")
		} else {
			p.WriteString("WITH ANONYMIZATION")
		}
		if n.Options != nil {
			p.WriteString(" ")
			p.options(n.Options)
		}
	case *SelectItem:
		if n.Star {
			for _, id := range n.StarTable {
				p.Print(id)
				p.WriteString(".")
			}
			p.WriteString("*")
			if len(n.Except) > 0 {
				p.WriteString(" EXCLUDE ")
				p.identList(n.Except)
			}
			return
		}
		p.Expr(n.Expr, 0)
		if n.Alias != nil {
			p.WriteString(" AS ")
			p.Print(n.Alias)
		}
	case *GroupBy:
		p.WriteString("GROUP BY ")
		switch n.Kind {
		case "":
			p.exprList(n.Items)
		case "ALL":
			p.WriteString("ALL")
		case "GROUPING SETS":
			p.WriteString("GROUPING SETS (")
			p.exprList(n.Items)
			p.WriteString(")")
		default:
			p.WriteString(n.Kind + "(")
			p.exprList(n.Items)
			p.WriteString(")")
		}
	case *OrderItem:
		p.Expr(n.Expr, 0)
		if n.Desc {
			p.WriteString(" DESC")
		}
		if n.NullsFirst != nil {
			if *n.NullsFirst {
				p.WriteString(" NULLS FIRST")
			} else {
				p.WriteString(" NULLS LAST")
			}
		}
	case *NamedWindow:
		p.Print(n.Name)
		p.WriteString(" AS (")
		p.windowBody(n.Spec)
		p.WriteString(")")
	case *WindowFrame:
		p.WriteString(n.Unit + " ")
		if n.End != nil {
			p.WriteString("BETWEEN ")
			p.frameBound(n.Start)
			p.WriteString(" AND ")
			p.frameBound(n.End)
		} else {
			p.frameBound(n.Start)
		}
		if n.Exclude != "" {
			p.WriteString(" EXCLUDE " + n.Exclude)
		}
	case *FrameBound:
		p.frameBound(n)
	case *WindowSpec:
		// A WindowSpec on its own prints as its parenthesised body; FuncCall prints OVER.
		p.WriteString("(")
		p.windowBody(n)
		p.WriteString(")")

	// ---- FROM ----
	case *TableAlias:
		p.WriteString("AS ")
		p.Print(n.Name)
		if len(n.Columns) > 0 {
			p.WriteString(" ")
			p.identList(n.Columns)
		}
	case *TableName:
		p.Name(n.Name)
		p.tableAlias(n.Alias)
	case *SubqueryTable:
		if n.Lateral {
			p.WriteString("LATERAL ")
		}
		p.WriteString("(")
		p.Print(n.Query)
		p.WriteString(")")
		p.tableAlias(n.Alias)
	case *Unnest:
		p.WriteString("UNNEST(")
		p.Expr(n.Expr, 0)
		p.WriteString(")")
		p.tableAlias(n.Alias)
	case *TableFunc:
		p.Name(n.Name)
		p.WriteString("(")
		p.exprList(n.Args)
		for i, a := range n.NamedArgs {
			if i > 0 || len(n.Args) > 0 {
				p.WriteString(", ")
			}
			p.Print(a)
		}
		p.WriteString(")")
		p.tableAlias(n.Alias)
	case *Join:
		p.Print(n.Left)
		p.WriteString(" ")
		if n.Natural {
			p.WriteString("NATURAL ")
		}
		p.WriteString(joinKeyword(n.Kind) + " ")
		if _, ok := n.Right.(*Join); ok {
			p.WriteString("(")
			p.Print(n.Right)
			p.WriteString(")")
		} else {
			p.Print(n.Right)
		}
		if n.On != nil {
			p.WriteString(" ON ")
			p.Expr(n.On, 0)
		} else if len(n.Using) > 0 {
			p.WriteString(" USING ")
			p.identList(n.Using)
		}

	// ---- expressions ----
	case *ColumnRef:
		p.Name(n.Parts)
	case *Literal:
		switch n.Kind {
		case StringLit:
			p.WriteString(QuoteString(n.Text))
		case NullLit:
			p.WriteString("NULL")
		case BoolLit:
			p.WriteString(strings.ToUpper(n.Text))
		default:
			p.WriteString(n.Text)
		}
	case *TypedLiteral:
		p.WriteString(n.Type + " " + QuoteString(n.Text))
	case *Interval:
		p.WriteString("INTERVAL ")
		p.Expr(n.Value, PrecUnary)
		p.WriteString(" " + n.Unit)
	case *Unary:
		if n.Op == "NOT" {
			p.WriteString("NOT ")
			p.Expr(n.X, PrecNot)
		} else {
			p.WriteString(n.Op)
			p.Expr(n.X, PrecUnary)
		}
	case *Binary:
		prec := BinaryPrecedence(n.Op)
		p.Expr(n.L, prec)
		p.WriteString(" " + n.Op + " ")
		p.Expr(n.R, prec+1)
	case *IsNull:
		p.Expr(n.X, PrecCompare)
		if n.Not {
			p.WriteString(" IS NOT ")
		} else {
			p.WriteString(" IS ")
		}
		v := n.Value
		if v == "" {
			v = "NULL"
		}
		p.WriteString(v)
	case *Between:
		p.Expr(n.X, PrecCompare)
		p.WriteString(not(n.Not) + " BETWEEN ")
		p.Expr(n.Lo, PrecConcat)
		p.WriteString(" AND ")
		p.Expr(n.Hi, PrecConcat)
	case *InList:
		p.Expr(n.X, PrecCompare)
		p.WriteString(not(n.Not) + " IN (")
		p.exprList(n.List)
		p.WriteString(")")
	case *InSubquery:
		p.Expr(n.X, PrecCompare)
		p.WriteString(not(n.Not) + " IN (")
		p.Print(n.Query)
		p.WriteString(")")
	case *Like:
		p.Expr(n.X, PrecCompare)
		if n.ILike {
			p.WriteString(not(n.Not) + " ILIKE ")
		} else {
			p.WriteString(not(n.Not) + " LIKE ")
		}
		p.Expr(n.Pattern, PrecConcat)
		if n.Escape != nil {
			p.WriteString(" ESCAPE ")
			p.Expr(n.Escape, PrecConcat)
		}
	case *Case:
		p.WriteString("CASE")
		if n.Operand != nil {
			p.WriteString(" ")
			p.Expr(n.Operand, 0)
		}
		for _, w := range n.Whens {
			p.WriteString(" ")
			p.Print(w)
		}
		if n.Else != nil {
			p.WriteString(" ELSE ")
			p.Expr(n.Else, 0)
		}
		p.WriteString(" END")
	case *When:
		p.WriteString("WHEN ")
		p.Expr(n.Cond, 0)
		p.WriteString(" THEN ")
		p.Expr(n.Result, 0)
	case *TypeName:
		p.WriteString(n.Name)
		if len(n.Args) > 0 {
			p.WriteString("(" + strings.Join(n.Args, ", ") + ")")
		}
	case *Cast:
		if n.Colon {
			p.Expr(n.X, PrecCast)
			p.WriteString("::")
			p.Print(n.Type)
			return
		}
		if n.Safe {
			p.WriteString("SAFE_CAST(")
		} else {
			p.WriteString("CAST(")
		}
		p.Expr(n.X, 0)
		p.WriteString(" AS ")
		p.Print(n.Type)
		p.WriteString(")")
	case *FuncCall:
		p.funcCall(n)
	case *NamedArg:
		p.Print(n.Name)
		p.WriteString(" => ")
		p.Expr(n.Value, 0)
	case *Clamp:
		p.WriteString("CLAMPED BETWEEN ")
		p.Expr(n.Lo, PrecConcat)
		p.WriteString(" AND ")
		p.Expr(n.Hi, PrecConcat)
	case *Report:
		p.WriteString("WITH REPORT")
		if n.Format != nil {
			p.WriteString("(FORMAT = ")
			p.Print(n.Format)
			p.WriteString(")")
		}
	case *Extract:
		p.WriteString("EXTRACT(" + n.Field + " FROM ")
		p.Expr(n.X, 0)
		p.WriteString(")")
	case *Tuple:
		p.WriteString("(")
		p.exprList(n.Elems)
		p.WriteString(")")
	case *Paren:
		p.WriteString("(")
		p.Expr(n.X, 0)
		p.WriteString(")")
	case *Subscript:
		p.Expr(n.X, PrecPrimary)
		p.WriteString("[" + n.Kind + "(")
		p.Expr(n.Index, 0)
		p.WriteString(")]")
	case *FieldAccess:
		p.Expr(n.X, PrecPrimary)
		p.WriteString(".")
		p.Print(n.Field)
	case *ArrayLit:
		if n.Keyword {
			p.WriteString("ARRAY")
		}
		p.WriteString("[")
		p.exprList(n.Elems)
		p.WriteString("]")
	case *Subquery:
		p.WriteString("(")
		p.Print(n.Query)
		p.WriteString(")")
	case *Exists:
		if n.Not {
			p.WriteString("NOT ")
		}
		p.WriteString("EXISTS (")
		p.Print(n.Query)
		p.WriteString(")")
	default:
		panic(fmt.Sprintf("ast.Printer: unknown node type %T", n))
	}
}

func not(b bool) string {
	if b {
		return " NOT"
	}
	return ""
}

func joinKeyword(k JoinKind) string {
	switch k {
	case LeftJoin:
		return "LEFT JOIN"
	case RightJoin:
		return "RIGHT JOIN"
	case FullJoin:
		return "FULL JOIN"
	case CrossJoin:
		return "CROSS JOIN"
	}
	return "JOIN"
}

func (p *Printer) tableAlias(a *TableAlias) {
	if a != nil {
		p.WriteString(" ")
		p.Print(a)
	}
}

func (p *Printer) funcCall(n *FuncCall) {
	for i, id := range n.Name {
		if i > 0 {
			p.WriteString(".")
		}
		if len(n.Name) == 1 && !id.Quoted && IsFuncKeyword(id.Name) {
			// LEFT(s, 3): a reserved word the grammar accepts as a function name.
			if p.Hook == nil || !p.Hook(p, id) {
				p.WriteString(id.Name)
			}
			continue
		}
		p.Print(id)
	}
	p.WriteString("(")
	if n.Distinct {
		p.WriteString("DISTINCT ")
	}
	sep := ""
	if n.Star {
		p.WriteString("*")
		sep = ", "
	}
	for _, a := range n.Args {
		p.WriteString(sep)
		p.Expr(a, 0)
		sep = ", "
	}
	for _, a := range n.NamedArgs {
		p.WriteString(sep)
		p.Print(a)
		sep = ", "
	}
	if n.Clamped != nil {
		if sep != "" {
			p.WriteString(" ")
		}
		p.Print(n.Clamped)
	}
	if n.Report != nil {
		if sep != "" || n.Clamped != nil {
			p.WriteString(" ")
		}
		p.Print(n.Report)
	}
	p.WriteString(")")
	if n.Filter != nil {
		p.WriteString(" FILTER (WHERE ")
		p.Expr(n.Filter, 0)
		p.WriteString(")")
	}
	if n.Over != nil {
		p.WriteString(" OVER ")
		if n.Over.Name != nil && len(n.Over.PartitionBy) == 0 && len(n.Over.OrderBy) == 0 && n.Over.Frame == nil {
			p.Print(n.Over.Name)
		} else {
			p.Print(n.Over)
		}
	}
	for _, f := range n.Fields {
		p.WriteString(".")
		p.Print(f)
	}
}

// windowBody prints the inside of a window specification's parentheses.
func (p *Printer) windowBody(w *WindowSpec) {
	sep := ""
	if w.Name != nil {
		if !w.Name.Quoted && isWindowWord(w.Name.Name) {
			p.WriteString(QuoteIdent(w.Name.Name))
		} else {
			p.Print(w.Name)
		}
		sep = " "
	}
	if len(w.PartitionBy) > 0 {
		p.WriteString(sep + "PARTITION BY ")
		p.exprList(w.PartitionBy)
		sep = " "
	}
	if len(w.OrderBy) > 0 {
		p.WriteString(sep + "ORDER BY ")
		p.orderList(w.OrderBy)
		sep = " "
	}
	if w.Frame != nil {
		p.WriteString(sep)
		p.Print(w.Frame)
	}
}

func (p *Printer) frameBound(b *FrameBound) {
	if b.Offset != nil {
		p.Expr(b.Offset, BinaryPrecedence("||"))
		p.WriteString(" ")
	}
	p.WriteString(b.Kind)
}

// isWindowWord reports whether an unquoted window name would be read as the start of a
// window clause.
func isWindowWord(name string) bool {
	switch strings.ToUpper(name) {
	case "PARTITION", "ROWS", "RANGE", "GROUPS":
		return true
	}
	return false
}
