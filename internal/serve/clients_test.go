package serve

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/internal/pgtest"
)

// TestServeClients runs psycopg 3 and pgjdbc, as their users would, against the server. The
// clients come from Debian (python3-psycopg, libpostgresql-jdbc-java and a Java runtime:
// scripts/install-clients.sh, which scripts/test runs); a missing one skips its part, except
// in CI, where it fails.
func TestServeClients(t *testing.T) {
	path := setupDuckDB(t, "UNLIMITED", "alice:alice-pw:")
	ts := start(t, Config{Database: path})
	host, port, _ := net.SplitHostPort(ts.addr)
	run := func(name string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = "testdata"
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	t.Run("psycopg", func(t *testing.T) {
		if err := exec.Command("/usr/bin/python3", "-c", "import psycopg").Run(); err != nil {
			missing(t, "python3-psycopg")
		}
		got := run("/usr/bin/python3", "psycopg_client.py", host, port, "alice", "alice-pw")
		want := `columns ['shop', 'n']
rows [('shop0', 100), ('shop1', 100), ('shop2', 100)]
parameters [(100,)]
raw read refused 2P000
tables [('shops',), ('visits',)]
notices 2 True
`
		if got != want {
			t.Errorf("psycopg printed\n%s\nwant\n%s", got, want)
		}
	})
	t.Run("jdbc", func(t *testing.T) {
		const jar = "/usr/share/java/postgresql.jar"
		java, err := exec.LookPath("java")
		if _, jerr := os.Stat(jar); err != nil || jerr != nil {
			missing(t, "a Java runtime and libpostgresql-jdbc-java")
		}
		got := run(java, "-cp", jar, "JdbcClient.java", host, port, "alice", "alice-pw")
		for _, line := range []string{
			"product PostgreSQL 16",
			"table public.shops public",
			"table public.visits private (privacy unit: uid)",
			"column uid int8", "column shop text", "column amount float8",
			"run 0 shop0 100", "run 4 shop1 100", "run 5 shop2 100",
			"warning true",
			"raw read refused 2P000",
		} {
			if !strings.Contains(got, line+"\n") {
				t.Errorf("pgjdbc's output lacks %q:\n%s", line, got)
			}
		}
	})
}

func missing(t *testing.T, what string) {
	t.Helper()
	if pgtest.InCI() {
		t.Fatalf("%s is missing: scripts/install-clients.sh installs it", what)
	}
	t.Skipf("%s is missing (sudo scripts/install-clients.sh installs it)", what)
}
