package parser

import (
	"fmt"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/sqlerr"
)

// Params are the values of a script's query parameters: named ones (@name) by name, and
// positional ones ($1, $2, ...) under the keys "$1", "$2", ... (Positional). Names are
// case-insensitive, as in GoogleSQL: keys are compared after strings.ToLower.
//
// A parameter is the analyst's own input, so it is public: the parser puts a typed literal
// where @name is written, and everything after the parser (the analyzer's privacy checks, the
// option and bound checks, the SQL sent to the database) sees that literal and only it.
type Params map[string]Param

// Param is the value of one query parameter: a typed constant.
type Param struct {
	// Type is the GoogleSQL type: INT64, FLOAT64, NUMERIC, BOOL, STRING, DATE, TIMESTAMP.
	Type string
	// Text is the value as SQL literal text (digits for numbers, the decoded text of a string);
	// ignored when Null.
	Text string
	Null bool
}

// paramTypes maps the type names a parameter may be declared with to their GoogleSQL name.
var paramTypes = map[string]string{
	"INT64": "INT64", "INT": "INT64", "INTEGER": "INT64", "BIGINT": "INT64",
	"FLOAT64": "FLOAT64", "FLOAT": "FLOAT64", "DOUBLE": "FLOAT64",
	"NUMERIC": "NUMERIC", "DECIMAL": "NUMERIC",
	"BOOL": "BOOL", "BOOLEAN": "BOOL",
	"STRING": "STRING", "VARCHAR": "STRING", "TEXT": "STRING",
	"DATE": "DATE", "TIMESTAMP": "TIMESTAMP",
}

// ParseParam reads a parameter given as a type name and text, as on the command line
// (name:TYPE:value). An empty type is STRING, as in BigQuery's bq tool; the text NULL (any
// case) is a NULL of the type.
func ParseParam(typ, text string) (Param, error) {
	t, ok := paramTypes[strings.ToUpper(strings.TrimSpace(typ))]
	if typ == "" {
		t, ok = "STRING", true
	}
	if !ok {
		return Param{}, fmt.Errorf("unknown parameter type %q (use INT64, FLOAT64, NUMERIC, BOOL, STRING, DATE or TIMESTAMP)", typ)
	}
	if strings.EqualFold(text, "NULL") && t != "STRING" {
		return Param{Type: t, Null: true}, nil
	}
	p := Param{Type: t, Text: text}
	switch t {
	case "INT64":
		if _, err := strconv.ParseInt(text, 10, 64); err != nil {
			return Param{}, fmt.Errorf("%q is not an INT64", text)
		}
	case "FLOAT64":
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return Param{}, fmt.Errorf("%q is not a finite FLOAT64", text)
		}
		p.Text = strconv.FormatFloat(f, 'g', -1, 64)
	case "NUMERIC":
		r, ok := new(big.Rat).SetString(text)
		if !ok || !decimalText.MatchString(text) {
			return Param{}, fmt.Errorf("%q is not a NUMERIC (digits with at most one point)", text)
		}
		t, err := numericText(r)
		if err != nil {
			return Param{}, fmt.Errorf("%q %v", text, err)
		}
		p.Text = t
	case "BOOL":
		b, err := strconv.ParseBool(text)
		if err != nil {
			return Param{}, fmt.Errorf("%q is not a BOOL (true or false)", text)
		}
		p.Text = strings.ToUpper(strconv.FormatBool(b))
	case "DATE":
		if _, err := time.Parse("2006-01-02", text); err != nil {
			return Param{}, fmt.Errorf("%q is not a DATE (YYYY-MM-DD)", text)
		}
	case "TIMESTAMP":
		if !validTimestamp(text) {
			return Param{}, fmt.Errorf("%q is not a TIMESTAMP (YYYY-MM-DD HH:MM:SS[.ffffff])", text)
		}
	}
	return p, nil
}

// numericText is x written as a NUMERIC parameter's value: ZetaSQL's NUMERIC (DuckDB's
// DECIMAL(38,9)) holds 38 digits, 9 of them after the point, so x must be a multiple of
// 10^-9 below 10^29 in magnitude. A value with more digits after the point or beyond the
// range is refused, as BigQuery refuses it, rather than rounded: the text is always a
// decimal literal of at most 38 digits, which the database reads exactly (a longer one it
// reads as a DOUBLE).
func numericText(x *big.Rat) (string, error) {
	scaled := new(big.Rat).Mul(x, new(big.Rat).SetInt64(1_000_000_000))
	if !scaled.IsInt() {
		return "", fmt.Errorf("has more than 9 digits after the point: a NUMERIC holds 9")
	}
	if new(big.Int).Abs(scaled.Num()).Cmp(numericLimit) >= 0 {
		return "", fmt.Errorf("is beyond the range of NUMERIC (below 10^29 in magnitude)")
	}
	t := x.FloatString(9)
	if strings.Contains(t, ".") {
		t = strings.TrimRight(strings.TrimRight(t, "0"), ".")
	}
	return t, nil
}

// decimalText is a NUMERIC parameter's text: digits with an optional sign and point, no
// exponent, base prefix (big.Rat reads 0x10 as 16) or underscore.
var decimalText = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)$`)

// numericLimit is 10^38: a NUMERIC value times 10^9 is below it in magnitude.
var numericLimit = new(big.Int).Exp(big.NewInt(10), big.NewInt(38), nil)

func validTimestamp(s string) bool {
	for _, l := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if _, err := time.Parse(l, s); err == nil {
			return true
		}
	}
	return false
}

// ParamOf turns a Go value into a parameter: nil, bool, signed and unsigned integers (up to
// the INT64 range), finite float32/float64, string, *big.Rat, *big.Int and exact decimals
// with a Rat method such as dpsql.Decimal (NUMERIC: at most 9 digits after the point), and
// time.Time (a TIMESTAMP, in UTC; a DATE when it is midnight UTC is still a TIMESTAMP: pass
// Param{Type: "DATE", ...} for a date). A Param is returned as it is.
func ParamOf(v any) (Param, error) {
	switch x := v.(type) {
	case Param:
		return ParseParamValue(x)
	case nil:
		return Param{Type: "INT64", Null: true}, nil
	case bool:
		return ParseParam("BOOL", strconv.FormatBool(x))
	case int:
		return Param{Type: "INT64", Text: strconv.FormatInt(int64(x), 10)}, nil
	case int8:
		return Param{Type: "INT64", Text: strconv.FormatInt(int64(x), 10)}, nil
	case int16:
		return Param{Type: "INT64", Text: strconv.FormatInt(int64(x), 10)}, nil
	case int32:
		return Param{Type: "INT64", Text: strconv.FormatInt(int64(x), 10)}, nil
	case int64:
		return Param{Type: "INT64", Text: strconv.FormatInt(x, 10)}, nil
	case uint, uint8, uint16, uint32, uint64:
		return ParseParam("INT64", fmt.Sprint(x))
	case float32:
		return ParseParam("FLOAT64", strconv.FormatFloat(float64(x), 'g', -1, 32))
	case float64:
		return ParseParam("FLOAT64", strconv.FormatFloat(x, 'g', -1, 64))
	case string:
		return Param{Type: "STRING", Text: x}, nil
	case *big.Int:
		if x == nil {
			return Param{Type: "NUMERIC", Null: true}, nil
		}
		return numericParam(new(big.Rat).SetInt(x), x.String())
	case *big.Rat:
		if x == nil {
			return Param{Type: "NUMERIC", Null: true}, nil
		}
		return numericParam(x, x.RatString())
	case interface{ Rat() *big.Rat }:
		// An exact decimal, such as a DECIMAL value a result gave (dpsql.Decimal); a nil
		// pointer to one is a NULL, as a nil *big.Rat is.
		if rv := reflect.ValueOf(x); rv.Kind() == reflect.Pointer && rv.IsNil() {
			return Param{Type: "NUMERIC", Null: true}, nil
		}
		return numericParam(x.Rat(), fmt.Sprint(x))
	case time.Time:
		return Param{Type: "TIMESTAMP", Text: x.UTC().Format("2006-01-02 15:04:05.999999")}, nil
	}
	return Param{}, fmt.Errorf("a query parameter cannot be of Go type %T", v)
}

// numericParam is the NUMERIC parameter of value x, shown as text in an error.
func numericParam(x *big.Rat, text string) (Param, error) {
	t, err := numericText(x)
	if err != nil {
		return Param{}, fmt.Errorf("%s %v", text, err)
	}
	return Param{Type: "NUMERIC", Text: t}, nil
}

// ParseParamValue checks a Param built by hand (its type and text), as ParseParam does.
func ParseParamValue(p Param) (Param, error) {
	if p.Null {
		t, ok := paramTypes[strings.ToUpper(p.Type)]
		if !ok {
			return Param{}, fmt.Errorf("unknown parameter type %q", p.Type)
		}
		return Param{Type: t, Null: true}, nil
	}
	if p.Type == "" || strings.EqualFold(p.Type, "STRING") {
		return Param{Type: "STRING", Text: p.Text}, nil
	}
	return ParseParam(p.Type, p.Text)
}

// expr is the expression the parser puts where the parameter is written, spanning sp. Numbers
// are casts to their type (CAST(1 AS INT64)): never a bare integer, which GROUP BY and ORDER
// BY would read as a column ordinal, and never a bare negative number, which could print as
// "--" after a minus sign.
func (p Param) expr(sp ast.Span) ast.Expr {
	set := func(n interface{ SetSpan(ast.Span) }) { n.SetSpan(sp) }
	cast := func(x ast.Expr, typ string) ast.Expr {
		tn := &ast.TypeName{Name: typ}
		set(tn)
		c := &ast.Cast{X: x, Type: tn}
		set(c)
		return c
	}
	lit := func(kind ast.LiteralKind, text string) ast.Expr {
		l := &ast.Literal{Kind: kind, Text: text}
		set(l)
		return l
	}
	if p.Null {
		return cast(lit(ast.NullLit, "NULL"), p.Type)
	}
	number := func(kind ast.LiteralKind) ast.Expr {
		text, neg := strings.CutPrefix(p.Text, "-")
		x := lit(kind, strings.TrimPrefix(text, "+"))
		if neg {
			u := &ast.Unary{Op: "-", X: x}
			set(u)
			x = u
		}
		return cast(x, p.Type)
	}
	switch p.Type {
	case "INT64":
		return number(ast.IntLit)
	case "FLOAT64", "NUMERIC":
		return number(ast.FloatLit)
	case "BOOL":
		return lit(ast.BoolLit, p.Text)
	case "DATE", "TIMESTAMP":
		tl := &ast.TypedLiteral{Type: p.Type, Text: p.Text}
		set(tl)
		return tl
	}
	return lit(ast.StringLit, p.Text)
}

// Positional returns the key of the positional parameter $n in Params.
func Positional(n int) string { return "$" + strconv.Itoa(n) }

// ParseParams is Parse (or Lenient, when lenient) with query parameters: each @name and $n is
// replaced by its value's literal. A @name or $n without a value is an error at its position
// (SQLSTATE 42P02), and so is a positional value that no $n of the script uses (PostgreSQL
// refuses more values than the statement has parameters): the owner's statements that dpsql
// passes to the database as written take no parameters.
func ParseParams(src string, params Params, lenient bool) ([]ast.Stmt, error) {
	used := map[string]bool{}
	stmts, err := parseScriptParams(src, lenient, params, used)
	if err != nil {
		return stmts, err
	}
	for n := 1; ; n++ {
		key := Positional(n)
		if _, ok := params[key]; !ok {
			break
		}
		if !used[key] {
			return nil, &sqlerr.Error{Code: sqlerr.UndefinedParameter,
				Msg: fmt.Sprintf("a value is given for query parameter %s, but the statements have no %s", key, key),
				Hint: "give as many values as the statements have positional parameters ($1, $2, ...); " +
					"statements that dpsql passes to the database as written (the owner's DDL and DML) take none"}
		}
	}
	return stmts, nil
}

// positional parses $n at the current token (the "$").
func (p *parser) positional() ast.Expr {
	at := p.tok()
	num := p.peek(1)
	n, err := strconv.Atoi(num.Text)
	if num.Kind != tNumber || num.Pos.Offset != at.End.Offset || err != nil || n < 1 {
		p.notSupported(at.Pos, "write a positional query parameter as $1, $2, ...", "%q is not a query parameter", at.Text)
	}
	p.i += 2
	key := Positional(n)
	if p.used != nil {
		p.used[key] = true
	}
	v, ok := p.params[key]
	if !ok {
		e := sqlerr.New(at.Pos, sqlerr.UndefinedParameter, "query parameter %s has no value", key)
		given := 0
		for ; ; given++ {
			if _, ok := p.params[Positional(given+1)]; !ok {
				break
			}
		}
		switch {
		case given > 0:
			e.Hint = fmt.Sprintf("%d positional values are given, for $1 to $%d", given, given)
		case len(p.params) > 0:
			e.Hint = "the parameters given are named: write @name, or give positional values only"
		default:
			e.Hint = "supply its value: the arguments after the query in Go (engine.Exec(ctx, query, v1, v2)), or a bound value in the PostgreSQL protocol"
		}
		p.fail(e)
	}
	return v.expr(p.spanFrom(at.Pos))
}

// param parses @name at the current token (the "@").
func (p *parser) param() ast.Expr {
	at := p.tok()
	name := p.peek(1)
	if name.Kind != tIdent && name.Kind != tQIdent || name.Pos.Offset != at.End.Offset {
		p.notSupported(at.Pos, "write a query parameter as @name, with a letter right after the @", "%q is not a query parameter", at.Text)
	}
	p.i += 2
	key := name.Text
	if name.Kind == tQIdent {
		key = name.Val
	}
	v, ok := p.params[strings.ToLower(key)]
	if !ok || strings.HasPrefix(key, "$") {
		e := sqlerr.New(at.Pos, sqlerr.UndefinedParameter, "query parameter @%s has no value", key)
		if len(p.params) == 0 {
			e.Hint = "supply it: --parameter " + key + ":TYPE:VALUE on the command line, sql.Named(\"" + key + "\", value) in Go"
		} else {
			names := make([]string, 0, len(p.params))
			for n := range p.params {
				names = append(names, "@"+n)
			}
			slices.Sort(names)
			e.Hint = "the parameters given are " + strings.Join(names, ", ")
		}
		p.fail(e)
	}
	return v.expr(p.spanFrom(at.Pos))
}
