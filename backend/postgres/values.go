package postgres

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dpsql/dpsql/backend"
)

// convert turns a value as pgx decodes it into the Go value documented in the package
// comment.
func convert(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int64:
		return x
	case uint32: // oid, xid
		return int64(x)
	case float32:
		return float64(x)
	case pgtype.Numeric:
		return numeric(x)
	case [16]byte: // uuid
		return fmt.Sprintf("%x-%x-%x-%x-%x", x[0:4], x[4:6], x[6:8], x[8:10], x[10:16])
	case pgtype.Interval:
		if !x.Valid {
			return nil
		}
		return formatInterval(x)
	case pgtype.Time:
		if !x.Valid {
			return nil
		}
		return time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(x.Microseconds) * time.Microsecond)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = convert(e)
		}
		return out
	}
	return v
}

// params converts arguments that pgx cannot encode itself: *big.Int becomes NUMERIC.
func params(args []any) []any {
	var out []any // a copy, made at the first change: the caller's slice is not modified
	for i, a := range args {
		b, ok := a.(*big.Int)
		if !ok {
			continue
		}
		if out == nil {
			out = append([]any(nil), args...)
		}
		if b == nil {
			out[i] = nil
		} else {
			out[i] = pgtype.Numeric{Int: b, Valid: true}
		}
	}
	if out == nil {
		return args
	}
	return out
}

// numeric converts a NUMERIC value: with no digits after the decimal point (display scale 0,
// which is what SUM over integers returns) exactly to *big.Int; otherwise exactly to a
// backend.Decimal with its display scale, as the DuckDB backend does for DECIMAL. NaN and
// ±Infinity become float64.
func numeric(n pgtype.Numeric) any {
	switch {
	case !n.Valid:
		return nil
	case n.NaN:
		return math.NaN()
	case n.InfinityModifier == pgtype.Infinity:
		return math.Inf(1)
	case n.InfinityModifier == pgtype.NegativeInfinity:
		return math.Inf(-1)
	}
	// pgx sets Exp to minus the display scale when the scale is positive, so Exp >= 0 means
	// an integer even for values like 100 (Int 1, Exp 2).
	if n.Exp >= 0 {
		i := new(big.Int).Set(n.Int)
		if n.Exp > 0 {
			i.Mul(i, pow10(int64(n.Exp)))
		}
		return i
	}
	return backend.Decimal{Unscaled: new(big.Int).Set(n.Int), Scale: int(-n.Exp)}
}

func pow10(e int64) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(e), nil)
}

// formatInterval renders an interval like the DuckDB backend: "1 year 2 months 3 days
// 04:05:06.000007".
func formatInterval(iv pgtype.Interval) string {
	var parts []string
	unit := func(n int64, name string) {
		if n == 0 {
			return
		}
		s := fmt.Sprintf("%d %s", n, name)
		if n != 1 && n != -1 {
			s += "s"
		}
		parts = append(parts, s)
	}
	unit(int64(iv.Months/12), "year")
	unit(int64(iv.Months%12), "month")
	unit(int64(iv.Days), "day")
	if iv.Microseconds != 0 || len(parts) == 0 {
		m := iv.Microseconds
		sign := ""
		if m < 0 {
			sign, m = "-", -m
		}
		s := fmt.Sprintf("%s%02d:%02d:%02d", sign, m/3_600_000_000, m/60_000_000%60, m/1_000_000%60)
		if us := m % 1_000_000; us != 0 {
			s += fmt.Sprintf(".%06d", us)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// typeNames returns the upper-cased format_type(oid, NULL) of each oid ("BIGINT",
// "DOUBLE PRECISION", "TEXT", "NUMERIC", "BIGINT[]", user types by name), asking the server
// once per type and DB and caching the answer.
func (db *DB) typeNames(ctx context.Context, c *pgx.Conn, oids []uint32) ([]string, error) {
	db.typesMu.Lock()
	var missing []uint32
	for _, o := range oids {
		if _, ok := db.types[o]; !ok {
			missing = append(missing, o)
		}
	}
	db.typesMu.Unlock()
	if len(missing) > 0 {
		rs, err := c.Query(ctx, `SELECT t.oid, upper(pg_catalog.format_type(t.oid, NULL))
			FROM pg_catalog.unnest($1::pg_catalog.oid[]) AS t(oid)`, missing)
		if err != nil {
			return nil, wrap(ctx, "read type names", err)
		}
		found := map[uint32]string{}
		var oid uint32
		var name string
		_, err = pgx.ForEachRow(rs, []any{&oid, &name}, func() error {
			found[oid] = name
			return nil
		})
		if err != nil {
			return nil, wrap(ctx, "read type names", err)
		}
		db.typesMu.Lock()
		for o, n := range found {
			db.types[o] = n
		}
		db.typesMu.Unlock()
	}
	names := make([]string, len(oids))
	db.typesMu.Lock()
	defer db.typesMu.Unlock()
	for i, o := range oids {
		n, ok := db.types[o]
		if !ok {
			n = fmt.Sprintf("OID %d", o)
		}
		names[i] = n
	}
	return names, nil
}
