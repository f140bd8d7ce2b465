package pgwire

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dpsql/dpsql/backend"
)

// PostgreSQL type OIDs dpsql sends and reads.
const (
	oidBool        = 16
	oidBytea       = 17
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidText        = 25
	oidJSON        = 114
	oidFloat4      = 700
	oidFloat8      = 701
	oidUnknown     = 705
	oidBPChar      = 1042
	oidVarchar     = 1043
	oidDate        = 1082
	oidTime        = 1083
	oidTimestamp   = 1114
	oidTimestamptz = 1184
	oidInterval    = 1186
	oidNumeric     = 1700
	oidUUID        = 2950
)

// arrayOIDs maps an element type's OID to its array type's OID.
var arrayOIDs = map[uint32]uint32{
	oidBool: 1000, oidBytea: 1001, oidInt2: 1005, oidInt4: 1007, oidInt8: 1016, oidText: 1009,
	oidJSON: 199, oidFloat4: 1021, oidFloat8: 1022, oidBPChar: 1014, oidVarchar: 1015,
	oidDate: 1182, oidTime: 1183, oidTimestamp: 1115, oidTimestamptz: 1185, oidInterval: 1187,
	oidNumeric: 1231, oidUUID: 2951,
}

// pgType is the wire type of a column: its OID, type modifier and size (-1: variable).
type pgType struct {
	oid    uint32
	typmod int32
	size   int16
	elem   uint32 // for arrays: the element OID
	sql    string // the engine's type name, for nested values (a STRUCT's fields, a MAP's types)
}

// scalarTypes maps engine type names (DuckDB's and PostgreSQL's spellings) to OIDs.
var scalarTypes = map[string]uint32{
	"BIGINT": oidInt8, "INT8": oidInt8, "LONG": oidInt8, "UBIGINT": oidNumeric,
	"INTEGER": oidInt4, "INT": oidInt4, "INT4": oidInt4, "UINTEGER": oidInt8,
	"SMALLINT": oidInt2, "INT2": oidInt2, "TINYINT": oidInt2, "UTINYINT": oidInt2, "USMALLINT": oidInt4,
	"HUGEINT": oidNumeric, "UHUGEINT": oidNumeric, "BIGNUM": oidNumeric, "VARINT": oidNumeric,
	"DOUBLE": oidFloat8, "DOUBLE PRECISION": oidFloat8, "FLOAT8": oidFloat8,
	"FLOAT": oidFloat4, "REAL": oidFloat4, "FLOAT4": oidFloat4,
	"DECIMAL": oidNumeric, "NUMERIC": oidNumeric,
	"VARCHAR": oidVarchar, "CHARACTER VARYING": oidVarchar, "STRING": oidVarchar,
	"TEXT": oidText, "CHAR": oidBPChar, "CHARACTER": oidBPChar, "BPCHAR": oidBPChar,
	"BOOLEAN": oidBool, "BOOL": oidBool,
	"DATE":      oidDate,
	"TIMESTAMP": oidTimestamp, "TIMESTAMP WITHOUT TIME ZONE": oidTimestamp, "DATETIME": oidTimestamp,
	"TIMESTAMP_S": oidTimestamp, "TIMESTAMP_MS": oidTimestamp, "TIMESTAMP_NS": oidTimestamp,
	"TIMESTAMP WITH TIME ZONE": oidTimestamptz, "TIMESTAMPTZ": oidTimestamptz,
	"TIME": oidTime, "TIME WITHOUT TIME ZONE": oidTime,
	"INTERVAL": oidInterval,
	"BLOB":     oidBytea, "BYTEA": oidBytea,
	"UUID": oidUUID,
	"JSON": oidJSON,
}

var typeSizes = map[uint32]int16{
	oidBool: 1, oidInt2: 2, oidInt4: 4, oidInt8: 8, oidFloat4: 4, oidFloat8: 8, oidDate: 4,
	oidTime: 8, oidTimestamp: 8, oidTimestamptz: 8, oidInterval: 16, oidUUID: 16,
}

// typeOf maps an engine column type name to its wire type; unknown types are text.
func typeOf(name string) pgType {
	t := wireType(name)
	t.sql = name
	return t
}

func wireType(name string) pgType {
	n := strings.ToUpper(strings.TrimSpace(name))
	if base, ok := strings.CutSuffix(n, "[]"); ok {
		el := typeOf(base)
		if arr, ok := arrayOIDs[el.oid]; ok && el.elem == 0 {
			return pgType{oid: arr, typmod: -1, size: -1, elem: el.oid}
		}
		return pgType{oid: 1009, typmod: -1, size: -1, elem: oidText}
	}
	typmod := int32(-1)
	if i := strings.IndexByte(n, '('); i > 0 && strings.HasSuffix(n, ")") {
		args := strings.Split(n[i+1:len(n)-1], ",")
		n = strings.TrimSpace(n[:i])
		if n == "DECIMAL" || n == "NUMERIC" {
			p, err1 := strconv.Atoi(strings.TrimSpace(args[0]))
			s := 0
			var err2 error
			if len(args) > 1 {
				s, err2 = strconv.Atoi(strings.TrimSpace(args[1]))
			}
			if err1 == nil && err2 == nil && p > 0 && p <= 1000 && s >= 0 && s <= p {
				typmod = int32(p<<16|s) + 4
			}
		} else if len(args) == 1 {
			if l, err := strconv.Atoi(strings.TrimSpace(args[0])); err == nil && l > 0 && l < 1<<20 {
				typmod = int32(l) + 4 // varchar(n), char(n)
			}
		}
	}
	oid, ok := scalarTypes[n]
	if !ok {
		oid = oidText
	}
	size, ok := typeSizes[oid]
	if !ok {
		size = -1
	}
	return pgType{oid: oid, typmod: typmod, size: size}
}

// textValue is v in PostgreSQL's text output format for a column of type t (ok false: NULL).
func textValue(v any, t pgType) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case string:
		return x, true
	case bool:
		if x {
			return "t", true
		}
		return "f", true
	case int64:
		return strconv.FormatInt(x, 10), true
	case int:
		return strconv.Itoa(x), true
	case int32:
		return strconv.FormatInt(int64(x), 10), true
	case uint64:
		return strconv.FormatUint(x, 10), true
	case float64:
		bits := 64
		if t.oid == oidFloat4 || t.elem == oidFloat4 {
			bits = 32
		}
		return formatFloat(x, bits), true
	case float32:
		return formatFloat(float64(x), 32), true
	case *big.Int:
		if x == nil {
			return "", false
		}
		return x.String(), true
	case *big.Rat:
		if x == nil {
			return "", false
		}
		return x.FloatString(10), true
	case backend.Decimal:
		return x.String(), true
	case time.Time:
		return formatTime(x, t), true
	case []byte:
		return `\x` + hex.EncodeToString(x), true
	case []any:
		return formatArray(x, t), true
	case map[string]any, backend.Map:
		// A STRUCT or MAP (sent as text) as DuckDB and the dpsql command print it.
		return backend.NestedText(x, t.sql, nestedValue), true
	default:
		if b, err := json.Marshal(x); err == nil {
			return string(b), true
		}
		return fmt.Sprint(x), true
	}
}

// nestedValue is a scalar inside a STRUCT or MAP of type typ, before backend.NestedText
// quotes it: as textValue prints it, but booleans as DuckDB prints them there (true, false).
func nestedValue(v any, typ string) string {
	if b, ok := v.(bool); ok {
		return strconv.FormatBool(b)
	}
	s, _ := textValue(v, typeOf(typ))
	return s
}

// formatFloat prints f as PostgreSQL 12+ does with extra_float_digits ≥ 1: the shortest
// digits that read back to the same value, in exponent form below 1e-4 and from 1e15 (1e6
// for float4) up.
func formatFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0"
		}
		return "0"
	}
	limit := 15
	if bits == 32 {
		limit = 6
	}
	e := strconv.FormatFloat(f, 'e', -1, bits)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp < -4 || exp >= limit {
		return e
	}
	return strconv.FormatFloat(f, 'f', -1, bits)
}

func formatTime(x time.Time, t pgType) string {
	if backend.IsTimeTZ(t.sql) {
		return backend.TimeTZText(x) // sent as text, as PostgreSQL's timetz prints
	}
	oid := t.oid
	if t.elem != 0 {
		oid = t.elem
	}
	switch oid {
	case oidDate:
		return x.Format("2006-01-02")
	case oidTime:
		return x.Format("15:04:05.999999")
	case oidTimestamptz:
		return x.UTC().Format("2006-01-02 15:04:05.999999") + "+00"
	default:
		return x.Format("2006-01-02 15:04:05.999999")
	}
}

// formatArray prints a list as a PostgreSQL array literal: {1,2,NULL,"a b"}.
func formatArray(xs []any, t pgType) string {
	el := pgType{oid: t.elem, typmod: -1, size: -1, sql: backend.ElemType(t.sql)}
	if el.oid == 0 {
		el.oid = oidText
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(',')
		}
		s, ok := textValue(x, el)
		switch {
		case !ok:
			b.WriteString("NULL")
		case needsQuotes(s) || isList(x):
			if isList(x) {
				b.WriteString(s) // a nested array is written as it is
				continue
			}
			b.WriteByte('"')
			for _, r := range s {
				if r == '"' || r == '\\' {
					b.WriteByte('\\')
				}
				b.WriteRune(r)
			}
			b.WriteByte('"')
		default:
			b.WriteString(s)
		}
	}
	b.WriteByte('}')
	return b.String()
}

func isList(x any) bool { _, ok := x.([]any); return ok }

func needsQuotes(s string) bool {
	if s == "" || strings.EqualFold(s, "NULL") {
		return true
	}
	return strings.ContainsAny(s, "{},\"\\ \t\n\r\v\f")
}

// binaryValue is v in PostgreSQL's binary format for type t.
func binaryValue(typeMap *pgtype.Map, v any, t pgType) ([]byte, bool, error) {
	if v == nil {
		return nil, false, nil
	}
	switch t.oid {
	case oidText, oidVarchar, oidBPChar, oidJSON, oidUnknown:
		s, _ := textValue(v, t)
		return []byte(s), true, nil
	case oidNumeric:
		// pgtype encodes numerics from their text.
		s, _ := textValue(v, t)
		var n pgtype.Numeric
		if err := n.Scan(s); err != nil {
			return nil, false, err
		}
		v = n
	case oidInt2, oidInt4, oidInt8:
		if b, ok := v.(*big.Int); ok && b.IsInt64() {
			v = b.Int64()
		}
	}
	if t.elem != 0 {
		return nil, false, fmt.Errorf("binary format for arrays is not supported")
	}
	buf, err := typeMap.Encode(t.oid, pgtype.BinaryFormatCode, v, nil)
	if err != nil {
		return nil, false, err
	}
	return buf, buf != nil, nil
}

// paramValue converts a Bind parameter to the Go value Session.Exec receives. oid is the
// type the client gave in Parse (0: none).
func paramValue(typeMap *pgtype.Map, data []byte, format int16, oid uint32) (any, error) {
	if data == nil {
		return nil, nil
	}
	if format == pgtype.BinaryFormatCode {
		switch oid {
		case 0, oidUnknown, oidText, oidVarchar, oidBPChar, oidJSON:
			if oid == 0 || oid == oidUnknown {
				return inferParam(string(data)), nil
			}
			return string(data), nil
		case oidInt2, oidInt4, oidInt8:
			var n int64
			err := typeMap.Scan(oid, format, data, &n)
			return n, err
		case oidFloat4, oidFloat8:
			var f float64
			err := typeMap.Scan(oid, format, data, &f)
			return f, err
		case oidBool:
			var b bool
			err := typeMap.Scan(oid, format, data, &b)
			return b, err
		case oidNumeric:
			var n pgtype.Numeric
			if err := typeMap.Scan(oid, format, data, &n); err != nil {
				return nil, err
			}
			t, err := n.Value()
			if err != nil {
				return nil, err
			}
			s, _ := t.(string)
			return numericParam(s)
		case oidDate, oidTimestamp, oidTimestamptz:
			var tm time.Time
			err := typeMap.Scan(oid, format, data, &tm)
			return tm, err
		case oidBytea:
			return append([]byte(nil), data...), nil
		default:
			return nil, fmt.Errorf("binary parameters of type %d are not supported", oid)
		}
	}
	s := string(data)
	switch oid {
	case 0, oidUnknown:
		return inferParam(s), nil
	case oidInt2, oidInt4, oidInt8:
		return strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	case oidFloat4, oidFloat8:
		return parseFloat(strings.TrimSpace(s))
	case oidNumeric:
		return numericParam(strings.TrimSpace(s))
	case oidBool:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "t", "true", "yes", "on", "1", "y":
			return true, nil
		case "f", "false", "no", "off", "0", "n":
			return false, nil
		}
		return nil, fmt.Errorf("invalid input syntax for type boolean: %q", s)
	case oidDate:
		return time.Parse("2006-01-02", strings.TrimSpace(s))
	case oidTimestamp, oidTimestamptz:
		return parseTimestamp(strings.TrimSpace(s))
	case oidBytea:
		if h, ok := strings.CutPrefix(s, `\x`); ok {
			return hex.DecodeString(h)
		}
		return []byte(s), nil
	default:
		return s, nil
	}
}

// inferParam reads an untyped text parameter, the analyst's own value: an integer, a
// number, a boolean or else a string.
func inferParam(s string) any {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	if looksNumeric(s) {
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f
		}
	}
	switch s {
	case "true":
		return true
	case "false":
		return false
	}
	return s
}

// looksNumeric reports whether s is a decimal number (not "Inf", "NaN" or hex, which
// strconv would also read).
func looksNumeric(s string) bool {
	if s == "" {
		return false
	}
	digits := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digits = true
		case c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-':
		default:
			return false
		}
	}
	return digits
}

func parseFloat(s string) (float64, error) {
	switch strings.ToLower(s) {
	case "nan":
		return math.NaN(), nil
	case "infinity", "inf", "+infinity":
		return math.Inf(1), nil
	case "-infinity", "-inf":
		return math.Inf(-1), nil
	}
	return strconv.ParseFloat(s, 64)
}

// numericParam is an integer when the numeric is one that fits int64, else the exact value
// (a *big.Rat: a released DECIMAL key sent back as a numeric parameter must compare equal to
// itself and to nothing else); NaN and the infinities are float64.
func numericParam(s string) (any, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	if looksNumeric(s) {
		// Exactly, exponents too (1.2345678901234567891E+20): the NUMERIC check then
		// refuses what NUMERIC cannot hold (1E-10) instead of a float rounding it.
		if r, ok := new(big.Rat).SetString(s); ok {
			return r, nil
		}
	}
	return parseFloat(s)
}

func parseTimestamp(s string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999Z07",
		"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999",
		"2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("invalid input syntax for type timestamp: %q", s)
}
