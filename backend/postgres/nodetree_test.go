package postgres

import (
	"strings"
	"testing"
)

// TestParseNodeTree: the tree format as debug_print_rewritten sends it, broken into lines, with
// a constant's bytes, NULLs, lists and escaped names.
func TestParseNodeTree(t *testing.T) {
	tree := `{QUERY :commandType 1 :rtable ({RANGETBLENTRY :eref {ALIAS :aliasname t :colnames ("a\ b"
"c\)d" "n")} :selectedCols (b 9 10)}) :jointree {FROMEXPR :fromlist ({RANGETBLREF :rtindex 1}) :quals
{OPEXPR :opno 674 :opfuncid 297 :args ({FUNCEXPR :funcid 1746 :funcformat 2 :args ({VAR :varno 1
:varattno 3 :varlevelsup 0 :location 29}) :location -1} {CONST :consttype 701 :constvalue 8 [ 0 0 0
0 0 0 -8 63 ]} {CONST :consttype 23 :constisnull true :constvalue <>}) :location 31}} :limitCount <>}`
	roots, err := parseNodeTrees("(" + tree + ")")
	if err != nil || len(roots) != 1 {
		t.Fatal(roots, err)
	}
	root := roots[0]
	var types []string
	root.walk(func(n *node) bool { types = append(types, n.typ); return true })
	want := "QUERY RANGETBLENTRY ALIAS FROMEXPR RANGETBLREF OPEXPR FUNCEXPR VAR CONST CONST"
	if got := strings.Join(types, " "); got != want {
		t.Fatalf("nodes %q, want %q", got, want)
	}
	var fn *node
	root.walk(func(n *node) bool {
		if n.typ == "FUNCEXPR" {
			fn = n
		}
		return true
	})
	if fn.get("funcid").atom != "1746" || fn.get("funcformat").atom != "2" {
		t.Fatalf("FUNCEXPR fields: %+v", fn.fields)
	}
	if c := columnOf(root, fn.get("args")); c != "n" {
		t.Fatalf("column %q, want n", c)
	}
	if cols := root.get("rtable").list[0].node.get("eref").node.get("colnames").list; unquoteToken(cols[0].atom) != "a b" || unquoteToken(cols[1].atom) != "c)d" {
		t.Fatalf("colnames %+v", cols)
	}
	for _, bad := range []string{`{QUERY :a (1 2`, `{QUERY :a {X :b 1}`, `{QUERY 5}`, `(1 2)`, `{QUERY} x`, `({QUERY}`, `(1 })`, `{QUERY :a (}`} {
		if _, err := parseNodeTrees(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
