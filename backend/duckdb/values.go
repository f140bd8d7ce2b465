package duckdb

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strings"

	duckdbdrv "github.com/duckdb/duckdb-go/v2"

	"github.com/dpsql/dpsql/backend"
)

// convert turns a value as the driver returns it into the Go value documented in the package
// comment. typ is the column's upper-case DuckDB type name ("" inside nested values).
func convert(v any, typ string) any {
	if typ == "JSON" {
		// The driver decodes JSON values into maps and slices; a JSON value is its text (keys
		// in sorted order, as encoding/json writes them).
		switch v.(type) {
		case nil, string:
		default:
			if b, err := json.Marshal(v); err == nil {
				return string(b)
			}
		}
	}
	switch x := v.(type) {
	case nil:
		return nil
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int64:
		return x
	case int:
		return int64(x)
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case uint64:
		if x > math.MaxInt64 {
			return new(big.Int).SetUint64(x)
		}
		return int64(x)
	case float32:
		return float64(x)
	case duckdbdrv.Decimal:
		return decimal(x)
	case *duckdbdrv.Decimal:
		if x == nil {
			return nil
		}
		return decimal(*x)
	case duckdbdrv.Interval:
		return formatInterval(x)
	case []byte:
		if typ == "UUID" && len(x) == 16 {
			return fmt.Sprintf("%x-%x-%x-%x-%x", x[0:4], x[4:6], x[6:8], x[8:10], x[10:16])
		}
		return x
	case duckdbdrv.UUID:
		return x.String()
	case []any:
		elem := backend.ElemType(typ)
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = convert(e, elem)
		}
		return out
	case map[string]any:
		types := map[string]string{}
		for _, f := range backend.StructFields(typ) {
			types[f.Name] = f.Type
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = convert(e, types[k])
		}
		return out
	case duckdbdrv.OrderedMap:
		// In DuckDB's order: MAPs with the same entries in another order are other values.
		kt, vt := backend.MapTypes(typ)
		keys, vals := x.Keys(), x.Values()
		out := make(backend.Map, len(keys))
		for i, k := range keys {
			out[i] = backend.MapEntry{Key: convert(k, kt), Value: convert(vals[i], vt)}
		}
		return out
	case duckdbdrv.Union:
		return convert(x.Value, "")
	}
	return v
}

// decimal is a DECIMAL value, exactly (backend.Decimal).
func decimal(x duckdbdrv.Decimal) backend.Decimal {
	u := new(big.Int)
	if x.Value != nil {
		u.Set(x.Value)
	}
	return backend.Decimal{Unscaled: u, Scale: int(x.Scale)}
}

// formatInterval renders an interval like DuckDB: "1 year 2 months 3 days 04:05:06.000007".
func formatInterval(iv duckdbdrv.Interval) string {
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
	if iv.Micros != 0 || len(parts) == 0 {
		m := iv.Micros
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
