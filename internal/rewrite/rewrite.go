// Package rewrite turns an analyzed anonymized query into a plan.Plan: it decides the
// mechanisms (noise kind, partition-selection rule), splits the query's (epsilon, delta)
// among them the way ZetaSQL does, fixes the contribution bounds, draws the sampling seed,
// fixes the one instant the query's clock functions read (clock), and marks the private floats
// whose sign the query cannot see (read as stored: signBlindReads).
//
// Each step is a named pass over the plan; the plan is checked after the last one.
package rewrite

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/dpsql/dpsql/dp/noise"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/plan"
	"github.com/dpsql/dpsql/sqlerr"
)

// pass is one named rewrite step.
type pass struct {
	name string
	run  func(*plan.Plan) error
}

// Rewrite builds the plan of an analyzed anonymized query.
func Rewrite(q *analyzer.Query) (*plan.Plan, error) {
	p := &plan.Plan{Query: q, Kappa: q.Options.Kappa, ConfidenceLevel: q.Options.ConfidenceLevel}
	if q.Options.UnboundedGroups {
		if !q.Options.UnboundedAllowed {
			return nil, sqlerr.Privacy(q.Options.Pos, analyzer.RuleBoundedGroups,
				"without kappa (max_groups_contributed) one privacy unit could contribute to every group, which no epsilon protects; the data owner allows that only on test data (SET BUDGET UNLIMITED)",
				"add kappa=1 (max_groups_contributed=1 in the DIFFERENTIAL_PRIVACY syntax), or the number of groups one unit really needs")
		}
		p.Kappa, p.Unbounded = 1, true
	}
	for _, ps := range []pass{
		{"aggregates", aggregates},
		{"mechanisms", mechanisms},
		{"budget-split", budgetSplit},
		{"seed", seed},
		{"clock", clock},
		{"sign-blind-reads", signBlindReads},
		{"check", check},
	} {
		if err := ps.run(p); err != nil {
			if _, ok := sqlerr.As(err); ok {
				return nil, err
			}
			return nil, fmt.Errorf("rewrite pass %s: %w", ps.name, err)
		}
	}
	return p, nil
}

// aggregates copies the analyzed aggregates into the plan and fixes their bounds.
func aggregates(p *plan.Plan) error {
	q := p.Query
	rows := q.Options.MaxRowsContributed
	if rows > 0 {
		p.MaxRows, p.Kappa = rows, rows
	}
	for i, a := range q.Aggregates {
		pa := &plan.Aggregate{Index: i, Func: a.Func, Kappa: p.Kappa, PerGroup: 1, Percentile: a.Percentile, N: a.N,
			Name: ast.Format(a.Call), Report: a.Report}
		if rows == 0 && plan.PerRow(a.Func) {
			// As in ZetaSQL: up to RowsPerGroup of the unit's rows in each of its groups.
			pa.PerGroup = plan.RowsPerGroup
		}
		if rows > 0 && a.Func != analyzer.CountUnits {
			// One unit's rows reach at most `rows` groups and add at most `rows` values to
			// one group; as an L1 bound that is a single partition of `rows` values.
			// Without bounds, as in ZetaSQL, they are estimated from the histogram of the kept
			// rows' values (sqlgen.BoundsStage), each unit adding at most `rows` values.
			pa.Kappa, pa.PerGroup = 1, rows
		}
		switch a.Func {
		case analyzer.CountUnits:
			pa.Lower, pa.Upper, pa.IntegerResult = 0, 1, true
		case analyzer.CountRows, analyzer.CountValues:
			pa.IntegerResult = true
			if rows > 0 {
				// Each row counts 1; a unit adds at most `rows` to a group.
				pa.Lower, pa.Upper = 0, 1
				break
			}
			if !a.HasBounds {
				// As in ZetaSQL, each unit's count is clamped to bounds estimated with DP.
				pa.Implicit = true
			} else {
				pa.Lower, pa.Upper = math.Max(0, a.Lower), math.Floor(a.Upper)
				if pa.Upper < 1 {
					return sqlerr.New(a.Call.Span().Start, sqlerr.InvalidParameterValue,
						"the upper bound of a count must be at least 1")
				}
			}
		default:
			if !a.HasBounds {
				// As in ZetaSQL, bounds estimated with DP; for percentiles and quantiles from
				// the values the stage's tree would see (one per unit and group).
				pa.Implicit = true
				break
			}
			if a.Lower == a.Upper {
				return sqlerr.New(a.Call.Span().Start, sqlerr.InvalidParameterValue,
					"the clamping bounds are equal: the result would be the constant %g", a.Lower).
					WithHint("choose lower < upper")
			}
			pa.Lower, pa.Upper = a.Lower, a.Upper
		}
		p.Aggregates = append(p.Aggregates, pa)
	}
	return nil
}

// mechanisms chooses the noise and the selection rule. The ZetaSQL defaults are Laplace
// noise and Laplace thresholding on a noisy count of units.
func mechanisms(p *plan.Plan) error {
	o := p.Query.Options
	kind := noise.Laplace
	if o.Noise == "gaussian" {
		kind = noise.Gaussian
	}
	for _, a := range p.Aggregates {
		a.Noise = kind
	}
	p.Selection = plan.Selection{Kappa: p.Kappa, MinUnits: o.MinPrivacyUnitsPerGroup}
	switch {
	case o.PublicGroups, p.Query.KeyDomains != nil:
		p.Selection.Rule = plan.PublicGroups
	case o.Selection == "gaussian" || o.Selection == "gaussian_threshold":
		p.Selection.Rule = plan.GaussianThreshold
	case o.Selection == "optimal" || o.Selection == "truncated_geometric":
		p.Selection.Rule = plan.TruncatedGeometric
	default:
		p.Selection.Rule = plan.LaplaceThreshold
	}
	return nil
}

// seed draws the sampling seed from crypto/rand.
func seed(p *plan.Plan) error {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Errorf("reading randomness: %w", err)
	}
	p.Seed = int64(binary.LittleEndian.Uint64(b[:]) >> 1)
	return nil
}

// check verifies the plan's invariants.
func check(p *plan.Plan) error {
	if p.Kappa < 1 {
		return fmt.Errorf("kappa %d < 1", p.Kappa)
	}
	total := p.Selection.Epsilon
	for _, a := range p.Aggregates {
		if !(a.Epsilon > 0) || a.Lower > a.Upper || a.Implicit != (a.BoundsEpsilon > 0) {
			return fmt.Errorf("aggregate %d: epsilon %g (bounds %g), bounds [%g, %g]", a.Index, a.Epsilon, a.BoundsEpsilon, a.Lower, a.Upper)
		}
		total += a.Epsilon + a.BoundsEpsilon
	}
	if total > p.Cost.Epsilon*(1+1e-9) {
		return fmt.Errorf("the parts spend epsilon %g, more than the query's %g", total, p.Cost.Epsilon)
	}
	return nil
}
