package doccheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// root is the repository root, from this package's directory.
const root = "../.."

// walk calls f for every file of the repository whose name ends in one of exts, outside
// .git and testdata directories (testdata holds copies of other projects' files).
func walk(t *testing.T, exts []string, f func(path string, text string)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "testdata" || (strings.HasPrefix(name, ".") && path != root) {
				return filepath.SkipDir
			}
			return nil
		}
		for _, ext := range exts {
			if strings.HasSuffix(path, ext) {
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				f(path, string(b))
				return nil
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// anchors returns the set of heading anchors of a Markdown file, read once.
type anchorCache map[string]map[string]bool

func (c anchorCache) get(t *testing.T, path string) map[string]bool {
	if a, ok := c[path]; ok {
		return a
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a := map[string]bool{}
	for _, h := range Headings(string(b)) {
		a[h.Anchor] = true
	}
	c[path] = a
	return a
}

// TestDocLinks resolves every relative link of every Markdown file: the file or directory it
// names must exist, and an anchor must be a heading of the Markdown file it points into.
func TestDocLinks(t *testing.T) {
	cache := anchorCache{}
	n := 0
	walk(t, []string{".md"}, func(path, text string) {
		for _, l := range Links(text) {
			target := l.Target
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			dest := path
			if file != "" {
				dest = filepath.Join(filepath.Dir(path), file)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: link to %s: no such file or directory", rel(path), l.Line, target)
					continue
				}
			}
			n++
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			if !cache.get(t, dest)[anchor] {
				t.Errorf("%s:%d: link to %s: %s has no heading with anchor #%s", rel(path), l.Line, target, rel(dest), anchor)
			}
		}
	})
	if n < 10 {
		t.Fatalf("only %d relative links found: is the walk reading the documents?", n)
	}
}

// citationRE finds a mention of a document by its path from the repository root, with the
// section it cites when one follows in quotes: docs/postgres.md, "Setting it up".
var citationRE = regexp.MustCompile(`docs/[A-Za-z0-9_/.-]+\.md(?:, "([^"]+)")?`)

// TestDocCitations checks the documents that Go code and documents cite by path (as error
// hints and comments do: docs/security.md, "Limits for analysts"): the file must exist, and
// a cited section must be the start of one of its headings.
func TestDocCitations(t *testing.T) {
	headings := map[string][]Heading{}
	n := 0
	walk(t, []string{".go", ".md"}, func(path, text string) {
		for i, line := range strings.Split(text, "\n") {
			for _, m := range citationRE.FindAllStringSubmatch(line, -1) {
				file := strings.SplitN(m[0], ",", 2)[0]
				dest := filepath.Join(root, file)
				hs, ok := headings[dest]
				if !ok {
					b, err := os.ReadFile(dest)
					if err != nil {
						t.Errorf("%s:%d: cites %s, which does not exist", rel(path), i+1, file)
						headings[dest] = nil
						continue
					}
					hs = Headings(string(b))
					headings[dest] = hs
				}
				n++
				if m[1] == "" || hs == nil {
					continue
				}
				found := false
				for _, h := range hs {
					if strings.HasPrefix(h.Text, m[1]) {
						found = true
						break
					}
				}
				if !found {
					t.Errorf("%s:%d: cites %s, %q: no heading of %s starts so", rel(path), i+1, file, m[1], file)
				}
			}
		}
	})
	if n < 10 {
		t.Fatalf("only %d citations found: is the walk reading the sources?", n)
	}
}

func rel(path string) string {
	r, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return r
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Roles: who can do what":                              "roles-who-can-do-what",
		"Noise (`dp/noise`)":                                  "noise-dpnoise",
		"8. Why groups disappear":                             "8-why-groups-disappear",
		"Why did I get 0 rows? Why did this group disappear?": "why-did-i-get-0-rows-why-did-this-group-disappear",
		"5.1 One-level `hash(uid, key, seed)` is not uniform": "51-one-level-hashuid-key-seed-is-not-uniform",
		"dpsql-beam: tests":                                   "dpsql-beam-tests",
	} {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHeadingsRepeatAndFences(t *testing.T) {
	md := "# A\n```sh\n# not a heading\n```\n## B\n### B\n## B ##\n"
	var got []string
	for _, h := range Headings(md) {
		got = append(got, h.Text+"="+h.Anchor)
	}
	want := []string{"A=a", "B=b", "B=b-1", "B=b-2"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Headings = %v, want %v", got, want)
	}
}

func TestLinksSkipCode(t *testing.T) {
	md := "see [a](a.md#x) and `[b](b.md)`\n```\n[c](c.md)\n```\n[d](../d.md)\n"
	got := Links(md)
	want := []Link{{1, "a.md#x"}, {5, "../d.md"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Links = %v, want %v", got, want)
	}
}

func TestCommands(t *testing.T) {
	text := `# a comment line
./dpsql a.duckdb -c "SELECT 1"   # a trailing comment with a " quote

./dpsql b.duckdb -c "SELECT 'it''s',
  2"
go run ./cmd/dpsql --init x.sql \
  -c 'SELECT "a" # not a comment'
echo "a \" b" # c
`
	cmds, err := Commands(text, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []Command{
		{11, `./dpsql a.duckdb -c "SELECT 1"   # a trailing comment with a " quote`},
		{13, "./dpsql b.duckdb -c \"SELECT 'it''s',\n  2\""},
		{15, "go run ./cmd/dpsql --init x.sql \\\n  -c 'SELECT \"a\" # not a comment'"},
		{17, `echo "a \" b" # c`},
	}
	if !reflect.DeepEqual(cmds, want) {
		t.Errorf("Commands =\n%+v\nwant\n%+v", cmds, want)
	}
	if _, err := Commands("./dpsql -c \"SELECT 1\n", 1); err == nil {
		t.Error("an open quote at the end of a block: no error")
	}
	if _, err := Commands("./dpsql \\\n", 1); err == nil {
		t.Error("a trailing backslash at the end of a block: no error")
	}
}

func TestBlocksAndDirectives(t *testing.T) {
	md := "text\n<!-- doctest: exit=1 contains=\"SQLSTATE 2P001\" contains=\"a \\\"q\\\"\" matches=\"x\\\\s+y\" -->\n```sh\n./dpsql -c x\n```\n\n```sql\nSELECT 1;\n```\n<!-- doctest: skip=\"needs a server\" -->\n```sh\n./dpsql serve x\n```\n"
	blocks, err := Blocks(md)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 3 {
		t.Fatalf("%d blocks, want 3", len(blocks))
	}
	want := Directive{Exit: 1, Contains: []string{"SQLSTATE 2P001", `a "q"`}, Matches: []string{`x\s+y`}}
	if b := blocks[0]; b.Lang != "sh" || b.Line != 3 || b.Text != "./dpsql -c x\n" || !reflect.DeepEqual(b.Directive, want) {
		t.Errorf("block 0 = %+v", b)
	}
	if b := blocks[1]; b.Lang != "sql" || !reflect.DeepEqual(b.Directive, Directive{}) {
		t.Errorf("block 1 = %+v", b)
	}
	if b := blocks[2]; b.Directive.Skip != "needs a server" {
		t.Errorf("block 2 = %+v", b)
	}
	for _, bad := range []string{
		"<!-- doctest: exits=1 -->\n```sh\n```\n",       // unknown attribute: a typo must not drop a check
		"<!-- doctest: exit=one -->\n```sh\n```\n",      // not a status
		"<!-- doctest: matches=\"(\" -->\n```sh\n```\n", // bad regular expression
		"<!-- doctest: skip=\"\" -->\n```sh\n```\n",     // a skip without a reason
		"<!-- doctest: exit=1 -->\n\n```sh\n```\n",      // not right before a fence
		"```sh\n./dpsql\n",                              // never closed
		"<!-- doctest: contains=\"x -->\n```sh\n```\n",  // unterminated string
	} {
		if _, err := Blocks(bad); err == nil {
			t.Errorf("Blocks(%q): no error", bad)
		}
	}
}
