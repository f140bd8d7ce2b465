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
//	    file); its (unit, pair) rows go into B buckets by a hash of the unit, one element per
//	    non-empty bucket
//	  → CombinePerKey(bucket): per unit of the bucket, its kappa pairs of smallest priority
//	    over all files, each merged over files (shard.Spec.Add: a unit spread over many files is
//	    one unit)
//	  → contributionsFn: each kept pair's clamped, fixed-point encoded values, summed per group
//	    within the bucket
//	  → CombinePerKey(group): exact per-group sums (shard.MergeGroups)
//	  → rowFn: one JSON line per group → textio.Write
//
// Shuffling buckets rather than units keeps the number of shuffled elements at most files × B
// plus buckets × groups, whatever the number of rows and units: a runner's cost per element
// (about 1.6 KB of memory each on Prism) does not grow with the data. B bounds the parallelism
// of the merge; Runner.Buckets sets it.
//
// The launcher (dpsql-beam) reads the lines back into the coordinator's DuckDB, where the
// engine selects groups and adds noise with dp/ exactly as dpsql does, then post-processes.
// The group rows are exact, unnoised aggregates: they are written only to the run's private
// temporary directory and removed once read (docs/beam.md, "dpsql-beam").
package sqlbeam

import (
	"context"
	"encoding/binary"
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
	"github.com/dpsql/dpsql/beam/internal/dofn"

	"github.com/dpsql/dpsql/internal/shard"
)

func init() {
	dofn.DoFn3x1[context.Context, int, func(int, []byte), error](&scanFn{})
	register.Emitter2[int, []byte]()
	register.Combiner3[bucketAcc, []byte, bucketAcc](&bucketFn{})
	dofn.DoFn3x1[int, bucketAcc, func(string, groupAcc), error](&contributionsFn{})
	register.Emitter2[string, groupAcc]()
	register.Combiner1[groupAcc](&groupFn{})
	dofn.DoFn2x2[string, groupAcc, string, error](&rowFn{})
	dofn.DoFn3x1[int, bucketAcc, func(groupAcc), error](&histogramContributionsFn{})
	register.Emitter1[groupAcc]()
	register.Combiner1[groupAcc](&histogramFn{})
	dofn.DoFn1x2[groupAcc, string, error](&histogramLineFn{})
	beam.RegisterCoder(reflect.TypeOf(bucketAcc{}), encodeBucketAcc, decodeBucketAcc)
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
	// Buckets is the number of buckets units are shuffled in (0: DefaultBuckets): the
	// parallelism of the merge across files.
	Buckets int
}

// DefaultBuckets is Runner.Buckets when it is 0.
const DefaultBuckets = 64

// buckets builds the pipeline up to each bucket's merged units.
func (r *Runner) buckets(s beam.Scope, j *shard.Job) beam.PCollection {
	idx := make([]int, len(j.Shards))
	for i := range idx {
		idx[i] = i
	}
	b := r.Buckets
	if b <= 0 {
		b = DefaultBuckets
	}
	shards := beam.Reshuffle(s, beam.CreateList(s, idx))
	batches := beam.ParDo(s, &scanFn{Job: *j, Threads: r.Threads, Buckets: b}, shards)
	return beam.CombinePerKey(s, &bucketFn{Spec: j.Spec}, batches)
}

// Groups implements shard.Runner.
func (r *Runner) Groups(ctx context.Context, j *shard.Job, path string) error {
	p, s := beam.NewPipelineWithRoot()
	buckets := r.buckets(s, j)
	contribs := beam.ParDo(s, &contributionsFn{Spec: j.Spec}, buckets)
	groups := beam.CombinePerKey(s, &groupFn{}, contribs)
	lines := beam.ParDo(s, &rowFn{Spec: j.Spec}, groups)
	return r.run(ctx, p, s, lines, path)
}

// Histogram implements shard.Runner.
func (r *Runner) Histogram(ctx context.Context, j *shard.Job) (shard.Histogram, error) {
	p, s := beam.NewPipelineWithRoot()
	buckets := r.buckets(s, j)
	contribs := beam.ParDo(s, &histogramContributionsFn{Spec: j.Spec}, buckets)
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

// maxBatch is the size at which scanFn emits a bucket's batch before the end of its file.
const maxBatch = 4 << 20

// scanFn runs the shard query over one file and emits its (unit, pair) rows in batches, one
// per bucket of units.
type scanFn struct {
	Job     shard.Job // a DoFn field: encoded as JSON for the workers
	Threads int
	Buckets int
}

func (fn *scanFn) ProcessElement(ctx context.Context, i int, emit func(int, []byte)) error {
	if i < 0 || i >= len(fn.Job.Shards) {
		return fmt.Errorf("sqlbeam: shard %d of %d", i, len(fn.Job.Shards))
	}
	batches := make([][]byte, fn.Buckets)
	err := shard.Scan(ctx, &fn.Job, fn.Job.Shards[i], fn.Threads, func(unit string, p shard.Pair) error {
		b := bucket(unit, fn.Buckets)
		batches[b] = shard.AppendRecord(batches[b], unit, p)
		if len(batches[b]) >= maxBatch {
			emit(b, batches[b])
			batches[b] = nil
		}
		return nil
	})
	if err != nil {
		return err
	}
	for b, batch := range batches {
		if len(batch) > 0 {
			emit(b, batch)
		}
	}
	return nil
}

// bucket is unit's bucket: FNV-1a of its text.
func bucket(unit string, n int) int {
	h := uint64(14695981039346656037)
	for i := 0; i < len(unit); i++ {
		h ^= uint64(unit[i])
		h *= 1099511628211
	}
	return int(h % uint64(n))
}

// bucketAcc holds the merged state of every unit of a bucket.
type bucketAcc struct{ Units map[string]*shard.Unit }

func encodeBucketAcc(a bucketAcc) []byte {
	var out []byte
	for unit, u := range a.Units {
		out = shard.AppendUnitRecord(out, unit, u)
	}
	return out
}

func decodeBucketAcc(b []byte) (bucketAcc, error) {
	a := bucketAcc{Units: map[string]*shard.Unit{}}
	err := shard.ReadUnitRecords(b, func(unit string, u *shard.Unit) error {
		a.Units[unit] = u
		return nil
	})
	return a, err
}

// bucketFn merges the (unit, pair) rows of a bucket from every file: per unit, its kappa
// pairs of smallest priority, each merged over files.
type bucketFn struct{ Spec *shard.Spec }

func (fn *bucketFn) CreateAccumulator() bucketAcc { return bucketAcc{Units: map[string]*shard.Unit{}} }

func (fn *bucketFn) AddInput(a bucketAcc, batch []byte) (bucketAcc, error) {
	if a.Units == nil {
		a.Units = map[string]*shard.Unit{}
	}
	err := shard.ReadRecords(batch, func(unit string, p shard.Pair) error {
		u := a.Units[unit]
		if u == nil {
			u = &shard.Unit{}
			a.Units[unit] = u
		}
		fn.Spec.Add(u, p)
		return nil
	})
	return a, err
}

func (fn *bucketFn) MergeAccumulators(a, b bucketAcc) bucketAcc {
	if len(a.Units) < len(b.Units) {
		a, b = b, a
	}
	if a.Units == nil {
		a.Units = map[string]*shard.Unit{}
	}
	for unit, u := range b.Units {
		if mine := a.Units[unit]; mine != nil {
			fn.Spec.Merge(mine, u)
		} else {
			a.Units[unit] = u
		}
	}
	return a
}

func (fn *bucketFn) ExtractOutput(a bucketAcc) bucketAcc { return a }

// groupAcc is a group's exact sums (shard.Group), or a histogram (shard.Histogram).
type groupAcc struct {
	G shard.Group
	H shard.Histogram
}

func encodeGroupAcc(a groupAcc) []byte {
	g := shard.EncodeGroup(a.G)
	out := binary.AppendUvarint(nil, uint64(len(g)))
	out = append(out, g...)
	return append(out, shard.EncodeHistogram(a.H)...)
}

func decodeGroupAcc(b []byte) (groupAcc, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return groupAcc{}, fmt.Errorf("sqlbeam: malformed group")
	}
	g, err := shard.DecodeGroup(b[k : k+int(n)])
	if err != nil {
		return groupAcc{}, err
	}
	h, err := shard.DecodeHistogram(b[k+int(n):])
	return groupAcc{G: g, H: h}, err
}

// contributionsFn sums, per group, what the bucket's kept (unit, group) pairs add to it.
type contributionsFn struct{ Spec *shard.Spec }

func (fn *contributionsFn) ProcessElement(_ int, a bucketAcc, emit func(string, groupAcc)) error {
	groups := map[string]*shard.Group{}
	for _, u := range a.Units {
		fn.Spec.Contributions(u, func(group string, c shard.Group) {
			g := groups[group]
			if g == nil {
				g = &shard.Group{}
				groups[group] = g
			}
			shard.MergeGroups(g, c)
		})
	}
	for k, g := range groups {
		emit(k, groupAcc{G: *g})
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

// histogramContributionsFn sums the histogram bins of a bucket's kept (unit, group) pairs.
type histogramContributionsFn struct{ Spec *shard.Spec }

func (fn *histogramContributionsFn) ProcessElement(_ int, a bucketAcc, emit func(groupAcc)) error {
	var h shard.Histogram
	for _, u := range a.Units {
		for _, p := range u.Pairs {
			shard.MergeHistograms(&h, fn.Spec.HistogramContribution(p))
		}
	}
	if h.Positive != nil {
		emit(groupAcc{H: h})
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
