package pbeam

import (
	"math"
	"reflect"
	"testing"
)

// The compact coders round-trip every field, and refuse truncated input
// with an error rather than a panic.
func TestWireRoundTrip(t *testing.T) {
	row := unitRow{Partition: "p\x00q", Pri: math.MaxUint64, VPri: 7, F: -1.5, I: math.MinInt64, Null: true, Enc: "e"}
	acc := unitAcc{E: []unitEntry{
		{Partition: "a", Pri: 1, Rows: 3, F: 2.5, I: -4, Vals: []float64{1, math.Inf(1)}, VPris: []uint64{9, 8}, Encs: []string{"x", ""}},
		{Partition: "", Pri: 2},
	}}
	con := contribution{Rows: 2, F: math.NaN(), I: 5, Vals: []float64{0.25}, Public: true, NoUnit: true}
	part := partAcc{Units: 4, Public: true, Count: 9, Sum: int128{Hi: -1, Lo: 3}, Sq: int128{Hi: 2, Lo: math.MaxUint64}, Leaves: map[int32]int64{-3: 2, 70000: 1}, ExactF: 1.25, ExactF2: 2, ExactI: -7}

	gotRow, err := decodeUnitRow(encodeUnitRow(row))
	if err != nil || !reflect.DeepEqual(gotRow, row) {
		t.Errorf("unitRow: %+v, %v; want %+v", gotRow, err, row)
	}
	gotAcc, err := decodeUnitAcc(encodeUnitAcc(acc))
	if err != nil || !reflect.DeepEqual(gotAcc, acc) {
		t.Errorf("unitAcc: %+v, %v; want %+v", gotAcc, err, acc)
	}
	gotCon, err := decodeContribution(encodeContribution(con))
	if err != nil || gotCon.Rows != con.Rows || !math.IsNaN(gotCon.F) || gotCon.I != con.I || !reflect.DeepEqual(gotCon.Vals, con.Vals) || !gotCon.Public || !gotCon.NoUnit {
		t.Errorf("contribution: %+v, %v; want %+v", gotCon, err, con)
	}
	gotPart, err := decodePartAcc(encodePartAcc(part))
	if err != nil || !reflect.DeepEqual(gotPart, part) {
		t.Errorf("partAcc: %+v, %v; want %+v", gotPart, err, part)
	}
	if got, err := decodeUnitAcc(encodeUnitAcc(unitAcc{})); err != nil || len(got.E) != 0 {
		t.Errorf("empty unitAcc: %+v, %v", got, err)
	}

	for name, enc := range map[string][]byte{"unitRow": encodeUnitRow(row), "unitAcc": encodeUnitAcc(acc), "contribution": encodeContribution(con), "partAcc": encodePartAcc(part)} {
		for n := 0; n < len(enc); n++ {
			var err error
			switch name {
			case "unitRow":
				_, err = decodeUnitRow(enc[:n])
			case "unitAcc":
				_, err = decodeUnitAcc(enc[:n])
			case "contribution":
				_, err = decodeContribution(enc[:n])
			case "partAcc":
				_, err = decodePartAcc(enc[:n])
			}
			if err == nil {
				t.Errorf("%s truncated to %d of %d bytes decoded without error", name, n, len(enc))
			}
		}
	}
}
