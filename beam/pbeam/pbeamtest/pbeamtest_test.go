package pbeamtest

import (
	"math"
	"strings"
	"testing"
)

func TestQuantilesTolerance(t *testing.T) {
	for _, tc := range []struct{ lo, hi, want float64 }{
		{-5, 5, 10.0 / 65536},
		{0, 1000, 1000.0 / 65536},
		{3, 3, 0},
	} {
		if got := QuantilesTolerance(tc.lo, tc.hi); math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("QuantilesTolerance(%v, %v) = %v, want %v", tc.lo, tc.hi, got, tc.want)
		}
	}
}

func TestNoNoiseSpecs(t *testing.T) {
	if NewPrivacySpecNoNoiseWithContributionBounding(1, 1e-5) == nil || NewPrivacySpecNoNoiseWithoutContributionBounding(1, 0) == nil {
		t.Fatal("nil PrivacySpec")
	}
	for _, f := range []func(){
		func() { NewPrivacySpecNoNoiseWithContributionBounding(-1, 0) },
		func() { NewPrivacySpecNoNoiseWithoutContributionBounding(1, 2) },
	} {
		func() {
			defer func() {
				r := recover()
				if s, ok := r.(string); !ok || !strings.HasPrefix(s, "pbeamtest.NewPrivacySpecNoNoise") {
					t.Errorf("panic %v, want the pbeamtest function's message", r)
				}
			}()
			f()
		}()
	}
}
