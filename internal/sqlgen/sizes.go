package sqlgen

import (
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/internal/ast"
)

// MaxBuiltString is the longest string, in characters, that an analyst's expression can
// build from data: concatenations are cut to it, and repeat, lpad, rpad, replace and
// regexp_replace never produce more. Without such a bound one row could make a query run
// out of memory (repeat(name, 700000000)), and whether a query fails must not depend on one
// row; the database's own limits (DuckDB's memory limit, PostgreSQL's 1 GB per value) are
// errors, not bounds.
const MaxBuiltString = 1 << 20

var maxBuilt = strconv.Itoa(MaxBuiltString)

// guardSizes returns hook preceded by sizeGuard: the nodes that build strings are printed
// inside their guard, and printed again (inside it) by hook.
func guardSizes(hook func(*ast.Printer, ast.Node) bool) func(*ast.Printer, ast.Node) bool {
	// guarded holds the nodes sizeGuard is printing, so that printing one of them again
	// (inside its guard) goes on to hook.
	guarded := map[ast.Node]bool{}
	return func(p *ast.Printer, n ast.Node) bool {
		if !guarded[n] && sizeGuard(p, n, func(m ast.Node) {
			guarded[m] = true
			p.Print(m)
			delete(guarded, m)
		}) {
			return true
		}
		return hook(p, n)
	}
}

// sizeGuard prints the nodes that build strings from their arguments so that their result is
// at most MaxBuiltString characters long; it reports false for other nodes. print prints a
// node as the printer would without the guard.
func sizeGuard(p *ast.Printer, n ast.Node, print func(ast.Node)) bool {
	switch x := n.(type) {
	case *ast.Binary:
		if x.Op != "||" {
			return false
		}
		p.WriteString("left(")
		print(n)
		p.WriteString(", " + maxBuilt + ")")
		return true
	case *ast.FuncCall:
		if len(x.Name) != 1 || x.Over != nil {
			return false
		}
		args := x.Args
		switch strings.ToLower(x.Name[0].Name) {
		case "concat", "concat_ws":
			p.WriteString("left(")
			print(n)
			p.WriteString(", " + maxBuilt + ")")
			return true
		case "repeat":
			if len(args) != 2 {
				return false
			}
			// repeat(s, n) with n cut so that length(s) * n <= MaxBuiltString.
			c := *x
			c.Args = []ast.Expr{args[0], call("least", args[1],
				&ast.Cast{X: call("floor", &ast.Binary{Op: "/", L: intLit(maxBuilt),
					R: call("greatest", call("length", args[0]), intLit("1"))}),
					Type: &ast.TypeName{Name: "INTEGER"}})}
			print(&c)
			return true
		case "lpad", "rpad":
			if len(args) < 2 {
				return false
			}
			c := *x
			c.Args = append([]ast.Expr{args[0], call("least", args[1], intLit(maxBuilt))}, args[2:]...)
			print(&c)
			return true
		case "replace", "regexp_replace":
			if len(args) < 3 {
				return false
			}
			// Each match grows by at most the replacement's length (back references copy
			// at most the match): (length(s) + 1) * (length(r) + 1) bounds the result.
			p.WriteString("(CASE WHEN (CAST(length(")
			p.Print(args[0])
			p.WriteString(") AS BIGINT) + 1) * (CAST(length(")
			p.Print(args[2])
			p.WriteString(") AS BIGINT) + 1) <= " + maxBuilt + " THEN ")
			print(n)
			p.WriteString(" END)")
			return true
		}
	}
	return false
}

func call(name string, args ...ast.Expr) *ast.FuncCall {
	return &ast.FuncCall{Name: []*ast.Ident{{Name: name}}, Args: args}
}

func intLit(text string) *ast.Literal { return &ast.Literal{Kind: ast.IntLit, Text: text} }
