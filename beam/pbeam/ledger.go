package pbeam

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/ledger"
)

// Consumed returns what the aggregations constructed so far on the
// PrivacySpec's PrivatePCollections have consumed: the sums, over the
// aggregation and partition selection budgets, of the epsilons and of the
// deltas their mechanisms use (basic composition, as the ledger counts).
func (s *PrivacySpec) Consumed() (epsilon, delta float64) {
	e, d := s.consumed()
	return e.Epsilon + d.Epsilon, e.Delta + d.Delta
}

// consumed returns what the aggregation and the partition selection
// budgets gave out.
func (s *PrivacySpec) consumed() (agg, sel ledger.Budget) {
	for _, x := range []struct {
		b   *budget
		out *ledger.Budget
	}{{s.aggregation, &agg}, {s.partitionSelection, &sel}} {
		x.b.mu.Lock()
		*x.out = ledger.Budget{Epsilon: x.b.usedEpsilon, Delta: x.b.usedDelta}
		x.b.mu.Unlock()
	}
	return agg, sel
}

// ChargeLedger charges to l, durably, what the PrivacySpec's aggregations
// consume (Consumed), so that a pipeline and the analysts of a dpsql
// database share one budget that is never overspent. Call it once every
// aggregation of the spec is constructed and before the pipeline runs
// (beam.Run); if it returns an error, do not run the pipeline.
//
// Why the consumed budget and not the spec's total: the released outputs
// are exactly those of the constructed aggregations, and their privacy loss
// is the sum of the shares their mechanisms were calibrated with; a part of
// the spec left unused is released by nothing. So that the sum stays the
// whole cost, the first call seals the spec: constructing an aggregation
// on it afterwards fails at construction (it would spend budget the ledger
// did not pay for), whether or not the charge succeeds.
//
// The charge is refused, and nothing is recorded, when the ledger's
// remaining budget is too small (a *sqlerr.Error with code
// sqlerr.BudgetExhausted, as for an SQL query), when the owner never set a
// budget, when the spec is in a test mode (its results are not private and
// must not be released, let alone paid for), when nothing was consumed, and
// when the spec was already charged (successfully) once. A failed charge
// may be retried, for example after the owner raised the budget.
//
// description is recorded with the charge for the owner's audit (the query
// column of dpsql.charges), followed by what each aggregation consumed.
//
// pbeamledger.Charge opens a database by name (a DuckDB file or a
// PostgreSQL URL) and calls ChargeLedger; ChargeLedger itself takes any
// ledger.Ledger, so that pbeam does not depend on the database drivers.
func (s *PrivacySpec) ChargeLedger(ctx context.Context, l *ledger.Ledger, description string) error {
	const op = "pbeam.PrivacySpec.ChargeLedger"
	if l == nil {
		return fmt.Errorf("%s: the ledger is nil", op)
	}
	if s.testMode.enabled() {
		return fmt.Errorf("%s: the PrivacySpec is in a test mode, whose results are exact and not differentially private; never release them, and charge only a spec without TestMode", op)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ledger.charged {
		return fmt.Errorf("%s: this PrivacySpec was already charged to a ledger; a spec is charged once, for all its aggregations", op)
	}
	if !s.ledger.sealed {
		for _, b := range []*budget{s.aggregation, s.partitionSelection} {
			b.mu.Lock()
			b.sealed = true
			b.mu.Unlock()
		}
		s.ledger.sealed = true
	}
	agg, sel := s.consumed()
	cost := ledger.Budget{Epsilon: agg.Epsilon + sel.Epsilon, Delta: agg.Delta + sel.Delta}
	if cost.Epsilon == 0 && cost.Delta == 0 {
		return fmt.Errorf("%s: no aggregation consumed any budget of this PrivacySpec; construct the pipeline's aggregations first, then charge", op)
	}
	sp, err := l.Prepare(cost, s.auditText(description))
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if _, err := sp.Commit(ctx); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	s.ledger.charged = true
	return nil
}

// auditText is the text recorded with a charge: the description, then each
// consumption. s.mu is held.
func (s *PrivacySpec) auditText(description string) string {
	var b strings.Builder
	b.WriteString("pbeam pipeline")
	if description != "" {
		b.WriteString(": ")
		b.WriteString(description)
	}
	for i, c := range s.charges {
		if i == 0 {
			b.WriteString(" [")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(c.what + " epsilon=" + strconv.FormatFloat(c.epsilon, 'g', 15, 64) +
			", delta=" + strconv.FormatFloat(c.delta, 'g', 15, 64))
		if i == len(s.charges)-1 {
			b.WriteString("]")
		}
	}
	return b.String()
}
