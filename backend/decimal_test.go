package backend

import (
	"encoding/json"
	"math/big"
	"testing"
)

func TestDecimalText(t *testing.T) {
	big1, _ := new(big.Int).SetString("1234567890123456789", 10)
	for _, c := range []struct {
		d    Decimal
		text string
		f    float64
	}{
		{Decimal{big.NewInt(125), 2}, "1.25", 1.25},
		{Decimal{big.NewInt(-125), 2}, "-1.25", -1.25},
		{Decimal{big.NewInt(5), 3}, "0.005", 0.005},
		{Decimal{big.NewInt(-5), 3}, "-0.005", -0.005},
		{Decimal{big.NewInt(0), 2}, "0.00", 0},
		{Decimal{big.NewInt(150), 2}, "1.50", 1.5},
		{Decimal{big.NewInt(42), 0}, "42", 42},
		{Decimal{nil, 1}, "0.0", 0},
		{Decimal{big1, 2}, "12345678901234567.89", 12345678901234567.89},
		{Decimal{new(big.Int).Neg(big1), 19}, "-0.1234567890123456789", -0.1234567890123456789},
		{Decimal{big.NewInt(-15), -2}, "-1500", -1500},
		{Decimal{big.NewInt(0), -2}, "0", 0},
	} {
		if got := c.d.String(); got != c.text {
			t.Errorf("%v/10^%d: text %q, want %q", c.d.Unscaled, c.d.Scale, got, c.text)
		}
		if got := c.d.Float64(); got != c.f {
			t.Errorf("%s: Float64 %v, want %v", c.text, got, c.f)
		}
		if r, ok := new(big.Rat).SetString(c.text); !ok || r.Cmp(c.d.Rat()) != 0 {
			t.Errorf("%s: Rat %v", c.text, c.d.Rat())
		}
		b, err := json.Marshal(map[string]any{"v": c.d})
		if err != nil || string(b) != `{"v":`+c.text+`}` {
			t.Errorf("%s: JSON %s, %v", c.text, b, err)
		}
	}
	// Two keys a float64 cannot tell apart stay apart.
	a := Decimal{big1, 2}
	b := Decimal{new(big.Int).Add(big1, big.NewInt(1)), 2}
	if a.Float64() != b.Float64() || a.String() == b.String() {
		t.Errorf("%s and %s: floats %v and %v", a, b, a.Float64(), b.Float64())
	}
}
