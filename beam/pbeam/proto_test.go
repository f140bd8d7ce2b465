package pbeam

import (
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"google.golang.org/protobuf/proto"

	"github.com/dpsql/dpsql/beam/pbeam/internal/testpb"
)

func protoDay(v *testpb.Visit) int { return int(v.GetDay()) }

func init() {
	register.Function1x1(protoDay)
}

func TestMakePrivateFromProto(t *testing.T) {
	visits := []*testpb.Visit{
		{UserId: proto.Int64(1), Day: proto.Int64(1), Visitor: &testpb.Visit_Visitor{UserId: proto.String("a")}},
		{UserId: proto.Int64(1), Day: proto.Int64(2), Visitor: &testpb.Visit_Visitor{UserId: proto.String("a")}},
		{UserId: proto.Int64(2), Day: proto.Int64(1), Visitor: &testpb.Visit_Visitor{UserId: proto.String("b")}},
		// No visitor, no user_id: the default ids (0 and "").
		{Day: proto.Int64(1), Tags: []string{"x"}},
		{Day: proto.Int64(3)},
	}
	for _, tc := range []struct {
		path string
		want map[int]int64
	}{
		{"user_id", map[int]int64{1: 3, 2: 1, 3: 1}},         // units 1, 2, 0
		{"visitor.user_id", map[int]int64{1: 3, 2: 1, 3: 1}}, // units a, b, ""
	} {
		p, s, col := ptest.CreateList(visits)
		pcol := MakePrivateFromProto(s, col, testSpec(t, TestModeWithoutContributionBounding), tc.path)
		counts := DistinctPrivacyID(s, ParDo(s, protoDay, pcol), DistinctPrivacyIDParams{MaxPartitionsContributed: 3})
		passert.Equals(s, beam.ParDo(s, toKVInt, counts), kvIntList(tc.want)...)
		ptest.RunAndValidate(t, p)
	}
	// With a bound of one day per unit the units are told apart by the id
	// field: five messages, three units (1, 2 and the default), three rows.
	p, s, col := ptest.CreateList(visits)
	pcol := MakePrivateFromProto(s, col, testSpec(t, TestModeWithContributionBounding), "user_id")
	counts := DistinctPrivacyID(s, ParDo(s, protoDay, pcol), DistinctPrivacyIDParams{MaxPartitionsContributed: 1})
	passert.Equals(s, total(s, counts), int64(3))
	ptest.RunAndValidate(t, p)
}

func TestMakePrivateFromProtoErrors(t *testing.T) {
	_, s, col := ptest.CreateList([]*testpb.Visit{{Day: proto.Int64(1)}})
	spec := testSpec(t, TestModeDisabled)
	for path, want := range map[string]string{
		"":                 "empty",
		"nope":             "no field \"nope\"",
		"tags":             "repeated",
		"others.user_id":   "repeated",
		"visitor":          "is a message",
		"day.x":            "not a message",
		"visitor.country2": "no field",
	} {
		wantConstructionError(t, want, func() { MakePrivateFromProto(s, col, spec, path) })
	}
	_, s2, structs := ptest.CreateList(pageVisits)
	wantConstructionError(t, "not a proto message", func() { MakePrivateFromProto(s2, structs, spec, "User") })
	wantConstructionError(t, "nil", func() { MakePrivateFromProto(s, col, nil, "user_id") })
	if !strings.Contains(testpb.File_testpb_proto.Path(), "testpb.proto") {
		t.Error("unexpected test proto file")
	}
}
