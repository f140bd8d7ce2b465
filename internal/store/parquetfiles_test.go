package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/duckfn"
	"github.com/dpsql/dpsql/sqlerr"
)

// TestCheckParquetFiles: the files of a view's read_parquet scan must give every column in a
// type the scan's type takes without a possible failure, and have the columns other files
// have unless the view reads by name; columns of no file (hive partitions) are not the files'.
func TestCheckParquetFiles(t *testing.T) {
	ctx := context.Background()
	db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir := t.TempDir()
	write := func(name, sel string, opts ...string) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := db.Exec(ctx, fmt.Sprintf("COPY (%s) TO '%s' (%s)", sel, path, strings.Join(append([]string{"FORMAT parquet"}, opts...), ", "))); err != nil {
			t.Fatal(err)
		}
	}
	write("same/a.parquet", "SELECT 1 AS uid, CAST(5 AS INTEGER) AS x")
	write("same/b.parquet", "SELECT 2 AS uid, CAST(6 AS INTEGER) AS x")
	write("narrows/a.parquet", "SELECT 1 AS uid, CAST(5 AS INTEGER) AS x")
	write("narrows/b.parquet", "SELECT 2 AS uid, CAST(6 AS BIGINT) AS x")
	write("widens/a.parquet", "SELECT 1 AS uid, CAST(5 AS BIGINT) AS x, 'a' AS s")
	write("widens/b.parquet", "SELECT 2 AS uid, CAST(6 AS SMALLINT) AS x, 7.5 AS s")
	write("dates/a.parquet", "SELECT 1 AS uid, TIMESTAMP '2020-01-01' AS x")
	write("dates/b.parquet", "SELECT 2 AS uid, DATE '2020-01-01' AS x")
	write("missing/a.parquet", "SELECT 1 AS uid, 5 AS x")
	write("missing/b.parquet", "SELECT 2 AS uid")
	write("decimals/a.parquet", "SELECT 1 AS uid, CAST(5 AS DECIMAL(18,3)) AS x, CAST(1 AS DECIMAL(12,2)) AS y")
	write("decimals/b.parquet", "SELECT 2 AS uid, CAST(6 AS DECIMAL(9,2)) AS x, CAST(2 AS INTEGER) AS y")
	write("decimals2/a.parquet", "SELECT 1 AS uid, CAST(5 AS DECIMAL(9,2)) AS x")
	write("decimals2/b.parquet", "SELECT 2 AS uid, CAST(6 AS DECIMAL(9,3)) AS x")
	write("nested/a.parquet", "SELECT 1 AS uid, {'a': CAST(1 AS INTEGER), 'b': [CAST(1 AS SMALLINT)]} AS x")
	write("nested/b.parquet", "SELECT 2 AS uid, {'a': CAST(1 AS BIGINT), 'b': [CAST(1 AS SMALLINT)]} AS x")
	write("blob/a.parquet", "SELECT 1 AS uid, CAST('x' AS BLOB) AS x")
	// Text that is not UTF-8 (spoilText).
	badText := func(name, sel string) {
		t.Helper()
		write(name, "SELECT * FROM ("+sel+") ORDER BY uid", "COMPRESSION uncompressed")
		spoilText(t, filepath.Join(dir, name))
	}
	rows := func(col string) string {
		return "SELECT i AS uid, " + col + " FROM range(1, 500) t(i) UNION ALL SELECT 999, " + strings.ReplaceAll(col, "'n' || i", "'zzMARK'") + " FROM range(999, 1000) t(i)"
	}
	badText("text/plain.parquet", rows("'n' || i AS nm"))
	badText("text/dict.parquet", rows("CASE WHEN i % 2 = 0 THEN 'a' ELSE 'n' || i END AS nm"))
	badText("text/list.parquet", rows("['n' || i] AS nm"))
	badText("text/struct.parquet", rows("{'a': 'n' || i, 'b': i} AS nm"))
	badText("text/map.parquet", rows("MAP {'n' || i: 1} AS nm"))
	write("text/good.parquet", "SELECT 1 AS uid, 'n' AS nm, ['x'] AS l")
	// Values of other types that DuckDB fails to read (an outside review, 2026-11-30): a
	// TIMESTAMP_MILLIS too large for microseconds, a damaged zstd page of integers, a
	// GEOMETRY whose WKB names no geometry type.
	patch := func(name, sel, opts string, from, to []byte) {
		t.Helper()
		write(name, sel, opts)
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil || !bytes.Contains(b, from) {
			t.Fatalf("%s: no %x (%v)", name, from, err)
		}
		if err := os.WriteFile(path, bytes.ReplaceAll(b, from, to), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	patch("other/ts.parquet", "SELECT i AS uid, CAST(CASE WHEN i = 7 THEN epoch_ms(388062927450) ELSE epoch_ms(i * 1000) END AS TIMESTAMP_MS) AS t FROM range(1, 201) t(i)",
		"COMPRESSION uncompressed", binary.LittleEndian.AppendUint64(nil, 0x5A5A5A5A5A), binary.LittleEndian.AppendUint64(nil, 0x7F7F7F7F7F7F7F7F))
	patch("other/zstd.parquet", "SELECT i AS uid, i * 37 % 1000 AS x FROM range(1, 101) t(i)", "COMPRESSION zstd", []byte{0x28, 0xB5, 0x2F, 0xFD}, []byte{0, 0, 0, 0})
	wkb := binary.LittleEndian.AppendUint64([]byte{1, 1, 0, 0, 0}, math.Float64bits(4242.4242))
	patch("other/wkb.parquet", "SELECT i AS uid, CAST(CASE WHEN i = 7 THEN 'POINT(4242.4242 1)' ELSE 'POINT(' || i || ' 1)' END AS GEOMETRY) AS g FROM range(1, 201) t(i)",
		"COMPRESSION uncompressed", wkb, append([]byte{1, 0x63, 0, 0, 0}, wkb[5:]...))
	write("hive/part=1/a.parquet", "SELECT 1 AS uid, 5 AS x")
	write("hivebad/part=1/a.parquet", "SELECT 1 AS uid, 5 AS x")
	write("hivebad/part=seven/a.parquet", "SELECT 7 AS uid, 6 AS x")
	// DuckDB writes bloom filters for dictionary-encoded columns of most types: each must
	// be probed (checkBloomFilters), and a valid file accepted.
	write("bloom/all.parquet", `SELECT i AS uid, i % 3 AS a, CAST(i % 3 AS TINYINT) AS b, CAST(i % 3 AS UTINYINT) AS c,
		CAST(i % 3 AS HUGEINT) AS d, CAST(i % 3 AS FLOAT) AS f, CAST(i % 3 AS DECIMAL(9,2)) AS g, INTERVAL (i % 3) DAY AS iv,
		DATE '2020-01-01' + CAST(i % 3 AS INTEGER) AS dt, TIME '01:00:00' + INTERVAL (i % 3) MINUTE AS tm,
		TIMESTAMP '2020-01-01' + INTERVAL (i % 3) MINUTE AS ts, CAST(TIMESTAMP '2020-01-01' + INTERVAL (i % 3) MINUTE AS TIMESTAMPTZ) AS tz,
		CAST(TIMESTAMP '2020-01-01' + INTERVAL (i % 3) MINUTE AS TIMESTAMP_NS) AS tns, CAST('00000000-0000-0000-0000-00000000000' || (i % 3) AS UUID) AS u,
		CAST('x' || (i % 3) AS BLOB) AS bl, 'c' || (i % 3) AS s FROM range(1000) r(i)`)
	write("globs/p-0.parquet", "SELECT 1 AS uid")
	write("globs/p-[0].parquet", "SELECT 2 AS uid")
	write("hive/part=2/a.parquet", "SELECT 2 AS uid, 6 AS x")
	for _, c := range []struct {
		read, refused string // refused: the message names this, or "" for none
	}{
		{"read_parquet('%s/same/*.parquet')", ""},
		{"read_parquet('%s/narrows/*.parquet')", "b.parquet stores column x as BIGINT, which DuckDB converts to INTEGER"},
		{"read_parquet('%s/narrows/*.parquet', union_by_name = true)", ""},
		{"read_parquet('%s/widens/*.parquet')", ""},
		{"read_parquet('%s/dates/*.parquet')", "b.parquet stores column x as DATE"},
		{"read_parquet('%s/missing/*.parquet')", "b.parquet has no column x"},
		{"read_parquet('%s/missing/*.parquet', union_by_name = true)", ""},
		{"read_parquet('%s/hive/*/*.parquet', hive_partitioning = true)", ""},
		{"read_parquet('%s/hive/*/*.parquet', hive_partitioning = true, hive_types = {'part': 'INTEGER'})", ""},
		{"read_parquet('%s/decimals/*.parquet')", ""},
		{"read_parquet('%s/blob/a.parquet')", ""},
		{"read_parquet('%s/nested/*.parquet')", "stores column x as STRUCT(a BIGINT, b SMALLINT[]), which DuckDB converts to STRUCT(a INTEGER, b SMALLINT[])"},
		{"read_parquet('%s/nested/*.parquet', union_by_name = true)", ""},
		{"read_parquet('%s/blob/a.parquet', binary_as_string = true)", "reads Parquet binary columns as text"},
		{"read_parquet('%s/decimals2/*.parquet')", "b.parquet stores column x as DECIMAL(9,3)"},
		{"read_parquet(['%[1]s/narrows/b.parquet', '%[1]s/narrows/a.parquet'])", ""},
		{"read_parquet('%s/text/plain.parquet')", "plain.parquet, one of whose text columns (nm) holds a value that is not UTF-8"},
		{"read_parquet('%s/text/dict.parquet')", "dict.parquet, one of whose text columns (nm) holds a value that is not UTF-8"},
		{"read_parquet('%s/text/list.parquet')", "list.parquet, one of whose text columns (nm) holds"},
		{"read_parquet('%s/text/struct.parquet')", "struct.parquet, one of whose text columns (nm) holds"},
		{"read_parquet('%s/text/map.parquet')", "map.parquet, one of whose text columns (nm) holds"},
		{"read_parquet(['%[1]s/text/good.parquet', '%[1]s/text/plain.parquet'], union_by_name = true)", "plain.parquet, one of whose text columns (nm)"},
		{"read_parquet('%s/text/good.parquet')", ""},
		{"read_parquet('%s/hivebad/*/*.parquet', hive_partitioning = true)", ""},
		{"read_parquet('%s/bloom/all.parquet')", ""},
		{"read_parquet('%s/globs/p-*.parquet')", "p-[0].parquet, whose path holds a pattern character"},
		{"read_parquet('%s/hivebad/*/*.parquet', hive_partitioning = true, hive_types = {'part': 'INTEGER'})", "a.parquet, one of whose values DuckDB fails to read"},
		{"read_parquet('%s/blob/a.parquet', schema = MAP {1: {name: 'uid', type: 'BIGINT', default_value: NULL}})", "read_parquet's schema option"},
		{"read_parquet('%s/other/ts.parquet')", "ts.parquet, one of whose values DuckDB fails to read"},
		{"read_parquet('%s/other/zstd.parquet')", "zstd.parquet, one of whose values DuckDB fails to read"},
		{"read_parquet('%s/other/wkb.parquet')", "wkb.parquet, one of whose values DuckDB fails to read"},
	} {
		err := checkRead(t, db, "SELECT * FROM "+fmt.Sprintf(c.read, dir))
		var se *sqlerr.Error
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%s: %v", c.read, err)
		case c.refused != "" && (!errors.As(err, &se) || se.Rule != RuleTotalViews || !strings.Contains(se.Msg, c.refused)):
			t.Errorf("%s: want the refusal naming %q, got %v", c.read, c.refused, err)
		case err != nil && strings.Contains(err.Error(), "MARK"):
			t.Errorf("%s: the refusal shows the value: %v", c.read, err)
		}
	}
}

// TestParquetFileRewrittenInPlace: a file read in full once is read again when it changes,
// even rewritten with the same size and its modification time set back (an outside review:
// a session that had checked the file then failed on the new bytes only for the rows a WHERE
// kept); on Linux its change time, which no one sets, tells.
func TestParquetFileRewrittenInPlace(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the change time is read on Linux only")
	}
	ctx := context.Background()
	db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	path := filepath.Join(t.TempDir(), "p.parquet")
	if err := db.Exec(ctx, fmt.Sprintf("COPY (SELECT i AS uid, 'n' || i AS nm FROM range(10) t(i) UNION ALL SELECT 99, 'zzMARK') TO '%s' (FORMAT parquet, COMPRESSION uncompressed)", path)); err != nil {
		t.Fatal(err)
	}
	check := func() error { return checkRead(t, db, "SELECT * FROM read_parquet('"+path+"')") }
	if err := check(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	spoilText(t, path)
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := check(); err == nil || !strings.Contains(err.Error(), "not UTF-8") {
		t.Errorf("the file rewritten in place: %v", err)
	}
}

// TestFilesReadRecorded: a file read in full is recorded in dpsql.files_read, and a process
// that finds its content recorded there does not read it again (each dpsql command is a
// process of its own). The record is trusted: recorded by hand, a file that fails passes.
func TestFilesReadRecorded(t *testing.T) {
	ctx := context.Background()
	db := initialisedDuckDB(t)
	dir := t.TempDir()
	check := func(file string) error { return checkRead(t, db, "SELECT * FROM read_parquet('"+file+"')") }
	good, bad := filepath.Join(dir, "good.parquet"), filepath.Join(dir, "bad.parquet")
	for _, f := range []string{good, bad} {
		if err := db.Exec(ctx, fmt.Sprintf("COPY (SELECT 1 AS uid, 'zzMARK' AS nm) TO '%s' (FORMAT parquet, COMPRESSION uncompressed)", f)); err != nil {
			t.Fatal(err)
		}
	}
	spoilText(t, bad)
	if err := check(good); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(ctx, "SELECT count(*) FROM dpsql.files_read")
	if err != nil || fmt.Sprint(rows.Values) != "[[1]]" {
		t.Fatalf("dpsql.files_read after one file: %v %v", rows, err)
	}
	if err := check(bad); err == nil {
		t.Fatal("a file that is not UTF-8 passed")
	}
	valuesRead.Lock()
	valuesRead.m = nil
	valuesRead.Unlock()
	if err := db.Exec(ctx, "INSERT INTO dpsql.files_read VALUES ($1)", valuesCheckVersion+"\x00"+fileKey(bad)+"\x00nm\x00uid\x00"); err != nil {
		t.Fatal(err)
	}
	if err := check(bad); err != nil {
		t.Errorf("a file recorded as read was read again: %v", err)
	}
}

// checkRead runs checkParquetFiles on the bound plan of query.
func checkRead(t *testing.T, db backend.Backend, query string) error {
	t.Helper()
	ctx := context.Background()
	plans, err := serializePlans(ctx, db, []string{query})
	if err != nil {
		t.Fatal(err)
	}
	root, err := decodePlan(plans[0])
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return checkParquetFiles(ctx, db, "v", "("+query+")", root)
}

// spoilText overwrites the marker zzMARK in file path (written uncompressed) with bytes that
// are not UTF-8 (DuckDB writes none); the marker sorts last, so the footer's statistics stay
// right.
func spoilText(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(b, []byte("zzMARK")) {
		t.Fatalf("%s: no marker (%v)", path, err)
	}
	if err := os.WriteFile(path, bytes.ReplaceAll(b, []byte("zzMARK"), []byte("\xFF\xFEMARK")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestViewPushedFilters: a private view may not make DuckDB push into its Parquet scan a
// filter that the reader checks against bloom filters (equality with a constant, and what
// DuckDB rewrites into one), whatever the files hold; computed inside TRY, or as a range, the
// same filter is accepted. The premise is checked too: over a file whose bloom filter is
// damaged, the accepted filters read without a failure and an equality fails, with the
// analysts' optimizers, and the owner's own settings come back after the check.
func TestViewPushedFilters(t *testing.T) {
	ctx := context.Background()
	db := initialisedDuckDB(t)
	f := filepath.Join(t.TempDir(), "p.parquet")
	if err := db.Exec(ctx, fmt.Sprintf(`COPY (SELECT CAST(i AS BIGINT) AS uid, CAST(i %% 5 AS BIGINT) AS grade, 'x' || (i %% 3) AS s,
			DATE '2020-01-01' + CAST(i AS INTEGER) AS d, {'a': CAST(i %% 4 AS BIGINT)} AS st FROM range(100) r(i)) TO '%s' (FORMAT parquet)`, f)); err != nil {
		t.Fatal(err)
	}
	if err := db.Exec(ctx, "SET disabled_optimizers = 'late_materialization'"); err != nil {
		t.Fatal(err)
	}
	scan := "SELECT * FROM read_parquet('" + f + "') "
	refused := []string{"WHERE grade = 3", "WHERE 3 = grade", "WHERE grade IN (3)", "WHERE grade IN (1, 3, 7)", "WHERE grade = 3 OR grade = 4",
		"WHERE s LIKE 'x1'", "WHERE regexp_matches(s, '^x1$')", "WHERE NOT (grade <> 3)", "WHERE grade IS NOT DISTINCT FROM 3",
		"WHERE grade = 3 AND d >= DATE '2020-01-10'", "WHERE st.a = 2", "WHERE grade = c", "WHERE uid > 10 AND grade = 4"}
	accepted := []string{"WHERE TRY(grade) = 3", "WHERE d >= DATE '2020-01-10'", "WHERE grade BETWEEN 3 AND 3", "WHERE grade IN (3, 4)",
		"WHERE uid IS NOT NULL", "WHERE starts_with(s, 'x1')", "WHERE TRY(s) LIKE 'x1'", ""}
	for i, w := range append(refused, accepted...) {
		query := scan + w
		if strings.Contains(w, " c") {
			query = "SELECT * FROM (SELECT *, CAST(3 AS BIGINT) AS c FROM read_parquet('" + f + "')) " + w
		}
		err := checkRead(t, db, query)
		if i < len(refused) && (err == nil || !strings.Contains(err.Error(), "bloom filters")) {
			t.Errorf("%s: %v", w, err)
		}
		if i >= len(refused) && err != nil {
			t.Errorf("%s: %v", w, err)
		}
	}
	rows, err := db.Query(ctx, "SELECT current_setting('disabled_optimizers')")
	if err != nil || fmt.Sprint(rows.Values) != "[[late_materialization]]" {
		t.Errorf("the owner's optimizers after the check: %v %v", rows, err)
	}
	// The premise, on this version of DuckDB.
	rows, err = db.Query(ctx, fmt.Sprintf("SELECT bloom_filter_offset, bloom_filter_length FROM parquet_metadata('%s') WHERE path_in_schema = 'grade'", f))
	if err != nil || len(rows.Values) != 1 || rows.Values[0][0] == nil {
		t.Fatalf("no bloom filter to damage: %v %v", rows, err)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	offset, length := rows.Values[0][0].(int64), rows.Values[0][1].(int64)
	copy(b[offset:offset+length], bytes.Repeat([]byte{0xFF}, int(length)))
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := db.Exec(ctx, "SET disabled_optimizers = "+ast.QuoteString(duckfn.AnalystDisabledOptimizers)); err != nil {
		t.Fatal(err)
	}
	for _, w := range append(accepted, "WHERE grade = 3") {
		_, err := db.Query(ctx, "SELECT count(*) FROM ("+scan+w+")")
		if (err != nil) != (w == "WHERE grade = 3") {
			t.Errorf("over a damaged bloom filter, %s: %v", w, err)
		}
	}
}

// TestTypeWithoutNames: a DuckDB UNION written to Parquet reads back as a struct whose fields
// have no names, a type DuckDB cannot read back when dpsql names it: declaring a relation with
// one is refused, saying how to read its fields, where every analyst query on it would fail on
// a syntax error.
func TestTypeWithoutNames(t *testing.T) {
	ctx := context.Background()
	db := initialisedDuckDB(t)
	f := filepath.Join(t.TempDir(), "u.parquet")
	if err := db.Exec(ctx, fmt.Sprintf(`COPY (SELECT i AS uid, union_value(a := i) AS u FROM range(10) r(i)) TO '%s' (FORMAT parquet);
		CREATE VIEW v AS SELECT * FROM read_parquet('%[1]s');
		CREATE VIEW w AS SELECT uid, struct_extract_at(u, 2) AS a FROM read_parquet('%[1]s')`, f)); err != nil {
		t.Fatal(err)
	}
	err := SetPrivate(ctx, db, "v", "uid")
	if se := (*sqlerr.Error)(nil); !errors.As(err, &se) || se.Code != sqlerr.FeatureNotSupported || !strings.Contains(se.Hint, "struct_extract_at(u, 2)") {
		t.Errorf("declaring a view with a struct of unnamed fields: %v", err)
	}
	if err := SetPrivate(ctx, db, "w", "uid"); err != nil {
		t.Errorf("its fields as columns: %v", err)
	}
}

// initialisedDuckDB is an owner's in-memory DuckDB database with dpsql's tables, closed when
// the test ends.
func initialisedDuckDB(t *testing.T) backend.Backend {
	t.Helper()
	ctx := context.Background()
	db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := Init(ctx, db); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestViewMixesPeople: a private view that keeps a number of rows (LIMIT, OFFSET, ORDER BY
// ... LIMIT, a reservoir or system sample) decides whether one person's rows are in it by
// other people's rows, and is refused, in a view of a view too; a Bernoulli sample, which
// draws each row on its own, is not.
func TestViewMixesPeople(t *testing.T) {
	ctx := context.Background()
	db := initialisedDuckDB(t)
	if err := db.Exec(ctx, "CREATE TABLE t AS SELECT i AS uid, i % 7 AS x FROM range(100) r(i)"); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		body  string
		mixes bool
	}{
		{"SELECT * FROM t LIMIT 50", true},
		{"SELECT * FROM t OFFSET 10", true},
		{"SELECT * FROM t ORDER BY x DESC LIMIT 10", true},
		{"SELECT * FROM t USING SAMPLE 10 ROWS", true},
		{"SELECT * FROM t USING SAMPLE 50 PERCENT (system)", true},
		{"SELECT * FROM t USING SAMPLE 50%", true},
		{"SELECT * FROM (SELECT * FROM t LIMIT 50) WHERE x > 1", true},
		{"SELECT * FROM t USING SAMPLE 50 PERCENT (bernoulli)", false},
		{"SELECT * FROM t WHERE x > 1 ORDER BY x", false},
	} {
		name := fmt.Sprintf("v%d", i)
		if err := db.Exec(ctx, "CREATE VIEW "+name+" AS "+c.body+"; CREATE VIEW w"+name+" AS SELECT * FROM "+name); err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{name, "w" + name} {
			err := SetPrivate(ctx, db, n, "uid")
			se := (*sqlerr.Error)(nil)
			if refused := errors.As(err, &se) && se.Rule == RulePerPerson; refused != c.mixes || !c.mixes && err != nil {
				t.Errorf("%s (%s): %v", c.body, n, err)
			}
		}
	}
}
