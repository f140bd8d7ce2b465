// Package sqlbeam runs the stage of dpsql's anonymized queries on Apache Beam: it is the
// shard.Runner of dpsql-beam.
//
// The SQL engine analyzes, rewrites and plans the query as always (internal/engine); its
// exec.Stager (internal/shard.Stager) finds the private relation's files and hands this
// package a shard.Job. The pipeline is:
//
//	Create(shards) → Reshuffle
//	  → scanFn: per file, the shard query in an in-memory DuckDB (row-level filters and
//	    expressions, per-(unit, group) partial aggregation, at most kappa groups per unit in the
//	    file), one (unit, pair) per row
//	  → CombinePerKey(unit): the unit's kappa pairs of smallest priority over all files, each
//	    merged over files (shard.Spec.Add: a unit spread over many files is one unit)
//	  → contributionsFn: each kept pair's clamped, fixed-point encoded values
//	  → CombinePerKey(group): exact per-group sums (shard.MergeGroups)
//	  → rowFn: one JSON line per group → textio.Write
//
// The launcher (dpsql-beam) reads the lines back into the coordinator's DuckDB, where the
// engine selects groups and adds noise with dp/ exactly as dpsql does, then post-processes.
// The group rows are exact, unnoised aggregates: they are written only to the run's private
// temporary directory and removed once read (docs/beam.md, "dpsql-beam").
package sqlbeam

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local" // local paths for Prism, direct and shared-disk clusters
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/dpsql/dpsql/internal/shard"
)

func init() {
	register.DoFn3x1[context.Context, int, func(string, []byte), error](&scanFn{})
	register.Emitter2[string, []byte]()
	register.Combiner3[unitAcc, []byte, unitAcc](&unitFn{})
	register.DoFn3x1[string, unitAcc, func(string, groupAcc), error](&contributionsFn{})
	register.Emitter2[string, groupAcc]()
	register.Combiner1[groupAcc](&groupFn{})
	register.DoFn2x2[string, groupAcc, string, error](&rowFn{})
	register.DoFn3x1[string, unitAcc, func(groupAcc), error](&histogramContributionsFn{})
	register.Emitter1[groupAcc]()
	register.Combiner1[groupAcc](&histogramFn{})
	register.DoFn1x2[groupAcc, string, error](&histogramLineFn{})
	beam.RegisterCoder(reflect.TypeOf(unitAcc{}), encodeUnitAcc, decodeUnitAcc)
	beam.RegisterCoder(reflect.TypeOf(groupAcc{}), encodeGroupAcc, decodeGroupAcc)
}

// Runner runs shard jobs as Beam pipelines.
type Runner struct {
	// Execute runs a pipeline to completion (beamx.Run, or a runner of the caller's choice).
	Execute func(ctx context.Context, p *beam.Pipeline) error
	// TempDir is where pipelines write their result for the launcher: "" writes straight to
	// the path the stager asks for (runners whose workers share this machine's files: Prism,
	// direct, a local Flink or Spark); otherwise a directory every worker can write and the
	// launcher can read through Beam's filesystems (gs://bucket/tmp on Dataflow), copied to
	// the stager's path and removed after.
	TempDir string
	// Threads is DuckDB's thread count in each shard's database (0: DuckDB's default, the
	// worker's cores).
	Threads int
}

// job is the part of a shard.Job a worker needs, as a DoFn field (JSON).
type job struct {
	Spec   *shard.Spec
	Query  string
	Shards []shard.Shard
}

// units builds the pipeline up to each unit's merged state.
func (r *Runner) units(s beam.Scope, j *shard.Job) beam.PCollection {
	idx := make([]int, len(j.Shards))
	for i := range idx {
		idx[i] = i
	}
	shards := beam.Reshuffle(s, beam.CreateList(s, idx))
	pairs := beam.ParDo(s, &scanFn{Job: job{Spec: j.Spec, Query: j.Query, Shards: j.Shards}, Threads: r.Threads}, shards)
	return beam.CombinePerKey(s, &unitFn{Spec: j.Spec}, pairs)
}

// Groups implements shard.Runner.
func (r *Runner) Groups(ctx context.Context, j *shard.Job, path string) error {
	p, s := beam.NewPipelineWithRoot()
	units := r.units(s, j)
	contribs := beam.ParDo(s, &contributionsFn{Spec: j.Spec}, units)
	groups := beam.CombinePerKey(s, &groupFn{}, contribs)
	lines := beam.ParDo(s, &rowFn{Spec: j.Spec}, groups)
	return r.run(ctx, p, s, lines, path)
}

// Histogram implements shard.Runner.
func (r *Runner) Histogram(ctx context.Context, j *shard.Job) (shard.Histogram, error) {
	p, s := beam.NewPipelineWithRoot()
	units := r.units(s, j)
	contribs := beam.ParDo(s, &histogramContributionsFn{Spec: j.Spec}, units)
	total := beam.Combine(s, &histogramFn{}, contribs)
	line := beam.ParDo(s, &histogramLineFn{}, total)
	dir, err := os.MkdirTemp("", "dpsql-beam-histogram-")
	if err != nil {
		return shard.Histogram{}, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "histogram.json")
	if err := r.run(ctx, p, s, line, path); err != nil {
		return shard.Histogram{}, err
	}
	h := shard.Histogram{Positive: make([]int64, j.Spec.NumBins), Negative: make([]int64, j.Spec.NumBins)}
	data, err := os.ReadFile(path)
	if err != nil {
		return shard.Histogram{}, err
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return h, nil // no unit at all
	}
	if err := json.Unmarshal(data, &h); err != nil {
		return shard.Histogram{}, fmt.Errorf("sqlbeam: histogram: %w", err)
	}
	if len(h.Positive) != j.Spec.NumBins || len(h.Negative) != j.Spec.NumBins {
		return shard.Histogram{}, fmt.Errorf("sqlbeam: histogram of %d bins, want %d", len(h.Positive), j.Spec.NumBins)
	}
	return h, nil
}

// run writes lines to path (through TempDir when set), runs the pipeline and leaves path
// holding the lines (empty when there were none).
func (r *Runner) run(ctx context.Context, p *beam.Pipeline, s beam.Scope, lines beam.PCollection, path string) error {
	out := path
	if r.TempDir != "" {
		out = strings.TrimSuffix(r.TempDir, "/") + "/" + filepath.Base(path)
	}
	textio.Write(s, out, lines)
	if err := r.Execute(ctx, p); err != nil {
		return fmt.Errorf("the Beam pipeline failed: %w", err)
	}
	if out == path {
		// textio.Write writes no file when there are no lines.
		if _, err := os.Stat(path); os.IsNotExist(err) {
			return os.WriteFile(path, nil, 0o600)
		}
		return nil
	}
	return copyOut(ctx, out, path)
}

// copyOut copies a pipeline's result from a Beam filesystem to a local file and removes it.
func copyOut(ctx context.Context, from, to string) error {
	fs, err := filesystem.New(ctx, from)
	if err != nil {
		return err
	}
	defer fs.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	src, err := fs.OpenRead(ctx, from)
	if err != nil {
		// No lines, no file.
		return dst.Close()
	}
	_, err = io.Copy(dst, src)
	src.Close()
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if rm, ok := fs.(filesystem.Remover); ok {
		_ = rm.Remove(ctx, from)
	}
	return err
}

// scanFn runs the shard query over one file.
type scanFn struct {
	Job     job
	Threads int
}

func (fn *scanFn) ProcessElement(ctx context.Context, i int, emit func(string, []byte)) error {
	if i < 0 || i >= len(fn.Job.Shards) {
		return fmt.Errorf("sqlbeam: shard %d of %d", i, len(fn.Job.Shards))
	}
	j := &shard.Job{Spec: fn.Job.Spec, Query: fn.Job.Query, Shards: fn.Job.Shards}
	return shard.Scan(ctx, j, fn.Job.Shards[i], fn.Threads, func(unit string, p shard.Pair) error {
		emit(unit, shard.EncodePair(p))
		return nil
	})
}

// unitAcc is a unit's merged state (shard.Unit), shuffled with the compact encoding.
type unitAcc struct{ U *shard.Unit }

func encodeUnitAcc(a unitAcc) []byte {
	if a.U == nil {
		return shard.EncodeUnit(&shard.Unit{})
	}
	return shard.EncodeUnit(a.U)
}

func decodeUnitAcc(b []byte) (unitAcc, error) {
	u, err := shard.DecodeUnit(b)
	return unitAcc{U: u}, err
}

// unitFn merges a unit's pairs from every file, keeping its kappa pairs of smallest priority.
type unitFn struct{ Spec *shard.Spec }

func (fn *unitFn) CreateAccumulator() unitAcc { return unitAcc{U: &shard.Unit{}} }

func (fn *unitFn) AddInput(a unitAcc, in []byte) (unitAcc, error) {
	p, err := shard.DecodePair(in)
	if err != nil {
		return a, err
	}
	if a.U == nil {
		a.U = &shard.Unit{}
	}
	fn.Spec.Add(a.U, p)
	return a, nil
}

func (fn *unitFn) MergeAccumulators(a, b unitAcc) unitAcc {
	if a.U == nil {
		return b
	}
	if b.U != nil {
		fn.Spec.Merge(a.U, b.U)
	}
	return a
}

func (fn *unitFn) ExtractOutput(a unitAcc) unitAcc { return a }

// groupAcc is a group's exact sums (shard.Group), or a histogram (shard.Histogram).
type groupAcc struct {
	G shard.Group
	H shard.Histogram
}

func encodeGroupAcc(a groupAcc) []byte {
	g := shard.EncodeGroup(a.G)
	h := shard.EncodeHistogram(a.H)
	out := make([]byte, 0, 10+len(g)+len(h))
	out = fmt.Appendf(out, "%d:", len(g))
	return append(append(out, g...), h...)
}

func decodeGroupAcc(b []byte) (groupAcc, error) {
	var n int
	i := strings.IndexByte(string(b[:min(len(b), 12)]), ':')
	if i < 0 {
		return groupAcc{}, fmt.Errorf("sqlbeam: malformed group")
	}
	if _, err := fmt.Sscanf(string(b[:i]), "%d", &n); err != nil || n < 0 || n > len(b)-i-1 {
		return groupAcc{}, fmt.Errorf("sqlbeam: malformed group")
	}
	g, err := shard.DecodeGroup(b[i+1 : i+1+n])
	if err != nil {
		return groupAcc{}, err
	}
	h, err := shard.DecodeHistogram(b[i+1+n:])
	return groupAcc{G: g, H: h}, err
}

// contributionsFn turns each kept (unit, group) into what it adds to its group.
type contributionsFn struct{ Spec *shard.Spec }

func (fn *contributionsFn) ProcessElement(_ string, a unitAcc, emit func(string, groupAcc)) error {
	if a.U == nil {
		return nil
	}
	for _, p := range a.U.Pairs {
		emit(p.Group, groupAcc{G: fn.Spec.Contribution(p)})
	}
	return nil
}

// groupFn sums a group's contributions exactly.
type groupFn struct{}

func (fn *groupFn) MergeAccumulators(a, b groupAcc) groupAcc {
	shard.MergeGroups(&a.G, b.G)
	return a
}

// rowFn prints a group's row as a JSON line.
type rowFn struct{ Spec *shard.Spec }

func (fn *rowFn) ProcessElement(group string, a groupAcc) (string, error) {
	var b strings.Builder
	if err := fn.Spec.WriteGroup(&b, group, a.G); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// histogramContributionsFn turns each kept (unit, group) into its histogram bins.
type histogramContributionsFn struct{ Spec *shard.Spec }

func (fn *histogramContributionsFn) ProcessElement(_ string, a unitAcc, emit func(groupAcc)) error {
	if a.U == nil {
		return nil
	}
	for _, p := range a.U.Pairs {
		emit(groupAcc{H: fn.Spec.HistogramContribution(p)})
	}
	return nil
}

// histogramFn sums histograms.
type histogramFn struct{}

func (fn *histogramFn) MergeAccumulators(a, b groupAcc) groupAcc {
	shard.MergeHistograms(&a.H, b.H)
	return a
}

// histogramLineFn prints the histogram as one JSON line.
type histogramLineFn struct{}

func (fn *histogramLineFn) ProcessElement(a groupAcc) (string, error) {
	b, err := json.Marshal(a.H)
	return string(b), err
}
