package leaks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/backend/postgres"
	"github.com/dpsql/dpsql/internal/cli"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/internal/pgtest"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/internal/testmode"
	"github.com/dpsql/dpsql/ledger"
	"github.com/dpsql/dpsql/sqlerr"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		// A child process of the resource-limit test (see child_test.go): run one attack
		// and report, without starting anything else.
		os.Exit(childMain())
	}
	code := m.Run()
	if err := teardown(); err != nil {
		fmt.Fprintf(os.Stderr, "leaks: %v\n", err)
		code = 1
	}
	os.Exit(code)
}

// markers are the target's secrets: no released value, key or message may contain them, and
// no attack query may spell them (the rendered error repeats the query).
var markers = []string{"secret", "999999", "victim"}

// setupCommon is the owner's set-up of the findings, the same on both databases of a pair and
// valid on both backends: 999 ordinary users (uid 1 to 1000 but 7) in raw under the private
// view people, public tables, private tables for collations and public domains, a budget.
const setupCommon = `
CREATE TABLE raw (uid BIGINT, name VARCHAR, city VARCHAR, salary DOUBLE PRECISION, day DATE, age INTEGER, note VARCHAR);
INSERT INTO raw SELECT i, 'user' || CAST(i AS VARCHAR),
  CASE i % 5 WHEN 0 THEN 'Paris' WHEN 1 THEN 'Lyon' WHEN 2 THEN 'Berlin' WHEN 3 THEN 'Madrid' ELSE 'Rome' END,
  20000 + (i * 37) % 150000, DATE '2024-01-01' + CAST(i % 365 AS INTEGER), CAST(18 + i % 60 AS INTEGER),
  'n' || CAST(i AS VARCHAR)
  FROM generate_series(1, 1000) AS g(i) WHERE i <> 7;
CREATE VIEW people OPTIONS(anonymization_userid_column='uid') AS SELECT * FROM raw;
CREATE TABLE cities OPTIONS(public=TRUE) AS
  SELECT * FROM (VALUES ('Paris', 'FR'), ('Lyon', 'FR'), ('Berlin', 'DE'), ('Madrid', 'ES'), ('Rome', 'IT')) AS t(city, country);
ALTER VIEW people ALTER COLUMN city SET OPTIONS(public_domain = cities.city);
CREATE TABLE pos OPTIONS(public=TRUE) AS SELECT CAST(i AS INTEGER) AS p FROM generate_series(1, 24) AS g(i);
CREATE TABLE ch OPTIONS(public=TRUE) AS
  SELECT substr('abcdefghijklmnopqrstuvwxyz-0123', CAST(i AS INTEGER), 1) AS c FROM generate_series(1, 31) AS g(i);
CREATE SCHEMA s;
CREATE TABLE s.t OPTIONS(public=TRUE) AS SELECT 1 AS a;
CREATE TABLE coderaw (uid BIGINT, code VARCHAR);
INSERT INTO coderaw SELECT i, CAST(1 + i % 4 AS VARCHAR) FROM generate_series(1, 1000) AS g(i) WHERE i <> 7;
CREATE VIEW codes OPTIONS(anonymization_userid_column='uid') AS SELECT * FROM coderaw;
CREATE TABLE code2raw (uid BIGINT, code VARCHAR);
INSERT INTO code2raw SELECT i, CAST(1 + i % 4 AS VARCHAR) FROM generate_series(1, 1000) AS g(i) WHERE i <> 7;
CREATE VIEW codes2 OPTIONS(anonymization_userid_column='uid') AS SELECT * FROM code2raw;
SET BUDGET OPTIONS(epsilon=50000, delta=0.001);
`

// setupTags holds a case-insensitive key column (finding 14), in each backend's spelling of a
// case-insensitive collation; %s is the column type.
const setupTags = `
CREATE TABLE tagraw (uid BIGINT, g %s);
INSERT INTO tagraw SELECT i, CASE i %% 3 WHEN 0 THEN 'aa' WHEN 1 THEN 'bb' ELSE 'zz' END FROM generate_series(1, 1000) AS g(i) WHERE i <> 7;
CREATE VIEW tags OPTIONS(anonymization_userid_column='uid') AS SELECT * FROM tagraw;
`

var tagsType = map[backend.Dialect]string{
	backend.DuckDB:   "VARCHAR COLLATE NOCASE",
	backend.Postgres: "VARCHAR COLLATE nocase",
}

var tagsPrelude = map[backend.Dialect]string{
	backend.Postgres: "CREATE COLLATION nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false)",
}

// setupOptional are owner declarations that a fixed engine may refuse (finding 15: a public
// domain of another type than its column); each runs alone and its outcome is kept.
var setupOptional = []string{
	"ALTER VIEW codes ALTER COLUMN code SET OPTIONS(public_domain = range(1, 5))",
	"ALTER VIEW codes2 ALTER COLUMN code SET OPTIONS(public_domain = range(1, 5))",
}

// setupTarget adds the crafted target, user 7, to the database "with target".
const setupTarget = `
INSERT INTO raw VALUES (7, 'victim', 'Atlantis', 999999, DATE '2024-02-02', 41, 'secret-hiv-positive');
INSERT INTO coderaw VALUES (7, '01'), (7, '+1'), (7, ' 2'), (7, '003');
INSERT INTO code2raw VALUES (7, 'abc');
`

const setupTargetTags = `INSERT INTO tagraw VALUES (7, 'zz'), (7, 'Zz'), (7, 'zZ'), (7, 'ZZ'), (7, 'qq'), (7, 'Qq'), (7, 'qQ'), (7, 'QQ')`

// privateNames are the private and hidden relations of the set-up: an attack that must not
// read private data must send no SQL naming them.
var privateNames = regexp.MustCompile(`(?i)\b(raw|people|coderaw|codes|code2raw|codes2|tagraw|tags)\b`)

// side is one database of a pair.
type side struct {
	name string // "with target", "without target"
	dsn  string // DuckDB file or PostgreSQL URL, as the command line names it
	// b is the analyst's connection, opened as dpsql.Open opens it, and rec records every
	// SQL text the noiseless engine sends through it.
	b   backend.Backend
	rec *recorder
	// childCopy is a copy of the DuckDB file taken before it was opened, for child processes.
	childCopy string
	// declared is the outcome of each setupOptional declaration (nil: accepted).
	declared []error
}

// world is the pair of neighbouring databases of one backend.
type world struct {
	dialect       backend.Dialect
	with, without *side
	hasTags       bool // the backend has the case-insensitive collation of setupTags
	mu            sync.Mutex
}

type lazyWorld struct {
	once sync.Once
	w    *world
	err  error
}

var duckWorld, pgWorld lazyWorld

// The shared resources of the package: the DuckDB files' folder, the PostgreSQL cluster
// (started by the first PostgreSQL test) and the analyst connections, all released by
// teardown after the tests.
var (
	resMu   sync.Mutex
	duckDir string
	cluster *pgtest.Cluster
	pgErr   error
	pgOnce  sync.Once
	closers []io.Closer
)

func keep(c io.Closer) {
	resMu.Lock()
	closers = append(closers, c)
	resMu.Unlock()
}

func teardown() error {
	resMu.Lock()
	defer resMu.Unlock()
	var errs []error
	for _, c := range closers {
		errs = append(errs, c.Close())
	}
	if cluster != nil {
		errs = append(errs, cluster.Stop())
	}
	if duckDir != "" {
		errs = append(errs, os.RemoveAll(duckDir))
	}
	return errors.Join(errs...)
}

// backends runs fn as a subtest on each backend's pair.
// checkEach checks a, with each of queries as its query, on both backends.
func checkEach(t *testing.T, queries []string, a attack) {
	t.Helper()
	backends(t, func(t *testing.T, w *world) {
		for _, q := range queries {
			a := a
			a.q = q
			t.Run("", func(t *testing.T) { w.check(t, a) })
		}
	})
}

func backends(t *testing.T, fn func(t *testing.T, w *world)) {
	t.Helper()
	t.Run("duckdb", func(t *testing.T) { fn(t, getDuck(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, getPostgres(t)) })
}

func getDuck(t *testing.T) *world {
	t.Helper()
	duckWorld.once.Do(func() {
		dir, err := os.MkdirTemp("", "dpsql-leaks-")
		if err != nil {
			duckWorld.err = err
			return
		}
		resMu.Lock()
		duckDir = dir
		resMu.Unlock()
		duckWorld.w, duckWorld.err = buildWorld(backend.DuckDB, func(name string) (string, error) {
			return filepath.Join(dir, name+".duckdb"), nil
		})
	})
	if duckWorld.err != nil {
		t.Fatal(duckWorld.err)
	}
	duckWorld.w.mu.Lock()
	t.Cleanup(duckWorld.w.mu.Unlock)
	return duckWorld.w
}

func getPostgres(t *testing.T) *world {
	t.Helper()
	pgOnce.Do(func() {
		c, err := pgtest.Start(context.Background(), pgtest.Options{})
		resMu.Lock()
		cluster, pgErr = c, err
		resMu.Unlock()
	})
	switch {
	case errors.Is(pgErr, pgtest.ErrNotFound) && !pgtest.InCI():
		t.Skip(pgErr.Error())
	case pgErr != nil:
		t.Fatal(pgErr)
	}
	pgWorld.once.Do(func() {
		pgWorld.w, pgWorld.err = buildWorld(backend.Postgres, func(name string) (string, error) {
			return cluster.CreateDatabase(context.Background(), "leaks_"+name)
		})
	})
	if pgWorld.err != nil {
		t.Fatal(pgWorld.err)
	}
	pgWorld.w.mu.Lock()
	t.Cleanup(pgWorld.w.mu.Unlock)
	return pgWorld.w
}

func buildWorld(d backend.Dialect, create func(name string) (string, error)) (*world, error) {
	ctx := context.Background()
	w := &world{dialect: d, hasTags: true}
	for _, target := range []bool{true, false} {
		name := "without"
		if target {
			name = "with"
		}
		dsn, err := create(name)
		if err != nil {
			return nil, err
		}
		s := &side{name: name + " target", dsn: dsn}
		hasTags, err := ownerSetup(ctx, d, s, target)
		if err != nil {
			return nil, fmt.Errorf("%s, database %s: owner set-up: %w", d, s.name, err)
		}
		w.hasTags = w.hasTags && hasTags
		if d == backend.DuckDB {
			s.childCopy = strings.TrimSuffix(dsn, ".duckdb") + "-child.duckdb"
			if err := copyFile(dsn, s.childCopy); err != nil {
				return nil, err
			}
			// A write-ahead log left next to the file holds part of the data too.
			if _, err := os.Stat(dsn + ".wal"); err == nil {
				if err := copyFile(dsn+".wal", s.childCopy+".wal"); err != nil {
					return nil, err
				}
			}
		}
		if s.b, err = openAnalyst(ctx, d, dsn); err != nil {
			return nil, fmt.Errorf("%s, database %s: open as analyst: %w", d, s.name, err)
		}
		keep(s.b)
		s.rec = &recorder{Backend: s.b}
		if target {
			w.with = s
		} else {
			w.without = s
		}
	}
	return w, nil
}

// ownerSetup builds one database of a pair through the public API, as the owner would with
// `dpsql db --owner -f setup.sql`. It reports whether the case-insensitive table was made.
func ownerSetup(ctx context.Context, d backend.Dialect, s *side, target bool) (bool, error) {
	db, err := dpsql.Open(ctx, dpsql.Config{Database: s.dsn, Owner: true})
	if err != nil {
		return false, err
	}
	defer db.Close()
	if _, err := db.Exec(ctx, setupCommon); err != nil {
		return false, err
	}
	hasTags := true
	if p := tagsPrelude[d]; p != "" {
		if _, err := db.Exec(ctx, p); err != nil {
			hasTags = false // no ICU: finding 14 is then tested on DuckDB only
		}
	}
	if hasTags {
		if _, err := db.Exec(ctx, fmt.Sprintf(setupTags, tagsType[d])); err != nil {
			return false, err
		}
	}
	for _, st := range setupOptional {
		_, err := db.Exec(ctx, st)
		s.declared = append(s.declared, err)
	}
	if target {
		if _, err := db.Exec(ctx, setupTarget); err != nil {
			return false, err
		}
		if hasTags {
			if _, err := db.Exec(ctx, setupTargetTags); err != nil {
				return false, err
			}
		}
	}
	return hasTags, nil
}

// openAnalyst opens dsn the way dpsql.Open does for an analyst (Config{Database: dsn}).
func openAnalyst(ctx context.Context, d backend.Dialect, dsn string) (backend.Backend, error) {
	if d == backend.Postgres {
		return postgres.Open(ctx, dsn, postgres.Options{Mode: backend.Analyst})
	}
	return duckdb.Open(ctx, dsn, duckdb.Options{Mode: backend.Analyst})
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o600)
}

// recorder passes every call to its backend and keeps the SQL texts.
type recorder struct {
	backend.Backend
	mu  sync.Mutex
	log []string
}

func (r *recorder) add(q string) {
	r.mu.Lock()
	r.log = append(r.log, q)
	r.mu.Unlock()
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.log
	r.log = nil
	return l
}

func (r *recorder) Query(ctx context.Context, q string, args ...any) (*backend.Rows, error) {
	r.add(q)
	return r.Backend.Query(ctx, q, args...)
}

func (r *recorder) Exec(ctx context.Context, q string, args ...any) error {
	r.add(q)
	return r.Backend.Exec(ctx, q, args...)
}

func (r *recorder) QueryConversions(ctx context.Context, q string) (*backend.Rows, []backend.Conversion, error) {
	r.add(q)
	return r.Backend.(backend.ConversionReporter).QueryConversions(ctx, q)
}

func (r *recorder) Tx(ctx context.Context, fn func(backend.Querier) error) error {
	return r.Backend.Tx(ctx, func(q backend.Querier) error { return fn(recQuerier{q, r}) })
}

func (r *recorder) Close() error { return nil } // the world owns the backend

type recQuerier struct {
	q backend.Querier
	r *recorder
}

func (q recQuerier) Query(ctx context.Context, s string, args ...any) (*backend.Rows, error) {
	q.r.add(s)
	return q.q.Query(ctx, s, args...)
}

func (q recQuerier) Exec(ctx context.Context, s string, args ...any) error {
	q.r.add(s)
	return q.q.Exec(ctx, s, args...)
}

// cliEngine adapts an engine (or a dpsql.DB) to the command and turns a panic into an
// outcome instead of the end of the test process: a real process would die with status 2.
type cliEngine struct {
	exec     func(ctx context.Context, script string, args ...any) ([]*dpsql.Result, error)
	close    func() error
	err      error
	panicked string
	// session is what the engine sent while it started (side.run).
	session []string
}

func (c *cliEngine) Exec(ctx context.Context, script string, args ...any) (res []*dpsql.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.panicked = fmt.Sprint(r)
			res, err = nil, errors.New("panic")
		}
		c.err = err
	}()
	return c.exec(ctx, script, args...)
}

func (c *cliEngine) Close() error {
	if c.close == nil {
		return nil
	}
	return c.close()
}

// attack is one reproduction and what its pair of outcomes must satisfy.
type attack struct {
	q string
	// real runs through dpsql.Open (secure mechanisms); otherwise through the noiseless
	// engine over the recorded analyst connection.
	real bool
	// flags are extra command-line flags (such as --timeout).
	flags []string
	// public: not an anonymized query; both databases must print exactly the same.
	public bool
	// release, for a query that releases data: how the two releases must agree.
	release *release
	// refused: the query must be refused at analysis (an analysis SQLSTATE, nothing
	// charged), and no SQL text naming a private relation or one of forbidden reaches the
	// database.
	refused   bool
	forbidden []string
	// overBudget: the query costs more than the budget left; it must be refused with
	// 2P001 before anything reads private data.
	overBudget bool
	// chargeOnly: the outcomes may differ (a timeout: time is out of scope), but both
	// attempts must be charged the same, and not nothing unless both were refused at
	// analysis.
	chargeOnly bool
}

// release says which columns of a released row are its key and how far one user may move
// each compared value column.
type release struct {
	keys   []string
	values map[string]float64
	// fold compares keys case-insensitively (a case-insensitive collation may print either
	// spelling of a group).
	fold bool
}

// outcome is what the analyst saw of one run, and what it cost.
type outcome struct {
	stdout, stderr string // stderr without the NOTICE lines (the budget left is not data)
	code, msg      string // the SQLSTATE and message of a failure
	exit           int    // the command's exit status
	panicked       string
	spent          [2]float64 // epsilon and delta charged
	total          [2]float64 // epsilon and delta spent on the database after the run
	sql            []string   // SQL texts sent by the noiseless engine for the attack
	// session is the SQL texts its session start sent (the catalog's reads): dpsql's own,
	// whatever the attack, so they may spell the attack's forbidden words (duckdb_views()
	// lists the views), never a private relation's name.
	session []string
	elapsed time.Duration
}

func (o outcome) String() string {
	if o.panicked != "" {
		return "panic: " + o.panicked
	}
	if o.code != "" {
		return fmt.Sprintf("error %s (exit %d): %s", o.code, o.exit, o.msg)
	}
	return fmt.Sprintf("ok: %s", strings.TrimSpace(o.stdout))
}

// spent reads the ledger's spent budget, unrounded.
func (s *side) spent(t *testing.T) [2]float64 {
	t.Helper()
	st, err := ledger.New(store.NewLedgerStore(s.b)).Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return [2]float64{st.Spent.Epsilon, st.Spent.Delta}
}

// run runs q as an analyst on one database with the command's code.
func (s *side) run(t *testing.T, a attack) outcome {
	t.Helper()
	ctx := context.Background()
	before := s.spent(t)
	s.rec.take()
	box := &cliEngine{}
	open := func(ctx context.Context, cfg dpsql.Config) (cli.Engine, error) {
		if a.real {
			db, err := dpsql.Open(ctx, cfg)
			if err != nil {
				return nil, err
			}
			box.exec, box.close = db.Exec, db.Close
			return box, nil
		}
		e, err := engine.New(ctx, engine.Options{Backend: s.rec, Mechanisms: testmode.Noiseless{},
			ConfidenceLevel: cfg.ConfidenceLevel, StatementTimeout: cfg.StatementTimeout})
		if err != nil {
			return nil, err
		}
		box.exec = e.Exec
		box.session = s.rec.take()
		return box, nil
	}
	var stdout, stderr bytes.Buffer
	args := append([]string{s.dsn, "--format", "json"}, a.flags...)
	args = append(args, "-c", a.q)
	start := time.Now()
	err := cli.Run(ctx, args, cli.Options{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Open: open, Complete: dpsql.Complete})
	o := outcome{stdout: stdout.String(), stderr: normalize(withoutNotices(stderr.String())), elapsed: time.Since(start),
		panicked: box.panicked, sql: s.rec.take(), session: box.session}
	o.exit = exitCode(err)
	if box.panicked != "" {
		o.exit = 2
	}
	if se, ok := sqlerr.As(box.err); ok {
		o.code, o.msg = se.Code, normalize(se.Msg)
	} else if box.err != nil {
		o.code, o.msg = "(not an sqlerr.Error)", box.err.Error()
	}
	after := s.spent(t)
	o.spent = [2]float64{after[0] - before[0], after[1] - before[1]}
	o.total = after
	return o
}

// remaining is how the ledger's refusal says what is left. What is left depends on what the
// suite ran before (and differs between the two databases once a leak made one attempt
// charged and the other not), not on the query's data, so it is masked.
var remaining = regexp.MustCompile(`the database has epsilon=[^,]*, delta=\S* left`)

func normalize(s string) string {
	return remaining.ReplaceAllString(s, "the database has (what is left) left")
}

// exitCode is the command's exit status for cli.Run's error: 1 for a failed statement (the
// suite's command lines are valid, so never cmd/dpsql's 2 for a usage error).
func exitCode(err error) int {
	if err != nil {
		return 1
	}
	return 0
}

func withoutNotices(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "NOTICE: ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// check runs a on both databases of w and reports every way the pair of outcomes reveals
// the target. It returns the two outcomes for checks of its own.
func (w *world) check(t *testing.T, a attack) (with, without outcome) {
	t.Helper()
	for _, m := range markers {
		if strings.Contains(strings.ToLower(a.q), m) {
			t.Fatalf("test bug: the attack query spells the marker %q", m)
		}
	}
	with = w.with.run(t, a)
	without = w.without.run(t, a)
	t.Logf("with target:    %s [%v, charged %g, %g]", with, with.elapsed.Round(time.Millisecond), with.spent[0], with.spent[1])
	t.Logf("without target: %s [%v, charged %g, %g]", without, without.elapsed.Round(time.Millisecond), without.spent[0], without.spent[1])
	for _, o := range []outcome{with, without} {
		if o.panicked != "" {
			t.Errorf("the engine panicked (a process would exit with status 2): %s", o.panicked)
		}
		if strings.HasPrefix(o.code, "(") {
			t.Errorf("the error is not an *sqlerr.Error: %s", o.msg)
		}
	}
	if !a.chargeOnly && (with.code != without.code || with.stderr != without.stderr || with.exit != without.exit) {
		t.Errorf("the outcome depends on the target:\nwith target:    %s\n%s\nwithout target: %s\n%s",
			with, with.stderr, without, without.stderr)
	}
	if !sameCharge(with.spent, without.spent, with.total, without.total) {
		t.Errorf("the charge depends on the target: %v with it, %v without", with.spent, without.spent)
	}
	// A timeout or cancellation reported as such (57014, not the uniform 2P003) happened in
	// the engine's free checks, before the charge and before any private row was read.
	refusedBoth := (analysisCode(with.code) || with.code == sqlerr.QueryCanceled) && with.code == without.code
	if a.chargeOnly && !refusedBoth && (with.spent[0] == 0 || without.spent[0] == 0) {
		t.Errorf("an attempt that read private data was not charged: %v with the target, %v without", with.spent, without.spent)
	}
	seen := strings.ToLower(with.stdout + "\n" + with.stderr)
	for _, m := range markers {
		if strings.Contains(seen, m) {
			t.Errorf("the target's secret %q was released:\n%s%s", m, with.stdout, with.stderr)
		}
	}
	if a.public && with.stdout != without.stdout {
		t.Errorf("a query over public data answers differently with the target:\n%s\nvs\n%s", with.stdout, without.stdout)
	}
	if a.release != nil && with.code == "" && without.code == "" {
		compareReleases(t, a.release, with.stdout, without.stdout)
	}
	if a.refused {
		for _, o := range []outcome{with, without} {
			if !analysisCode(o.code) {
				t.Errorf("want a refusal at analysis, got %s", o)
			}
			if o.spent != [2]float64{} {
				t.Errorf("a query refused at analysis was charged %v", o.spent)
			}
		}
		checkSent(t, with.sql, privateNames, a.forbidden)
		checkSent(t, with.session, privateNames, nil)
	}
	if a.overBudget {
		for _, o := range []outcome{with, without} {
			if o.code != sqlerr.BudgetExhausted || o.spent != [2]float64{} {
				t.Errorf("want the query over the budget refused (%s) and not charged; got %s, charged %v",
					sqlerr.BudgetExhausted, o, o.spent)
			}
		}
		checkSent(t, append(with.session, with.sql...), privateNames, nil)
	}
	return with, without
}

// sameCharge compares two charges measured as differences of the ledger's running totals
// (float64 sums), up to the rounding of those totals.
func sameCharge(a, b [2]float64, totals ...[2]float64) bool {
	for i := range 2 {
		tol := 1e-9 * math.Max(math.Abs(a[i]), math.Abs(b[i]))
		for _, t := range totals {
			tol += 16 * math.Abs(t[i]) * 0x1p-52
		}
		if math.Abs(a[i]-b[i]) > tol {
			return false
		}
	}
	return true
}

// analysisCode reports whether code is one of the SQLSTATEs of a refusal before anything
// runs: syntax, names, types, unsupported features, privacy rules, option values.
func analysisCode(code string) bool {
	return strings.HasPrefix(code, "42") || strings.HasPrefix(code, "0A") ||
		code == sqlerr.PrivacyViolation || code == sqlerr.InvalidParameterValue
}

// checkSent fails if an SQL text sent to the database names a private relation or one of
// the forbidden words. A query wrapped to read no row (the engine's free checks of names and
// types before it charges, ending in LIMIT 0) may name private relations.
func checkSent(t *testing.T, sent []string, private *regexp.Regexp, forbidden []string) {
	t.Helper()
	for _, q := range sent {
		readsNoRow := strings.HasSuffix(strings.TrimSpace(q), "LIMIT 0")
		if m := private.FindString(q); m != "" && !readsNoRow {
			t.Errorf("SQL naming the private relation %q reached the database:\n%s", m, q)
			continue
		}
		for _, f := range forbidden {
			if strings.Contains(strings.ToLower(q), strings.ToLower(f)) {
				t.Errorf("SQL with %q reached the database:\n%s", f, q)
			}
		}
	}
}

// compareReleases requires two JSON releases (one statement's array of rows each) to have the
// same keys, as many times each, and every compared value within its bound.
func compareReleases(t *testing.T, r *release, with, without string) {
	t.Helper()
	a, err := parseRows(with)
	if err != nil {
		t.Errorf("with target: %v", err)
		return
	}
	b, err := parseRows(without)
	if err != nil {
		t.Errorf("without target: %v", err)
		return
	}
	ka, kb := byKey(r, a), byKey(r, b)
	var keys []string
	for k := range ka {
		keys = append(keys, k)
	}
	for k := range kb {
		if _, ok := ka[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		ra, rb := ka[k], kb[k]
		if len(ra) != len(rb) {
			t.Errorf("key %s is released %d times with the target and %d times without", k, len(ra), len(rb))
			continue
		}
		for i := range ra {
			for col, bound := range r.values {
				x, okx := number(ra[i][col])
				y, oky := number(rb[i][col])
				if !okx || !oky {
					if fmt.Sprint(ra[i][col]) != fmt.Sprint(rb[i][col]) {
						t.Errorf("key %s, column %s: %v with the target, %v without", k, col, ra[i][col], rb[i][col])
					}
					continue
				}
				if math.Abs(x-y) > bound {
					t.Errorf("key %s, column %s: %g with the target, %g without: one user moved it by more than %g",
						k, col, x, y, bound)
				}
			}
		}
	}
}

func parseRows(s string) ([]map[string]any, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var rows []map[string]any
	if err := dec.Decode(&rows); err != nil {
		return nil, fmt.Errorf("output is not one JSON array of rows: %v\n%s", err, s)
	}
	return rows, nil
}

func byKey(r *release, rows []map[string]any) map[string][]map[string]any {
	m := map[string][]map[string]any{}
	for _, row := range rows {
		var parts []string
		for _, k := range r.keys {
			parts = append(parts, fmt.Sprintf("%s=%q", k, fmt.Sprint(row[k])))
		}
		key := "(" + strings.Join(parts, ", ") + ")"
		if r.fold {
			key = strings.ToLower(key)
		}
		m[key] = append(m[key], row)
	}
	for _, rs := range m {
		sort.Slice(rs, func(i, j int) bool { return fmt.Sprint(rs[i]) < fmt.Sprint(rs[j]) })
	}
	return m
}

func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

// counts is the release check of most attacks: keys as given, and every count-like column
// moved by at most 1 by one user.
func counts(keys []string, cols ...string) *release {
	r := &release{keys: keys, values: map[string]float64{}}
	for _, c := range cols {
		r.values[c] = 1
	}
	return r
}

// anon is the head of the attacks' anonymized queries, with the options of the findings.
func anon(opts string) string {
	return "SELECT WITH ANONYMIZATION OPTIONS(" + opts + ")"
}
