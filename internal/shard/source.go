package shard

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/parser"
	"github.com/dpsql/dpsql/internal/sqlgen"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/sqlerr"
)

// Source is where a distributed stage reads a query's private rows: the one private relation
// the query reads, which must be a view whose rows come one by one from files (CREATE VIEW v
// OPTIONS(anonymization_userid_column='uid') AS (SELECT * FROM read_parquet('data/v-*.parquet'))),
// split into one shard per file. Each shard's database has the same views as the coordinator's,
// except that the private view reads only the shard's file.
type Source struct {
	// Relation is the private relation's name.
	Relation string
	// Files are the files of the relation's view (its glob expanded), one shard each.
	Files []string
	// setup creates the other views, in the order the coordinator created them.
	setup []string
	// view is the private view's body; read is its file reader, whose path argument each
	// shard replaces.
	name string
	view *ast.Query
	read *ast.TableFunc
	// columns are the private view's columns with their types on the coordinator: every
	// shard's view casts its columns to them, so that a file that types a column differently
	// (BIGINT here, DOUBLE there; types sniffed from a CSV file's rows) gives the same values
	// as the coordinator's view over all files, and the query binds the same everywhere.
	columns [][2]string
	// readerTypes are the columns of the file reader itself as the coordinator reads them
	// (CSV and JSON only, whose types are sniffed from each file's rows): every shard's reader
	// is given them (types = {...} for CSV, columns = {...} for JSON), so that a file whose
	// own rows would sniff differently (numbers in a column the coordinator reads as text)
	// gives the same values.
	readerTypes [][2]string
}

// RuleDistributed names the refusals of queries the distributed stage cannot run.
const RuleDistributed = "distributed-stage"

// fileReaders are DuckDB's table functions that read rows from files, one file after another.
var fileReaders = map[string]bool{
	"read_parquet": true, "parquet_scan": true, "read_csv": true, "read_csv_auto": true,
	"read_json": true, "read_json_auto": true, "read_ndjson": true, "read_ndjson_auto": true,
}

// NewSource finds the private relation that q reads in cat and the views of the coordinator's
// database coord, and expands the relation's files (globs) with DuckDB's glob(). It fails,
// naming the construct, when q reads no or several private relations, or one that is not a
// view over files.
func NewSource(ctx context.Context, coord backend.Querier, cat *catalog.Catalog, q *analyzer.Query) (*Source, error) {
	pos := q.Options.Pos
	if q.Node != nil {
		pos = q.Node.Span().Start
	}
	rels := privateRelations(cat, q)
	switch {
	case len(rels) == 0:
		return nil, sqlerr.Privacy(pos, RuleDistributed, "the query reads no private relation", "")
	case len(rels) > 1:
		return nil, sqlerr.Privacy(pos, RuleDistributed,
			fmt.Sprintf("the query reads several private relations (%s): the distributed stage splits one private relation by file", strings.Join(rels, ", ")),
			"read one private relation per query (join it with public relations only), or run the query with dpsql on a database that holds the data")
	}
	if err := rowLevel(cat, q, pos); err != nil {
		return nil, err
	}
	if err := readOnce(cat, q, pos); err != nil {
		return nil, err
	}
	s := &Source{Relation: rels[0]}
	// Settings that change what queries mean (the owner's SET TimeZone in the setup) apply in
	// every shard.
	for _, name := range []string{"TimeZone", "Calendar", "default_collation", "integer_division"} {
		r, err := coord.Query(ctx, "SELECT CAST(current_setting('"+name+"') AS VARCHAR)")
		if err != nil || len(r.Values) != 1 {
			continue // not a setting of this DuckDB
		}
		if v, ok := r.Values[0][0].(string); ok {
			s.setup = append(s.setup, fmt.Sprintf("SET %s = %s", name, ast.QuoteString(v)))
		}
	}
	views, err := coord.Query(ctx, "SELECT view_name, sql FROM duckdb_views() WHERE NOT internal AND sql IS NOT NULL ORDER BY view_oid")
	if err != nil {
		return nil, fmt.Errorf("shard: list views: %w", err)
	}
	notView := func(why string) error {
		return sqlerr.Privacy(pos, RuleDistributed,
			fmt.Sprintf("private relation %s is not a view over files (%s): the distributed stage reads private rows from files, split by file", s.Relation, why),
			fmt.Sprintf("declare it as CREATE VIEW %s OPTIONS(anonymization_userid_column='...') AS (SELECT * FROM read_parquet('data/%s-*.parquet')) (or read_csv, read_json), with row-by-row filters and expressions only", s.Relation, s.Relation))
	}
	for _, row := range views.Values {
		name, _ := row[0].(string)
		text, _ := row[1].(string)
		rel, ok := cat.Lookup(name)
		switch {
		case ok && catalog.SameName(rel.Name, s.Relation):
			if err := s.parseView(name, text); err != nil {
				return nil, notView(err.Error())
			}
		case ok && rel.Kind == catalog.Private:
			// Another private view: the query does not read it, and its files must not be
			// read whole by every worker.
		default:
			s.setup = append(s.setup, strings.TrimSuffix(strings.TrimSpace(text), ";"))
		}
	}
	if s.view == nil {
		return nil, notView("it is a table of the owner's setup, which the workers do not have")
	}
	cols, err := coord.Query(ctx, "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position", s.name)
	if err != nil {
		return nil, fmt.Errorf("shard: columns of %s: %w", s.name, err)
	}
	for _, r := range cols.Values {
		name, _ := r[0].(string)
		typ, _ := r[1].(string)
		s.columns = append(s.columns, [2]string{name, typ})
	}
	if len(s.columns) == 0 {
		return nil, notView("its columns are unknown")
	}
	if err := s.sniffedTypes(ctx, coord); err != nil {
		return nil, err
	}
	if err := s.expand(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// scope is what an analyzed query reads before its anonymized aggregation: its CTEs, FROM
// items and WHERE, and the names of every CTE among them.
type scope struct {
	roots []ast.Node
	ctes  map[string]bool
	cat   *catalog.Catalog
}

func newScope(cat *catalog.Catalog, q *analyzer.Query) *scope {
	sc := &scope{ctes: map[string]bool{}, cat: cat}
	for _, c := range q.With {
		sc.roots = append(sc.roots, c)
	}
	for _, f := range q.From {
		sc.roots = append(sc.roots, f)
	}
	if q.Where != nil {
		sc.roots = append(sc.roots, q.Where)
	}
	for _, r := range sc.roots {
		for _, c := range ast.Collect[*ast.CTE](r, nil) {
			sc.ctes[strings.ToLower(c.Name.Name)] = true
		}
	}
	return sc
}

// private returns the catalog's private relation t names ("" for a CTE or a public relation).
func (sc *scope) private(t *ast.TableName) (name string, cte bool) {
	if len(t.Name) == 1 && sc.ctes[strings.ToLower(t.Name[0].Name)] {
		return "", true
	}
	var parts []string
	for _, id := range t.Name {
		parts = append(parts, id.Name)
	}
	if rel, ok := sc.cat.Lookup(strings.Join(parts, ".")); ok && rel.Kind == catalog.Private {
		return rel.Name, false
	}
	return "", false
}

// privateRelations are the private relations q reads, by the catalog's names, sorted.
func privateRelations(cat *catalog.Catalog, q *analyzer.Query) []string {
	sc := newScope(cat, q)
	found := map[string]bool{}
	for _, r := range sc.roots {
		for _, t := range ast.Collect[*ast.TableName](r, nil) {
			if name, _ := sc.private(t); name != "" {
				found[name] = true
			}
		}
	}
	var out []string
	for n := range found {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// rowLevel refuses queries whose rows before the anonymized aggregation are not computed row
// by row from the private relation: a subquery or CTE that aggregates, deduplicates, ranks,
// limits or intersects rows read from private data would compute it per file, not over all
// files (a unit's rows are spread over files). Subqueries over public relations only are
// fine: every shard reads them whole.
func rowLevel(cat *catalog.Catalog, q *analyzer.Query, pos sqlerr.Pos) error {
	sc := newScope(cat, q)
	// readsPrivate: the subtree names the private relation or a CTE (which may hold
	// private rows).
	readsPrivate := func(n ast.Node) bool {
		for _, t := range ast.Collect[*ast.TableName](n, nil) {
			if name, cte := sc.private(t); name != "" || cte {
				return true
			}
		}
		return false
	}
	var found string
	var at ast.Node
	for _, r := range sc.roots {
		ast.Inspect(r, func(n ast.Node) bool {
			if found != "" {
				return false
			}
			what := ""
			switch n := n.(type) {
			case *ast.Select:
				switch {
				case n.GroupBy != nil:
					what = "GROUP BY"
				case n.Distinct:
					what = "SELECT DISTINCT"
				case n.Having != nil:
					what = "HAVING"
				case n.Qualify != nil:
					what = "QUALIFY"
				case len(n.Windows) > 0:
					what = "WINDOW"
				default:
					for _, it := range n.Items {
						ast.Inspect(it, func(m ast.Node) bool {
							if f, ok := m.(*ast.FuncCall); ok && what == "" {
								if f.Over != nil {
									what = "a window function"
								} else if len(f.Name) == 1 && (analyzer.IsAggregate(f.Name[0].Name) || aggregateNames[strings.ToLower(f.Name[0].Name)]) {
									what = "aggregate " + strings.ToUpper(f.Name[0].Name)
								}
							}
							return what == ""
						})
					}
				}
			case *ast.Query:
				if n.Limit != nil || n.Offset != nil {
					what = "LIMIT"
				}
			case *ast.SetOp:
				if !(n.Op == "UNION" && n.All) {
					what = n.Op
					if !n.All {
						what += " (without ALL)"
					}
				}
			}
			if what != "" && readsPrivate(n) {
				found, at = what, n
			}
			return found == ""
		})
	}
	if found == "" {
		return nil
	}
	p := pos
	if at.Span().Start.IsValid() {
		p = at.Span().Start
	}
	return sqlerr.Privacy(p, RuleDistributed,
		fmt.Sprintf("%s over private rows before the anonymized aggregation is not supported by the distributed stage: it splits the private relation by file, and a unit's rows may be in several files", found),
		"aggregate per unit with the anonymized aggregate itself (ANON_SUM of a per-row value), or run the query with dpsql on a database that holds the data")
}

// parseView reads the private view's SQL as DuckDB stores it and checks that its rows come one
// by one from its files: one SELECT over one file reader, without aggregation, DISTINCT,
// windows, subqueries, ORDER BY or LIMIT, so that the view over all files is the union of the
// views over each file.
func (s *Source) parseView(name, text string) error {
	stmts, err := parser.Lenient(text)
	if err != nil || len(stmts) != 1 {
		return fmt.Errorf("its SQL cannot be read: %v", err)
	}
	cs, ok := stmts[0].(*ast.CreateStmt)
	if !ok {
		return fmt.Errorf("its SQL is not a CREATE VIEW")
	}
	body := strings.TrimSuffix(strings.TrimSpace(cs.Body), ";")
	q, err := parser.ParseQuery(body)
	if err != nil {
		return fmt.Errorf("its body cannot be read: %v", err)
	}
	sel, ok := q.Body.(*ast.Select)
	if !ok || len(q.With) > 0 || len(q.OrderBy) > 0 || q.Limit != nil || q.Offset != nil {
		return fmt.Errorf("its body is not one SELECT without WITH, ORDER BY or LIMIT")
	}
	if sel.Distinct || sel.GroupBy != nil || sel.Having != nil || sel.Qualify != nil || len(sel.Windows) > 0 || len(sel.From) != 1 {
		return fmt.Errorf("its body must select rows from one file reader, without DISTINCT, GROUP BY, HAVING, QUALIFY or windows")
	}
	switch f := sel.From[0].(type) {
	case *ast.TableFunc:
		if len(f.Name) != 1 || !fileReaders[strings.ToLower(f.Name[0].Name)] || len(f.Args) == 0 {
			return fmt.Errorf("its rows come from %s, not from a file reader (read_parquet, read_csv, read_json)", ast.Format(f))
		}
		s.read = f
	case *ast.TableName:
		// FROM 'file.parquet' (stored as a quoted name): DuckDB's reader for the file's
		// extension.
		if len(f.Name) != 1 || !strings.ContainsAny(f.Name[0].Name, "./") {
			return fmt.Errorf("its rows come from relation %s, not from files", ast.Format(f))
		}
		s.read = &ast.TableFunc{Name: []*ast.Ident{{Name: readerFor(f.Name[0].Name)}},
			Args: []ast.Expr{&ast.Literal{Kind: ast.StringLit, Text: f.Name[0].Name}}, Alias: f.Alias}
		sel.From[0] = s.read
	default:
		return fmt.Errorf("its rows do not come from a file reader")
	}
	bad := ""
	ast.Inspect(sel, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Subquery, *ast.Exists, *ast.InSubquery, *ast.SubqueryTable:
			bad = "a subquery"
		case *ast.FuncCall:
			if n.Over != nil {
				bad = "a window function"
			} else if len(n.Name) == 1 && aggregateNames[strings.ToLower(n.Name[0].Name)] {
				bad = "an aggregate function"
			}
		}
		return bad == ""
	})
	if bad != "" {
		return fmt.Errorf("its body uses %s: its rows must come one by one from the files", bad)
	}
	s.name, s.view = name, q
	return nil
}

// aggregateNames are aggregate functions a row-level view must not use (without GROUP BY they
// would aggregate the whole file).
var aggregateNames = map[string]bool{
	"count": true, "sum": true, "avg": true, "min": true, "max": true, "list": true, "array_agg": true,
	"string_agg": true, "group_concat": true, "first": true, "last": true, "any_value": true,
	"arg_min": true, "arg_max": true, "median": true, "quantile": true, "quantile_cont": true,
	"quantile_disc": true, "mode": true, "stddev": true, "stddev_pop": true, "stddev_samp": true,
	"variance": true, "var_pop": true, "var_samp": true, "bool_and": true, "bool_or": true,
	"bit_and": true, "bit_or": true, "bit_xor": true, "approx_count_distinct": true, "histogram": true,
	"product": true, "fsum": true, "favg": true, "sumkahan": true, "kahan_sum": true, "entropy": true,
	"kurtosis": true, "skewness": true, "corr": true, "covar_pop": true, "covar_samp": true,
	"regr_slope": true, "regr_intercept": true, "min_by": true, "max_by": true, "arbitrary": true,
}

func readerFor(path string) string {
	p := strings.ToLower(path)
	switch {
	case strings.Contains(p, ".csv"), strings.Contains(p, ".tsv"):
		return "read_csv"
	case strings.Contains(p, ".json"):
		return "read_json"
	}
	return "read_parquet"
}

// expand lists the files of the view's path argument (a string, or a list of strings, each
// possibly a glob), in sorted order, with DuckDB's glob() in a database of its own.
func (s *Source) expand(ctx context.Context) error {
	var patterns []string
	switch a := s.read.Args[0].(type) {
	case *ast.Literal:
		if a.Kind == ast.StringLit {
			patterns = []string{a.Text}
		}
	case *ast.FuncCall:
		if len(a.Name) >= 1 && strings.EqualFold(a.Name[len(a.Name)-1].Name, "list_value") {
			for _, x := range a.Args {
				if l, ok := x.(*ast.Literal); ok && l.Kind == ast.StringLit {
					patterns = append(patterns, l.Text)
				} else {
					patterns = nil
					break
				}
			}
		}
	}
	if len(patterns) == 0 {
		return fmt.Errorf("dpsql-beam: the files of private relation %s must be given as a string or a list of strings, not %s", s.Relation, ast.Format(s.read.Args[0]))
	}
	db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner, Threads: 1})
	if err != nil {
		return err
	}
	defer db.Close()
	seen := map[string]bool{}
	for _, pat := range patterns {
		rows, err := db.Query(ctx, "SELECT file FROM glob(?) ORDER BY file", pat)
		if err != nil {
			return fmt.Errorf("private relation %s: listing %q: %w", s.Relation, pat, err)
		}
		if len(rows.Values) == 0 {
			return sqlerr.New(sqlerr.Pos{}, sqlerr.UndefinedFile,
				"private relation %s: no file matches %q", s.Relation, pat).
				WithHint("check the path in the view's definition; relative paths are relative to the directory dpsql-beam runs in")
		}
		for _, r := range rows.Values {
			f, _ := r[0].(string)
			if !seen[f] {
				seen[f] = true
				s.Files = append(s.Files, f)
			}
		}
	}
	return s.sameSchemas(ctx, db)
}

// sameSchemas refuses Parquet files that do not all have the columns and types of the first.
// DuckDB reads several files as one relation typed by the first of them, converting the others'
// values as it reads, and a shard's first file is not the coordinator's: a shard starting with
// a file of INT32 would convert another file's INT64 values and fail on one person's value,
// which an analyst's WHERE can choose (outside review, 2026-11-29). dpsql's own check
// (store.checkParquetFiles) lets types widen to the view's; the shards need one schema. Only
// the files' footers are read, no row.
func (s *Source) sameSchemas(ctx context.Context, db *duckdb.DB) error {
	if n := strings.ToLower(s.read.Name[len(s.read.Name)-1].Name); n != "read_parquet" && n != "parquet_scan" {
		return nil
	}
	diff, err := store.ParquetSchemaDifference(ctx, db, s.Files)
	if err != nil {
		return fmt.Errorf("private relation %s: the schemas of its files: %w", s.Relation, err)
	}
	if diff != "" {
		return sqlerr.Privacy(sqlerr.Pos{}, RuleDistributed,
			fmt.Sprintf("the files of private relation %s do not all have the same columns and types (%s): the distributed stage reads them in shards, each typed by its own first file, and converting another file's values could fail on one person's value", s.Relation, diff),
			"the data owner rewrites the files with one schema (COPY (SELECT CAST(...) ...) TO 'f.parquet'), or the query runs with dpsql on one database")
	}
	return nil
}

// ShardSetup returns the statements that build the database of the shard that reads files:
// the coordinator's other views, then the private view over those files alone.
func (s *Source) ShardSetup(files []string) []string {
	return append(append([]string(nil), s.setup...), s.ShardView(files))
}

// typeArgs are the reader options that fix column types; a view that sets one keeps its own.
var typeArgs = map[string]bool{"types": true, "dtypes": true, "column_types": true, "columns": true, "all_varchar": true, "auto_detect": true}

// sniffedTypes fills readerTypes for CSV and JSON readers whose view does not fix the types.
func (s *Source) sniffedTypes(ctx context.Context, coord backend.Querier) error {
	name := strings.ToLower(s.read.Name[0].Name)
	if !strings.Contains(name, "csv") && !strings.Contains(name, "json") {
		return nil
	}
	for _, a := range s.read.Args[1:] {
		if p, ok := a.(*ast.Paren); ok {
			a = p.X
		}
		if b, ok := a.(*ast.Binary); ok {
			if c, ok := b.L.(*ast.ColumnRef); ok && typeArgs[strings.ToLower(c.Parts[len(c.Parts)-1].Name)] {
				return nil
			}
		}
	}
	for _, a := range s.read.NamedArgs {
		if typeArgs[strings.ToLower(a.Name.Name)] {
			return nil
		}
	}
	alias := s.read.Alias
	s.read.Alias = nil
	rows, err := coord.Query(ctx, "SELECT * FROM "+sqlgen.Print(backend.DuckDB, s.read)+" LIMIT 0")
	s.read.Alias = alias
	if err != nil {
		return fmt.Errorf("shard: the columns of %s's files: %w", s.Relation, err)
	}
	for i, c := range rows.Columns {
		s.readerTypes = append(s.readerTypes, [2]string{c, rows.Types[i]})
	}
	return nil
}

// typesPlaceholder stands for the reader's types argument while the view is printed.
const typesPlaceholder = "\x00dpsql-reader-types\x00"

// ShardView is the statement that creates the private view over files alone, each column cast
// to its type on the coordinator.
func (s *Source) ShardView(files []string) string {
	saved := s.read.Args[0]
	var arg ast.Expr = &ast.Literal{Kind: ast.StringLit, Text: files[0]}
	if len(files) > 1 {
		list := &ast.FuncCall{Name: []*ast.Ident{{Name: "list_value"}}}
		for _, f := range files {
			list.Args = append(list.Args, &ast.Literal{Kind: ast.StringLit, Text: f})
		}
		arg = list
	}
	s.read.Args[0] = arg
	args := s.read.Args
	if len(s.readerTypes) > 0 {
		s.read.Args = append(append([]ast.Expr(nil), args...), &ast.Literal{Kind: ast.StringLit, Text: typesPlaceholder})
	}
	body := sqlgen.Print(backend.DuckDB, s.view)
	s.read.Args = args
	s.read.Args[0] = saved
	if len(s.readerTypes) > 0 {
		var fields []string
		for _, c := range s.readerTypes {
			fields = append(fields, fmt.Sprintf("%s: %s", ast.QuoteString(c[0]), ast.QuoteString(c[1])))
		}
		param := "types"
		if strings.Contains(strings.ToLower(s.read.Name[0].Name), "json") {
			param = "columns"
		}
		body = strings.Replace(body, ast.QuoteString(typesPlaceholder), param+" = {"+strings.Join(fields, ", ")+"}", 1)
	}
	var cols []string
	for _, c := range s.columns {
		cols = append(cols, fmt.Sprintf("CAST(%s AS %s) AS %s", ast.QuoteIdent(c[0]), c[1], ast.QuoteIdent(c[0])))
	}
	return fmt.Sprintf("CREATE OR REPLACE VIEW %s AS SELECT %s FROM (%s) AS _dp_shard", ast.QuoteIdent(s.name), strings.Join(cols, ", "), body)
}

// CheckSetup returns the statements that build a database where a query binds as it does in
// every shard, reading no private file: the other views, and the private view as an empty
// relation of the coordinator's columns and types. (A file's own schema can come from its
// rows, as CSV's sniffed types do: checking it before the charge would make whether a query
// fails depend on one person's row.)
func (s *Source) CheckSetup() []string {
	var cols []string
	for _, c := range s.columns {
		cols = append(cols, fmt.Sprintf("CAST(NULL AS %s) AS %s", c[1], ast.QuoteIdent(c[0])))
	}
	return append(append([]string(nil), s.setup...),
		fmt.Sprintf("CREATE OR REPLACE VIEW %s AS SELECT %s LIMIT 0", ast.QuoteIdent(s.name), strings.Join(cols, ", ")))
}

// readOnce refuses queries that read the private relation more than once (a self-join, a CTE
// over it read twice): each shard would join its own file's rows only, not rows of different
// files, and the answer would be wrong.
func readOnce(cat *catalog.Catalog, q *analyzer.Query, pos sqlerr.Pos) error {
	sc := newScope(cat, q)
	// Which CTEs read private rows (directly or through other CTEs), and how often each
	// name is read.
	cteBody := map[string]ast.Node{}
	for _, r := range sc.roots {
		for _, c := range ast.Collect[*ast.CTE](r, nil) {
			cteBody[strings.ToLower(c.Name.Name)] = c.Query
		}
	}
	refs := map[string]int{} // private relation or CTE name -> references outside CTE bodies' own definitions
	var private func(n ast.Node, seen map[string]bool) bool
	private = func(n ast.Node, seen map[string]bool) bool {
		for _, t := range ast.Collect[*ast.TableName](n, nil) {
			if name, cte := sc.private(t); name != "" {
				return true
			} else if cte {
				k := strings.ToLower(t.Name[0].Name)
				if !seen[k] && cteBody[k] != nil {
					seen[k] = true
					if private(cteBody[k], seen) {
						return true
					}
				}
			}
		}
		return false
	}
	for _, r := range sc.roots {
		for _, t := range ast.Collect[*ast.TableName](r, nil) {
			name, cte := sc.private(t)
			switch {
			case name != "":
				refs[name]++
			case cte:
				k := strings.ToLower(t.Name[0].Name)
				if cteBody[k] != nil && private(cteBody[k], map[string]bool{k: true}) {
					refs[k]++
				}
			}
		}
	}
	for name, n := range refs {
		if n > 1 {
			return sqlerr.Privacy(pos, RuleDistributed,
				fmt.Sprintf("the query reads %s %d times (a self-join, or a CTE over private rows read twice): the distributed stage splits the private relation by file, and each worker would combine the rows of its own files only", name, n),
				"read the private relation once, or run the query with dpsql on a database that holds the data")
		}
	}
	return nil
}
