package postgres

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/dpsql/dpsql/backend"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Conversions that PostgreSQL inserts by itself.
//
// PostgreSQL converts an operand to the type an operator, a function, CASE, greatest,
// coalesce, IN or a join needs, with an implicit cast, and some of those casts fail on some
// values: a NUMERIC beyond DOUBLE PRECISION's range met by a DOUBLE PRECISION, a DATE beyond
// TIMESTAMP's range met by a TIMESTAMP, a TIMESTAMP near the end of its range converted to
// TIMESTAMPTZ in a time zone west of UTC, an ARRAY[...] of arrays of different lengths.
// Evaluated row by row over private data, such a failure fails the query only when one
// person's value is there (an outside review: one exact bit per query). dpsql's printer
// cannot see these conversions, since it does not know the operands' types; PostgreSQL's
// parse analysis does, and writes every conversion it inserted into the tree it makes of a
// statement. QueryConversions reads that tree (debug_print_rewritten, sent to the client as a
// LOG notice) while running the statement, and reports the conversions that can fail and are
// evaluated at run time. The rewritten tree has the views expanded, so the conversions inside
// a view's query count too.

var _ backend.ConversionReporter = (*DB)(nil)

// totalCasts are the implicit casts (source, target) that cannot fail: widening numbers,
// text types to text, and times to intervals and times with time zone.
var totalCasts = map[[2]string]bool{}

func init() {
	for _, p := range [][2]string{
		{"smallint", "integer"}, {"smallint", "bigint"}, {"integer", "bigint"},
		{"smallint", "real"}, {"integer", "real"}, {"bigint", "real"},
		{"smallint", "double precision"}, {"integer", "double precision"}, {"bigint", "double precision"},
		{"real", "double precision"},
		{"smallint", "numeric"}, {"integer", "numeric"}, {"bigint", "numeric"},
		{`"char"`, "text"}, {"name", "text"}, {"character", "text"}, {"character", "character varying"},
		{"text", "name"}, {"character varying", "name"}, {"character", "name"},
		{"time without time zone", "interval"}, {"time without time zone", "time with time zone"},
	} {
		totalCasts[p] = true
	}
}

// castInfo describes the function of an implicit cast.
type castInfo struct {
	from, to string
}

// castCatalog is what QueryConversions needs of pg_cast and pg_proc, read once per
// DB (and again when a tree names a function it does not know, such as a helper the owner
// installed since).
type castCatalog struct {
	casts     map[string]castInfo // function oid → the implicit cast it performs
	immutable map[string]bool     // every function's oid → IMMUTABLE
}

// QueryConversions runs query like Query and returns, with its rows, the conversions that
// PostgreSQL inserted into it by itself and that can fail at run time (see above). They
// depend on the statement's text and the schema only: parse analysis reads no row. A
// conversion of a constant that PostgreSQL folds while planning is not reported: it fails or
// not whatever the data.
func (db *DB) QueryConversions(ctx context.Context, query string) (*backend.Rows, []backend.Conversion, error) {
	var rows *backend.Rows
	var trees []string
	err := db.withConn(ctx, func(c *pgx.Conn) error {
		return db.readOnly(ctx, c, func() error {
			if _, err := c.Exec(ctx, treeSettings); err != nil {
				return wrap(ctx, "query", err)
			}
			col := &treeCollector{}
			db.collectors.Store(c.PgConn(), col)
			defer db.collectors.Delete(c.PgConn())
			var err error
			rows, err = db.query(ctx, c, query, nil)
			trees = col.trees()
			return err
		})
	})
	if err != nil {
		return nil, nil, err
	}
	if len(trees) == 0 {
		return nil, nil, fmt.Errorf("postgres: the server sent no parse tree for the statement (debug_print_rewritten), so its implicit conversions cannot be checked")
	}
	cat, err := db.castCatalog(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	var roots []*node
	for _, t := range trees {
		if !cat.mayConvert(t) {
			continue
		}
		r, err := parseNodeTrees(t)
		if err != nil {
			return nil, nil, err
		}
		roots = append(roots, r...)
	}
	for _, root := range roots {
		if !cat.known(root) {
			if cat, err = db.castCatalog(ctx, cat); err != nil {
				return nil, nil, err
			}
			break
		}
	}
	var out []backend.Conversion
	for _, root := range roots {
		out = append(out, cat.fallible(root)...)
	}
	if err := db.nameTypes(ctx, out); err != nil {
		return nil, nil, err
	}
	return rows, out, nil
}

// nameTypes replaces the targets fallible knows only by oid ("oid 1043") with their names.
func (db *DB) nameTypes(ctx context.Context, convs []backend.Conversion) error {
	var oids []uint32
	var at []int
	for i, c := range convs {
		if o, ok := strings.CutPrefix(c.To, "oid "); ok {
			n, err := strconv.ParseUint(o, 10, 32)
			if err != nil {
				return fmt.Errorf("postgres: parse tree: type oid %q", o)
			}
			oids, at = append(oids, uint32(n)), append(at, i)
		}
	}
	if len(oids) == 0 {
		return nil
	}
	return db.withConn(ctx, func(c *pgx.Conn) error {
		names, err := db.typeNames(ctx, c, oids)
		for k, i := range at {
			if err == nil {
				convs[i].To = strings.ToLower(names[k])
			}
		}
		return err
	})
}

// treeSettings make PostgreSQL send the statement's parse tree to the client, in this
// transaction only, and keep it out of the server's log where the role may change
// log_min_messages (a superuser, or, from PostgreSQL 15, a role granted SET ON PARAMETER
// log_min_messages); elsewhere each tree (tens to hundreds of kilobytes) is also logged.
const treeSettings = `DO $dpsql$BEGIN PERFORM pg_catalog.set_config('log_min_messages', 'fatal', true);
EXCEPTION WHEN insufficient_privilege THEN NULL; END$dpsql$;
SET LOCAL debug_pretty_print = off; SET LOCAL client_min_messages = log; SET LOCAL debug_print_rewritten = on`

// treeCollector keeps the parse trees PostgreSQL sends as notices on one connection.
type treeCollector struct {
	mu sync.Mutex
	t  []string
}

func (c *treeCollector) add(n *pgconn.Notice) {
	if n.Severity != "LOG" || n.Message != "rewritten parse tree:" {
		return
	}
	c.mu.Lock()
	c.t = append(c.t, n.Detail)
	c.mu.Unlock()
}

func (c *treeCollector) trees() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// onNotice passes a notice to the collector of its connection, if any.
func (db *DB) onNotice(pc *pgconn.PgConn, n *pgconn.Notice) {
	if col, ok := db.collectors.Load(pc); ok {
		col.(*treeCollector).add(n)
	}
}

// castCatalog returns the catalog, read on first use; stale, it is read again.
func (db *DB) castCatalog(ctx context.Context, stale *castCatalog) (*castCatalog, error) {
	db.castMu.Lock()
	defer db.castMu.Unlock()
	if db.casts != nil && db.casts != stale {
		return db.casts, nil
	}
	cat := &castCatalog{casts: map[string]castInfo{}, immutable: map[string]bool{}}
	// One function serves several casts (int4(int2) is smallint to integer, and, followed by
	// a relabeling, smallint to regproc or regnamespace): the cast a FUNCEXPR performs is the
	// one whose target is the function's result.
	rows, err := db.Query(ctx, `SELECT c.castfunc::text, format_type(c.castsource, NULL), format_type(c.casttarget, NULL)
		FROM pg_catalog.pg_cast c JOIN pg_catalog.pg_proc p ON p.oid = c.castfunc
		WHERE c.castcontext = 'i' AND c.castmethod = 'f' AND c.casttarget = p.prorettype`)
	if err != nil {
		return nil, fmt.Errorf("postgres: read the implicit casts: %w", err)
	}
	for _, r := range rows.Values {
		cat.casts[fmt.Sprint(r[0])] = castInfo{from: fmt.Sprint(r[1]), to: fmt.Sprint(r[2])}
	}
	rows, err = db.Query(ctx, `SELECT oid::text, provolatile = 'i' FROM pg_catalog.pg_proc`)
	if err != nil {
		return nil, fmt.Errorf("postgres: read the functions' volatility: %w", err)
	}
	for _, r := range rows.Values {
		cat.immutable[fmt.Sprint(r[0])] = r[1] == true
	}
	db.casts = cat
	return cat, nil
}

// funcExprHead matches the start of a FUNCEXPR node up to its funcformat, in the field order
// of PostgreSQL's outfuncs.
var funcExprHead = regexp.MustCompile(`\{FUNCEXPR\s+:funcid\s+(\d+)\s+:funcresulttype\s+\d+\s+:funcretset\s+\w+\s+:funcvariadic\s+\w+\s+:funcformat\s+(\d+)`)

// otherConversion matches an implicit conversion through text or a multidimensional array
// (the text may be broken into lines at any space).
var otherConversion = regexp.MustCompile(`:coerceformat\s+2\b|:multidims\s+true`)

// mayConvert reports whether the text of a tree may hold a conversion that fallible would
// report: an implicit cast other than those that cannot fail, an implicit conversion through
// text, or a multidimensional array. Most trees hold none, and reading the text is much
// cheaper than parsing it (a stage's tree is a few hundred kilobytes).
func (cat *castCatalog) mayConvert(t string) bool {
	if otherConversion.MatchString(t) {
		return true
	}
	heads := funcExprHead.FindAllStringSubmatch(t, -1)
	if len(heads) != strings.Count(t, "{FUNCEXPR") {
		return true // a layout this does not know: parse
	}
	for _, h := range heads {
		if h[2] != "2" {
			continue
		}
		info, ok := cat.casts[h[1]]
		if !ok || !totalCasts[[2]string{info.from, info.to}] {
			return true
		}
	}
	return false
}

// known reports whether every function the tree calls is in the catalog.
func (cat *castCatalog) known(root *node) bool {
	ok := true
	root.walk(func(n *node) bool {
		if id := callee(n); id != "" {
			_, found := cat.immutable[id]
			ok = ok && found
		}
		return ok
	})
	return ok
}

// callee is the oid of the function node n calls, or "".
func callee(n *node) string {
	switch n.typ {
	case "FUNCEXPR":
		return n.get("funcid").atom
	case "OPEXPR", "DISTINCTEXPR", "NULLIFEXPR", "SCALARARRAYOPEXPR":
		return n.get("opfuncid").atom
	}
	return ""
}

// fallible returns the conversions in the tree that PostgreSQL inserted, that can fail, and
// that run at run time: on values read then, or on constants through a function PostgreSQL
// does not fold while planning (a STABLE one: DATE to TIMESTAMPTZ depends on the time zone).
func (cat *castCatalog) fallible(root *node) []backend.Conversion {
	var out []backend.Conversion
	var scan func(q, n *node)
	scan = func(q, n *node) {
		if n.typ == "QUERY" {
			q = n
		}
		switch n.typ {
		case "FUNCEXPR":
			if n.get("funcformat").atom != "2" {
				break
			}
			info, ok := cat.casts[n.get("funcid").atom]
			if !ok {
				info = castInfo{from: "?", to: "oid " + n.get("funcresulttype").atom}
			}
			if totalCasts[[2]string{info.from, info.to}] || cat.immutable[n.get("funcid").atom] && cat.constant(n.get("args")) {
				break
			}
			out = append(out, backend.Conversion{From: info.from, To: info.to, Column: columnOf(q, n.get("args"))})
		case "COERCEVIAIO":
			// A conversion through text that PostgreSQL inserted: none of the built-in
			// implicit casts is one, so any is reported. (An ARRAYCOERCEEXPR's element
			// conversion is a FUNCEXPR of its own, checked above.)
			if n.get("coerceformat").atom != "2" || cat.constant(n.get("arg")) || textTypes[n.get("resulttype").atom] {
				// To text a value's output function cannot fail (CAST(x AS VARCHAR(1)) of
				// a double: PostgreSQL writes it as text, then cuts it).
				break
			}
			out = append(out, backend.Conversion{From: "?", To: "oid " + n.get("resulttype").atom, Column: columnOf(q, n.get("arg"))})
		case "ARRAYEXPR":
			if n.get("multidims").atom == "true" && !cat.constant(n.get("elements")) {
				out = append(out, backend.Conversion{From: "array", To: "multidimensional array"})
			}
		}
		for _, f := range n.fields {
			f.val.children(func(c *node) { scan(q, c) })
		}
	}
	scan(root, root)
	return out
}

// constant reports whether v is built of constants and immutable functions only, which
// PostgreSQL folds while planning (so that a failure happens whatever the data).
func (cat *castCatalog) constant(v value) bool {
	ok := true
	v.children(func(c *node) {
		c.walk(func(n *node) bool {
			switch n.typ {
			case "CONST", "RELABELTYPE", "BOOLEXPR", "NULLTEST", "CASEEXPR", "CASEWHEN", "ARRAYEXPR",
				"MINMAXEXPR", "COALESCEEXPR", "ROW":
			case "FUNCEXPR", "OPEXPR", "DISTINCTEXPR", "NULLIFEXPR", "SCALARARRAYOPEXPR":
				ok = ok && cat.immutable[callee(n)]
			default:
				ok = false
			}
			return ok
		})
	})
	return ok
}

// columnOf names the column v is, when v is a column of a relation the tree's query reads
// directly ("t.n"); "" otherwise.
func columnOf(root *node, v value) string {
	var vars []*node
	v.children(func(c *node) { vars = append(vars, c) })
	if len(vars) != 1 || vars[0].typ != "VAR" || vars[0].get("varlevelsup").atom != "0" {
		return ""
	}
	no, err1 := strconv.Atoi(vars[0].get("varno").atom)
	att, err2 := strconv.Atoi(vars[0].get("varattno").atom)
	rt := root.get("rtable").list
	if err1 != nil || err2 != nil || no < 1 || no > len(rt) || rt[no-1].node == nil {
		return ""
	}
	eref := rt[no-1].node.get("eref").node
	if eref == nil {
		return ""
	}
	cols := eref.get("colnames").list
	if att < 1 || att > len(cols) {
		return ""
	}
	return unquoteToken(cols[att-1].atom)
}

// unquoteToken undoes outfuncs' quoting of a string token ("a\ b" → a b).
func unquoteToken(t string) string {
	t = strings.TrimSuffix(strings.TrimPrefix(t, `"`), `"`)
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		if t[i] == '\\' && i+1 < len(t) {
			i++
		}
		b.WriteByte(t[i])
	}
	return b.String()
}

// textTypes are the oids of text, character varying, character and name.
var textTypes = map[string]bool{"25": true, "1043": true, "1042": true, "19": true}
