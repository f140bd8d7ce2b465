package store

import "testing"

func TestSniffedRead(t *testing.T) {
	for _, c := range []struct {
		def   string
		found bool
	}{
		{`CREATE VIEW a AS SELECT * FROM read_csv('/d/c.csv');`, true},
		{`CREATE VIEW a AS SELECT * FROM READ_CSV_AUTO('/d/c.csv', header = true);`, true},
		{`CREATE VIEW b AS SELECT * FROM "/d/c.csv";`, true},
		{`CREATE VIEW b AS SELECT * FROM "/d/c.jsonl.gz" AS x;`, true},
		{`CREATE VIEW s AS SELECT * FROM sniff_csv('/d/c.csv', auto_detect = false);`, true},
		{`CREATE VIEW j AS SELECT * FROM read_ndjson('/d/*.json', (AUTO_DETECT = CAST('t' AS BOOLEAN)));`, true},
		// Fixed formats, as DuckDB prints them and as written.
		{`CREATE VIEW c AS SELECT * FROM read_csv('/d/c.csv', (AUTO_DETECT = CAST('f' AS BOOLEAN)), ("header" = CAST('t' AS BOOLEAN)), ("columns" = main.struct_pack(uid := 'BIGINT')));`, false},
		{`CREATE VIEW c AS SELECT * FROM read_json('/d/c.json', auto_detect = false, columns = {'uid': 'BIGINT'});`, false},
		// Parquet carries its schema; names in strings and comments are not calls.
		{`CREATE VIEW p AS SELECT * FROM read_parquet('/d/*.parquet');`, false},
		{`CREATE VIEW q AS SELECT 'read_csv(''x.csv'')' AS s, "read_csv" FROM t -- read_csv('a.csv')` + "\n;", false},
		// auto_detect = false in another call does not fix this one.
		{`CREATE VIEW m AS SELECT * FROM read_csv('/d/a.csv') JOIN read_csv('/d/b.csv', auto_detect = false) USING (uid);`, true},
	} {
		found, _ := sniffedRead(c.def)
		if (found != "") != c.found {
			t.Errorf("%s: found %q, want found=%v", c.def, found, c.found)
		}
	}
	_, names := sniffedRead(`CREATE VIEW e AS SELECT uid FROM main."Raw" JOIN other AS o USING (uid)`)
	want := map[string]bool{"main.raw": false, "raw": false, "other": false}
	for _, n := range names {
		if _, ok := want[n]; ok {
			want[n] = true
		}
	}
	for n, ok := range want {
		if !ok {
			t.Errorf("names %v lack %q", names, n)
		}
	}
}
