package pbeam

import (
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

func reflectTypeOf[T any]() reflect.Type { return reflect.TypeOf((*T)(nil)).Elem() }

type kvFloat struct {
	K int
	V float64
}

func toKVFloat(k int, v float64) kvFloat { return kvFloat{k, v} }

func init() {
	register.Function2x1(toKVFloat)
}

func beamList[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}
