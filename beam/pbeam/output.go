package pbeam

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/dpsql/dpsql/beam/internal/dofn"
)

// The last step of an aggregation: decode the partition key and emit the
// released value with the type PoB's function returns.

func init() {
	dofn.DoFn3x1[string, partResult, func(beam.W, int64), error](&int64OutFn{})
	dofn.DoFn3x1[string, partResult, func(beam.W, float64), error](&float64OutFn{})
	dofn.DoFn3x1[string, partResult, func(beam.W, []float64), error](&floatsOutFn{})
	dofn.DoFn3x1[string, partResult, func(beam.W), error](&keyOutFn{})
	register.Emitter2[beam.W, int64]()
	register.Emitter2[beam.W, float64]()
	register.Emitter2[beam.W, []float64]()
	register.Emitter1[beam.W]()
}

type int64OutFn struct{ Codec *elementCodec }

func (fn *int64OutFn) ProcessElement(k string, r partResult, emit func(beam.W, int64)) error {
	key, err := fn.Codec.decode([]byte(k))
	if err != nil {
		return err
	}
	emit(key, r.I)
	return nil
}

type float64OutFn struct{ Codec *elementCodec }

func (fn *float64OutFn) ProcessElement(k string, r partResult, emit func(beam.W, float64)) error {
	key, err := fn.Codec.decode([]byte(k))
	if err != nil {
		return err
	}
	emit(key, r.F)
	return nil
}

type floatsOutFn struct{ Codec *elementCodec }

func (fn *floatsOutFn) ProcessElement(k string, r partResult, emit func(beam.W, []float64)) error {
	key, err := fn.Codec.decode([]byte(k))
	if err != nil {
		return err
	}
	emit(key, r.Fs)
	return nil
}

type keyOutFn struct{ Codec *elementCodec }

func (fn *keyOutFn) ProcessElement(k string, _ partResult, emit func(beam.W)) error {
	key, err := fn.Codec.decode([]byte(k))
	if err != nil {
		return err
	}
	emit(key)
	return nil
}

// output decodes the released partitions of ag into PCollection<KV<K, T>>
// (or PCollection<K> for keyOutFn), with K the partition type.
func (ag *aggregation) output(s beam.Scope, released beam.PCollection, fn any) beam.PCollection {
	return beam.ParDo(s, fn, released, beam.TypeDefinition{Var: beam.WType, T: ag.partitionType()})
}
