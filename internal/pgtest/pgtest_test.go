package pgtest

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestSortNewestFirst(t *testing.T) {
	dirs := []string{
		"/usr/lib/postgresql/9.6/bin",
		"/usr/lib/postgresql/15/bin",
		"/usr/lib/postgresql/10/bin",
		"/usr/lib/postgresql/16/bin",
		"/usr/lib/postgresql/devel/bin",
	}
	sortNewestFirst(dirs)
	want := []string{
		"/usr/lib/postgresql/16/bin",
		"/usr/lib/postgresql/15/bin",
		"/usr/lib/postgresql/10/bin",
		"/usr/lib/postgresql/9.6/bin",
		"/usr/lib/postgresql/devel/bin",
	}
	if !slices.Equal(dirs, want) {
		t.Errorf("got %v, want %v", dirs, want)
	}
}

func TestFindBinEnv(t *testing.T) {
	empty := t.TempDir()
	t.Setenv(BinEnv, empty)
	if _, err := FindBin(); err == nil || !strings.Contains(err.Error(), "install with scripts/install-postgres.sh") {
		t.Errorf("FindBin with an empty $%s: err = %v, want ErrNotFound", BinEnv, err)
	}

	fake := t.TempDir()
	for _, name := range []string{"initdb", "postgres"} {
		if err := os.WriteFile(filepath.Join(fake, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(BinEnv, fake)
	if got, err := FindBin(); err != nil || got != fake {
		t.Errorf("FindBin = %q, %v; want %q", got, err, fake)
	}
}

func TestInCI(t *testing.T) {
	for v, want := range map[string]bool{"": false, "false": false, "0": false, "true": true, "1": true, "yes": true} {
		t.Setenv("CI", v)
		if got := InCI(); got != want {
			t.Errorf("CI=%q: InCI() = %v, want %v", v, got, want)
		}
	}
}

// TestMissingBinaries runs a test that needs a server in a child process with no binaries
// to be found: it must skip with the install hint, or fail under CI.
func TestMissingBinaries(t *testing.T) {
	if os.Getenv("PGTEST_HELPER") != "" {
		t.Skip("helper process")
	}
	for _, tc := range []struct {
		ci       string
		wantFail bool
		want     string
	}{
		{"", false, "--- SKIP"},
		{"true", true, "CI must not skip"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperNeedsServer$", "-test.v")
		cmd.Env = append(os.Environ(), "PGTEST_HELPER=needs-server", BinEnv+"="+t.TempDir(), "CI="+tc.ci)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != tc.wantFail {
			t.Errorf("CI=%q: failed = %v, want %v\n%s", tc.ci, failed, tc.wantFail, out)
		}
		for _, w := range []string{tc.want, "PostgreSQL binaries not found (install with scripts/install-postgres.sh)"} {
			if !strings.Contains(string(out), w) {
				t.Errorf("CI=%q: output lacks %q:\n%s", tc.ci, w, out)
			}
		}
	}
}

func TestHelperNeedsServer(t *testing.T) {
	if os.Getenv("PGTEST_HELPER") != "needs-server" {
		t.Skip("helper process for TestMissingBinaries")
	}
	New(t, Options{})
	t.Error("New returned without a server")
}

func psql(t *testing.T, c *Cluster, sql string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(c.BinDir(), "psql"), "-X", "-At", "-d", c.URL(""), "-c", sql).CombinedOutput()
	if err != nil {
		t.Fatalf("psql %q: %v\n%s", sql, err, out)
	}
	return strings.TrimSpace(string(out))
}

// pgrep lists processes whose command line contains pattern, with the system's pgrep, as
// an independent check of Cluster.Processes.
func pgrep(t *testing.T, pattern string) []string {
	t.Helper()
	if _, err := exec.LookPath("pgrep"); err != nil {
		t.Log("no pgrep; checking with /proc only")
		return nil
	}
	out, err := exec.Command("pgrep", "-f", pattern).Output()
	if err != nil { // exit status 1: nothing matched
		return nil
	}
	return strings.Fields(string(out))
}

func TestClusterLifecycle(t *testing.T) {
	c := New(t, Options{Settings: map[string]string{"work_mem": "8MB"}})
	if got := psql(t, c, "SHOW work_mem"); got != "8MB" {
		t.Errorf("work_mem = %q, want the setting passed in Options", got)
	}
	if got := psql(t, c, "SHOW listen_addresses"); got != "" {
		t.Errorf("listen_addresses = %q, want none (socket only)", got)
	}
	if got := psql(t, c, "SHOW fsync"); got != "off" {
		t.Errorf("fsync = %q", got)
	}
	if os.Geteuid() == 0 {
		if got := psql(t, c, "SELECT pg_catalog.current_setting('data_directory') IS NOT NULL, session_user"); got != "t|postgres" {
			t.Errorf("got %q", got)
		}
	}
	u := c.NewDatabase(t)
	if !strings.Contains(u, "/t1_testclusterlifecycle?") {
		t.Errorf("NewDatabase URL = %q", u)
	}

	pids, err := c.Processes()
	if err != nil {
		t.Fatal(err)
	}
	if len(pids) < 3 || !slices.Contains(pids, c.PID()) { // postmaster, checkpointer, ...
		t.Errorf("Processes() = %v, want the postmaster %d and its children", pids, c.PID())
	}
	// Short-lived backends (psql's, autovacuum workers) come and go, so the two lists need
	// not be equal; both must see the postmaster.
	if got := pgrep(t, c.Name()); got != nil && !slices.Contains(got, strconv.Itoa(c.PID())) {
		t.Errorf("pgrep -f %s = %v, lacks the postmaster %d", c.Name(), got, c.PID())
	}

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if pids, err := c.Processes(); err != nil || len(pids) != 0 {
		t.Errorf("after Stop: Processes() = %v, %v", pids, err)
	}
	if got := pgrep(t, c.Name()); len(got) != 0 {
		t.Errorf("after Stop: pgrep -f %s = %v", c.Name(), got)
	}
	if _, err := os.Stat(c.Dir()); !os.IsNotExist(err) {
		t.Errorf("after Stop: %s still exists (%v)", c.Dir(), err)
	}
}

// TestServerDiesWithTestProcess kills (SIGKILL, no cleanup) a child test process that has
// started a cluster, and checks that the server goes away by itself.
func TestServerDiesWithTestProcess(t *testing.T) {
	if os.Getenv("PGTEST_HELPER") != "" {
		t.Skip("helper process")
	}
	if _, err := FindBin(); err != nil {
		skipOrFail(t, err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldServer$", "-test.v")
	cmd.Env = append(os.Environ(), "PGTEST_HELPER=hold-server")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var name, dir string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "CLUSTER" {
			name, dir = f[1], f[2]
			break
		}
	}
	if name == "" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("helper did not report a cluster")
	}
	t.Cleanup(func() { os.RemoveAll(dir) }) // the killed helper cannot remove it
	c := &Cluster{name: name}
	if pids, _ := c.Processes(); len(pids) == 0 {
		t.Fatal("no server processes while the helper runs")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	pids, err := c.waitNoProcesses(30 * time.Second)
	if err != nil || len(pids) > 0 {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Fatalf("server processes left 30s after the test process died: %v %v", pids, err)
	}
	// The next Start removes the dead process's directory.
	removeStale()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("removeStale left %s (%v)", dir, err)
	}
}

func TestHelperHoldServer(t *testing.T) {
	if os.Getenv("PGTEST_HELPER") != "hold-server" {
		t.Skip("helper process for TestServerDiesWithTestProcess")
	}
	c, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("CLUSTER " + c.Name() + " " + c.Dir() + "\n")
	time.Sleep(time.Minute) // killed before this ends
	t.Error("not killed; pid " + strconv.Itoa(os.Getpid()))
	_ = c.Stop()
}
