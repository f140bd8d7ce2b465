package store

import (
	"errors"
	"testing"

	"github.com/dpsql/dpsql/sqlerr"
)

func TestPlanReadsFixedFormats(t *testing.T) {
	for _, c := range []struct {
		plan    string
		refused bool
	}{
		// DuckDB cannot serialize its CSV and JSON scans, however they are reached.
		{`{"error":true,"error_type":"not implemented","error_message":"CSVReaderSerialize not implemented"}`, true},
		{`{"error":true,"error_type":"not implemented","error_message":"JSONScan Serialize not implemented"}`, true},
		{`{"error":true,"error_message":"something else"}`, true},
		// Named readers are refused should a DuckDB serialize them one day.
		{`{"plan":[{"type":"LOGICAL_GET","function":{"name":"read_csv_auto"}}]}`, true},
		{`{"plan":[{"function":{"name" : "sniff_csv"}}]}`, true},
		// Tables and Parquet files.
		{`{"plan":[{"type":"LOGICAL_GET","function":{"name":"seq_scan"}},{"function":{"name":"read_parquet"}}]}`, false},
	} {
		err := planReadsFixedFormats("v", c.plan)
		var se *sqlerr.Error
		if got := errors.As(err, &se) && se.Rule == RuleFixedFileFormat; got != c.refused {
			t.Errorf("%s: refused %v, want %v (%v)", c.plan, got, c.refused, err)
		}
	}
}
