package pgcatalog

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// pgType is a row of the model's pg_type: one of PostgreSQL's standard types.
type pgType struct {
	oid      int64
	name     string // typname
	length   int64  // typlen
	category string // typcategory
	display  string // format_type without a typmod
	info     string // information_schema.columns.data_type
	array    int64  // typarray: the oid of the array type (0 for array types)
	input    string // typinput
}

// standardTypes are the types the model knows, with PostgreSQL's oids; each also has an array
// type (typname "_"+name) at oid array.
var standardTypes = []pgType{
	{16, "bool", 1, "B", "boolean", "boolean", 1000, "boolin"},
	{17, "bytea", -1, "U", "bytea", "bytea", 1001, "byteain"},
	{18, "char", 1, "Z", "\"char\"", "\"char\"", 1002, "charin"},
	{19, "name", 64, "S", "name", "name", 1003, "namein"},
	{20, "int8", 8, "N", "bigint", "bigint", 1016, "int8in"},
	{21, "int2", 2, "N", "smallint", "smallint", 1005, "int2in"},
	{23, "int4", 4, "N", "integer", "integer", 1007, "int4in"},
	{24, "regproc", 4, "N", "regproc", "regproc", 1008, "regprocin"},
	{25, "text", -1, "S", "text", "text", 1009, "textin"},
	{26, "oid", 4, "N", "oid", "oid", 1028, "oidin"},
	{114, "json", -1, "U", "json", "json", 199, "json_in"},
	{700, "float4", 4, "N", "real", "real", 1021, "float4in"},
	{701, "float8", 8, "N", "double precision", "double precision", 1022, "float8in"},
	{1042, "bpchar", -1, "S", "character", "character", 1014, "bpcharin"},
	{1043, "varchar", -1, "S", "character varying", "character varying", 1015, "varcharin"},
	{1082, "date", 4, "D", "date", "date", 1182, "date_in"},
	{1083, "time", 8, "D", "time without time zone", "time without time zone", 1183, "time_in"},
	{1114, "timestamp", 8, "D", "timestamp without time zone", "timestamp without time zone", 1115, "timestamp_in"},
	{1184, "timestamptz", 8, "D", "timestamp with time zone", "timestamp with time zone", 1185, "timestamptz_in"},
	{1186, "interval", 16, "T", "interval", "interval", 1187, "interval_in"},
	{1266, "timetz", 12, "D", "time with time zone", "time with time zone", 1270, "timetz_in"},
	{1560, "bit", -1, "V", "bit", "bit", 1561, "bit_in"},
	{1562, "varbit", -1, "V", "bit varying", "bit varying", 1563, "varbit_in"},
	{1700, "numeric", -1, "N", "numeric", "numeric", 1231, "numeric_in"},
	{2205, "regclass", 4, "N", "regclass", "regclass", 2210, "regclassin"},
	{2206, "regtype", 4, "N", "regtype", "regtype", 2211, "regtypein"},
	{2950, "uuid", 16, "U", "uuid", "uuid", 2951, "uuid_in"},
	{3802, "jsonb", -1, "U", "jsonb", "jsonb", 3807, "jsonb_in"},
}

// typeByName finds a standard type by typname.
func typeByName(name string) (pgType, bool) {
	for _, t := range standardTypes {
		if t.name == name {
			return t, true
		}
	}
	return pgType{}, false
}

// colType is how the model describes a column of a dpsql relation.
type colType struct {
	oid     int64  // atttypid
	typmod  int64  // atttypmod (-1: none)
	display string // format_type(atttypid, atttypmod)
	info    string // information_schema data_type
	udt     string // information_schema udt_name (typname)
	length  int64  // attlen
	ndims   int64  // attndims
	// precision and scale, for numeric columns (-1: none).
	precision, scale int64
	// charLength is the declared length of character columns (-1: none).
	charLength int64
}

var typeArgs = regexp.MustCompile(`^([A-Z][A-Z0-9_ ]*?)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*((?:\[\d*\])*)$`)

// columnType maps a column type of the catalog (a DuckDB or PostgreSQL type name) to the
// PostgreSQL type a client sees. Types PostgreSQL has no name for (STRUCT, MAP, UNION, ...)
// are shown as text.
func columnType(dbType string) colType {
	s := strings.ToUpper(strings.TrimSpace(dbType))
	var base, a1, a2, arr string
	if m := typeArgs.FindStringSubmatch(s); m != nil {
		base, a1, a2, arr = strings.Join(strings.Fields(m[1]), " "), m[2], m[3], m[4]
	} else {
		base = s
	}
	name := "text"
	switch base {
	case "BOOLEAN", "BOOL", "LOGICAL":
		name = "bool"
	case "TINYINT", "INT1", "SMALLINT", "INT2", "SHORT", "UTINYINT":
		name = "int2"
	case "INTEGER", "INT", "INT4", "SIGNED", "USMALLINT", "SERIAL":
		name = "int4"
	case "BIGINT", "INT8", "LONG", "UINTEGER", "BIGSERIAL":
		name = "int8"
	case "UBIGINT", "HUGEINT", "UHUGEINT", "BIGNUM", "VARINT", "DECIMAL", "NUMERIC":
		name = "numeric"
	case "REAL", "FLOAT4", "FLOAT":
		name = "float4"
	case "DOUBLE", "FLOAT8", "DOUBLE PRECISION":
		name = "float8"
	case "VARCHAR", "CHARACTER VARYING", "CHAR VARYING", "NVARCHAR":
		name = "varchar"
		if a1 == "" {
			name = "text"
		}
	case "CHAR", "CHARACTER", "BPCHAR":
		name = "bpchar"
		if a1 == "" && base == "BPCHAR" {
			name = "text"
		}
	case "TEXT", "STRING":
		name = "text"
	case "DATE":
		name = "date"
	case "TIME", "TIME WITHOUT TIME ZONE":
		name = "time"
	case "TIMETZ", "TIME WITH TIME ZONE":
		name = "timetz"
	case "TIMESTAMP", "DATETIME", "TIMESTAMP WITHOUT TIME ZONE", "TIMESTAMP_US", "TIMESTAMP_MS", "TIMESTAMP_NS", "TIMESTAMP_S":
		name = "timestamp"
	case "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE":
		name = "timestamptz"
	case "INTERVAL":
		name = "interval"
	case "UUID":
		name = "uuid"
	case "BLOB", "BYTEA", "BINARY", "VARBINARY":
		name = "bytea"
	case "JSON":
		name = "json"
	case "JSONB":
		name = "jsonb"
	case "BIT", "BITSTRING":
		name = "varbit"
	}
	t, _ := typeByName(name)
	ct := colType{oid: t.oid, typmod: -1, display: t.display, info: t.info, udt: t.name, length: t.length,
		precision: -1, scale: -1, charLength: -1}
	n1, _ := strconv.ParseInt(a1, 10, 64)
	n2, _ := strconv.ParseInt(a2, 10, 64)
	switch name {
	case "numeric":
		switch {
		case a1 != "":
			ct.precision, ct.scale = n1, n2
		case base == "DECIMAL":
			ct.precision, ct.scale = 18, 3 // DuckDB's default DECIMAL
		}
		if ct.precision >= 0 {
			ct.typmod = (ct.precision<<16 | ct.scale) + 4
			ct.display = fmt.Sprintf("numeric(%d,%d)", ct.precision, ct.scale)
		}
	case "varchar", "bpchar":
		if a1 != "" {
			ct.charLength = n1
			ct.typmod = n1 + 4
			ct.display = fmt.Sprintf("%s(%d)", t.display, n1)
		}
	}
	if arr != "" {
		ct.ndims = int64(strings.Count(arr, "["))
		ct.oid = t.array
		ct.display += "[]"
		ct.info = "ARRAY"
		ct.udt = "_" + t.name
		ct.length = -1
	}
	return ct
}
