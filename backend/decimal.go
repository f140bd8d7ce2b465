package backend

import (
	"math/big"
	"strings"
)

// Decimal is an exact DECIMAL or NUMERIC value: Unscaled × 10^-Scale. The DuckDB backend
// returns it for DECIMAL, the PostgreSQL backend for NUMERIC with digits after the point, so
// that a group key, a public value or an owner's result reads as stored: a float64 holds 15
// to 17 significant digits, and two DECIMAL(38,2) keys such as 12345678901234567.89 and
// 12345678901234567.90 would print alike. Its text (String) has exactly Scale digits after
// the point, as both databases print the value ("1.50" for DECIMAL(5,2)). A nil Unscaled
// reads as zero.
type Decimal struct {
	Unscaled *big.Int
	Scale    int // digits after the point; a negative scale multiplies by 10^-Scale
}

// String is the value's exact decimal text: an optional minus sign, the integer digits (at
// least one), and a point followed by Scale digits when Scale > 0.
func (d Decimal) String() string {
	u := d.Unscaled
	if u == nil {
		u = new(big.Int)
	}
	digits := new(big.Int).Abs(u).String()
	sign := ""
	if u.Sign() < 0 {
		sign = "-"
	}
	if d.Scale <= 0 {
		if u.Sign() != 0 {
			digits += strings.Repeat("0", -d.Scale)
		}
		return sign + digits
	}
	if len(digits) <= d.Scale {
		digits = strings.Repeat("0", d.Scale-len(digits)+1) + digits
	}
	cut := len(digits) - d.Scale
	return sign + digits[:cut] + "." + digits[cut:]
}

// Rat is the value as an exact fraction.
func (d Decimal) Rat() *big.Rat {
	r := new(big.Rat)
	if d.Unscaled != nil {
		r.SetInt(d.Unscaled)
	}
	p := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(d.Scale, -d.Scale))), nil))
	if d.Scale > 0 {
		r.Quo(r, p)
	} else if d.Scale < 0 {
		r.Mul(r, p)
	}
	return r
}

// Float64 is the nearest float64 to the value.
func (d Decimal) Float64() float64 {
	f, _ := d.Rat().Float64()
	return f
}

// MarshalJSON writes the value as a JSON number with its exact digits.
func (d Decimal) MarshalJSON() ([]byte, error) { return []byte(d.String()), nil }

// Int is the value as an integer, and whether it is one (no digits after the point but
// zeros).
func (d Decimal) Int() (*big.Int, bool) {
	r := d.Rat()
	if !r.IsInt() {
		return nil, false
	}
	return new(big.Int).Set(r.Num()), true
}
