package main

import (
	"context"
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/dpsql/dpsql/beam/internal/dofn"
)

// Visit is one restaurant visit (the thesis' running example).
type Visit struct {
	VisitorID    string
	TimeEntered  int     // hour of entry, 8..22
	MinutesSpent int     // 5..90 (MeanPerKey clamps to 0..60)
	EurosSpent   float64 // 0..80 (SumPerKey clamps per visitor and day to 0..50)
	Day          int     // weekday, 1..7
}

// Days are the public partitions of the public-partition SumPerKey.
var Days = []int{1, 2, 3, 4, 5, 6, 7}

// Partition-keying functions, applied with pbeam.ParDo as PoB programs do.
// They know nothing of pbeam, so they work unchanged with any pbeam.

func dayEurosFn(v Visit) (int, float64) { return v.Day, v.EurosSpent }
func hourFn(v Visit) int                { return v.TimeEntered }
func hourMinutesFn(v Visit) (int, int)  { return v.TimeEntered, v.MinutesSpent }
func dayFn(v Visit) int                 { return v.Day }

// genFn generates the rows of one shard of the synthetic data set.
type genFn struct {
	Seed     int64
	Rows     int64
	Visitors int64
	Shards   int
}

func (f *genFn) ProcessElement(shard int, emit func(Visit)) {
	GenerateShard(f.Seed, shard, f.Shards, f.Rows, f.Visitors, emit)
}

// sinkFn counts the elements of one output in a Beam counter (so the count is
// reported by every runner through the pipeline result) and optionally prints them.
type sinkFn struct {
	Name  string
	Print bool
	c     beam.Counter
}

func (f *sinkFn) Setup() { f.c = beam.NewCounter("pbeam-bench", f.Name) }

func (f *sinkFn) ProcessElement(ctx context.Context, k beam.X, v beam.Y) {
	f.c.Inc(ctx, 1)
	if f.Print {
		fmt.Printf("%s\t%v\t%v\n", f.Name, k, v)
	}
}

// CountSink makes the pipeline consume col (a PCollection<K,V>) and count its elements.
func CountSink(s beam.Scope, name string, col beam.PCollection, print bool) {
	beam.ParDo0(s.Scope("sink_"+name), &sinkFn{Name: name, Print: print}, col)
}

func init() {
	beam.RegisterType(reflect.TypeOf((*Visit)(nil)).Elem())
	register.Function1x2[Visit, int, float64](dayEurosFn)
	register.Function1x1[Visit, int](hourFn)
	register.Function1x2[Visit, int, int](hourMinutesFn)
	register.Function1x1[Visit, int](dayFn)
	dofn.DoFn2x0[int, func(Visit)](&genFn{})
	register.Emitter1[Visit]()
	dofn.DoFn3x0[context.Context, beam.X, beam.Y](&sinkFn{})
}
