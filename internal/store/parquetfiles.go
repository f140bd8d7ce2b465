package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/duckfn"
	"github.com/dpsql/dpsql/sqlerr"
)

// Parquet files of one private view that type a column differently.
//
// DuckDB reads several Parquet files (a glob, a list) as one relation whose columns have the
// types of the first file (or, with union_by_name = true, the widest type of all files), and
// converts every other file's values to them while it reads. Where a file stores a column in a
// wider type (INT64 where the first file has INT32, a writer that widened the column),
// converting one person's value can fail, and DuckDB pushes an analyst's WHERE into the scan:
// the conversion runs only on the rows the WHERE keeps, so whether a query fails told whether
// the target's row matched (outside review of dpsql-beam, 2026-11-29; the same in dpsql). So
// each file's schema is read (its footer: no row) and every column the view reads from it must
// convert to the view's type without a possible failure (castAlwaysSucceeds: the same type, a
// wider integer or float, text); a file without a column that other files have is refused too
// (every query would fail, after its charge), unless the view reads by name.

// parquetScan is one read_parquet scan of a serialized plan.
type parquetScan struct {
	files        []string
	names        []string
	types        []any
	unionByName  bool
	binaryAsText bool
	// fieldIDs: read_parquet's schema option (columns by field id, in the types it names).
	fieldIDs bool
	// hiveTypes are the types of the hive partition columns (values from the files' paths),
	// by name: those hive_types names, or those DuckDB detected from every path; nil without
	// hive partitioning.
	hiveTypes map[string]any
}

// parquetScans returns the read_parquet scans of a decoded plan.
func parquetScans(root any) []parquetScan {
	var out []parquetScan
	eachNode(root, func(x map[string]any) {
		if x["type"] != "LOGICAL_GET" {
			return
		}
		if name, _ := x["name"].(string); name != "read_parquet" && name != "parquet_scan" {
			return
		}
		data, _ := x["function_data"].(map[string]any)
		var s parquetScan
		for _, f := range asList(data["files"]) {
			if f, ok := f.(string); ok {
				s.files = append(s.files, f)
			}
		}
		for _, n := range asList(data["names"]) {
			n, _ := n.(string)
			s.names = append(s.names, n)
		}
		s.types = asList(data["types"])
		opts, _ := data["parquet_options"].(map[string]any)
		fileOpts, _ := opts["file_options"].(map[string]any)
		s.unionByName = fileOpts["union_by_name"] == true
		s.binaryAsText = opts["binary_as_string"] == true
		s.fieldIDs = len(asList(opts["schema"])) > 0
		if fileOpts["hive_partitioning"] == true {
			s.hiveTypes = map[string]any{}
			for _, kv := range asList(fileOpts["hive_types_schema"]) {
				kv, _ := kv.(map[string]any)
				if k, ok := kv["key"].(string); ok {
					s.hiveTypes[strings.ToLower(k)] = kv["value"]
				}
			}
		}
		if len(s.names) == len(s.types) {
			out = append(out, s)
		}
	})
	return out
}

// fileSchemas returns each file's own columns (lower-case name to serialized type), from
// DuckDB's bound plan of a read of that file alone (hive partition columns, which come from
// the file's path, not its rows, are not the file's), in one statement for the files whose
// schema is not cached. A local file's schema is cached by its path, size and modification
// time, so that the check before every query binds only new or changed files. It returns the
// files' keys too (fileKey), for checkParquetValues.
func fileSchemas(ctx context.Context, q backend.Querier, files []string) ([]map[string]any, []string, error) {
	out := make([]map[string]any, len(files))
	keys := make([]string, len(files))
	var missing []int
	for i, f := range files {
		keys[i] = fileKey(f)
	}
	schemaCache.Lock()
	for i := range files {
		if keys[i] != "" {
			if cols, ok := schemaCache.m[keys[i]]; ok {
				out[i] = cols
				continue
			}
		}
		missing = append(missing, i)
	}
	schemaCache.Unlock()
	if len(missing) == 0 {
		return out, keys, nil
	}
	queries := make([]string, len(missing))
	for k, i := range missing {
		queries[k] = "SELECT * FROM read_parquet('" + strings.ReplaceAll(files[i], "'", "''") + "', binary_as_string = false, hive_partitioning = false)"
	}
	plans, err := serializePlans(ctx, q, queries)
	if err != nil {
		return nil, nil, err
	}
	schemaCache.Lock()
	defer schemaCache.Unlock()
	if len(schemaCache.m) > maxCachedSchemas {
		schemaCache.m = nil
	}
	for k, i := range missing {
		root, err := decodePlan(plans[k])
		if err != nil {
			return nil, nil, fmt.Errorf("the schema of %s: %w", files[i], err)
		}
		scans := parquetScans(root)
		if len(scans) != 1 {
			return nil, nil, fmt.Errorf("the schema of %s: %d scans", files[i], len(scans))
		}
		cols := map[string]any{}
		for j, n := range scans[0].names {
			cols[strings.ToLower(n)] = scans[0].types[j]
		}
		out[i] = cols
		if keys[i] != "" {
			if schemaCache.m == nil {
				schemaCache.m = map[string]map[string]any{}
			}
			schemaCache.m[keys[i]] = cols
		}
	}
	return out, keys, nil
}

// fileKey identifies a local file's content for the caches of fileSchemas and
// checkParquetValues: its absolute path, size and modification time, and on Linux its device,
// inode and change time (which no one sets: a file replaced or rewritten with the same size
// and a modification time set back still changes); "" for a file that cannot be stat'ed or is
// remote (never cached).
func fileKey(f string) string {
	fi, err := os.Stat(f)
	if err != nil || strings.Contains(f, "://") {
		return ""
	}
	if abs, err := filepath.Abs(f); err == nil {
		f = abs // a relative path names another file from another directory
	}
	return fmt.Sprintf("%s\x00%d\x00%d\x00%s", f, fi.Size(), fi.ModTime().UnixNano(), changeStamp(fi))
}

// schemaCache holds the schemas fileSchemas read, by file, size and modification time.
var schemaCache struct {
	sync.Mutex
	m map[string]map[string]any
}

// maxCachedSchemas bounds schemaCache; past it the cache starts again.
const maxCachedSchemas = 100000

// typeText spells a serialized type for a message: nested types with their fields and
// elements (STRUCT(a INTEGER), INTEGER[], MAP(VARCHAR, INTEGER)), which typeSQL does not.
func typeText(t any) string {
	if sql, ok := typeSQL(t); ok {
		return sql
	}
	m, _ := t.(map[string]any)
	info, _ := m["type_info"].(map[string]any)
	switch id := typeID(t); id {
	case "STRUCT":
		var fields []string
		for _, c := range asList(info["child_types"]) {
			c, _ := c.(map[string]any)
			fields = append(fields, fmt.Sprintf("%v %s", c["first"], typeText(c["second"])))
		}
		return "STRUCT(" + strings.Join(fields, ", ") + ")"
	case "LIST":
		return typeText(info["child_type"]) + "[]"
	case "ARRAY":
		return fmt.Sprintf("%s[%v]", typeText(info["child_type"]), info["size"])
	case "MAP":
		entry, _ := info["child_type"].(map[string]any)
		kv, _ := entry["type_info"].(map[string]any)
		if c := asList(kv["child_types"]); len(c) == 2 {
			k, _ := c[0].(map[string]any)
			v, _ := c[1].(map[string]any)
			return "MAP(" + typeText(k["second"]) + ", " + typeText(v["second"]) + ")"
		}
		return id
	default:
		return id
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// checkParquetFiles refuses private view view when one of the files its plan reads through
// read_parquet stores a column in a type that the view's type cannot take without a possible
// failure, or lacks a column other files have.
func checkParquetFiles(ctx context.Context, q backend.Querier, view, ref string, root any) error {
	scans := parquetScans(root)
	for _, s := range scans {
		if s.binaryAsText {
			// The reader checks that each value is UTF-8 as it reads it, on the rows an
			// analyst's WHERE keeps (a second review).
			return parquetError(view, "reads Parquet binary columns as text (binary_as_string = true), and DuckDB fails on a value that is not UTF-8 as it reads it",
				"whether a query fails would tell whether the rows its WHERE keeps hold such a value")
		}
		if s.fieldIDs {
			// The option types each file's columns by field id, converting what a file
			// stores (text) to the type it names as it reads (an outside review,
			// 2026-11-30): the conversion failed on one person's value, for the rows the
			// WHERE kept.
			return parquetError(view, "reads Parquet files through read_parquet's schema option, which converts each file's values to the types it names as it reads them",
				"that conversion can fail on one person's value, and an analyst's WHERE chooses the rows it runs on, so whether a query fails would tell about that person")
		}
		for _, f := range s.files {
			if strings.ContainsAny(f, "*?[") {
				// Each file is read alone by its path, which read_parquet would expand as
				// a pattern (p-[0].parquet reads p-0.parquet): the check would read
				// another file than the view (the same review).
				return parquetError(view, fmt.Sprintf("reads Parquet file %s, whose path holds a pattern character (*, ? or [) that dpsql cannot read it alone by", f),
					"dpsql reads each file of a private view on its own before analysts query it (a value DuckDB fails to read would fail only the queries whose WHERE keeps its row)")
			}
		}
		own, keys, err := fileSchemas(ctx, q, s.files)
		if err != nil {
			return fmt.Errorf("store: read the schemas of private view %s's files: %w", view, err)
		}
		if err := checkParquetValues(ctx, q, view, s.files, keys, own, s.hiveTypes); err != nil {
			return err
		}
		inSome := map[string]bool{}
		for _, cols := range own {
			for n := range cols {
				inSome[n] = true
			}
		}
		for i, f := range s.files {
			for j, n := range s.names {
				t, ok := own[i][strings.ToLower(n)]
				switch {
				case !ok && inSome[strings.ToLower(n)] && !s.unionByName:
					return parquetError(view, fmt.Sprintf("reads Parquet files that disagree: file %s has no column %s, which other files of the view have", filepath.Base(f), n),
						"DuckDB fails every query that reads it")
				case ok && !castAlwaysSucceeds(t, s.types[j]):
					from, to := typeText(t), typeText(s.types[j])
					return parquetError(view, fmt.Sprintf("reads Parquet files that disagree: file %s stores column %s as %s, which DuckDB converts to %s, the type the view reads it as", filepath.Base(f), n, from, to),
						"that conversion can fail on one person's value, and an analyst's WHERE chooses the rows it runs on, so whether a query fails would tell about that person")
				}
			}
		}
	}
	if len(scans) == 0 {
		return nil
	}
	return checkViewPushedFilters(ctx, q, view, ref)
}

// What a private view's own filters make DuckDB read.
//
// A filter of the view's own (WHERE grade = 3) is pushed into its Parquet scan as a constant
// filter, and the reader then reads, for each row group whose minimum and maximum admit 3, the
// column's bloom filter, which checkParquetValues does not read. A damaged bloom filter then
// failed exactly the queries whose scan reached its row group: an analyst decided that through
// the rows (a join whose other side is empty unless the target's salary is at least 1000
// skips its scan; a hive partition value prunes files; the analyst's filters change the join
// order, and with it which scan stops early), or the target's value decided it (a grade of 9
// made the group's maximum admit 7): outside reviews, 2026-11-30. Reading the view whole once
// does not settle it, since how far a scan gets depends on the plan around it (a seventh
// review's join of two globs). So no private view may push into a Parquet scan a filter that the reader
// checks against bloom filters: an equality with a constant (grade = 3, and what DuckDB
// rewrites into one: IN (3), LIKE 'abc', regexp_matches(s, '^abc$'), NOT (grade <> 3)), an IN
// list, or an expression comparing a bare column with a constant for equality. DuckDB's
// optimized plan of the view, with the analysts' optimizers, shows what it pushes
// (json_serialize_plan(..., optimize := true)); the owner computes such a filter as
// TRY(grade) = 3, which DuckDB pushes as an expression it evaluates on the rows alone. Range
// filters (d >= DATE '2020-01-01') read the row groups' statistics only, which
// checkParquetValues' reads parse too. Analysts' own comparisons are all computed inside TRY,
// and DuckDB's join filter pushdown is off for them (sqlgen.PrintData, backend/duckdb).

// checkViewPushedFilters refuses private view view (ref its name in SQL) when DuckDB pushes
// into one of its Parquet scans a filter that reads bloom filters (see above). The refusal
// depends on the view's SQL only, not on the rows.
func checkViewPushedFilters(ctx context.Context, q backend.Querier, view, ref string) error {
	var rows *backend.Rows
	err := withAnalystOptimizers(ctx, q, func() (err error) {
		rows, err = q.Query(ctx, "SELECT CAST(json_serialize_plan(CAST($1 AS VARCHAR), optimize := true) AS VARCHAR)", "SELECT * FROM "+ref)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: read the optimized plan of private view %s: %w", view, err)
	}
	if len(rows.Values) != 1 {
		return fmt.Errorf("store: read the optimized plan of private view %s: %d rows", view, len(rows.Values))
	}
	root, err := decodePlan(asString(rows.Values[0][0]))
	if err != nil {
		return storedFloatsError(view, "a plan dpsql cannot read ("+err.Error()+")")
	}
	var found string
	eachNode(root, func(x map[string]any) {
		if found != "" || x["type"] != "LOGICAL_GET" {
			return
		}
		if name, _ := x["name"].(string); name != "read_parquet" && name != "parquet_scan" {
			return
		}
		// A filter's key is its column's index in the scan's names.
		names := asList(x["names"])
		tf, _ := x["table_filters"].(map[string]any)
		for _, f := range asList(tf["filters"]) {
			f, _ := f.(map[string]any)
			if !readsBloomFilters(f["value"]) {
				continue
			}
			found = "a filter"
			if i, err := strconv.Atoi(fmt.Sprint(f["key"])); err == nil && i >= 0 && i < len(names) {
				found = "a filter on column " + fmt.Sprint(names[i])
			}
			return
		}
	})
	if found == "" {
		return nil
	}
	return sqlerr.Privacy(sqlerr.Pos{}, RuleTotalViews,
		fmt.Sprintf("private view %s makes DuckDB push into its Parquet scan %s that compares the column with a constant for equality (=, IN, a LIKE without wildcards), which the reader checks against the files' bloom filters in the row groups a query reaches; which row groups an analyst's query reaches can depend on one person's data, so a damaged bloom filter would make whether it fails depend on it", view, found),
		"compute the comparison inside TRY in the view (WHERE TRY(grade) = 3, TRY(s) LIKE 'abc'), which DuckDB evaluates on the rows alone; a range (grade >= 3) is pushed too and reads no bloom filter (docs/privacy-rules.md)")
}

// readsBloomFilters reports whether a serialized table filter is, or holds, one that DuckDB's
// Parquet reader checks against bloom filters: an equality with a constant, an IN list, or an
// expression comparing a bare column with a constant for equality.
func readsBloomFilters(v any) bool {
	f, ok := v.(map[string]any)
	if !ok {
		return false
	}
	switch f["filter_type"] {
	case "CONSTANT_COMPARISON":
		c, _ := f["comparison_type"].(string)
		return c == "COMPARE_EQUAL" || c == "COMPARE_NOT_DISTINCT_FROM"
	case "IN_FILTER":
		return true
	case "EXPRESSION_FILTER":
		return equalsConstant(f["expr"])
	}
	// An optional filter's child_filter, a conjunction's child_filters.
	for _, c := range append(asList(f["child_filters"]), f["child_filter"]) {
		if readsBloomFilters(c) {
			return true
		}
	}
	return false
}

// equalsConstant reports whether a serialized expression is, or combines with AND or OR, an
// equality (or IN) of a bare column and constants.
func equalsConstant(v any) bool {
	e, ok := isExpression(v)
	if !ok {
		return false
	}
	class := func(x any) string {
		c, _ := isExpression(x)
		k, _ := c["expression_class"].(string)
		return k
	}
	bare := func(x any) bool { return class(x) == "BOUND_REF" || class(x) == "BOUND_COLUMN_REF" }
	constant := func(x any) bool { return class(x) == "BOUND_CONSTANT" }
	typ, _ := e["type"].(string)
	switch {
	case class(e) == "BOUND_COMPARISON" && (typ == "COMPARE_EQUAL" || typ == "COMPARE_NOT_DISTINCT_FROM"):
		return bare(e["left"]) && constant(e["right"]) || constant(e["left"]) && bare(e["right"])
	case class(e) == "BOUND_OPERATOR" && typ == "COMPARE_IN":
		children := asList(e["children"])
		return len(children) > 0 && bare(children[0])
	case class(e) == "BOUND_CONJUNCTION":
		for _, c := range asList(e["children"]) {
			if equalsConstant(c) {
				return true
			}
		}
	}
	return false
}

// withAnalystOptimizers runs f with DuckDB's optimizers set as in analysts' sessions
// (duckfn.AnalystDisabledOptimizers), restoring the session's own after.
func withAnalystOptimizers(ctx context.Context, q backend.Querier, f func() error) error {
	rows, err := q.Query(ctx, "SELECT current_setting('disabled_optimizers')")
	if err != nil {
		return fmt.Errorf("store: read disabled_optimizers: %w", err)
	}
	if len(rows.Values) != 1 {
		return fmt.Errorf("store: read disabled_optimizers: %d rows", len(rows.Values))
	}
	had := asString(rows.Values[0][0])
	want := strings.Split(had, ",")
	for _, o := range strings.Split(duckfn.AnalystDisabledOptimizers, ",") {
		if !slices.Contains(want, o) {
			want = append(want, o)
		}
	}
	set := strings.Trim(strings.Join(want, ","), ",")
	if set == had {
		return f()
	}
	if err := q.Exec(ctx, "SET disabled_optimizers = "+ast.QuoteString(set)); err != nil {
		return err
	}
	ferr := f()
	if err := q.Exec(ctx, "SET disabled_optimizers = "+ast.QuoteString(had)); err != nil && ferr == nil {
		return err
	}
	return ferr
}

// Values in a Parquet file that DuckDB fails to read.
//
// DuckDB's Parquet reader can fail on one value as it reads it: text that is not UTF-8 (it
// checks each value), a TIMESTAMP_MILLIS too large to convert to microseconds, a GEOMETRY
// whose WKB it cannot parse, a damaged or badly compressed page. And it decodes a column the
// query filters on first and the others only for the rows the filter kept (and skips row
// groups by their statistics), so such a value failed a query only when its WHERE kept that
// value's row: whether the target's row matched, at any epsilon (DuckDB's and Arrow's writers
// write no such file; Java writers' Long.MAX_VALUE "no end" timestamps, other tools and
// damaged storage do). Every value of every column of every file of a private view is
// therefore read once, with no filter (checkParquetValues): when the view is declared and
// before a query reads a file that is new or changed, and a file DuckDB cannot read in full
// refuses the view. The refusal tells the owner, and analysts before any charge, that a
// file of the view holds such a value: the same for every query, whatever it asks.

// checkParquetValues refuses private view view when DuckDB fails to read some value of one of
// files (own: each file's columns, fileKeys: their keys; both from fileSchemas). A file is
// read once per content, one statement per file (which the message names): its key with the
// columns and partition types is remembered in the process (valuesRead) and, when q is a
// whole database rather than a transaction, in dpsql.files_read (filesread.go), so that the
// next dpsql command does not read it again.
func checkParquetValues(ctx context.Context, q backend.Querier, view string, files, fileKeys []string, own []map[string]any, hive map[string]any) error {
	// Hive partition values come from each file's path and are converted to the scan's
	// types only for the files a query reads (grp=seventy under hive_types = {'grp':
	// INTEGER}, a path per person: an outside review, 2026-11-30), so each file is read
	// with them, converted.
	hiveKeys := make([]string, 0, len(hive))
	for k := range hive {
		hiveKeys = append(hiveKeys, k)
	}
	sort.Strings(hiveKeys)
	hiveSpec := make([]string, len(hiveKeys))
	for i, k := range hiveKeys {
		hiveSpec[i] = ast.QuoteString(k) + ": " + ast.QuoteString(typeText(hive[k]))
	}
	type pending struct {
		file, key string
		cols      []string
		own       map[string]any
	}
	var todo []pending
	var keys []string
	valuesRead.Lock()
	for i, f := range files {
		cols := make([]string, 0, len(own[i]))
		for n := range own[i] {
			cols = append(cols, n)
		}
		if len(cols) == 0 {
			continue
		}
		sort.Strings(cols)
		key := fileKeys[i]
		if key != "" {
			key = valuesCheckVersion + "\x00" + key + "\x00" + strings.Join(cols, "\x00") + "\x00" + strings.Join(hiveSpec, ", ")
			if valuesRead.m[key] {
				continue
			}
			keys = append(keys, key)
		}
		todo = append(todo, pending{f, key, cols, own[i]})
	}
	valuesRead.Unlock()
	recorded := filesRead(ctx, q, keys)
	var read []string
	for _, p := range todo {
		if p.key != "" && recorded[p.key] {
			continue
		}
		if _, err := q.Query(ctx, readAllSQL(p.file, p.cols, hiveKeys, hiveSpec)); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("store: read private view %s's file %s: %w", view, filepath.Base(p.file), ctx.Err())
			}
			// DuckDB's message shows the value: never passed on.
			what := fmt.Sprintf("reads Parquet file %s, one of whose values DuckDB fails to read (a timestamp it cannot convert, a geometry it cannot parse, a damaged page, a partition value in its path that does not convert to the partition column's type)", filepath.Base(p.file))
			if invalidUTF8(err) {
				var text []string
				for _, c := range p.cols {
					if hasTypeID(p.own[c], "VARCHAR") {
						text = append(text, c)
					}
				}
				what = fmt.Sprintf("reads Parquet file %s, one of whose text columns (%s) holds a value that is not UTF-8", filepath.Base(p.file), strings.Join(text, ", "))
			}
			return parquetError(view, what,
				"DuckDB fails on such a value as it reads it, only for the rows an analyst's WHERE keeps, so whether a query fails would tell whether they include that value's row")
		}
		if p.key != "" {
			read = append(read, p.key)
		}
	}
	recordFilesRead(ctx, q, read)
	valuesRead.Lock()
	defer valuesRead.Unlock()
	if valuesRead.m == nil || len(valuesRead.m) > maxCachedSchemas {
		valuesRead.m = map[string]bool{}
	}
	for _, k := range keys {
		valuesRead.m[k] = true
	}
	return nil
}

// valuesCheckVersion begins every key checkParquetValues records: a change to what it checks
// changes it, so that files recorded by an earlier check are read again.
const valuesCheckVersion = "values-2"

// valuesRead holds the files checkParquetValues read in full (or found recorded), by fileKey
// and columns.
var valuesRead struct {
	sync.Mutex
	m map[string]bool
}

// readAllSQL is a query that reads every value of the columns cols of Parquet file f, with no
// filter, and keeps none: one row. With hive partition columns (hiveKeys; hiveSpec their
// hive_types entries), it reads them from f's path, converted to those types.
func readAllSQL(f string, cols, hiveKeys, hiveSpec []string) string {
	var aggs []string
	for _, c := range append(append([]string(nil), cols...), hiveKeys...) {
		aggs = append(aggs, fmt.Sprintf("max(hash(%s))", quoteIdent(c)))
	}
	hive := "hive_partitioning = false"
	if len(hiveKeys) > 0 {
		hive = "hive_partitioning = true, hive_types = {" + strings.Join(hiveSpec, ", ") + "}"
	}
	return "SELECT " + strings.Join(aggs, ", ") + " FROM read_parquet('" + strings.ReplaceAll(f, "'", "''") + "', binary_as_string = false, " + hive + ")"
}

// invalidUTF8 reports whether err is DuckDB's refusal of a text value that is not UTF-8.
func invalidUTF8(err error) bool {
	m := err.Error()
	return strings.Contains(m, "Invalid string encoding") || strings.Contains(m, "not valid UTF8")
}

func parquetError(view, what, why string) error {
	return sqlerr.Privacy(sqlerr.Pos{}, RuleTotalViews,
		fmt.Sprintf("private view %s %s; %s", view, what, why),
		"the data owner rewrites the files so that every file has the view's columns with the same types, text as valid UTF-8 "+
			"(COPY (SELECT CAST(...) ...) TO 'f.parquet'), or reads them with read_parquet(..., union_by_name = true), which takes each column's widest type, "+
			"when the types only widen (a wider integer or float, text); binary columns stay BLOB (docs/privacy-rules.md)")
}

// CheckPrivateViewFiles checks again, before an anonymized query is charged, the Parquet files
// of the private views among rels (those the query reads) that read some
// (checkParquetFiles): files can join a view's glob after the session loaded its catalog (a
// writer adds a file in which it widened a column), and a session of dpsql serve lasts. On
// DuckDB only; it reads the files' footers, and every value of the files it has not read
// before (checkParquetValues).
func CheckPrivateViewFiles(ctx context.Context, q backend.Querier, rels []*catalog.Relation) error {
	if dialectOf(q) != backend.DuckDB {
		return nil
	}
	var views, refs, queries []string
	for _, r := range rels {
		if r.Kind != catalog.Private || !r.ReadsParquet {
			continue
		}
		parts := strings.Split(r.Name, ".")
		for i, p := range parts {
			parts[i] = quoteIdent(p)
		}
		views = append(views, r.Name)
		refs = append(refs, strings.Join(parts, "."))
		queries = append(queries, "SELECT * FROM "+refs[len(refs)-1])
	}
	if len(views) == 0 {
		return nil
	}
	plans, err := serializePlans(ctx, q, queries)
	if err != nil {
		return fmt.Errorf("store: read the plans of private views: %w", err)
	}
	for i, p := range plans {
		root, err := decodePlan(p)
		if err != nil {
			return storedFloatsError(views[i], "a plan dpsql cannot read ("+err.Error()+")")
		}
		if err := checkParquetFiles(ctx, q, views[i], refs[i], root); err != nil {
			return err
		}
	}
	return nil
}

// ParquetSchemaDifference returns "" when every file has the first file's columns and types,
// else a description of the first file that differs and of the first, for a message
// (dpsql-beam, whose shards each read their files in the types of their own first file, needs
// one schema). It reads the files' footers through q, with the schema cache of
// checkParquetFiles.
func ParquetSchemaDifference(ctx context.Context, q backend.Querier, files []string) (string, error) {
	if len(files) < 2 {
		return "", nil
	}
	own, _, err := fileSchemas(ctx, q, files)
	if err != nil {
		return "", err
	}
	describe := func(cols map[string]any) string {
		names := make([]string, 0, len(cols))
		for n := range cols {
			names = append(names, n)
		}
		sort.Strings(names)
		for i, n := range names {
			names[i] = n + " " + typeText(cols[n])
		}
		return strings.Join(names, ", ")
	}
	for i := 1; i < len(files); i++ {
		if !reflect.DeepEqual(own[i], own[0]) {
			return fmt.Sprintf("%s: %s; %s: %s", filepath.Base(files[0]), describe(own[0]), filepath.Base(files[i]), describe(own[i])), nil
		}
	}
	return "", nil
}
