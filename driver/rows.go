package driver

import (
	"database/sql/driver"
	"fmt"
	"io"
	"math/big"
	"reflect"
	"strings"
	"time"

	"github.com/dpsql/dpsql"
)

// rows are a script's results, one result set per statement.
type rows struct {
	res []*dpsql.Result
	set int // the current result set
	row int // the next row of it
}

var (
	_ driver.RowsNextResultSet              = (*rows)(nil)
	_ driver.RowsColumnTypeDatabaseTypeName = (*rows)(nil)
	_ driver.RowsColumnTypeScanType         = (*rows)(nil)
)

func newRows(res []*dpsql.Result) *rows {
	if len(res) == 0 {
		res = []*dpsql.Result{{}} // a script without statements: one empty result set
	}
	return &rows{res: res}
}

func (r *rows) cur() *dpsql.Result { return r.res[r.set] }

func (r *rows) Columns() []string {
	cols := make([]string, len(r.cur().Columns))
	for i, c := range r.cur().Columns {
		cols[i] = c.Name
	}
	return cols
}

func (r *rows) Close() error { return nil }

func (r *rows) Next(dest []driver.Value) error {
	cur := r.cur()
	if r.row >= len(cur.Rows) {
		return io.EOF
	}
	row := cur.Rows[r.row]
	r.row++
	if len(row) != len(dest) {
		return fmt.Errorf("dpsql driver: a row of %d values for %d columns", len(row), len(dest))
	}
	for i, v := range row {
		dest[i] = decimalsAsText(v)
	}
	return nil
}

// decimalsAsText is v with every dpsql.Decimal, in lists, STRUCTs and MAPs too, replaced by
// its exact text: a standard driver value, which scans into *string, *float64 and *any, where
// a dpsql.Decimal would scan into none of them.
func decimalsAsText(v any) any {
	switch x := v.(type) {
	case dpsql.Decimal:
		return x.String()
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = decimalsAsText(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = decimalsAsText(e)
		}
		return out
	case dpsql.Map:
		out := make(dpsql.Map, len(x))
		for i, e := range x {
			out[i] = dpsql.MapEntry{Key: decimalsAsText(e.Key), Value: decimalsAsText(e.Value)}
		}
		return out
	}
	return v
}

func (r *rows) HasNextResultSet() bool { return r.set+1 < len(r.res) }

func (r *rows) NextResultSet() error {
	if !r.HasNextResultSet() {
		return io.EOF
	}
	r.set++
	r.row = 0
	return nil
}

// ColumnTypeDatabaseTypeName is the engine's type name of the column (BIGINT, DOUBLE,
// VARCHAR, ...).
func (r *rows) ColumnTypeDatabaseTypeName(i int) string { return r.cur().Columns[i].Type }

var (
	typeInt64  = reflect.TypeFor[int64]()
	typeFloat  = reflect.TypeFor[float64]()
	typeString = reflect.TypeFor[string]()
	typeBool   = reflect.TypeFor[bool]()
	typeTime   = reflect.TypeFor[time.Time]()
	typeBig    = reflect.TypeFor[*big.Int]()
	typeAny    = reflect.TypeFor[any]()
)

// ColumnTypeScanType is the Go type of the column's values, from its type name; any when the
// values may be of several types (NUMERIC: *big.Int or the text of a decimal) or the type is
// unknown. DECIMAL values are their exact text.
func (r *rows) ColumnTypeScanType(i int) reflect.Type {
	t := strings.ToUpper(r.cur().Columns[i].Type)
	if strings.HasSuffix(t, "]") {
		return reflect.TypeFor[[]any]()
	}
	if j := strings.IndexByte(t, '('); j >= 0 {
		t = t[:j]
	}
	switch strings.TrimSpace(t) {
	case "BIGINT", "INTEGER", "INT", "SMALLINT", "TINYINT", "UINTEGER", "USMALLINT", "UTINYINT", "INT64", "INT8", "INT4", "INT2":
		return typeInt64
	case "DOUBLE", "FLOAT", "REAL", "DOUBLE PRECISION", "FLOAT64", "FLOAT8", "FLOAT4":
		return typeFloat
	case "VARCHAR", "TEXT", "STRING", "CHARACTER VARYING", "INTERVAL", "UUID", "DECIMAL":
		return typeString
	case "BOOLEAN", "BOOL":
		return typeBool
	case "DATE", "TIME", "TIMESTAMP", "TIMESTAMP WITH TIME ZONE", "TIMESTAMP WITHOUT TIME ZONE", "TIMESTAMPTZ":
		return typeTime
	case "HUGEINT", "UHUGEINT", "BIGNUM":
		return typeBig
	}
	return typeAny
}

// BigInt scans an integer value of any size: an int64 or a *big.Int (and, like database/sql,
// the text of an integer, or of a whole DECIMAL such as "5.00"). NULL leaves Int nil.
//
//	var n driver.BigInt
//	err := rows.Scan(&n) // n.Int is a *big.Int
type BigInt struct {
	Int *big.Int
}

// Scan implements sql.Scanner.
func (b *BigInt) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		b.Int = nil
	case int64:
		b.Int = big.NewInt(v)
	case *big.Int:
		b.Int = new(big.Int).Set(v)
	case string:
		n, ok := new(big.Int).SetString(v, 10)
		if !ok {
			// The text of a DECIMAL with zeros after the point ("5.00") is an integer too.
			r, isRat := new(big.Rat).SetString(v)
			if !isRat || !r.IsInt() || strings.ContainsAny(v, "/eE") {
				return fmt.Errorf("dpsql driver: %q is not an integer", v)
			}
			n = new(big.Int).Set(r.Num())
		}
		b.Int = n
	case []byte:
		return b.Scan(string(v))
	default:
		return fmt.Errorf("dpsql driver: cannot scan %T into a BigInt", src)
	}
	return nil
}
