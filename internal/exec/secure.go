package exec

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dpsql/dpsql/dp/agg"
	"github.com/dpsql/dpsql/dp/noise"
	"github.com/dpsql/dpsql/dp/selection"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/plan"
)

// Secure is the production Mechanisms: dp/agg accumulators and dp/selection rules, with
// noise from crypto/rand.
type Secure struct{}

var _ Mechanisms = Secure{}

// Prepare builds one prototype accumulator per aggregate (each group's is a Fresh copy) and
// the selection rule.
func (Secure) Prepare(p *plan.Plan) (Release, error) {
	sel, err := NewSelection(p.Selection)
	if err != nil {
		return nil, err
	}
	r := &secureRelease{sel: sel, level: p.ConfidenceLevel}
	for _, a := range p.Aggregates {
		proto, err := newAccumulator(a)
		if err != nil {
			return nil, err
		}
		a.Encoding = proto.encoding()
		r.protos = append(r.protos, proto)
		r.aggs = append(r.aggs, a)
	}
	return r, nil
}

// Bounds estimates bounds with dp/agg's approximate bounds (Laplace noise on a logarithmic
// histogram).
func (Secure) Bounds(a *plan.Aggregate, s agg.BoundsSummary) (agg.BoundsReport, error) {
	return secureBounds(a, s)
}

// keepAll is the selection rule of delta = 1 (selection.KeepAll).
const keepAll plan.SelectionRule = "keep-all"

// NewSelection makes the dp/selection rule of a plan.
func NewSelection(s plan.Selection) (selection.Strategy, error) {
	params := selection.Params{Epsilon: s.Epsilon, Delta: s.Delta, L0: s.Kappa}
	var st selection.Strategy
	var err error
	rule := s.Rule
	if s.Delta >= 1 && s.KThreshold == 0 && rule != plan.PublicGroups {
		rule = keepAll // delta = 1 protects nothing: every group is released
	}
	switch rule {
	case keepAll:
		st = selection.KeepAll(s.Epsilon, s.Delta)
	case plan.PublicGroups:
		return selection.Public(), nil
	case plan.LaplaceThreshold:
		if s.KThreshold > 0 {
			st, err = selection.NewLaplaceKThreshold(s.Epsilon, s.KThreshold, s.Kappa)
		} else {
			st, err = selection.NewLaplaceThreshold(params)
		}
	case plan.GaussianThreshold:
		st, err = selection.NewGaussianThreshold(params)
	case plan.TruncatedGeometric:
		st, err = selection.NewTruncatedGeometric(params)
	default:
		st, err = selection.NewLaplaceThreshold(params)
	}
	if err != nil || s.MinUnits <= 1 {
		return st, err
	}
	return &atLeast{Strategy: st, shift: s.MinUnits - 1}, nil
}

// atLeast applies min_privacy_units_per_group: the rule sees each group's unit count less
// (min - 1), so a group needs min - 1 more units to reach the same release probability, and
// groups of fewer than min units are never released. Shifting every count by the same
// constant keeps the distance between neighbouring datasets, so the guarantee and the cost
// are unchanged (a plain cut on the exact count would not be DP).
type atLeast struct {
	selection.Strategy
	shift int64
}

func (a *atLeast) Keep(n int64) (bool, error) {
	if n-a.shift <= 0 {
		return false, nil
	}
	return a.Strategy.Keep(n - a.shift)
}

func (a *atLeast) ProbabilityOfKeep(n int64) float64 {
	if n-a.shift <= 0 {
		return 0
	}
	return a.Strategy.ProbabilityOfKeep(n - a.shift)
}

func (a *atLeast) UnitsForProbability(p float64) int64 {
	return a.Strategy.UnitsForProbability(p) + a.shift
}

func (a *atLeast) Describe() string {
	return fmt.Sprintf("%s; min_privacy_units_per_group=%d adds %d to the units needed", a.Strategy.Describe(), a.shift+1, a.shift)
}

type secureRelease struct {
	sel    selection.Strategy
	level  float64
	protos []accumulator
	aggs   []*plan.Aggregate
}

func (r *secureRelease) Keep(n int64) (bool, error) { return r.sel.Keep(n) }

func (r *secureRelease) Value(j int, s Summary) (Value, error) {
	return r.protos[j].release(s, Level(r.aggs[j], r.level))
}

// Level is the confidence level of aggregate a's interval when the query asks for level:
// a report always has one, at plan.ReportConfidenceLevel; an aggregate that a post-processed
// output combines with other noisy values has its own, higher one (a.IntervalLevel).
func Level(a *plan.Aggregate, level float64) float64 {
	if a.Report != nil {
		return plan.ReportConfidenceLevel
	}
	if level > 0 && a.IntervalLevel > level {
		return a.IntervalLevel
	}
	return level
}

// NoiseStddev is the standard deviation of the noise added to aggregate j's value when it
// depends on public parameters only (epsilon, delta, kappa, bounds): counts and sums. Other
// aggregates (averages, variances, quantiles), whose error depends on the data, give NaN.
func (r *secureRelease) NoiseStddev(j int) float64 {
	var sens float64
	switch p := r.protos[j].(type) {
	case *countAcc:
		sens = p.proto.Sensitivity()
	case *sumAcc:
		sens = p.proto.Sensitivity()
	default:
		return math.NaN()
	}
	a := r.aggs[j]
	m, err := noise.New(a.Noise, noise.Params{Epsilon: a.Epsilon, Delta: a.Delta, L0: a.Kappa, LInf: sens})
	if err != nil {
		return math.NaN()
	}
	if a.Noise == noise.Gaussian {
		return m.Scale()
	}
	return math.Sqrt2 * m.Scale() // a Laplace distribution of scale b has variance 2b²
}

func (r *secureRelease) Describe() []string {
	lines := []string{"partition selection: " + r.sel.Describe()}
	for j, p := range r.protos {
		lines = append(lines, fmt.Sprintf("%s: %s", r.aggs[j].Name, p.describe()))
	}
	return lines
}

// accumulator adapts one dp/agg accumulator type to the executor.
type accumulator interface {
	encoding() plan.Encoding
	release(s Summary, level float64) (Value, error)
	describe() string
}

func newAccumulator(a *plan.Aggregate) (accumulator, error) {
	switch a.Func {
	case analyzer.CountUnits, analyzer.CountRows, analyzer.CountValues:
		c, err := agg.NewCount(agg.CountOptions{Epsilon: a.Epsilon, Delta: a.Delta, MaxPartitionsContributed: a.Kappa,
			MaxContributionsPerPartition: int64(a.Upper) * a.PerGroup, NoiseKind: a.Noise})
		if err != nil {
			return nil, err
		}
		return &countAcc{proto: c, units: a.Func == analyzer.CountUnits, a: a}, nil
	case analyzer.Sum:
		s, err := agg.NewBoundedSum(agg.SumOptions{Epsilon: a.Epsilon, Delta: a.Delta, MaxPartitionsContributed: a.Kappa,
			MaxContributionsPerPartition: a.PerGroup, Lower: a.Lower, Upper: a.Upper, NoiseKind: a.Noise})
		if err != nil {
			return nil, err
		}
		return &sumAcc{proto: s, integer: a.IntegerResult, a: a}, nil
	case analyzer.Avg:
		m, err := agg.NewBoundedMean(agg.MeanOptions{Epsilon: a.Epsilon, Delta: a.Delta, MaxPartitionsContributed: a.Kappa,
			MaxContributionsPerPartition: a.PerGroup, Lower: a.Lower, Upper: a.Upper, NoiseKind: a.Noise})
		if err != nil {
			return nil, err
		}
		return &meanAcc{proto: m}, nil
	case analyzer.VarPop, analyzer.StddevPop:
		v, err := agg.NewBoundedVariance(agg.VarianceOptions{Epsilon: a.Epsilon, Delta: a.Delta, MaxPartitionsContributed: a.Kappa,
			MaxContributionsPerPartition: a.PerGroup, Lower: a.Lower, Upper: a.Upper, NoiseKind: a.Noise})
		if err != nil {
			return nil, err
		}
		return &varAcc{proto: v, stddev: a.Func == analyzer.StddevPop}, nil
	case analyzer.Percentile, analyzer.Quantiles:
		q, err := agg.NewQuantiles(QuantileOptions(a))
		if err != nil {
			return nil, err
		}
		return &quantAcc{proto: q, a: a}, nil
	}
	return nil, fmt.Errorf("exec: %s is not supported yet", a.Func)
}

// Encoding computes the fixed-point encoding dp/agg uses for an aggregate, without building
// its noise (for EXPLAIN and for noiseless tests, which must send the same SQL).
func Encoding(a *plan.Aggregate) (plan.Encoding, error) {
	acc, err := newAccumulator(a)
	if err != nil {
		return plan.Encoding{}, err
	}
	return acc.encoding(), nil
}

func sumEncoding(unit, lo, hi float64) plan.Encoding {
	return plan.Encoding{Unit: unit, LowerUnits: int64(math.Round(lo / unit)), UpperUnits: int64(math.Round(hi / unit))}
}

func summaryBig(x *big.Int) *big.Int {
	if x == nil {
		return new(big.Int)
	}
	return x
}

type countAcc struct {
	proto *agg.Count
	units bool
	a     *plan.Aggregate
}

func (c *countAcc) encoding() plan.Encoding { return plan.Encoding{Unit: 1} }

func (c *countAcc) release(s Summary, level float64) (Value, error) {
	acc := c.proto.Fresh()
	n := s.Units
	if !c.units {
		if s.Sum == nil || !s.Sum.IsInt64() {
			return Value{}, fmt.Errorf("exec: count summary out of range")
		}
		n = s.Sum.Int64()
	}
	if err := acc.Merge(agg.CountSummary{Count: n}); err != nil {
		return Value{}, err
	}
	return takeResult[int64](acc, level)
}

// resulter is a dp/agg accumulator's result, taken once.
type resulter[T int64 | float64] interface {
	Result() (T, error)
	ResultWithCI(level float64) (v, lo, hi T, err error)
}

// takeResult takes an accumulator's result, with its confidence interval when level > 0.
func takeResult[T int64 | float64](acc resulter[T], level float64) (Value, error) {
	if level > 0 {
		v, lo, hi, err := acc.ResultWithCI(level)
		return Value{V: v, Lo: lo, Hi: hi, HasCI: true}, err
	}
	v, err := acc.Result()
	return Value{V: v}, err
}

func (c *countAcc) describe() string {
	return fmt.Sprintf("count, sensitivity %g per group; %s", c.proto.Sensitivity(), noiseScale(c.a, c.proto.Sensitivity()))
}

// noiseScale describes the noise of a mechanism with per-group sensitivity lInf, for EXPLAIN.
func noiseScale(a *plan.Aggregate, lInf float64) string {
	m, err := noise.New(a.Noise, noise.Params{Epsilon: a.Epsilon, Delta: a.Delta, L0: a.Kappa, LInf: lInf})
	if err != nil {
		return "noise: " + err.Error()
	}
	if a.Noise == noise.Gaussian {
		return fmt.Sprintf("Gaussian noise, sigma %.4g", m.Scale())
	}
	return fmt.Sprintf("Laplace noise, scale %.4g (kappa x sensitivity / epsilon)", m.Scale())
}

type sumAcc struct {
	proto   *agg.BoundedSum
	integer bool
	a       *plan.Aggregate
}

func (s *sumAcc) encoding() plan.Encoding {
	lo, hi := s.proto.RoundedBounds()
	return sumEncoding(s.proto.Unit(), lo, hi)
}

func (s *sumAcc) release(sm Summary, level float64) (Value, error) {
	acc := s.proto.Fresh()
	if err := acc.Merge(agg.SumSummary{Count: sm.Count, Units: summaryBig(sm.Sum), Shift: sm.Shift}); err != nil {
		return Value{}, err
	}
	out, err := takeResult[float64](acc, level)
	if err != nil {
		return Value{}, err
	}
	if s.integer {
		out = roundValue(out)
	}
	return out, nil
}

func (s *sumAcc) describe() string {
	lo, hi := s.proto.RoundedBounds()
	return fmt.Sprintf("bounded sum over [%g, %g], sensitivity %g per group; %s", lo, hi, s.proto.Sensitivity(), noiseScale(s.a, s.proto.Sensitivity()))
}

func roundValue(v Value) Value {
	r := func(x any) any {
		if f, ok := x.(float64); ok && !math.IsNaN(f) {
			return roundInt64(f)
		}
		return x
	}
	v.V = r(v.V)
	if v.HasCI {
		v.Lo, v.Hi = r(v.Lo), r(v.Hi)
	}
	return v
}

// roundInt64 rounds f to the nearest int64, saturating at the type's ends as Google's
// library casts a noisy integer result (SafeCastFromDouble): a sum beyond them is released
// as the end on its side, never converted out of range (which gives the wrong sign).
func roundInt64(f float64) int64 {
	switch {
	case f >= 0x1p63:
		return math.MaxInt64
	case f < -0x1p63:
		return math.MinInt64
	}
	return int64(math.Round(f))
}

type meanAcc struct{ proto *agg.BoundedMean }

func (m *meanAcc) encoding() plan.Encoding {
	lo, hi := m.proto.RoundedBounds()
	return sumEncoding(m.proto.Unit(), lo, hi)
}

func (m *meanAcc) release(s Summary, level float64) (Value, error) {
	acc := m.proto.Fresh()
	if err := acc.Merge(agg.MeanSummary{Count: s.Count, Units: summaryBig(s.Sum), Shift: s.Shift}); err != nil {
		return Value{}, err
	}
	return takeResult[float64](acc, level)
}

func (m *meanAcc) describe() string {
	lo, hi := m.proto.RoundedBounds()
	c, s := m.proto.Sensitivities()
	return fmt.Sprintf("bounded mean over [%g, %g]: noisy normalised sum (sensitivity %g) / noisy count (sensitivity %g), budget split equally", lo, hi, s, c)
}

type varAcc struct {
	proto  *agg.BoundedVariance
	stddev bool
}

func (v *varAcc) encoding() plan.Encoding {
	lo, hi := v.proto.RoundedBounds()
	e := sumEncoding(v.proto.Unit(), lo, hi)
	e.SquareUnit = e.Unit * e.Unit
	l, h := e.LowerUnits, e.UpperUnits
	e.SquareUpperUnits = max(l*l, h*h)
	switch {
	case l > 0:
		e.SquareLowerUnits = l * l
	case h < 0:
		e.SquareLowerUnits = h * h
	}
	return e
}

func (v *varAcc) release(s Summary, level float64) (Value, error) {
	acc := v.proto.Fresh()
	if err := acc.Merge(agg.VarianceSummary{Count: s.Count, Units: summaryBig(s.Sum), SquareUnits: summaryBig(s.Square)}); err != nil {
		return Value{}, err
	}
	out, err := takeResult[float64](acc, level)
	if err != nil {
		return Value{}, err
	}
	if v.stddev {
		sq := func(x any) any { return math.Sqrt(math.Max(0, x.(float64))) }
		out.V = sq(out.V)
		if out.HasCI {
			out.Lo, out.Hi = sq(out.Lo), sq(out.Hi)
		}
	}
	return out, nil
}

func (v *varAcc) describe() string {
	lo, hi := v.proto.RoundedBounds()
	name := "variance"
	if v.stddev {
		name = "standard deviation (square root of the variance)"
	}
	return fmt.Sprintf("bounded %s over [%g, %g], values clamped per row, each unit's rows weighted 1; budget split in three (count, sum, sum of squares)", name, lo, hi)
}
