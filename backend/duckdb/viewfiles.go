package duckdb

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dpsql/dpsql/backend"
)

// ViewFiles finds the local files that the views of the database read, so that analyst mode
// can allow exactly those (Open calls it itself). It scans the SQL text of every view
// (duckdb_views()) for string literals and quoted identifiers and keeps those that name an existing regular file,
// whatever function reads them (read_csv, read_parquet, read_json, FROM 'x.csv', lists of
// files). A literal with glob characters (* ? [) that matches files contributes the directory
// before its first glob character to dirs instead, as DuckDB needs to list that directory.
// A file reached through a symbolic link contributes the file the link leads to as well, which
// is the path DuckDB checks.
//
// Relative names resolve against the process working directory, as DuckDB resolves them when
// the view runs; the results are absolute and sorted. A literal that happens to name an
// existing file although it is not read as one (WHERE name = 'x.csv') is included too, which
// only lets analyst SQL read that file; remote URLs (s3://, https://) are never included.
func ViewFiles(ctx context.Context, q backend.Querier) (files, dirs []string, err error) {
	rows, err := q.Query(ctx, "SELECT sql FROM duckdb_views() WHERE NOT internal AND sql IS NOT NULL")
	if err != nil {
		return nil, nil, fmt.Errorf("duckdb: list views: %w", err)
	}
	fileSet, dirSet := map[string]bool{}, map[string]bool{}
	for _, row := range rows.Values {
		text, _ := row[0].(string)
		for _, lit := range stringLiterals(text) {
			files, d := classify(lit)
			for _, f := range files {
				fileSet[f] = true
			}
			if d != "" {
				dirSet[d] = true
			}
		}
	}
	return sortedKeys(fileSet), sortedKeys(dirSet), nil
}

// classify returns the absolute file (or glob directory) a literal names, if it names one,
// with the files the symbolic links among them lead to: DuckDB checks the file a link leads
// to against the allowed paths, so a view over links was refused for analysts as if its
// files could not be read.
func classify(lit string) (files []string, dir string) {
	if lit == "" || strings.Contains(lit, "://") || strings.ContainsRune(lit, 0) {
		return nil, ""
	}
	if i := strings.IndexAny(lit, "*?["); i >= 0 {
		matches, err := filepath.Glob(lit)
		if err != nil || len(matches) == 0 {
			return nil, ""
		}
		d := filepath.Dir(lit[:i] + "x") // the directory holding the first glob component
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, ""
		}
		for _, m := range matches {
			files = append(files, linkTarget(m)...)
		}
		return files, abs
	}
	st, err := os.Stat(lit)
	if err != nil || !st.Mode().IsRegular() {
		return nil, ""
	}
	abs, err := filepath.Abs(lit)
	if err != nil {
		return nil, ""
	}
	return append([]string{abs}, linkTarget(abs)...), ""
}

// linkTarget returns the regular file that path leads to through symbolic links, if it is
// one and another path than path's own.
func linkTarget(path string) []string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil || real == abs {
		return nil
	}
	if st, err := os.Stat(real); err != nil || !st.Mode().IsRegular() {
		return nil
	}
	return []string{real}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// stringLiterals returns the values of the quoted tokens in SQL text: single-quoted string
// literals and double-quoted identifiers (DuckDB stores FROM 'file.csv' in a view's text as
// FROM "file.csv"), skipping comments.
func stringLiterals(sql string) []string {
	var out []string
	for i := 0; i < len(sql); {
		switch {
		case strings.HasPrefix(sql[i:], "--"):
			j := strings.IndexByte(sql[i:], '\n')
			if j < 0 {
				return out
			}
			i += j + 1
		case strings.HasPrefix(sql[i:], "/*"):
			j := strings.Index(sql[i+2:], "*/")
			if j < 0 {
				return out
			}
			i += j + 4
		case sql[i] == '"' || sql[i] == '\'':
			quote := sql[i]
			var b strings.Builder
			j := i + 1
			for j < len(sql) {
				if sql[j] == quote {
					if j+1 < len(sql) && sql[j+1] == quote {
						b.WriteByte(quote)
						j += 2
						continue
					}
					break
				}
				b.WriteByte(sql[j])
				j++
			}
			out = append(out, b.String())
			i = j + 1
		default:
			i++
		}
	}
	return out
}
