package ledger

import (
	"strconv"
	"strings"
	"testing"
)

// spentBy sums n charges of c, as the ledger adds them up.
func spentBy(n int, c float64) float64 {
	s := 0.0
	for range n {
		s += c
	}
	return s
}

// TestRemainingText: remainders print with at most 12 significant digits, without the float
// noise of the sums (the review's 0.000870000000000002 is 0.00087), and never more than
// the ledger would let be spent.
func TestRemainingText(t *testing.T) {
	review := 0.001 - 0.000870000000000002 // what was spent, as the review saw it left
	if got := strconv.FormatFloat(0.001-review, 'g', 15, 64); got != "0.000870000000000002" {
		t.Fatalf("fixture: the remainder is %s to 15 digits", got)
	}
	for _, c := range []struct {
		total, spent float64
		want         string // "": only the rules are checked
	}{
		{0.001, review, "0.00087"},
		{1, spentBy(10, 0.1), "0"},              // 1.11e-16 left: float noise
		{10, spentBy(60, 0.1), "4"},             // 4.00000000000001
		{0.001, spentBy(45, 1e-5), ""},          // 0.000549999999999999
		{20, spentBy(38, 0.3), ""},              // 8.59999999999999
		{0.001, spentBy(194, 1e-6), "0.000806"}, // 0.000806000000000001
		{1, 1.0 / 3, "0.66666666666"},           // to 1e-11, as the total; 0.66666666667 is more than is left
		{1, 0.1 + 0.2, "0.7"},                   // 0.7 exactly as the user has it
		{1, 0.2, "0.8"},
		{5, 0, "5"},
	} {
		st := Status{Set: true, Total: Budget{Epsilon: c.total, Delta: c.total}, Spent: Budget{Epsilon: c.spent, Delta: c.spent}}
		got := st.RemainingText()
		eps := strings.TrimPrefix(strings.Split(got, ",")[0], "epsilon=")
		if c.want != "" && got != "epsilon="+c.want+", delta="+c.want {
			t.Errorf("total %g spent %g: %s, want %s", c.total, c.spent, got, c.want)
		}
		v, err := strconv.ParseFloat(eps, 64)
		if err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		if r := st.Remaining().Epsilon; v > r && !fits(c.total, c.spent, v) {
			t.Errorf("total %g spent %g: shows %s left, more than the %v a charge may take", c.total, c.spent, eps, r)
		}
		if digits := len(strings.Trim(strings.ReplaceAll(strings.Split(eps, "e")[0], ".", ""), "0")); digits > shownDigits {
			t.Errorf("total %g spent %g: %s has %d digits", c.total, c.spent, eps, digits)
		}
	}

	// A remainder just below a round amount that the ledger would refuse is rounded down.
	if got := remainderText(0.5-1e-9, limit{1, 0.5 + 1e-9}); got != "0.499999999" {
		t.Errorf("remainder below 0.5: %s, want 0.499999999", got)
	}

	// An account: the allowance and the total both bind; without limits, nothing changes.
	st := Status{Set: true, Total: Budget{Epsilon: 10, Delta: 1e-3}, Spent: Budget{Epsilon: 1, Delta: review},
		Account: &AccountStatus{Name: "a", Exists: true, LimitEpsilon: true, Allowance: Budget{Epsilon: 1, Delta: 1},
			Spent: Budget{Epsilon: spentBy(10, 0.1) - 0.5}}}
	if got := st.AccountRemainingText(); got != "epsilon=0.5, delta=0.00087" {
		t.Errorf("account: %s", got)
	}
	st.Unlimited = true
	if got := st.AccountRemainingText(); got != "epsilon=0.5, delta=+Inf" {
		t.Errorf("account, total lifted: %s", got)
	}
	if got := (Budget{Epsilon: 1.0986122886681098, Delta: spentBy(45, 1e-5)}).String(); got != "epsilon=1.09861228867, delta=0.00045" {
		t.Errorf("Budget.String: %s", got)
	}
}
