package shard

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/plan"
	"github.com/dpsql/dpsql/internal/sqlgen"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/sqlerr"
)

// Job is one distributed stage: the shard query, run by every shard over its own database
// (built by its setup statements), and the Spec that merges the shards' rows.
type Job struct {
	Spec  *Spec
	Query string
	// Shards are the setup statements of each shard's database; File names the shard's file
	// in errors.
	Shards []Shard
}

// Shard is one shard of a Job: the file it reads and the statements that build its database.
type Shard struct {
	File  string
	Setup []string
}

// A Runner runs Jobs: Local in this process, beam/sqlbeam on Apache Beam.
type Runner interface {
	// Groups merges the shards' rows of a stage Job and writes the group rows, as JSON lines
	// (Spec.WriteGroup), to the file at path.
	Groups(ctx context.Context, job *Job, path string) error
	// Histogram merges the shards' rows of a histogram Job.
	Histogram(ctx context.Context, job *Job) (Histogram, error)
}

// Stager is the exec.Stager of a distributed stage: it finds the query's Source on the
// coordinator's database, prepares a Job, has Runner run it and reads the group rows back
// through the coordinator (sqlgen.GroupsQuery), which must be allowed to read files in Dir.
type Stager struct {
	Coordinator backend.Backend
	Runner      Runner
	// Dir is a private directory for the group rows of each query; the coordinator's
	// analyst mode must allow it (duckdb.Options.AllowedDirectories).
	Dir string
	// MaxShards caps the number of shards (0: DefaultMaxShards): with more files than that,
	// each shard reads several consecutive files, so that the cost of building a shard's
	// database (tens of milliseconds) is paid fewer times. On a cluster, use a few times the
	// number of workers.
	MaxShards int

	mu      sync.Mutex
	sources map[*plan.Plan]*Source
	seq     int
}

// source finds (once per plan) the Source of p.
func (st *Stager) source(ctx context.Context, p *plan.Plan) (*Source, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if s, ok := st.sources[p]; ok {
		return s, nil
	}
	cat, err := store.LoadCatalog(ctx, st.Coordinator)
	if err != nil {
		return nil, err
	}
	s, err := NewSource(ctx, st.Coordinator, cat, p.Query)
	if err != nil {
		return nil, err
	}
	if err := checkUnitType(p); err != nil {
		return nil, err
	}
	if st.sources == nil {
		st.sources = map[*plan.Plan]*Source{}
	}
	st.sources[p] = s
	return s, nil
}

func (st *Stager) job(ctx context.Context, p *plan.Plan, histogram, scaleExp, numBins int) (*Job, error) {
	src, err := st.source(ctx, p)
	if err != nil {
		return nil, err
	}
	spec, err := NewSpec(p, histogram, scaleExp, numBins)
	if err != nil {
		return nil, err
	}
	q, err := sqlgen.ShardQuery(p, histogram)
	if err != nil {
		return nil, err
	}
	job := &Job{Spec: spec, Query: q}
	for _, files := range split(src.Files, st.maxShards()) {
		job.Shards = append(job.Shards, Shard{File: strings.Join(files, ", "), Setup: src.ShardSetup(files)})
	}
	return job, nil
}

// DefaultMaxShards is Stager.MaxShards when it is 0.
var DefaultMaxShards = 4 * runtime.NumCPU()

func (st *Stager) maxShards() int {
	if st.MaxShards > 0 {
		return st.MaxShards
	}
	return DefaultMaxShards
}

// split divides files into at most n runs of consecutive files of sizes differing by at most
// one.
func split(files []string, n int) [][]string {
	n = min(n, len(files))
	var out [][]string
	for i := 0; i < n; i++ {
		out = append(out, files[i*len(files)/n:(i+1)*len(files)/n])
	}
	return out
}

// Check finds the query's source, checks that its local files can be opened, and binds the
// shard query in a database with the workers' views where the private view is an empty
// relation of the coordinator's columns and types: a query the workers could not run fails
// before it is charged, and whether it fails does not depend on any file's rows.
func (st *Stager) Check(ctx context.Context, p *plan.Plan) error {
	src, err := st.source(ctx, p)
	if err != nil {
		return err
	}
	query, err := sqlgen.ShardQuery(p, -1)
	if err != nil {
		return err
	}
	for _, f := range src.Files {
		if strings.Contains(f, "://") {
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			return sqlerr.New(sqlerr.Pos{}, sqlerr.UndefinedFile, "private relation %s: cannot read %s: %v", src.Relation, f, err).
				WithHint("every file of a private relation must be readable by dpsql-beam and its workers")
		}
		fh.Close()
	}
	db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner, Threads: 1})
	if err != nil {
		return err
	}
	defer db.Close()
	sh := Shard{File: "(the private relation's columns)", Setup: src.CheckSetup()}
	for _, s := range sh.Setup {
		if err := db.Exec(ctx, s); err != nil {
			return shardError(sh, err)
		}
	}
	if _, err := db.Query(ctx, "SELECT 1 FROM (\n"+query+"\n) AS _dp_check LIMIT 0"); err != nil {
		return shardError(sh, err)
	}
	return nil
}

// checkUnitType checks that units can be compared by their text across shards: a nested unit
// (a list or a struct, whose elements could be -0 or NaN) is refused. A text unit compared by
// a collation never gets here: the executor refuses it first (exec's exactGroups, rule
// unit-and-keys-compared-exactly), so a unit's text is its identity.
func checkUnitType(p *plan.Plan) error {
	t := strings.ToUpper(p.UnitType)
	if strings.ContainsAny(t, "[(") && !strings.HasPrefix(t, "DECIMAL") || strings.HasPrefix(t, "STRUCT") || strings.HasPrefix(t, "MAP") || strings.HasPrefix(t, "UNION") {
		return sqlerr.Privacy(p.Query.Options.Pos, RuleDistributed,
			fmt.Sprintf("a privacy unit of type %s is not supported by the distributed stage: units are matched across files by their text", p.UnitType),
			"use a column of a scalar type (an integer, a string, a UUID) as the privacy unit")
	}
	return nil
}

// Explain describes the distributed stage of p for EXPLAIN: where the private rows come from,
// how they are split, and the query every shard runs (the stage SQL above is what the same
// plan computes on one database).
func (st *Stager) Explain(ctx context.Context, p *plan.Plan) ([]string, error) {
	src, err := st.source(ctx, p)
	if err != nil {
		return nil, err
	}
	q, err := sqlgen.ShardQuery(p, -1)
	if err != nil {
		return nil, err
	}
	n := len(split(src.Files, st.maxShards()))
	lines := []string{fmt.Sprintf("Distributed stage: private relation %s, %d files in %d shards; per shard, in a database of its own:", src.Relation, len(src.Files), n)}
	for _, l := range strings.Split(q, "\n") {
		lines = append(lines, "  "+l)
	}
	return append(lines, "then per unit, over all shards: its kappa groups of smallest priority, partials merged; per group: the stage's exact sums"), nil
}

// openShard builds the database of one shard: an in-memory DuckDB with the setup views,
// then locked down as an analyst's (it may read only the files its views name).
func openShard(ctx context.Context, sh Shard, threads int) (*duckdb.DB, error) {
	shardsOpened.Add(1)
	db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner, Threads: threads})
	if err != nil {
		return nil, err
	}
	for _, s := range sh.Setup {
		if err := db.Exec(ctx, s); err != nil {
			db.Close()
			return nil, shardError(sh, err)
		}
	}
	if err := db.BecomeAnalyst(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func shardError(sh Shard, err error) error {
	return sqlerr.New(sqlerr.Pos{}, sqlerr.FeatureNotSupported, "the workers' database cannot run the query (%s): %v", sh.File, err).
		WithHint("each worker's database has only the views of the owner's setup, with the private view reading some of its files: every relation a query reads must be a view over files")
}

// Scan runs a job's query on one shard and calls emit for every (unit, pair) row.
// The shard's database is kept for the next scan of the same setup (pool.go).
func Scan(ctx context.Context, job *Job, sh Shard, threads int, emit func(unit string, p Pair) error) error {
	db, key, err := takeShard(ctx, sh, threads)
	if err != nil {
		return err
	}
	rows, err := db.Query(ctx, job.Query)
	if err != nil {
		db.Close()
		return fmt.Errorf("shard %s: %w", sh.File, err)
	}
	keepShard(key, db)
	for _, r := range rows.Values {
		unit, pair, err := job.Spec.ParseRow(r)
		if err != nil {
			return err
		}
		if err := emit(unit, pair); err != nil {
			return err
		}
	}
	return nil
}

// Histogram runs the histogram job of aggregate j and returns its rows as
// sqlgen.BoundsStage's: (neg, bin, n).
func (st *Stager) Histogram(ctx context.Context, p *plan.Plan, j, scaleExp, numBins int) (*backend.Rows, error) {
	job, err := st.job(ctx, p, j, scaleExp, numBins)
	if err != nil {
		return nil, err
	}
	h, err := st.Runner.Histogram(ctx, job)
	if err != nil {
		return nil, err
	}
	rows := &backend.Rows{Columns: []string{"neg", "bin", "n"}, Types: []string{"BOOLEAN", "BIGINT", "BIGINT"}}
	for i := range h.Positive {
		if h.Positive[i] > 0 {
			rows.Values = append(rows.Values, []any{false, int64(i), h.Positive[i]})
		}
		if h.Negative[i] > 0 {
			rows.Values = append(rows.Values, []any{true, int64(i), h.Negative[i]})
		}
	}
	return rows, nil
}

// Stage runs the stage job, then reads its group rows back through b (the coordinator) with
// sqlgen.GroupsQuery, which also joins public domains. The rows file is removed after.
func (st *Stager) Stage(ctx context.Context, p *plan.Plan, b backend.Backend) (*backend.Rows, error) {
	job, err := st.job(ctx, p, -1, 0, 0)
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	st.seq++
	path := filepath.Join(st.Dir, fmt.Sprintf("groups-%d-%d.json", os.Getpid(), st.seq))
	st.mu.Unlock()
	defer os.Remove(path)
	if err := st.Runner.Groups(ctx, job, path); err != nil {
		return nil, err
	}
	if job.Spec.Keys == 0 {
		// Without GROUP BY the stage's SQL returns its one row even when no unit is left:
		// so does the distributed stage.
		if err := appendEmptyGroup(job.Spec, path); err != nil {
			return nil, err
		}
	}
	return b.Query(ctx, sqlgen.GroupsQuery(p, path))
}

// appendEmptyGroup adds the row of the empty group to the rows file of a stage without keys
// when it has no row.
func appendEmptyGroup(s *Spec, path string) error {
	st, err := os.Stat(path)
	if err != nil || st.Size() > 0 {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if err := s.WriteGroup(f, EncodeKeys(nil), Group{Aggs: make([]GroupAgg, len(s.Aggs))}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteGroup writes group g's row as one JSON line.
func (s *Spec) WriteGroup(w io.Writer, group string, g Group) error {
	row, err := s.Row(group, g)
	if err != nil {
		return err
	}
	b, err := json.Marshal(row)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Local runs jobs in this process, one shard after another, merging in maps: the reference
// that runners on Beam are tested against.
type Local struct {
	Threads int
}

func (l Local) units(ctx context.Context, job *Job) (map[string]*Unit, error) {
	units := map[string]*Unit{}
	for _, sh := range job.Shards {
		err := Scan(ctx, job, sh, l.Threads, func(unit string, p Pair) error {
			u := units[unit]
			if u == nil {
				u = &Unit{}
				units[unit] = u
			}
			job.Spec.Add(u, p)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return units, nil
}

// Groups implements Runner.
func (l Local) Groups(ctx context.Context, job *Job, path string) error {
	units, err := l.units(ctx, job)
	if err != nil {
		return err
	}
	groups := map[string]*Group{}
	for _, u := range units {
		job.Spec.Contributions(u, func(group string, c Group) {
			g := groups[group]
			if g == nil {
				g = &Group{}
				groups[group] = g
			}
			MergeGroups(g, c)
		})
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := job.Spec.WriteGroup(w, k, *groups[k]); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Histogram implements Runner.
func (l Local) Histogram(ctx context.Context, job *Job) (Histogram, error) {
	units, err := l.units(ctx, job)
	if err != nil {
		return Histogram{}, err
	}
	var h Histogram
	for _, u := range units {
		for _, p := range u.Pairs {
			MergeHistograms(&h, job.Spec.HistogramContribution(p))
		}
	}
	if h.Positive == nil {
		h = Histogram{Positive: make([]int64, job.Spec.NumBins), Negative: make([]int64, job.Spec.NumBins)}
	}
	return h, nil
}
