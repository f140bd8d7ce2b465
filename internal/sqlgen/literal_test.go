package sqlgen_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/sqlgen"
)

// TestFloatLiteralsExact: a released float printed by Literal reads back in DuckDB as the
// same float, bit for bit (the post-processing query reads released values and keys from
// such literals). Printed as a decimal, 0.9728715705275349 read back one ulp away: DuckDB
// reads it as a DECIMAL and converts it.
func TestFloatLiteralsExact(t *testing.T) {
	ctx := context.Background()
	db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := rand.New(rand.NewPCG(1, 2))
	xs := []float64{0.9728715705275349, 0.9916624506728011, -1.0880587745086054, 1e300, -5e-324,
		math.MaxFloat64, 0.1, 3, 123456789.12345679, math.SmallestNonzeroFloat64}
	for range 300 {
		xs = append(xs, r.Float64(), r.NormFloat64()*1e6, math.Float64frombits(r.Uint64()&^(0x7ff<<52)|uint64(1+r.IntN(2045))<<52))
	}
	var lits []string
	for _, x := range xs {
		lit, err := sqlgen.Literal(backend.DuckDB, x, "DOUBLE")
		if err != nil {
			t.Fatal(err)
		}
		lits = append(lits, lit)
	}
	rows, err := db.Query(ctx, "SELECT unnest(["+strings.Join(lits, ", ")+"])")
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range rows.Values {
		if got, _ := row[0].(float64); math.Float64bits(got) != math.Float64bits(xs[i]) {
			t.Errorf("%s read back as %v, want %v", lits[i], row[0], xs[i])
		}
	}
	if len(rows.Values) != len(xs) {
		t.Fatalf("%d values read back, want %d", len(rows.Values), len(xs))
	}
}
