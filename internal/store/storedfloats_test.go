package store

import (
	"errors"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/sqlerr"
)

func TestPlanShowsFloatSigns(t *testing.T) {
	const (
		ref    = `{"expression_class":"BOUND_REF","index":0,"return_type":{"id":"DOUBLE"}}`
		intRef = `{"expression_class":"BOUND_REF","index":1,"return_type":{"id":"INTEGER"}}`
		zero   = `{"expression_class":"BOUND_CAST","child":{"expression_class":"BOUND_CONSTANT","value":{"is_null":false,"type":{"id":"INTEGER"},"value":0}},"return_type":{"id":"DOUBLE"}}`
		ivRef  = `{"expression_class":"BOUND_REF","index":2,"return_type":{"id":"INTERVAL"}}`
		date   = `{"expression_class":"BOUND_CONSTANT","value":{"is_null":false,"type":{"id":"DATE"},"value":0},"return_type":{"id":"DATE"}}`
	)
	fn := func(name, ret string, args ...string) string {
		s := `{"expression_class":"BOUND_FUNCTION","is_operator":true,"name":"` + name + `","return_type":{"id":"` + ret + `"},"children":[`
		for i, a := range args {
			if i > 0 {
				s += ","
			}
			s += a
		}
		return s + "]}"
	}
	cast := func(e, to string) string {
		return `{"expression_class":"BOUND_CAST","child":` + e + `,"return_type":{"id":"` + to + `"}}`
	}
	plan := func(exprs ...string) string {
		s := `{"error":false,"plans":[{"type":"LOGICAL_PROJECTION","expressions":[`
		for i, e := range exprs {
			if i > 0 {
				s += ","
			}
			s += e
		}
		return s + `]}]}`
	}
	for _, c := range []struct {
		plan    string
		refused bool
	}{
		{plan(ref, intRef), false},
		{plan(cast(ref, "VARCHAR")), true},
		{plan(cast(intRef, "VARCHAR")), false},
		{plan(fn("+", "DOUBLE", ref, zero)), false},
		// x + 0 makes -0.0 0.0 but keeps a NaN's sign.
		{plan(cast(fn("+", "DOUBLE", ref, zero), "VARCHAR")), true},
		{plan(cast(fn("*", "DOUBLE", ref, zero), "VARCHAR")), true},
		{plan(ivRef, fn("*", "INTERVAL", ivRef, zero)), true}, // '1 month' / 7 and '30 days' / 7 differ
		{plan(cast(ivRef, "VARCHAR")), true},
		{plan(fn("+", "TIMESTAMP", date, ivRef)), true},
		{plan(fn("date_part", "BIGINT", ivRef)), true},
		{plan(fn("/", "DOUBLE", ref, zero)), false},
		{plan(fn("/", "DOUBLE", zero, ref)), true},
		{plan(cast(ref, "BIGINT")), false},
		{plan(fn("signbit", "BOOLEAN", ref)), true},
		{plan(cast(cast(intRef, "DOUBLE"), "VARCHAR")), false},
		{`{"error":true,"error_message":"not implemented"}`, true},
		{`{"plans":`, true},
	} {
		root, err := decodePlan(c.plan)
		if err == nil {
			err = planShowsFloatSigns("v", root)
		} else {
			err = storedFloatsError("v", err.Error()) // as checkPrivatePlans refuses it
		}
		var se *sqlerr.Error
		if got := errors.As(err, &se) && se.Rule == RuleStoredFloats; got != c.refused {
			t.Errorf("%s: refused %v, want %v (%v)", c.plan, got, c.refused, err)
		}
	}
}

func TestPlanFails(t *testing.T) {
	typed := func(class, id string, extra string) string {
		return `{"expression_class":"` + class + `"` + extra + `,"return_type":{"id":"` + id + `"}}`
	}
	var (
		intRef  = typed("BOUND_REF", "INTEGER", `,"index":0`)
		textRef = typed("BOUND_REF", "VARCHAR", `,"index":1`)
		dblRef  = typed("BOUND_REF", "DOUBLE", `,"index":2`)
		one     = typed("BOUND_CONSTANT", "INTEGER", `,"value":{"is_null":false,"value":1}`)
	)
	cast := func(e, to string, try bool) string {
		t := "false"
		if try {
			t = "true"
		}
		return `{"expression_class":"BOUND_CAST","try_cast":` + t + `,"child":` + e + `,"return_type":{"id":"` + to + `"}}`
	}
	fn := func(name, ret string, args ...string) string {
		return `{"expression_class":"BOUND_FUNCTION","name":"` + name + `","return_type":{"id":"` + ret + `"},"children":[` + strings.Join(args, ",") + `]}`
	}
	try := func(e string) string {
		return `{"expression_class":"BOUND_OPERATOR","type":"OPERATOR_TRY","children":[` + e + `],"return_type":{"id":"INTEGER"}}`
	}
	plan := func(exprs ...string) string {
		return `{"error":false,"plans":[{"type":"LOGICAL_PROJECTION","expressions":[` + strings.Join(exprs, ",") + `]}]}`
	}
	for _, c := range []struct {
		plan    string
		refused bool
	}{
		{plan(intRef, textRef, dblRef), false},
		{plan(cast(textRef, "INTEGER", false)), true},
		{plan(cast(textRef, "INTEGER", true)), false},
		{plan(cast(intRef, "BIGINT", false), cast(intRef, "VARCHAR", false), cast(intRef, "DOUBLE", false)), false},
		{plan(cast(intRef, "SMALLINT", false)), true},
		{plan(fn("+", "INTEGER", intRef, one)), true},
		{plan(try(fn("+", "INTEGER", intRef, one))), false},
		{plan(fn("+", "DOUBLE", dblRef, dblRef)), false},
		// A constant that can fail is evaluated on every row that reaches it.
		{plan(fn("+", "INTEGER", one, one)), true},
		{plan(cast(one, "DOUBLE", false), fn("to_days", "INTERVAL", cast(one, "INTEGER", false))), false},
		// DuckDB computes a repeated expression once, outside the TRY.
		{plan(try(fn("*", "INTEGER", fn("+", "INTEGER", intRef, one), fn("+", "INTEGER", intRef, one)))), true},
		{plan(try(fn("+", "INTEGER", intRef, one)), try(fn("+", "INTEGER", intRef, one))), true},
		{plan(try(fn("list_reduce", "INTEGER", intRef))), true},
		{plan(`{"expression_class":"BOUND_AGGREGATE","name":"max","children":[` + intRef + `,` + one + `],"return_type":{"id":"INTEGER"}}`), true},
		{plan(`{"expression_class":"BOUND_AGGREGATE","name":"max","children":[` + intRef + `],"return_type":{"id":"INTEGER"}}`), false},
		{plan(try(fn("time_bucket", "TIMESTAMP", intRef, intRef))), true},
		{plan(fn("lower", "VARCHAR", textRef)), false},
		{`{"plans":[{"type":"LOGICAL_DELIM_JOIN","join_type":"SINGLE"}]}`, true},
		{`{"plans":[{"type":"LOGICAL_RECURSIVE_CTE"}]}`, true},
		{`{"error":true,"error_message":"not implemented"}`, true},
	} {
		root, err := decodePlan(c.plan)
		if err == nil {
			err = planFails("v", root, nil)
		} else {
			err = totalViewError("v", err.Error()) // checkPrivatePlans refuses it first (above)
		}
		var se *sqlerr.Error
		if got := errors.As(err, &se) && se.Rule == RuleTotalViews; got != c.refused {
			t.Errorf("%s: refused %v, want %v (%v)", c.plan, got, c.refused, err)
		}
	}
}
