package store

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/sqlerr"
)

// RuleFixedFileFormat is the rule a private DuckDB view breaks when it reads CSV or JSON files
// with the format detected from their rows.
const RuleFixedFileFormat = "private-views-fixed-file-format"

// DuckDB's readers that detect a file's format from its rows (auto_detect), unless the call
// says auto_detect = false: the delimiter, the header, the column names and types, date
// formats. A view binds its query again at every read, so a private view over such a reader
// would let one person's row change the columns and the parsing of everyone's values (a stray
// field renames every column, an ambiguous date flips every date's reading), and with them
// what every analyst's query returns or whether it binds at all: no noise bounds that.
// Declaring the relation cannot freeze a parse; only the view's own definition can.
var sniffingReaders = map[string]bool{
	"read_csv": true, "read_csv_auto": true, "sniff_csv": true,
	"read_json": true, "read_json_auto": true, "read_ndjson": true, "read_ndjson_auto": true,
}

// autoDetectOff matches auto_detect = false as DuckDB prints a view's definition
// (AUTO_DETECT = CAST('f' AS BOOLEAN)) or as written.
var autoDetectOff = regexp.MustCompile(`(?i)"?auto_detect"?\s*(=|:=)\s*(cast\s*\(\s*'f(alse)?'\s+as\s+boolean\s*\)|false)`)

// sniffedFile matches the name of a CSV or JSON file scanned directly (FROM 'f.csv', which
// DuckDB prints as FROM "f.csv"): such a scan always detects the format.
var sniffedFile = regexp.MustCompile(`(?i)\.(csv|tsv|json|ndjson|jsonl|txt)(\.(gz|zst))?$`)

// checkFixedFileFormat refuses the first of views (private views on DuckDB) whose definition,
// or that of a view it reads (transitively), reads CSV or JSON files with their format
// detected from the rows. Tables are loaded once, by the owner, and keep their types.
func checkFixedFileFormat(ctx context.Context, q backend.Querier, views ...string) error {
	if dialectOf(q) != backend.DuckDB || len(views) == 0 {
		return nil
	}
	rows, err := q.Query(ctx, `SELECT table_schema, table_name, view_definition, table_schema = current_schema()
		FROM information_schema.views WHERE table_catalog = current_database()`)
	if err != nil {
		return fmt.Errorf("store: read information_schema.views: %w", err)
	}
	defs := map[string]string{} // view name (and schema.name) in lower case → definition
	for _, r := range rows.Values {
		schema, name, def := strings.ToLower(asString(r[0])), strings.ToLower(asString(r[1])), asString(r[2])
		defs[schema+"."+name] = def
		if b, _ := r[3].(bool); b {
			defs[name] = def
		}
	}
	for _, view := range views {
		if err := checkViewDefs(defs, view); err != nil {
			return err
		}
	}
	return nil
}

// checkViewDefs checks view against defs, the definitions of the database's views.
func checkViewDefs(defs map[string]string, view string) error {
	seen := map[string]bool{}
	todo := []string{strings.ToLower(view)}
	for len(todo) > 0 {
		name := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		def, ok := defs[name]
		if !ok || seen[def] {
			continue
		}
		seen[def] = true
		found, reads := sniffedRead(def)
		if found != "" {
			return fixedFormatError(view, name, found)
		}
		for _, r := range reads {
			if _, ok := defs[r]; ok {
				todo = append(todo, r)
			}
		}
	}
	return nil
}

func fixedFormatError(view, via, found string) error {
	where := ""
	if via != strings.ToLower(view) {
		where = fmt.Sprintf(" (through view %s)", via)
	}
	return sqlerr.Privacy(sqlerr.Pos{}, RuleFixedFileFormat,
		fmt.Sprintf("private view %s reads files with %s%s, which detects the file's columns, types and formats from its rows again at every query: one person's row could change them for everyone", view, found, where),
		"load the file into a table once (CREATE TABLE ... AS SELECT * FROM read_csv(...)), whose types stay as loaded, "+
			"or fix the format in the view: read_csv(..., auto_detect = false, header = true, columns = {'uid': 'BIGINT', ...}); "+
			"Parquet files carry their own schema (docs/security.md, \"The schema is public\")")
}

// sniffedRead scans a view's definition: it returns a description of the first read of files
// whose format DuckDB detects from their rows ("" when there is none), and the names the
// definition mentions (lower case, with their schema when qualified), candidates for views it
// reads.
func sniffedRead(def string) (found string, names []string) {
	toks := sqlTokens(def)
	for i, t := range toks {
		switch t.kind {
		case tokIdent:
			name := strings.ToLower(t.text)
			if i+2 < len(toks) && toks[i+1].text == "." && (toks[i+2].kind == tokIdent || toks[i+2].kind == tokQuoted) {
				names = append(names, name+"."+strings.ToLower(toks[i+2].text))
			}
			names = append(names, name)
			if sniffingReaders[name] && i+1 < len(toks) && toks[i+1].text == "(" {
				args := callArgs(def, toks, i+1)
				if name == "sniff_csv" || !autoDetectOff.MatchString(args) {
					return name + "(...) without auto_detect = false", nil
				}
			}
		case tokQuoted:
			if sniffedFile.MatchString(t.text) {
				return fmt.Sprintf("a direct scan of %q", t.text), nil
			}
			names = append(names, strings.ToLower(t.text))
		}
	}
	return "", names
}

// callArgs is the text of the call whose opening parenthesis is toks[open], up to its matching
// parenthesis (or the end of the text).
func callArgs(def string, toks []sqlToken, open int) string {
	depth := 0
	for j := open; j < len(toks); j++ {
		switch toks[j].text {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 {
				return def[toks[open].pos:toks[j].pos]
			}
		}
	}
	return def[toks[open].pos:]
}

type tokKind int

const (
	tokIdent  tokKind = iota // an unquoted word
	tokQuoted                // a "quoted identifier", its text unquoted
	tokString                // a 'string literal', its text as written
	tokPunct                 // any other character
)

type sqlToken struct {
	kind tokKind
	text string
	pos  int // byte offset in the text
}

// sqlTokens splits SQL into words, quoted identifiers, string literals and single punctuation
// characters, skipping white space and comments: enough to find calls and names in a view's
// definition without mistaking the inside of a string for either.
func sqlTokens(s string) []sqlToken {
	var out []sqlToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return out
			}
			i += end + 4
		case c == '\'' || c == '"':
			j, text := quoted(s, i)
			kind := tokString
			if c == '"' {
				kind = tokQuoted
			}
			out = append(out, sqlToken{kind: kind, text: text, pos: i})
			i = j
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
			j := i
			for j < len(s) && (s[j] == '_' || s[j] == '$' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9' || s[j] >= 0x80) {
				j++
			}
			out = append(out, sqlToken{kind: tokIdent, text: s[i:j], pos: i})
			i = j
		default:
			out = append(out, sqlToken{kind: tokPunct, text: s[i : i+1], pos: i})
			i++
		}
	}
	return out
}

// quoted reads the quoted text starting at s[i] (a doubled quote stands for itself) and
// returns the offset after it and its content.
func quoted(s string, i int) (int, string) {
	q := s[i]
	var b strings.Builder
	for j := i + 1; j < len(s); j++ {
		if s[j] == q {
			if j+1 < len(s) && s[j+1] == q {
				b.WriteByte(q)
				j++
				continue
			}
			return j + 1, b.String()
		}
		b.WriteByte(s[j])
	}
	return len(s), b.String()
}
