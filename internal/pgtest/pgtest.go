package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrNotFound says that no PostgreSQL server binaries (initdb and postgres) were found.
var ErrNotFound = errors.New("PostgreSQL binaries not found (install with scripts/install-postgres.sh)")

// BinEnv names the environment variable that points at a directory holding initdb and
// postgres; when set, it is the only place searched.
const BinEnv = "DPSQL_PG_BIN"

// debianBinGlob is where Debian's postgresql-<version> packages put the server binaries.
const debianBinGlob = "/usr/lib/postgresql/*/bin"

// FindBin returns a directory holding initdb and postgres: $DPSQL_PG_BIN if set, else the
// directory of initdb found on $PATH, else the newest /usr/lib/postgresql/<version>/bin.
// The error wraps ErrNotFound when there is none.
func FindBin() (string, error) {
	if dir := os.Getenv(BinEnv); dir != "" {
		if hasServer(dir) {
			return dir, nil
		}
		return "", fmt.Errorf("%w: $%s=%s has no initdb and postgres", ErrNotFound, BinEnv, dir)
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil && hasServer(filepath.Dir(real)) {
			return filepath.Dir(real), nil
		}
		if hasServer(filepath.Dir(p)) {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob(debianBinGlob) // the pattern is valid, so no error
	sortNewestFirst(dirs)
	for _, d := range dirs {
		if hasServer(d) {
			return d, nil
		}
	}
	return "", fmt.Errorf("%w (looked in $%s, $PATH and %s)", ErrNotFound, BinEnv, debianBinGlob)
}

func hasServer(dir string) bool {
	for _, name := range []string{"initdb", "postgres"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return false
		}
	}
	return true
}

// sortNewestFirst orders /usr/lib/postgresql/<version>/bin paths by version, newest first
// (numerically, so 10 comes after 9.6).
func sortNewestFirst(dirs []string) {
	version := func(d string) []int {
		var v []int
		for _, part := range strings.Split(filepath.Base(filepath.Dir(d)), ".") {
			n, err := strconv.Atoi(part)
			if err != nil {
				n = -1
			}
			v = append(v, n)
		}
		return v
	}
	sort.SliceStable(dirs, func(i, j int) bool {
		a, b := version(dirs[i]), version(dirs[j])
		for k := 0; k < len(a) && k < len(b); k++ {
			if a[k] != b[k] {
				return a[k] > b[k]
			}
		}
		return len(a) > len(b)
	})
}

// Options configure Start. The zero value is ready to use.
type Options struct {
	// BinDir holds initdb and postgres. Default: FindBin().
	BinDir string
	// Settings are extra server settings (name → value), passed as -c name=value; they
	// override the defaults (for example deadlock_timeout for a test that provokes one).
	Settings map[string]string
}

// Cluster is a running throwaway PostgreSQL server. Its superuser is "postgres", trusted on
// the unix socket; nothing listens on TCP.
type Cluster struct {
	name    string // unique; also the server's cluster_name, so every server process shows it
	root    string
	binDir  string
	cred    *syscall.Credential
	pid     int
	exited  chan struct{} // closed when the postmaster has exited
	waitErr error         // set before exited is closed
	dbs     atomic.Int64

	stopOnce sync.Once
	stopErr  error
}

// Port is the port number in the socket's name (.s.PGSQL.5432); no TCP port is opened.
const Port = 5432

// Start makes a new cluster and waits until it accepts connections. The caller must call
// Stop. Use New in tests, which does that with t.Cleanup.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	bin := opts.BinDir
	if bin == "" {
		if bin, err = FindBin(); err != nil {
			return nil, err
		}
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	removeStale()
	root, err := os.MkdirTemp("", "dpsql-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	// The owner file lets a later Start remove this directory if this process dies without
	// calling Stop (the server itself stops through the parent-death signal).
	if err := os.WriteFile(filepath.Join(root, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	c := &Cluster{
		name:   filepath.Base(root),
		root:   root,
		binDir: bin,
		cred:   cred,
		exited: make(chan struct{}),
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Stop())
		}
	}()
	if err := os.Mkdir(c.SocketDir(), 0o700); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	if cred != nil {
		for _, d := range []string{root, c.SocketDir()} {
			if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, fmt.Errorf("pgtest: %w", err)
			}
		}
	}
	if err := c.initdb(ctx); err != nil {
		return nil, err
	}
	if err := c.startServer(opts.Settings); err != nil {
		return nil, err
	}
	if err := c.waitReady(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// ownerFile, in a cluster's directory, holds the pid of the process that started it.
const ownerFile = "owner.pid"

// removeStale removes the directories of clusters whose starting process has died without
// calling Stop (killed, or timed out), once none of their server processes is left. A
// directory without an owner file is one being set up, or not ours: it is left alone.
func removeStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "dpsql-pg-*")) // valid pattern
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue // alive (or not ours to judge)
		}
		if pids, err := (&Cluster{name: filepath.Base(d)}).Processes(); err != nil || len(pids) > 0 {
			continue // its server is still shutting down
		}
		_ = os.RemoveAll(d) // best effort: a leftover is only disk space
	}
}

// serverCredential says whom the server runs as: nil (the current user) unless we are root,
// then the "postgres" OS user, because PostgreSQL refuses to run as root.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root needs a %q OS user to run the server as (the Debian package creates it): %w", "postgres", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("pgtest: user postgres: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (c *Cluster) initdb(ctx context.Context) error {
	logPath := filepath.Join(c.root, "initdb.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer logf.Close()
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, "initdb"),
		"-D", c.DataDir(), "-U", "postgres", "--auth=trust",
		"--encoding=UTF8", "--locale=C", "--no-sync")
	cmd.Dir = c.root
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pgtest: initdb: %w\n%s", err, tail(logPath))
	}
	return nil
}

// startServer starts postgres. The parent-death signal (SIGINT, a fast shutdown) stops the
// server if this process dies without calling Stop. The kernel sends it when the thread that
// forked the child exits, so the child is forked from a goroutine locked to its own thread,
// which stays blocked in Wait for the server's whole life.
func (c *Cluster) startServer(extra map[string]string) error {
	settings := map[string]string{
		"listen_addresses":        "",
		"unix_socket_directories": c.SocketDir(),
		"port":                    strconv.Itoa(Port),
		"cluster_name":            c.name,
		"fsync":                   "off",
		"synchronous_commit":      "off",
		"full_page_writes":        "off",
		"logging_collector":       "off",
		"max_connections":         "50",
		"timezone":                "UTC",
	}
	for k, v := range extra {
		settings[k] = v
	}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := []string{"-D", c.DataDir()}
	for _, k := range keys {
		args = append(args, "-c", k+"="+settings[k])
	}
	logf, err := os.Create(c.LogPath())
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		defer logf.Close()
		cmd := exec.Command(filepath.Join(c.binDir, "postgres"), args...)
		cmd.Dir = c.root
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Credential: c.cred,
			Pdeathsig:  syscall.SIGINT,
			Setpgid:    true, // a ^C in the terminal goes to the test, which stops the server
		}
		if err := cmd.Start(); err != nil {
			started <- err
			close(c.exited)
			return
		}
		c.pid = cmd.Process.Pid
		started <- nil
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	return nil
}

// waitReady waits until postmaster.pid says "ready" (PostgreSQL 10 and later write the
// postmaster's state on its eighth line).
func (c *Cluster) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		b, err := os.ReadFile(filepath.Join(c.DataDir(), "postmaster.pid"))
		if err == nil {
			lines := strings.Split(string(b), "\n")
			if len(lines) >= 8 && strings.TrimSpace(lines[7]) == "ready" {
				return nil
			}
		}
		select {
		case <-c.exited:
			return fmt.Errorf("pgtest: postgres exited during start-up: %v\n%s", c.waitErr, tail(c.LogPath()))
		case <-ctx.Done():
			return fmt.Errorf("pgtest: postgres did not become ready: %w\n%s", ctx.Err(), tail(c.LogPath()))
		case <-tick.C:
		}
	}
}

// Stop shuts the server down (fast shutdown: running queries are cancelled), waits until no
// process of the cluster is left, and removes its directory. It is safe to call more than
// once; later calls return the first result. An error reports anything that had to be
// killed or could not be removed.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() { c.stopErr = c.stop() })
	return c.stopErr
}

func (c *Cluster) stop() error {
	var errs []error
	if c.pid > 0 {
		errs = append(errs, c.shutdown())
	}
	// The postmaster waits for its children before it exits, so none should be left; any
	// that are is a bug worth reporting, after killing it.
	if pids, err := c.waitNoProcesses(2 * time.Second); err != nil {
		errs = append(errs, err)
	} else if len(pids) > 0 {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL) // best effort; reported below
		}
		errs = append(errs, fmt.Errorf("pgtest: stray server processes after shutdown, killed: %v", pids))
	}
	if err := os.RemoveAll(c.root); err != nil {
		errs = append(errs, fmt.Errorf("pgtest: %w", err))
	}
	return errors.Join(errs...)
}

func (c *Cluster) shutdown() error {
	for _, step := range []struct {
		sig  syscall.Signal
		wait time.Duration
	}{
		{syscall.SIGINT, 30 * time.Second}, // fast shutdown
		{syscall.SIGQUIT, 5 * time.Second}, // immediate shutdown
		{syscall.SIGKILL, 5 * time.Second},
	} {
		if err := syscall.Kill(c.pid, step.sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("pgtest: signal postgres: %w", err)
		}
		select {
		case <-c.exited:
			if step.sig != syscall.SIGINT {
				return fmt.Errorf("pgtest: postgres ignored a fast shutdown; stopped with %v", step.sig)
			}
			return nil
		case <-time.After(step.wait):
		}
	}
	return fmt.Errorf("pgtest: postgres (pid %d) did not exit", c.pid)
}

func (c *Cluster) waitNoProcesses(d time.Duration) ([]int, error) {
	deadline := time.Now().Add(d)
	for {
		pids, err := c.Processes()
		if err != nil || len(pids) == 0 || time.Now().After(deadline) {
			return pids, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Processes lists the live processes of this cluster: the postmaster (its command line
// names the data directory) and its children (their titles carry cluster_name, which is
// unique to this cluster). It reads /proc, so it works on Linux only.
func (c *Cluster) Processes() ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("pgtest: list processes: %w", err)
	}
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // gone already
		}
		if bytes.Contains(cmdline, []byte(c.name)) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// Name is the cluster's unique name; every server process shows it in its title.
func (c *Cluster) Name() string { return c.name }

// Dir is the cluster's temporary directory, removed by Stop.
func (c *Cluster) Dir() string { return c.root }

// DataDir is the data directory.
func (c *Cluster) DataDir() string { return filepath.Join(c.root, "data") }

// SocketDir is the directory of the server's unix socket.
func (c *Cluster) SocketDir() string { return filepath.Join(c.root, "sock") }

// LogPath is the server's log file.
func (c *Cluster) LogPath() string { return filepath.Join(c.root, "postgres.log") }

// BinDir is the directory of the server binaries in use.
func (c *Cluster) BinDir() string { return c.binDir }

// PID is the postmaster's process id.
func (c *Cluster) PID() int { return c.pid }

// URL is a connection URL for database db (the default "postgres" when empty), as the
// superuser "postgres" over the unix socket; pgx and libpq accept it.
func (c *Cluster) URL(db string) string {
	if db == "" {
		db = "postgres"
	}
	q := url.Values{"host": {c.SocketDir()}, "port": {strconv.Itoa(Port)}, "sslmode": {"disable"}}
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Host: "", Path: "/" + db, RawQuery: q.Encode()}
	return u.String()
}

// AsRole returns the URL u (one of URL's or NewDatabase's) for another role. The cluster
// trusts every role on its socket, so the role needs LOGIN but no password.
func AsRole(u, role string) (string, error) {
	p, err := url.Parse(u)
	if err != nil {
		return "", fmt.Errorf("pgtest: %w", err)
	}
	p.User = url.User(role)
	return p.String(), nil
}

// Psql runs script with the cluster's psql, connected to database db (the default "postgres"
// when empty) as role, the way an administrator would run a file of SQL: meta-commands such as
// \connect work, and the first error stops it (ON_ERROR_STOP). It returns psql's output; on
// failure the error holds it.
func (c *Cluster) Psql(ctx context.Context, db, role, script string) (string, error) {
	if db == "" {
		db = "postgres"
	}
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1",
		"-h", c.SocketDir(), "-p", strconv.Itoa(Port), "-U", role, "-d", db, "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	cmd.Env = append(os.Environ(), "PGOPTIONS=", "PGPASSWORD=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("pgtest: psql -U %s -d %s: %w: %s", role, db, err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// CreateDatabase creates database name with the cluster's createdb and returns its URL.
func (c *Cluster) CreateDatabase(ctx context.Context, name string) (string, error) {
	out, err := exec.CommandContext(ctx, filepath.Join(c.binDir, "createdb"),
		"-h", c.SocketDir(), "-p", strconv.Itoa(Port), "-U", "postgres", name).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("pgtest: createdb %s: %w: %s", name, err, bytes.TrimSpace(out))
	}
	return c.URL(name), nil
}

// databaseName makes a database name from a test name: lower case, [a-z0-9_], numbered so
// that it is unique in the cluster, at most 63 bytes.
func (c *Cluster) databaseName(testName string) string {
	base := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, strings.ToLower(testName))
	if len(base) > 40 {
		base = base[:40]
	}
	return fmt.Sprintf("t%d_%s", c.dbs.Add(1), strings.Trim(base, "_"))
}

// tail returns the end of a log file, for error messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
