package pgwire

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// psql runs Debian's psql against ts with args; it returns stdout, stderr and the exit code.
func psql(t *testing.T, ts *testServer, password string, args ...string) (string, string, int) {
	t.Helper()
	bin := "/usr/bin/psql"
	if _, err := os.Stat(bin); err != nil {
		t.Skip("psql is not installed")
	}
	host, port, _ := net.SplitHostPort(ts.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	all := append([]string{"-X", "-w", "-v", "ON_ERROR_STOP=1", "host=" + host + " port=" + port + " user=alice dbname=x"}, args...)
	cmd := exec.CommandContext(ctx, bin, all...)
	cmd.Env = []string{"PGPASSFILE=/dev/null", "PGCONNECT_TIMEOUT=10", "LANG=C.UTF-8", "HOME=" + t.TempDir()}
	if password != "" {
		cmd.Env = append(cmd.Env, "PGPASSWORD="+password)
	}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func TestPsql(t *testing.T) {
	ts := startServer(t, engineOpen(t))
	out, errs, code := psql(t, ts, alicePassword, "-c", anonQuery)
	want := " k | n \n---+---\n a | 3\n b | 3\n(2 rows)\n\n"
	if code != 0 || out != want {
		t.Errorf("anonymized query: exit %d\n%s\nwant\n%s\nstderr %s", code, out, want, errs)
	}
	// Several statements in one -c: one Query message.
	out, errs, code = psql(t, ts, alicePassword, "-A", "-c",
		"SET application_name = 'psql test'; SHOW application_name; SELECT name FROM pub ORDER BY n; SELECT current_user, current_database()")
	want = "SET\napplication_name\npsql test\n(1 row)\nname\none\ntwo\n(2 rows)\ncurrent_user|current_database\nalice|x\n(1 row)\n"
	if code != 0 || out != want {
		t.Errorf("multi-statement -c: exit %d\n%q\nwant\n%q\nstderr %s", code, out, want, errs)
	}
	// A file, with a transaction and an error that stops it.
	file := filepath.Join(t.TempDir(), "q.sql")
	os.WriteFile(file, []byte("BEGIN;\nSELECT name FROM pub WHERE n = 1;\nCOMMIT;\n"+
		"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5) ANON_COUNT(*)\n  FROM t WHERE nosuch = 1;\nSELECT 'not reached';\n"), 0o600)
	out, errs, code = psql(t, ts, alicePassword, "-A", "-t", "-f", file)
	if code != 3 || out != "BEGIN\none\nCOMMIT\n" || !strings.Contains(errs, "ERROR:") ||
		!strings.Contains(errs, "LINE 2:   FROM t WHERE nosuch = 1;") || strings.Contains(out, "not reached") {
		t.Errorf("-f: exit %d\nstdout %q\nstderr %s", code, out, errs)
	}
	// No password: refused.
	_, errs, code = psql(t, ts, "", "-c", "SELECT 1")
	if code != 2 || !strings.Contains(errs, "password") {
		t.Errorf("without a password: exit %d, %s", code, errs)
	}
	_, errs, code = psql(t, ts, "wrong", "-c", "SELECT 1")
	if code != 2 || !strings.Contains(errs, `password authentication failed for user "alice"`) {
		t.Errorf("wrong password: exit %d, %s", code, errs)
	}
}
