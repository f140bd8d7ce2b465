package ledger

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/dpsql/dpsql/sqlerr"
)

// Tolerance is how many units in the last place (of the total) a cumulative spend may exceed
// the total by and still be allowed. It absorbs the rounding of float64 sums (0.1+0.2 is
// 0.30000000000000004) and nothing more: the relative slack is below 1e-15.
const Tolerance = 4

// NoBudgetHint is the hint of the error returned when no budget has been set.
const NoBudgetHint = "the data owner must run: SET BUDGET OPTIONS(epsilon=..., delta=...)"

// ErrSpent is returned by a second (*Spend).Commit.
var ErrSpent = errors.New("ledger: this spend was already committed; prepare a new one")

// Ledger checks and records spends against a Store. It is safe for concurrent use when its
// Store is; the Store's transactions make concurrent spends from several processes safe.
type Ledger struct {
	s Store
	// analyst is the account whose allowance binds the spends too ("" : none).
	analyst string
}

// New returns a Ledger over s.
func New(s Store) *Ledger { return &Ledger{s: s} }

// For returns the ledger of analyst's account over the same Store: its spends must fit the
// analyst's allowance as well as the total, are recorded with the analyst's name, and its
// Status has Account set. The Store must be an AccountStore (else Status fails and every
// spend is refused). For("") is a ledger without an account.
func (l *Ledger) For(analyst string) *Ledger { return &Ledger{s: l.s, analyst: analyst} }

// Analyst is the account of the ledger ("" for none), see For.
func (l *Ledger) Analyst() string { return l.analyst }

// Status reads the budget, and the account's allowance for a ledger of an account (For).
func (l *Ledger) Status(ctx context.Context) (Status, error) {
	if l.analyst == "" {
		return l.s.Status(ctx)
	}
	as, ok := l.s.(AccountStore)
	if !ok {
		return Status{}, errNoAccounts(l.analyst)
	}
	return as.StatusOf(ctx, l.analyst)
}

func errNoAccounts(analyst string) error {
	return sqlerr.New(sqlerr.Pos{}, sqlerr.ObjectNotInPrerequisite,
		"this ledger keeps no analyst accounts, so it cannot charge analyst %s", analyst).
		WithHint("use a ledger in a database the data owner opened with this version of dpsql")
}

// SetTotal sets the total budget. total must be finite with epsilon > 0 and delta in [0, 1).
// With unlimited true the limit is lifted (spends are still recorded, never refused); total
// is then recorded as given and must be finite and non-negative. A total below what was
// already spent is refused (see SetTotalWith to allow it).
func (l *Ledger) SetTotal(ctx context.Context, total Budget, unlimited bool) error {
	_, err := l.SetTotalWith(ctx, total, TotalOptions{Unlimited: unlimited})
	return err
}

// TotalOptions are the options of SetTotalWith.
type TotalOptions struct {
	// Unlimited lifts the limit (for non-private test data only).
	Unlimited bool
	// BelowSpent allows a total below what was already spent in epsilon or delta, which
	// stops all spending until the total is raised again. Without it such a total is refused:
	// it is almost always a mistake (a total meant as "this much more").
	BelowSpent bool
}

// SetTotalWith sets the total budget as SetTotal does, with options, and returns the status
// after the change. Whether the total is below what was spent is decided inside the Store's
// transaction, on the status the change is made to.
func (l *Ledger) SetTotalWith(ctx context.Context, total Budget, o TotalOptions) (Status, error) {
	if err := validTotal(total, o.Unlimited); err != nil {
		return Status{}, err
	}
	return l.s.SetTotal(ctx, total, o.Unlimited, func(st Status) error {
		if o.Unlimited || o.BelowSpent || !BelowSpent(total, st.Spent) {
			return nil
		}
		return sqlerr.New(sqlerr.Pos{}, sqlerr.InvalidParameterValue,
			"the new total (%s) is below what was already spent (%s): nothing more could be spent", total, st.Spent).
			WithHint("give a total of at least what was spent (the total counts all spending since the budget was first set, it is not what is left); " +
				"to stop all spending on purpose, add allow_below_spent = TRUE to the options")
	})
}

// BelowSpent reports whether total is below spent in epsilon or in delta, by more than the
// rounding Tolerance allows.
func BelowSpent(total, spent Budget) bool {
	below := func(t, s float64) bool {
		if s <= t {
			return false
		}
		ulp := math.Nextafter(t, math.Inf(1)) - t
		return s-t > Tolerance*ulp
	}
	return below(total.Epsilon, spent.Epsilon) || below(total.Delta, spent.Delta)
}

func validTotal(b Budget, unlimited bool) error {
	if !finite(b.Epsilon) || !finite(b.Delta) {
		return sqlerr.New(sqlerr.Pos{}, sqlerr.InvalidParameterValue,
			"budget must be finite, got epsilon=%g, delta=%g", b.Epsilon, b.Delta)
	}
	if b.Delta < 0 || b.Delta >= 1 {
		return sqlerr.New(sqlerr.Pos{}, sqlerr.InvalidParameterValue,
			"budget delta must be in [0, 1), got %g", b.Delta).
			WithHint("delta is a probability; typical values are below 1/(number of users)")
	}
	if unlimited {
		if b.Epsilon < 0 {
			return sqlerr.New(sqlerr.Pos{}, sqlerr.InvalidParameterValue,
				"budget epsilon must not be negative, got %g", b.Epsilon)
		}
		return nil
	}
	if b.Epsilon <= 0 {
		return sqlerr.New(sqlerr.Pos{}, sqlerr.InvalidParameterValue,
			"budget epsilon must be greater than 0, got %g", b.Epsilon)
	}
	return nil
}

func validCost(c Budget) error {
	if !finite(c.Epsilon) || !finite(c.Delta) || c.Epsilon < 0 || c.Delta < 0 || c.Delta > 1 {
		return sqlerr.New(sqlerr.Pos{}, sqlerr.InvalidParameterValue,
			"invalid query cost epsilon=%g, delta=%g: epsilon must be finite and non-negative, delta in [0, 1]",
			c.Epsilon, c.Delta)
	}
	return nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// Prepare validates cost and returns a Spend that charges it when committed. Nothing is
// charged until Commit; dropping the Spend (because the query failed before it read any
// private data) costs nothing. Commit before the query reads private data (see the package
// comment). query is the statement text, recorded for the owner's audit.
func (l *Ledger) Prepare(cost Budget, query string) (*Spend, error) {
	if err := validCost(cost); err != nil {
		return nil, err
	}
	return &Spend{l: l, cost: cost, query: query, analyst: l.analyst}, nil
}

// Spend is one prepared charge. It can be committed once.
type Spend struct {
	l       *Ledger
	cost    Budget
	query   string
	analyst string

	mu   sync.Mutex
	used bool
}

// Cost is what the spend charges.
func (s *Spend) Cost() Budget { return s.cost }

// Commit checks the cost against what remains and records it, atomically in the Store: when
// it returns nil the charge is durable, and final. It returns the status after the charge. A refusal is a *sqlerr.Error (BudgetExhausted, or
// ObjectNotInPrerequisite when no budget is set) and charges nothing. Commit consumes the
// Spend whatever the outcome: a second call returns ErrSpent; prepare a new Spend to retry.
func (s *Spend) Commit(ctx context.Context) (Status, error) {
	s.mu.Lock()
	used := s.used
	s.used = true
	s.mu.Unlock()
	if used {
		return Status{}, ErrSpent
	}
	c := Charge{Cost: s.cost, Query: s.query, At: time.Now().UTC(), Analyst: s.analyst}
	return s.l.s.Spend(ctx, c, func(st Status) error {
		if s.analyst != "" && (st.Account == nil || st.Account.Name != s.analyst) {
			// A Store that does not know accounts would let the analyst overspend the allowance.
			return errNoAccounts(s.analyst)
		}
		return Allow(st, s.cost)
	})
}

// Allow reports whether cost may be spent given st: nil if so, otherwise the refusal that
// Commit returns. Store implementations call it (through Commit) inside their transaction.
//
// With an account (st.Account), the cost must fit the analyst's allowance and the database's
// total, and the refusal says which of them it does not fit and what is left; a dropped
// account spends nothing. The allowance binds also when the owner lifted the total's limit.
//
// Against every limit that binds (see check), a positive epsilon or delta must fit what
// remains, nothing is accepted once nothing remains, and a positive amount must change what
// is recorded as spent: a charge that float64 addition would round away (1e6 + 5e-11 is 1e6)
// is refused with RuleRecordable, whose hint gives the smallest amount that can be recorded.
func Allow(st Status, cost Budget) error {
	if !st.Set {
		return sqlerr.New(sqlerr.Pos{}, sqlerr.ObjectNotInPrerequisite,
			"no privacy budget has been set for this database").WithHint(NoBudgetHint)
	}
	if a := st.Account; a != nil {
		if !a.Exists {
			return sqlerr.New(sqlerr.Pos{}, sqlerr.InsufficientPrivilege,
				"analyst account %s no longer exists: it cannot spend privacy budget", a.Name).
				WithHint("the data owner dropped the account; ask them to create it again, then log in again")
		}
		var ve, vd verdict
		if a.LimitEpsilon {
			ve = check(a.Allowance.Epsilon, a.Spent.Epsilon, cost.Epsilon)
		}
		if a.LimitDelta {
			vd = checkDelta(a.Allowance.Delta, a.Spent.Delta, cost.Delta)
		}
		if ve == over || vd == over {
			c, left := refusalAmounts(cost, st.AccountRemaining(), st.accountRemainingParts())
			return sqlerr.New(sqlerr.Pos{}, sqlerr.BudgetExhausted,
				"your privacy allowance is exhausted: this query costs %s; your allowance (analyst %s) has %s left",
				c, a.Name, left).
				WithHint("lower epsilon (or delta) in the query's OPTIONS, or ask the data owner to raise your allowance (ALTER ANALYST %s SET OPTIONS(epsilon=...))", a.Name)
		}
		if err := unrecordable(ve, cost, a.Spent, "your allowance (analyst "+a.Name+")"); err != nil {
			return err
		}
	}
	if st.Unlimited {
		return nil
	}
	ve := check(st.Total.Epsilon, st.Spent.Epsilon, cost.Epsilon)
	vd := checkDelta(st.Total.Delta, st.Spent.Delta, cost.Delta)
	if ve == fitsOK && vd == fitsOK {
		return nil
	}
	if ve != over && vd != over {
		return unrecordable(ve, cost, st.Spent, "the database's budget")
	}
	c, r := refusalAmounts(cost, st.Remaining(), st.remainingParts())
	if st.Account != nil {
		return sqlerr.New(sqlerr.Pos{}, sqlerr.BudgetExhausted,
			"the database's privacy budget is exhausted: this query costs %s; the database has %s left for all analysts", c, r).
			WithHint("lower epsilon (or delta) in the query's OPTIONS, or ask the data owner to raise the database's budget")
	}
	return sqlerr.New(sqlerr.Pos{}, sqlerr.BudgetExhausted,
		"privacy budget exhausted: this query costs %s; the database has %s left", c, r).
		WithHint("lower epsilon (or delta) in the query's OPTIONS, or ask the data owner to raise the budget")
}

// RuleRecordable names the rule that a positive cost must increase what is recorded as spent.
const RuleRecordable = "recordable-charge"

// unrecordable is the refusal of an epsilon too small to be recorded against spent (of what,
// e.g. "the database's budget"), or nil when ve is not tooSmall (a delta never is: checkDelta).
func unrecordable(ve verdict, cost, spent Budget, what string) error {
	if ve != tooSmall {
		return nil
	}
	least := smallestRecordable(spent.Epsilon)
	return &sqlerr.Error{
		Code: sqlerr.InvalidParameterValue,
		Rule: RuleRecordable,
		Msg: fmt.Sprintf("this query's epsilon (%s) is too small to be recorded against %s: added to what was spent (%s) it leaves it unchanged in float64, so it would be spent without being counted",
			full(cost.Epsilon), what, full(spent.Epsilon)),
		Hint: fmt.Sprintf("use epsilon >= %s in the query's OPTIONS", full(least)),
	}
}

// smallestRecordable is a short amount (two significant digits, rounded up) that, added to
// spent, changes it: about one unit in the last place of spent.
func smallestRecordable(spent float64) float64 {
	u := math.Nextafter(spent, math.Inf(1)) - spent
	if spent+u <= spent || !finite(u) || u < 1e-290 { // tiny: powers of ten would underflow
		return u
	}
	e := math.Floor(math.Log10(u))
	for _, d := range []float64{e - 1, e - 1, e} { // twice: a rounded power may be a little off
		p := math.Pow(10, d)
		v := math.Ceil(u/p) * p
		if v >= u && spent+v > spent && finite(v) {
			return v
		}
	}
	return u
}

// verdict is what check decides for one limit.
type verdict int

const (
	fitsOK   verdict = iota // the cost fits and is recorded
	over                    // the cost does not fit what remains (or nothing remains)
	tooSmall                // the cost is positive but adding it leaves spent unchanged
)

// check decides whether cost may be spent against a limit of total, of which spent was
// spent: a zero cost always fits; a positive cost needs something left (spent < total), must
// increase spent when added to it (else tooSmall), and spent+cost must not exceed total by
// more than Tolerance ulps of total, for float rounding.
func check(total, spent, cost float64) verdict {
	if cost == 0 {
		return fitsOK
	}
	if !(spent < total) || math.IsNaN(cost) {
		return over
	}
	used := spent + cost
	if !(used > spent) {
		return tooSmall
	}
	if used <= total {
		return fitsOK
	}
	ulp := math.Nextafter(total, math.Inf(1)) - total
	if used-total <= Tolerance*ulp {
		return fitsOK
	}
	return over
}

// checkDelta is check for delta, where a positive cost too small to change spent is accepted
// while something remains: such a delta is below 2^-52 of what was spent (a k_threshold
// query's derived delta, 1e-109 at epsilon 1000, is one), so leaving even 1% of the spent
// delta uncounted would take 2^45 queries. A too small epsilon is refused instead: it is what
// a query asks for, and the refusal says which epsilon is recorded.
func checkDelta(total, spent, cost float64) verdict {
	if v := check(total, spent, cost); v != tooSmall {
		return v
	}
	return fitsOK
}

// fits reports whether cost may be spent against total of which spent was spent (check).
func fits(total, spent, cost float64) bool { return check(total, spent, cost) == fitsOK }

// AddSpent is spent + cost as the stores record it: saturating at the largest finite float64,
// so that what is recorded as spent stays finite (under an unlimited budget, where nothing
// refuses charges of epsilon 1e308, it would otherwise become +Inf).
func AddSpent(spent, cost float64) float64 {
	return min(spent+cost, math.MaxFloat64)
}

// String renders b as "epsilon=0.5, delta=1e-06", with 12 significant digits so that float
// rounding noise (0.19999999999999996, or a sum of charges 0.000450000000000001) reads as
// the number the user has in mind (0.2, 0.00045). A remainder is shown with
// Status.RemainingText, which never rounds it up beyond what can be spent.
func (b Budget) String() string {
	return "epsilon=" + num(b.Epsilon) + ", delta=" + num(b.Delta)
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', shownDigits, 64) }
