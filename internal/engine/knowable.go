package engine

import (
	"fmt"
	"math"
	"strings"

	"github.com/dpsql/dpsql/internal/exec"
	"github.com/dpsql/dpsql/internal/plan"
	"github.com/dpsql/dpsql/sqlerr"
)

// What is knowable before spending: what a query's release needs of the data to give rows,
// from its options alone (exec.PlanNeeds), said with each charge, at the top of EXPLAIN, and
// after a release with no rows. None of these notices reads the data: the same query says
// the same on any database (TestNeedsNoticesIgnoreData).

// maxMeaningfulUnits is the largest number of privacy units a notice states: beyond it (a
// quadrillion, more units than any table holds) the number means nothing, and a selection
// rule that needs more (epsilon about 2e-16) releases no group in practice.
const maxMeaningfulUnits = 1e15

// unreachable reports whether n units (math.MaxInt64: no count reaches the probability) are
// beyond any table.
func unreachable(n int64) bool { return n == math.MaxInt64 || float64(n) > maxMeaningfulUnits }

// noGroupText says that no group can be expected to be released.
const noGroupText = "no group can be expected to be released at this epsilon and delta " +
	"(a group would need more privacy units than any table holds)"

// selectionText says what a group needs to be released, or "" when every group is.
func selectionText(n exec.Needs) string {
	if !n.Selected {
		return ""
	}
	if unreachable(n.Units50) {
		return noGroupText
	}
	u99 := fmt.Sprintf("%d for 99%%", n.Units99)
	if unreachable(n.Units99) {
		u99 = "99% is out of reach"
	}
	return fmt.Sprintf("a group needs about %d privacy units to be released with probability 50%% (%s)", n.Units50, u99)
}

// boundsText says what one aggregate's implicit bounds need.
func boundsText(b exec.BoundsNeed) string {
	if !(b.Values <= maxMeaningfulUnits) {
		return fmt.Sprintf("implicit bounds of %s cannot be expected to be found at this epsilon (they would need more values "+
			"of one magnitude than any table holds), so the query fails after its charge", b.Aggregate)
	}
	return fmt.Sprintf("implicit bounds of %s need about %.0f values of one magnitude (one sign, within a factor of 2), "+
		"or the query fails after its charge", b.Aggregate, b.Values)
}

// needsNotices are the notices of a paid release of plan p (label names a part of a nested
// query, "" for a query on its own): the units a group needs under the selection rule, and
// what implicit bounds need, with the fix. Nothing here depends on the data.
func needsNotices(p *plan.Plan, label string) []string {
	n, err := exec.PlanNeeds(p)
	if err != nil {
		// The plan was prepared with the same rule: this cannot fail, and a notice is not
		// worth failing a paid query for.
		return nil
	}
	var out []string
	if s := selectionText(n); s != "" {
		if !unreachable(n.Units50) {
			s += "; smaller groups are usually suppressed"
		}
		out = append(out, label+s)
	}
	for _, b := range n.Bounds {
		out = append(out, label+boundsText(b)+": give CLAMPED BETWEEN bounds to avoid it")
	}
	return out
}

// noRowsNotice explains a release that returned no rows, from the options only (never the
// number of groups there were, which is private): why groups disappear and what to try. ""
// when every group is released anyway (public groups, delta = 1).
func noRowsNotice(p *plan.Plan) string {
	n, err := exec.PlanNeeds(p)
	if err != nil || !n.Selected {
		return ""
	}
	if unreachable(n.Units50) {
		return "the result has no rows: " + noGroupText + "; try a larger epsilon or delta, " +
			"or public groups (group_selection_strategy = PUBLIC_GROUPS) when the keys are public"
	}
	return fmt.Sprintf("the result has no rows: every group needs about %d privacy units to be released with probability 50%% and groups with fewer are suppressed; "+
		"try larger groups (fewer or coarser GROUP BY keys, a longer period), a larger epsilon or delta, "+
		"or public groups (group_selection_strategy = PUBLIC_GROUPS) when the keys are public", n.Units50)
}

// explainSummary is EXPLAIN's first line for a plan of the given cost: what it will charge,
// what a group needs, what implicit bounds need. EXPLAIN charges nothing and reads no data,
// so this is the dry run.
func explainSummary(p *plan.Plan, cost fmt.Stringer) string {
	s := fmt.Sprintf("Summary: charges %s when run", cost)
	n, err := exec.PlanNeeds(p)
	if err != nil {
		return s
	}
	if t := selectionText(n); t != "" {
		s += "; " + t
	} else {
		s += "; every group is released whatever its size"
	}
	for _, b := range n.Bounds {
		s += "; " + boundsText(b)
	}
	return s
}

// withBoundsNeeds adds to the hint of the uniform error of a query that failed after it read
// data what its implicit bounds needed (from the options, the same whatever the cause), so
// that a failure of the bounds can be understood without the cause being told.
func withBoundsNeeds(err error, p *plan.Plan) error {
	se, ok := sqlerr.As(err)
	if !ok {
		return err
	}
	n, nerr := exec.PlanNeeds(p)
	if nerr != nil {
		return err
	}
	for _, b := range n.Bounds {
		se.Hint += "; " + boundsText(b)
	}
	return err
}

// intervalNotice names the columns of a release with confidence intervals that have none:
// those computed from released values by an expression intervals cannot be propagated
// through (exec.IntervalColumns); "" when every column has one.
func intervalNotice(p *plan.Plan) string {
	none := exec.IntervalColumns(p)
	if len(none) == 0 {
		return ""
	}
	return fmt.Sprintf("no confidence interval for %s: intervals go through ROUND, CEIL, FLOOR, TRUNC, numeric CASTs, unary minus, "+
		"+, -, * and / only (docs/sql.md, \"Confidence intervals\")", strings.Join(none, ", "))
}

// addReleaseNotices adds to out, the result of a paid release of plan p (label as for
// needsNotices), the notices that explain it from its options: what a group and implicit
// bounds need, the columns without a confidence interval, and why there are no rows.
func addReleaseNotices(out *Result, p *plan.Plan, label string) {
	out.Notices = append(out.Notices, needsNotices(p, label)...)
	if s := intervalNotice(p); s != "" {
		out.Notices = append(out.Notices, s)
	}
	if len(out.Rows) == 0 {
		if s := noRowsNotice(p); s != "" {
			out.Notices = append(out.Notices, s)
		}
	}
}
