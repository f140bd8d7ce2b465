package serve

import (
	"os"
	"strings"
	"testing"
)

func TestCommandUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--help"}, 0, "Usage: dpsql serve DATABASE"},
		{nil, 2, "give exactly one DATABASE"},
		{[]string{"a.duckdb", "b.duckdb"}, 2, "give exactly one DATABASE"},
		{[]string{"a.duckdb", "--tls-cert", "x.pem"}, 2, "--tls-cert and --tls-key go together"},
		{[]string{"--max-connections", "0", "a.duckdb"}, 2, "must be positive"},
		{[]string{"--nosuch", "a.duckdb"}, 2, "flag provided but not defined"},
		{[]string{"postgres://nobody@127.0.0.1:1/x?connect_timeout=2"}, 1, "dpsql serve: "},
	} {
		var out, errs strings.Builder
		code := Command(c.args, &out, &errs, make(chan os.Signal))
		if code != c.code || !strings.Contains(errs.String(), c.says) {
			t.Errorf("dpsql serve %q: exit %d, stderr %q; want exit %d and %q", c.args, code, errs.String(), c.code, c.says)
		}
	}
}
