package analyzer

import (
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/sqlerr"
)

// item is one relation visible in a FROM scope: a table, a view, a CTE or a subquery.
type item struct {
	qual    string // qualifier as written (alias or relation name); "" if none
	qualID  *ast.Ident
	cols    []string // output column names
	unit    string   // the column holding the privacy unit; "" for public data
	private bool
	merged  map[string]bool // columns merged into the left side by USING/NATURAL
	// node is the FROM item this relation comes from (a table name or a subquery).
	node ast.TableExpr
	// domains are the owner's public domains of a base relation's columns (SQL text by
	// lower-case column name).
	domains map[string]string
}

func (it *item) hasCol(name string) (string, bool) {
	for _, c := range it.cols {
		if catalog.SameName(c, name) {
			return c, true
		}
	}
	return "", false
}

// unambiguousCol refuses a reference to a name that two columns of it share up to case: in
// PostgreSQL "UID" and uid are different columns, and dpsql matches names
// case-insensitively, so it could mistake one for the privacy unit.
func (it *item) unambiguousCol(at *ast.ColumnRef, name string) error {
	n := 0
	for _, c := range it.cols {
		if catalog.SameName(c, name) {
			n++
		}
	}
	if n > 1 {
		return sqlerr.New(at.Span().Start, sqlerr.AmbiguousColumn,
			"%s has several columns named %q up to case; dpsql cannot tell them apart", qualName(it), name).
			WithHint("the data owner must rename one of them")
	}
	return nil
}

// unambiguousQualifier refuses a qualifier that two FROM items of s answer to (aliases that
// are one name up to case): the analyzer would resolve the column in one while the database
// may bind it in the other.
func (s *scope) unambiguousQualifier(at *ast.ColumnRef, q string) error {
	n := 0
	for _, it := range s.items {
		if it.qual != "" && catalog.SameName(it.qual, q) {
			n++
		}
	}
	if n > 1 {
		return sqlerr.New(at.Span().Start, sqlerr.AmbiguousColumn,
			"table name or alias %q is used by several relations of this FROM clause up to case; dpsql cannot tell them apart", q).
			WithHint("give each relation its own alias")
	}
	return nil
}

func (it *item) isUnit(col string) bool {
	return it.private && it.unit != "" && catalog.SameName(it.unit, col)
}

// scope is the set of relations a FROM clause makes visible, with the enclosing query's
// scope for correlated references.
type scope struct {
	items []*item
	outer *scope
	// innerRefs counts the references from inner scopes (correlated subqueries) that
	// resolved here: a subquery whose analysis adds to the count of a scope outside it refers
	// to that scope (innerRefsUp; analyzer.query marks what refers to none).
	innerRefs int
}

// innerRefsUp is the number of references from inner scopes resolved in s and the scopes
// enclosing it.
func (s *scope) innerRefsUp() int {
	n := 0
	for sc := s; sc != nil; sc = sc.outer {
		n += sc.innerRefs
	}
	return n
}

// ref is a resolved column reference.
type ref struct {
	item *item
	col  string
	// outer is true when the column was found in an enclosing scope.
	outer bool
}

func (r ref) isUnit() bool { return r.item != nil && !r.outer && r.item.isUnit(r.col) }

// resolve finds the relation a column reference belongs to. It returns a positioned error for
// unknown and ambiguous names.
func (s *scope) resolve(c *ast.ColumnRef) (ref, error) {
	if len(c.Parts) > 2 {
		if err := s.schemaPath(c); err != nil {
			return ref{}, err
		}
	}
	outer := false
	for sc := s; sc != nil; sc = sc.outer {
		r, found, err := sc.resolveHere(c)
		if err != nil {
			return ref{}, err
		}
		if found {
			r.outer = outer
			if outer {
				sc.innerRefs++
			}
			return r, nil
		}
		outer = true
	}
	e := sqlerr.New(c.Span().Start, sqlerr.UndefinedColumn, "column %q does not exist", ast.Format(c))
	if h := didYouMean(c.Parts[len(c.Parts)-1].Name, s.columnNames()); h != "" {
		e = e.WithHint("%s", h)
	}
	return ref{}, e
}

// columnNames are the names of the columns visible in s and its enclosing scopes: the
// columns of relations the query may read, the candidates of "did you mean".
func (s *scope) columnNames() []string {
	var out []string
	for sc := s; sc != nil; sc = sc.outer {
		for _, it := range sc.items {
			out = append(out, it.cols...)
		}
	}
	return out
}

func (s *scope) resolveHere(c *ast.ColumnRef) (ref, bool, error) {
	parts := c.Parts
	switch len(parts) {
	case 0:
		return ref{}, false, nil
	case 1:
		var found []ref
		for _, it := range s.items {
			if err := it.unambiguousCol(c, parts[0].Name); err != nil {
				return ref{}, false, err
			}
			if col, ok := it.hasCol(parts[0].Name); ok && !it.merged[catalog.NameKey(col)] {
				found = append(found, ref{item: it, col: col})
			}
		}
		if len(found) > 1 {
			return ref{}, false, sqlerr.New(c.Span().Start, sqlerr.AmbiguousColumn,
				"column reference %q is ambiguous", parts[0].Name).
				WithHint("qualify it with a table name or alias, like %s.%s", qualName(found[0].item), parts[0].Name)
		}
		if len(found) == 1 {
			return found[0], true, nil
		}
		return ref{}, false, nil
	default:
		// Use the last two parts: [schema.]table.column.
		q := parts[len(parts)-2].Name
		if err := s.unambiguousQualifier(c, q); err != nil {
			return ref{}, false, err
		}
		for _, it := range s.items {
			if it.qual != "" && catalog.SameName(it.qual, q) {
				if err := it.unambiguousCol(c, parts[len(parts)-1].Name); err != nil {
					return ref{}, false, err
				}
				if col, ok := it.hasCol(parts[len(parts)-1].Name); ok {
					if t, ok := it.node.(*ast.TableName); ok && len(t.Declared) > 0 && len(parts) > 2 {
						// schema.view.column: a view is read through a projection named
						// by the view's name alone (sqlgen), which schema.view no longer
						// qualifies.
						c.Parts = parts[len(parts)-2:]
					}
					return ref{item: it, col: col}, true, nil
				}
				e := sqlerr.New(c.Span().Start, sqlerr.UndefinedColumn,
					"column %q does not exist in %q", parts[len(parts)-1].Name, it.qual)
				if h := didYouMean(parts[len(parts)-1].Name, it.cols); h != "" {
					e = e.WithHint("%s", h)
				}
				return ref{}, false, e
			}
		}
		return ref{}, false, nil
	}
}

// schemaPath refuses a column reference of more than two parts unless it is
// schema.table.column for a table the FROM clauses in scope name schema.table without an
// alias, and no relation in scope answers to schema as an alias or has a column of that name.
// DuckDB reads A.B.C as field C of struct column B of the FROM item A whenever A.B is not such
// a table, while the analyzer resolves column C of B: an outside review named a private
// alias's unit main.q.uid beside a public FROM item main with a struct column q, and DuckDB
// grouped by the public struct's field (one person became 300 units).
func (s *scope) schemaPath(c *ast.ColumnRef) error {
	parts := c.Parts
	refuse := sqlerr.New(c.Span().Start, sqlerr.FeatureNotSupported,
		"column reference %s: a name of three parts is read as schema.table.column only for a table written schema.table, without an alias, in FROM; the database reads other forms as a field of a struct column", ast.Format(c)).
		WithHint("write table.column or alias.column")
	if len(parts) != 3 {
		return refuse
	}
	schema, table := parts[0].Name, parts[1].Name
	named := false
	for sc := s; sc != nil; sc = sc.outer {
		for _, it := range sc.items {
			if _, isCol := it.hasCol(schema); isCol || (it.qual != "" && catalog.SameName(it.qual, schema)) {
				return refuse
			}
			if t, ok := it.node.(*ast.TableName); ok && t.Alias == nil && len(t.Name) == 2 &&
				catalog.SameName(t.Name[0].Name, schema) && catalog.SameName(t.Name[1].Name, table) {
				named = true
			}
		}
	}
	if !named {
		return refuse
	}
	return nil
}

func qualName(it *item) string {
	if it.qual == "" {
		return "t"
	}
	return it.qual
}

// unitRef returns a column reference to the unit column of it.
func unitRef(it *item) ast.Expr {
	parts := []*ast.Ident{}
	if it.qualID != nil {
		parts = append(parts, &ast.Ident{Name: it.qualID.Name, Quoted: it.qualID.Quoted})
	}
	parts = append(parts, &ast.Ident{Name: it.unit, Quoted: true})
	return &ast.ColumnRef{Parts: parts}
}
