package ledger

import (
	"math"
	"strconv"
	"strings"
)

// How budget amounts are shown to people. A remainder is a difference of float sums
// (0.001 - 0.00013 is 0.000870000000000002 to 15 digits), so amounts print with at most 12
// significant digits. Costs, totals and spending print rounded to the nearest (num); a
// remainder is never shown larger than what can be spent: it is rounded to the nearest
// 12-digit amount only when the ledger would accept a charge of that amount (the rounding
// Tolerance of fits included), and rounded down otherwise. Rounding down was chosen over
// printing more digits: the remainder then never overstates the budget, and only a
// remainder within float noise below a round amount shows the long digits of the rounding
// down.

// shownDigits is how many significant digits budget amounts print with.
const shownDigits = 12

// limit is one bound a remainder is computed against: a total and what was spent of it.
type limit struct{ total, spent float64 }

// RemainingText renders Remaining for people (see shownDigits): "epsilon=..., delta=...".
func (s Status) RemainingText() string {
	p := s.remainingParts()
	return "epsilon=" + p[0] + ", delta=" + p[1]
}

// remainingParts are RemainingText's epsilon and delta.
func (s Status) remainingParts() [2]string {
	r := s.Remaining()
	return [2]string{remainderText(r.Epsilon, limit{s.Total.Epsilon, s.Spent.Epsilon}),
		remainderText(r.Delta, limit{s.Total.Delta, s.Spent.Delta})}
}

// AccountRemainingText renders AccountRemaining for people, checked against every limit
// that binds the account.
func (s Status) AccountRemainingText() string {
	p := s.accountRemainingParts()
	return "epsilon=" + p[0] + ", delta=" + p[1]
}

// accountRemainingParts are AccountRemainingText's epsilon and delta.
func (s Status) accountRemainingParts() [2]string {
	r := s.AccountRemaining()
	var eps, delta []limit
	if !s.Unlimited {
		eps = append(eps, limit{s.Total.Epsilon, s.Spent.Epsilon})
		delta = append(delta, limit{s.Total.Delta, s.Spent.Delta})
	}
	if a := s.Account; a != nil {
		if a.LimitEpsilon {
			eps = append(eps, limit{a.Allowance.Epsilon, a.Spent.Epsilon})
		}
		if a.LimitDelta {
			delta = append(delta, limit{a.Allowance.Delta, a.Spent.Delta})
		}
	}
	return [2]string{remainderText(r.Epsilon, eps...), remainderText(r.Delta, delta...)}
}

// refusalAmounts renders a refused cost and what remains (r, shown as left) side by side:
// "epsilon=..., delta=..." each. Where the cost and the remainder print the same at
// shownDigits (a cost of 1.000000000000001 against 1 left), both print in full (the
// shortest representation that reads back as the float64), so the refusal tells them apart.
func refusalAmounts(cost, r Budget, left [2]string) (costText, leftText string) {
	c := [2]string{num(cost.Epsilon), num(cost.Delta)}
	for i, v := range [2][2]float64{{cost.Epsilon, r.Epsilon}, {cost.Delta, r.Delta}} {
		if c[i] == left[i] {
			c[i], left[i] = full(v[0]), full(v[1])
		}
	}
	return "epsilon=" + c[0] + ", delta=" + c[1], "epsilon=" + left[0] + ", delta=" + left[1]
}

// full is f's shortest representation that reads back as f.
func full(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// remainderText shows r, what remains under limits, with shownDigits significant digits of
// the smallest total (a remainder far below it, float noise after spending it all, is 0),
// never more than every limit accepts.
func remainderText(r float64, limits ...limit) string {
	if len(limits) == 0 || math.IsInf(r, 0) || math.IsNaN(r) || r <= 0 {
		return num(r)
	}
	total := math.Inf(1)
	for _, l := range limits {
		total = min(total, l.total)
	}
	if !(total > 0) || math.IsInf(total, 0) {
		return num(r)
	}
	digits := int(math.Floor(math.Log10(r))-math.Floor(math.Log10(total))) + shownDigits
	if digits <= 0 {
		return "0" // below the last digit shown of the total: rounded down
	}
	digits = min(digits, shownDigits)
	nearest := strconv.FormatFloat(r, 'g', digits, 64)
	v, err := strconv.ParseFloat(nearest, 64)
	if err != nil {
		return num(r)
	}
	spendable := v <= r
	if !spendable {
		spendable = true
		for _, l := range limits {
			spendable = spendable && fits(l.total, l.spent, v)
		}
	}
	if spendable {
		return nearest
	}
	return roundedDown(r, digits)
}

// roundedDown is r > 0 rounded down to digits significant digits.
func roundedDown(r float64, digits int) string {
	e := strconv.FormatFloat(r, 'e', digits-1, 64) // d.ddd...e±x, rounded to nearest
	v, _ := strconv.ParseFloat(e, 64)
	if v <= r {
		return strconv.FormatFloat(v, 'g', digits, 64)
	}
	mant, exp := e, ""
	for i := range e {
		if e[i] == 'e' {
			mant, exp = e[:i], e[i+1:]
			break
		}
	}
	m, err1 := strconv.ParseInt(strings.ReplaceAll(mant, ".", ""), 10, 64)
	x, err2 := strconv.Atoi(exp)
	if err1 != nil || err2 != nil {
		return num(r)
	}
	// One unit of the last digit less: below r, since the nearest was above it by at most
	// half a unit.
	down, err := strconv.ParseFloat(strconv.FormatInt(m-1, 10)+"e"+strconv.Itoa(x-(digits-1)), 64)
	if err != nil {
		return num(r)
	}
	return strconv.FormatFloat(down, 'g', digits, 64)
}
