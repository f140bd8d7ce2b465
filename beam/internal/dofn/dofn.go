// Package dofn registers the beam module's structural DoFns with Beam, as the SDK's
// register.DoFnNxM do, for the runners to find them by name and call their ProcessElement
// through a typed caller rather than reflection, at a fraction of the compile time.
//
// register.DoFnNxM also builds wrappers for StartBundle and FinishBundle: for each DoFn it
// instantiates every signature those methods could have (up to seven parameters), several
// thousand generic functions per DoFn. The 43 DoFns of pbeam, sqlbeam and their tests made
// pbeam's object file 670 MB (123,000 functions), and compiling pbeam and its test variant
// took the compiler 100 s of wall time each on this 2-core machine: most of the beam module's
// vet and build in the test suite. Here only ProcessElement is wrapped; Beam calls the
// lifecycle methods a DoFn may also have (Setup, StartBundle, FinishBundle, Teardown) by
// reflection, once per bundle or per worker (graph.NewFn falls back to reflection for every
// method the struct wrapper lacks).
package dofn

import (
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/reflectx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

// structural registers doFn's type (by name, for the runners; and for schemas) and a struct
// wrapper whose ProcessElement is processElement's typed function of an instance.
func structural(doFn any, processElement func(instance any) any) {
	t := reflect.TypeOf(doFn).Elem()
	beam.RegisterType(t)
	reflectx.RegisterStructWrapper(t, func(instance any) map[string]reflectx.Func {
		return map[string]reflectx.Func{"ProcessElement": reflectx.MakeFunc(processElement(instance))}
	})
}

// Each DoFnNxM registers a DoFn whose ProcessElement takes N parameters and returns M
// results: register.FunctionNxM registers the typed caller of ProcessElement's function type
// (reflectx.MakeFunc finds it) and the struct types among its parameters and results.

func DoFn1x2[I0, R0, R1 any](doFn interface{ ProcessElement(I0) (R0, R1) }) {
	register.Function1x2(doFn.ProcessElement)
	structural(doFn, func(fn any) any { return fn.(interface{ ProcessElement(I0) (R0, R1) }).ProcessElement })
}

func DoFn1x3[I0, R0, R1, R2 any](doFn interface{ ProcessElement(I0) (R0, R1, R2) }) {
	register.Function1x3(doFn.ProcessElement)
	structural(doFn, func(fn any) any { return fn.(interface{ ProcessElement(I0) (R0, R1, R2) }).ProcessElement })
}

func DoFn2x0[I0, I1 any](doFn interface{ ProcessElement(I0, I1) }) {
	register.Function2x0(doFn.ProcessElement)
	structural(doFn, func(fn any) any { return fn.(interface{ ProcessElement(I0, I1) }).ProcessElement })
}

func DoFn2x1[I0, I1, R0 any](doFn interface{ ProcessElement(I0, I1) R0 }) {
	register.Function2x1(doFn.ProcessElement)
	structural(doFn, func(fn any) any { return fn.(interface{ ProcessElement(I0, I1) R0 }).ProcessElement })
}

func DoFn2x2[I0, I1, R0, R1 any](doFn interface{ ProcessElement(I0, I1) (R0, R1) }) {
	register.Function2x2(doFn.ProcessElement)
	structural(doFn, func(fn any) any { return fn.(interface{ ProcessElement(I0, I1) (R0, R1) }).ProcessElement })
}

func DoFn2x3[I0, I1, R0, R1, R2 any](doFn interface{ ProcessElement(I0, I1) (R0, R1, R2) }) {
	register.Function2x3(doFn.ProcessElement)
	structural(doFn, func(fn any) any { return fn.(interface{ ProcessElement(I0, I1) (R0, R1, R2) }).ProcessElement })
}

func DoFn3x0[I0, I1, I2 any](doFn interface{ ProcessElement(I0, I1, I2) }) {
	register.Function3x0(doFn.ProcessElement)
	structural(doFn, func(fn any) any { return fn.(interface{ ProcessElement(I0, I1, I2) }).ProcessElement })
}

func DoFn3x1[I0, I1, I2, R0 any](doFn interface{ ProcessElement(I0, I1, I2) R0 }) {
	register.Function3x1(doFn.ProcessElement)
	structural(doFn, func(fn any) any { return fn.(interface{ ProcessElement(I0, I1, I2) R0 }).ProcessElement })
}

func DoFn4x0[I0, I1, I2, I3 any](doFn interface{ ProcessElement(I0, I1, I2, I3) }) {
	register.Function4x0(doFn.ProcessElement)
	structural(doFn, func(fn any) any { return fn.(interface{ ProcessElement(I0, I1, I2, I3) }).ProcessElement })
}

func DoFn4x1[I0, I1, I2, I3, R0 any](doFn interface{ ProcessElement(I0, I1, I2, I3) R0 }) {
	register.Function4x1(doFn.ProcessElement)
	structural(doFn, func(fn any) any { return fn.(interface{ ProcessElement(I0, I1, I2, I3) R0 }).ProcessElement })
}
