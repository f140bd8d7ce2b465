package pbeam

import (
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

type ctInner struct {
	Name string
	N    int
}

type ctOuter struct {
	Name    string
	N       int
	NamePtr *string
	Sub     *ctInner
	Val     ctInner
	Names   []string
	Subs    []ctInner
}

type ctPublicEmbedded struct {
	*CtPublicInner
	V int
}

// CtPublicInner is exported so that it can be embedded by an exported field.
type CtPublicInner struct{ UserID string }

type ctBadID struct {
	C chan int
	V int
}

func ctIntPair(k, v int) (int, int) { return k, v }
func ctZeroKey(v int) (int, int)    { return 0, v }
func ctZeroValue(v int) (int, int)  { return v, 0 }
func ctOuterN(o ctOuter) int        { return o.N }
func ctPubEmbeddedV(e ctPublicEmbedded) int {
	return e.V
}

func init() {
	register.Function2x2(ctIntPair)
	register.Function1x2(ctZeroKey)
	register.Function1x2(ctZeroValue)
	register.Function1x1(ctOuterN)
	register.Function1x1(ctPubEmbeddedV)
	for _, t := range []any{ctOuter{}, ctInner{}, ctPublicEmbedded{}, CtPublicInner{}} {
		beam.RegisterType(reflectTypeOfValue(t))
	}
}

func TestMakePrivateKeepsElements(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	kvs := beam.ParDo(s, ctIntPair, beam.ParDo(s, ctZeroKey, beam.CreateList(s, []int{42, 0})))
	spec := ctSpec(t, PrivacySpecParams{AggregationEpsilon: 1})
	pcol := MakePrivate(s, kvs, spec)
	passert.Equals(s, ctStrings(s, pcol), "0|42", "0|0")
	ctRun(t, p)
}

func TestMakePrivateFromStructPaths(t *testing.T) {
	fortyTwo, seventeen := "42", "17"
	rows := []ctOuter{
		{Name: "a", N: 1, NamePtr: &fortyTwo, Sub: &ctInner{Name: "x", N: 5}, Val: ctInner{Name: "v", N: 7}},
		{Name: "b", N: 2, NamePtr: &seventeen, Sub: nil, Val: ctInner{Name: "w", N: 8}},
	}
	for _, tc := range []struct {
		path string
		want []any
	}{
		{"Name", []any{`"a"|1`, `"b"|2`}},
		{"N", []any{`1|1`, `2|2`}},
		{"NamePtr", []any{`"42"|1`, `"17"|2`}},
		{"Sub.Name", []any{`"x"|1`, `""|2`}}, // a nil pointer on the path reads as the zero value
		{"Sub.N", []any{`5|1`, `0|2`}},
		{"Val.N", []any{`7|1`, `8|2`}},
	} {
		p, s := beam.NewPipelineWithRoot()
		pcol := MakePrivateFromStruct(s, beam.CreateList(s, rows), ctSpec(t, PrivacySpecParams{AggregationEpsilon: 1}), tc.path)
		passert.Equals(s, ctStrings(s, ParDo(s, ctOuterN, pcol)), tc.want...)
		if err := ptest.Run(p); err != nil {
			t.Errorf("path %s: %v", tc.path, err)
		}
	}
}

func TestMakePrivateFromStructRefusals(t *testing.T) {
	spec := ctSpec(t, PrivacySpecParams{AggregationEpsilon: 1})
	for _, tc := range []struct {
		path string
		want string
	}{
		{"", "empty"},
		{"Missing", `no field "Missing"`},
		{"Sub", "must be a bool, an integer, a float or a string"},
		{"Val", "must be a bool, an integer, a float or a string"},
		{"Names", "must be a bool, an integer, a float or a string"},
		{"Subs", "must be a bool, an integer, a float or a string"},
		{"Subs.Name", "not a struct"},
		{"Names.X", "not a struct"},
		{"Sub.Missing", `no field "Missing"`},
		{"Name.X", "not a struct"},
	} {
		p, s := beam.NewPipelineWithRoot()
		_ = p
		col := beam.CreateList(s, []ctOuter{{Name: "a"}})
		ctMustFail(t, func() { MakePrivateFromStruct(s, col, spec, tc.path) }, "pbeam.MakePrivateFromStruct", tc.want)
	}
	p, s := beam.NewPipelineWithRoot()
	_ = p
	ctMustFail(t, func() { MakePrivateFromStruct(s, beam.CreateList(s, []int{1}), spec, "ID") }, "not structs")
	ctMustFail(t, func() {
		MakePrivateFromStruct(s, beam.ParDo(s, ctZeroKey, beam.CreateList(s, []int{1})), spec, "ID")
	}, "KV")
	ctMustFail(t, func() { MakePrivateFromStruct(s, beam.CreateList(s, []ctOuter{{}}), nil, "N") }, "nil")
	ctMustFail(t, func() { MakePrivate(s, beam.CreateList(s, []int{1}), spec) }, "KV<ID, V>")
	ctMustFail(t, func() { MakePrivate(s, beam.ParDo(s, ctZeroKey, beam.CreateList(s, []int{1})), nil) }, "nil")
}

// TestMakePrivateFromStructNilEmbedded: an id promoted through a nil
// embedded pointer reads as the zero value instead of panicking in a worker.
func TestMakePrivateFromStructNilEmbedded(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	rows := []ctPublicEmbedded{{CtPublicInner: &CtPublicInner{UserID: "u"}, V: 1}, {V: 2}}
	pcol := MakePrivateFromStruct(s, beam.CreateList(s, rows), ctSpec(t, PrivacySpecParams{AggregationEpsilon: 1}), "UserID")
	passert.Equals(s, ctStrings(s, ParDo(s, ctPubEmbeddedV, pcol)), `"u"|1`, `""|2`)
	ctRun(t, p)
}

// TestMakePrivateRefusesUnencodableIDs: a privacy id or value that Beam
// cannot encode is refused at construction, not in a worker.
func TestMakePrivateRefusesUnencodableIDs(t *testing.T) {
	spec := ctSpec(t, PrivacySpecParams{AggregationEpsilon: 1})
	for _, typ := range []any{func() {}, make(chan int), ctBadID{}} {
		tt := reflectTypeOfValue(typ)
		if err := checkCodable(tt); err == nil {
			t.Errorf("checkCodable(%v) accepted a type Beam cannot encode", tt)
		}
	}
	for _, typ := range []any{0, "", 1.5, []byte{}, ctOuter{}, &ctInner{}, []int{}, map[string]int{}} {
		tt := reflectTypeOfValue(typ)
		if err := checkCodable(tt); err != nil {
			t.Errorf("checkCodable(%v): %v", tt, err)
		}
	}
	// A ParDo whose output Beam cannot encode.
	p, s := beam.NewPipelineWithRoot()
	_ = p
	pcol := MakePrivate(s, beam.ParDo(s, ctZeroKey, beam.CreateList(s, []int{1})), spec)
	ctMustFail(t, func() { ParDo(s, func(int) ctBadID { return ctBadID{} }, pcol) }, "pbeam.ParDo", "cannot encode")
}

func TestDropKeyAndDropValue(t *testing.T) {
	// ids 1 and 2 hold the value 100; adding a key (or value) 0 and dropping
	// it again gives the same PrivatePCollection, whose Count is exact in
	// test mode.
	for _, drop := range []string{"key", "value"} {
		p, s := beam.NewPipelineWithRoot()
		base := beam.ParDo(s, ctIdentityPair, beam.CreateList(s, []int{1, 2}))
		spec := ctSpec(t, PrivacySpecParams{AggregationEpsilon: 1, TestMode: TestModeWithContributionBounding})
		pcol := MakePrivate(s, base, spec)
		var dropped PrivatePCollection
		if drop == "key" {
			dropped = DropKey(s, ParDo(s, ctZeroKey, pcol))
		} else {
			dropped = DropValue(s, ParDo(s, ctZeroValue, pcol))
		}
		passert.Equals(s, ctStrings(s, dropped), "1|100", "2|100")
		c := newCollector(t)
		c.kv(s, Count(s, dropped, CountParams{MaxPartitionsContributed: 1, MaxValue: 1, PublicPartitions: []int{100}}))
		ctRun(t, p)
		ctWant(t, "Count after Drop"+drop, c.floats(t), map[int]float64{100: 2})
	}
	p, s := beam.NewPipelineWithRoot()
	_ = p
	single := MakePrivate(s, beam.ParDo(s, ctZeroKey, beam.CreateList(s, []int{1})), ctSpec(t, PrivacySpecParams{AggregationEpsilon: 1}))
	ctMustFail(t, func() { DropKey(s, single) }, "pbeam.DropKey", "PrivatePCollection<K,V>")
	ctMustFail(t, func() { DropValue(s, single) }, "pbeam.DropValue", "PrivatePCollection<K,V>")
	ctMustFail(t, func() { DropKey(s, PrivatePCollection{}) }, "not made with MakePrivate")
}

func ctIdentityPair(v int) (int, int) { return v, 100 }

func init() { register.Function1x2(ctIdentityPair) }
