package cli

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want flags
	}{
		{nil, flags{format: FormatTable}},
		{[]string{"shop.duckdb"}, flags{database: "shop.duckdb", format: FormatTable}},
		{
			[]string{"-c", "SELECT 1;", "--file", "a.sql", "--command=SELECT 2;", "-f-", "-cSELECT 3;"},
			flags{format: FormatTable, sources: []source{
				{fromCommand, "SELECT 1;"}, {fromFile, "a.sql"}, {fromCommand, "SELECT 2;"},
				{fromFile, "-"}, {fromCommand, "SELECT 3;"},
			}},
		},
		{
			// options after DATABASE, grouped switches ending in a value option
			[]string{"db", "-qc", "SHOW BUDGET;", "--owner", "--init", "a.sql", "--init=b.sql"},
			flags{database: "db", quiet: true, owner: true, format: FormatTable,
				sources: []source{{fromCommand, "SHOW BUDGET;"}}, init: []string{"a.sql", "b.sql"}},
		},
		{
			[]string{"--format", "JSON", "--confidence=0.95", "--timeout", "1m30s", "--quiet"},
			flags{format: FormatJSON, confidence: 0.95, timeout: 90 * time.Second, quiet: true},
		},
		// --timeout 0 is no limit (negative in dpsql.Config; 0 there is the default)
		{[]string{"--timeout=0", "--memory-limit", "8GB"}, flags{timeout: -1, memoryLimit: "8GB", format: FormatTable}},
		{[]string{"--", "-odd-name.duckdb"}, flags{database: "-odd-name.duckdb", format: FormatTable}},
		{[]string{"-h"}, flags{help: true, format: FormatTable}},
		{[]string{"--version"}, flags{version: true, format: FormatTable}},
	} {
		got, err := parseFlags(c.args)
		if err != nil {
			t.Errorf("parseFlags(%q): %v", c.args, err)
			continue
		}
		if !reflect.DeepEqual(*got, c.want) {
			t.Errorf("parseFlags(%q)\n got %+v\nwant %+v", c.args, *got, c.want)
		}
	}
}

func TestParseFlagsUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--nope"},
		{"-x"},
		{"-c"},
		{"--command"},
		{"--owner=yes"},
		{"--format", "xml"},
		{"--confidence", "1"},
		{"--confidence", "abc"},
		{"--timeout", "5"},
		{"--timeout=-1s"},
		{"--memory-limit", ""},
		{"a.duckdb", "b.duckdb"},
	} {
		_, err := parseFlags(args)
		var usage *UsageError
		if !errors.As(err, &usage) {
			t.Errorf("parseFlags(%q) = %v, want a *UsageError", args, err)
		}
	}
}
