package store

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/sqlerr"
)

// RuleFixedFileFormat is the rule a private DuckDB view breaks when it reads CSV or JSON
// files, whose format DuckDB parses again at every read.
const RuleFixedFileFormat = "private-views-fixed-file-format"

// DuckDB binds a view's query again at every read. Over CSV or JSON files that means the
// reader detects, from everyone's rows, the delimiter, the header, the column names and types
// and date formats (outside reviews: one person's row renamed every column, or changed how
// every date was read), and even with auto_detect = false and explicit columns one person's
// malformed row decides whether every query fails. No noise bounds that, and casting to the
// declared types cannot undo a parse. So a private view may read tables, Parquet files (which
// carry their schema) and other views of those, and nothing that DuckDB's plan shows as a CSV
// or JSON scan, however it is reached (a macro, query_table, query(), a view in another
// schema or an attached database).
//
// The check reads DuckDB's own bound plan of the view (json_serialize_plan), not its text:
// DuckDB cannot serialize its CSV and JSON scans ("CSVReaderSerialize not implemented"), and
// names every other scan. Binding reads files' metadata and the view's definition only, no
// row; the plan's operators do not depend on the rows.
var detectedReaders = regexp.MustCompile(`"name"\s*:\s*"((read|parquet)_(csv|json|ndjson)[a-z_]*|sniff_csv|read_xlsx|csv_scan|json_scan)"`)

// checkPrivatePlans checks, on DuckDB and from one statement, the bound plans of private
// relations whose plan could break a rule: a view must not read CSV or JSON files
// (planReadsFixedFormats) nor Parquet files that disagree on a column's type
// (checkParquetFiles), and neither a view nor a table's generated column may evaluate an
// expression that can fail (planFails) or show how a stored float or interval was written
// (planShowsFloatSigns). It returns the first relation's refusal.
func checkPrivatePlans(ctx context.Context, q backend.Querier, rels ...*table) error {
	if dialectOf(q) != backend.DuckDB || len(rels) == 0 {
		return nil
	}
	queries := make([]string, len(rels))
	for i, r := range rels {
		queries[i] = "SELECT * FROM " + r.ref
	}
	plans, err := serializePlans(ctx, q, queries)
	if err != nil {
		return fmt.Errorf("store: read the plans of private relations: %w", err)
	}
	roots := make([]any, len(rels))
	var casts []constantCast
	for i, r := range rels {
		if r.view {
			if err := planReadsFixedFormats(r.name, plans[i]); err != nil {
				return err
			}
		}
		if roots[i], err = decodePlan(plans[i]); err != nil {
			return storedFloatsError(r.name, "a plan dpsql cannot read ("+err.Error()+")")
		}
		if err := planMixesPeople(r.name, roots[i]); err != nil {
			return err
		}
		r.parquet = len(parquetScans(roots[i])) > 0
		if err := checkParquetFiles(ctx, q, r.name, r.ref, roots[i]); err != nil {
			return err
		}
		if err := planShowsFloatSigns(r.name, roots[i]); err != nil {
			return err
		}
		casts = append(casts, constantCasts(roots[i])...)
	}
	castWorks, err := checkConstantCasts(ctx, q, casts)
	if err != nil {
		return fmt.Errorf("store: check the constants of private relations: %w", err)
	}
	for i, r := range rels {
		// A generated column is computed at every read too, and DuckDB does not check it
		// again when an UPDATE changes what it reads (third review).
		if err := planFails(r.name, roots[i], castWorks); err != nil {
			return err
		}
	}
	return nil
}

// planned reports whether private relation t has a plan to check: a view, or a table with a
// computed column (DuckDB's generated columns are computed at every read; plain defaults
// are only checked with them).
func (t *table) planned() bool { return t.view || t.computed }

// serializePlans returns DuckDB's bound plans of queries (json_serialize_plan, which binds
// them and reads no row), from one statement.
func serializePlans(ctx context.Context, q backend.Querier, queries []string) ([]string, error) {
	cols := make([]string, len(queries))
	args := make([]any, len(queries))
	for i, query := range queries {
		cols[i] = fmt.Sprintf("json_serialize_plan(CAST($%d AS VARCHAR))", i+1)
		args[i] = query
	}
	rows, err := q.Query(ctx, "SELECT "+strings.Join(cols, ", "), args...)
	if err != nil {
		return nil, err
	}
	if len(rows.Values) != 1 {
		return nil, fmt.Errorf("%d rows", len(rows.Values))
	}
	out := make([]string, len(queries))
	for i := range queries {
		out[i] = asString(rows.Values[0][i])
	}
	return out, nil
}

// planReadsFixedFormats checks the serialized plan of private view view.
func planReadsFixedFormats(view, plan string) error {
	var failed struct {
		Error   bool   `json:"error"`
		Message string `json:"error_message"`
	}
	if json.Unmarshal([]byte(plan), &failed) == nil && failed.Error {
		what := "files it cannot be shown to read with a fixed format (" + failed.Message + ")"
		if strings.Contains(failed.Message, "CSV") {
			what = "CSV files"
		} else if strings.Contains(failed.Message, "JSON") {
			what = "JSON files"
		}
		return fixedFormatError(view, what)
	}
	if m := detectedReaders.FindStringSubmatch(plan); m != nil {
		return fixedFormatError(view, "files through "+m[1])
	}
	return nil
}

func fixedFormatError(view, what string) error {
	return sqlerr.Privacy(sqlerr.Pos{}, RuleFixedFileFormat,
		fmt.Sprintf("private view %s reads %s, which DuckDB parses again at every query: one person's row could change the columns, their types or the parsing of everyone's values", view, what),
		"the data owner loads such files into a table once (CREATE TABLE t OPTIONS(...) AS SELECT * FROM read_csv(...)), whose types stay as loaded, "+
			"or converts them to Parquet, which carries its schema; a public view may read any file (analysts: ask the data owner; docs/privacy-rules.md)")
}

// quoteIdent quotes a SQL identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
