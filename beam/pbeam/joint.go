package pbeam

import (
	"fmt"
	"math"
	"math/big"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/dpsql/dpsql/beam/internal/dofn"

	"github.com/dpsql/dpsql/dp/agg"
	"github.com/dpsql/dpsql/dp/noise"
)

// A joint Gaussian release (beyond Privacy on Beam): several aggregations of
// the same bounded contributions as ONE mechanism, the generalised analytic
// Gaussian mechanism (Desfontaines' thesis, Proposition 31), instead of one
// mechanism per aggregation with a share of the budget each.

func init() {
	dofn.DoFn3x1[string, partResult, func(beam.W, Aggregates), error](&aggregatesOutFn{})
	register.Emitter2[beam.W, Aggregates]()
	beam.RegisterType(reflect.TypeOf(Aggregates{}))
	beam.RegisterType(reflect.TypeOf(jointParts{}))
	kindImpls[kindJoint] = newJoint
}

// kindJoint is AggregatePerKey's kind; it is numbered apart from the
// PoB aggregations' kinds.
const kindJoint aggKind = 64

// AggregateParams are the parameters of AggregatePerKey.
type AggregateParams struct {
	// AggregationEpsilon and AggregationDelta are the budget of the whole
	// joint release (all its aggregations together), a share of the
	// PrivacySpec's aggregation budget; both 0 takes all of it. The release
	// is Gaussian, so the delta must be positive.
	AggregationEpsilon, AggregationDelta float64
	// PartitionSelectionParams is the share of the partition selection
	// budget of the release's one partition selection (both 0: all of it).
	// Leave unset with PublicPartitions.
	PartitionSelectionParams PartitionSelectionParams
	// PublicPartitions, if set, are the output's partitions, known in
	// advance (a beam.PCollection, slice or array of the key type).
	PublicPartitions any
	// MaxPartitionsContributed is the number of keys a privacy unit may
	// contribute to. Required.
	MaxPartitionsContributed int64
	// MaxContributionsPerPartition is the number of values a privacy unit
	// may contribute to one key (kept at random). Required.
	MaxContributionsPerPartition int64
	// MinValue and MaxValue clamp each value. Required, MinValue < MaxValue.
	MinValue, MaxValue float64
	// Count, Sum and Mean choose the aggregations released; at least one.
	// Count is the number of values, Sum their clamped total (each value
	// clamped, as MeanPerKey does, not each unit's total as SumPerKey does),
	// Mean their clamped mean.
	Count, Sum, Mean bool
}

// Aggregates are the released aggregations of one key. Those not asked
// for in AggregateParams are 0. In test mode, Mean is NaN for a key whose
// values were all NaN.
type Aggregates struct {
	Count int64
	Sum   float64
	Mean  float64
}

// jointParts says which aggregations AggregatePerKey releases.
type jointParts struct {
	Count, Sum, Mean bool
}

// coordinates lists the noisy coordinates of one partition: the count
// (for Count, and as the denominator of Mean), the sum, and the sum of
// the values' offsets from the bounds' midpoint (for Mean).
func (p jointParts) coordinates() (count, sum, normalised bool, n int64) {
	count, sum, normalised = p.Count || p.Mean, p.Sum, p.Mean
	for _, c := range []bool{count, sum, normalised} {
		if c {
			n++
		}
	}
	return count, sum, normalised, n
}

// AggregatePerKey releases, for each key of a PrivatePCollection<K,V> with
// V a number, the count, sum and/or mean of its values (AggregateParams
// chooses), as one Gaussian mechanism with one (epsilon, delta): it returns
// PCollection<K, Aggregates>. Contributions are bounded once (at most
// MaxPartitionsContributed keys per privacy unit, MaxContributionsPerPartition
// values per unit and key, each value clamped to [MinValue, MaxValue]) and
// partitions are selected once, for all the aggregations. NaN values are
// ignored (the unit still counts for partition selection).
//
// # The mechanism
//
// Write k = MaxPartitionsContributed, m = MaxContributionsPerPartition,
// [L, U] the clamping bounds (rounded outward to dp/agg's fixed-point grid)
// and mid = (L+U)/2. Per key, the release is the vector of J coordinates
// (J = 1 to 3, those the chosen aggregations need):
//
//	coordinate            exact value                  per-key sensitivity Δ_j
//	count                 number of kept values, n     m
//	sum                   Σ clamped values             m·max(|L|, |U|)
//	normalised sum        Σ (clamped value − mid)      m·(U − L)/2
//
// and each coordinate j of every key gets independent Gaussian noise of
// standard deviation σ_j = Δ_j·σ₁, where σ₁ = GaussianSigma(ε, δ, √(k·J)) is
// the analytic Gaussian sigma (Balle and Wang 2018) of L2 sensitivity
// √(k·J) for the release's (ε, δ). (In dp/noise terms: a Gaussian mechanism
// with L0 = k·J and LInf = Δ_j for coordinate j.) Count is the noisy count
// (at least 0), Sum the noisy sum (at least 0 when L >= 0), Mean the noisy
// normalised sum over max(1, noisy count) plus mid, clamped to [L, U]:
// post-processing.
//
// # Why it is (ε, δ)-DP (Proposition 31)
//
// Divide every coordinate j of every key by Δ_j. Adding or removing one
// privacy unit changes at most k keys, and in each at most the J
// coordinates, each by at most Δ_j before the division, so by at most 1
// after: the rescaled vector of all keys has L2 sensitivity at most √(k·J).
// The rescaled noise is i.i.d. Gaussian of standard deviation σ₁, which by
// the analytic Gaussian mechanism (Theorem 8 of Balle and Wang: exact, for
// every ε > 0) makes the rescaled release (ε, δ)-DP. Multiplying back by Δ_j
// and computing Count, Sum and Mean from the noisy coordinates is
// post-processing, so the release is (ε, δ)-DP. The partition selection, on
// the number of units per key, is a separate (ε', δ')-DP step paid from the
// partition selection budget, as for every aggregation.
//
// dp/noise adds the noise on a power-of-two grid per coordinate with an
// exact discrete Gaussian; its calibration counts the rounding (Δ_j becomes
// a whole number of grid steps) and its privacy curve is the continuous
// one's up to a relative error of order exp(−2π²·2^80): the argument above
// holds step for step.
//
// # Why it is cheaper than splitting the budget
//
// Separate Gaussian aggregations with (ε/J, δ/J) each have σ_j = Δ_j·√k·
// GaussianSigma(ε/J, δ/J, 1); the joint release has Δ_j·√k·√J·
// GaussianSigma(ε, δ, 1). Since the Gaussian sigma grows like
// √(2 ln(1.25/δ))/ε, the joint sigma is a fraction of the split one: 0.59
// for the three aggregations at ε = 1, δ = 1e-5, and 0.30 for the mean's
// count and normalised sum, which a separate mean splits once more
// (TestAggregatePerKeyNoise measures 0.6 for the count and the sum and 0.34
// for the mean's error). Laplace noise gains nothing from a joint release (L1
// sensitivities add up, as budgets do), so AggregatePerKey is Gaussian only.
func AggregatePerKey(s beam.Scope, pcol PrivatePCollection, params AggregateParams) beam.PCollection {
	const op = "pbeam.AggregatePerKey"
	s = s.Scope(op)
	codec := pcol.mustPairs(op)
	if vt := codec.VType.T; !isNumeric(vt) {
		fail("%s: the values are of type %v; AggregatePerKey needs numbers (integers or floats)", op, vt)
	}
	parts := jointParts{Count: params.Count, Sum: params.Sum, Mean: params.Mean}
	if _, _, _, n := parts.coordinates(); n == 0 {
		fail("%s: no aggregation asked for; set Count, Sum and/or Mean in AggregateParams", op)
	}
	ag := &aggregation{op: op, pcol: pcol, public: params.PublicPartitions}
	ag.checkCommon(GaussianNoise{}, params.AggregationDelta, params.PartitionSelectionParams, params.MaxPartitionsContributed)
	if params.MaxContributionsPerPartition <= 0 {
		fail("%s: MaxContributionsPerPartition is %d; set it to the most values one privacy unit may contribute to one key (at least 1)", op, params.MaxContributionsPerPartition)
	}
	checkBounds(op, params.MinValue, params.MaxValue)
	if params.MinValue == params.MaxValue {
		fail("%s: MinValue and MaxValue are both %v; give MinValue < MaxValue", op, params.MinValue)
	}
	if params.AggregationEpsilon != 0 && params.AggregationDelta == 0 {
		fail("%s: AggregationDelta is 0; the joint release is Gaussian and needs a delta in (0, 1), for example 1e-5", op)
	}
	ag.consumeBudget(params.AggregationEpsilon, params.AggregationDelta, params.PartitionSelectionParams)
	if ag.part.Delta == 0 && !pcol.spec.testMode.enabled() {
		fail("%s: the PrivacySpec's AggregationDelta is 0; the joint release is Gaussian and needs a delta in (0, 1)", op)
	}
	ag.rows.Value = valueFloat
	ag.bound.MaxPartitions = params.MaxPartitionsContributed
	ag.bound.KeepValues = true
	ag.bound.MaxValues = params.MaxContributionsPerPartition
	ag.part.Kind = kindJoint
	ag.part.Joint = parts
	ag.part.MaxPartitions = params.MaxPartitionsContributed
	ag.part.MaxPerPartition = params.MaxContributionsPerPartition
	ag.part.Lower, ag.part.Upper = params.MinValue, params.MaxValue
	ag.part.Noise = noise.Gaussian
	ag.part.ClampNegative = params.MinValue >= 0
	released := ag.build(s)
	return ag.output(s, released, &aggregatesOutFn{Codec: newElementCodec(ag.partitionType())})
}

// joint releases AggregatePerKey's coordinates of one partition.
type joint struct {
	fn  *partitionFn
	enc *agg.BoundedSum // the fixed-point encoding of the clamped values
	// lo and hi are the encoded bounds, unit the fixed-point unit.
	lo, hi int64
	unit   float64
	// The mechanisms of the coordinates; nil when not released.
	count, sum, normalised noise.Mechanism
}

func newJoint(fn *partitionFn) (kindImpl, error) {
	// The sum's noise is unused: it provides the encoding and the rounded
	// bounds, which dp/agg's mean shares.
	enc, err := agg.NewBoundedSum(agg.SumOptions{
		Epsilon: max(fn.Epsilon, 1), Delta: 0.5, NoiseKind: noise.Gaussian,
		MaxPartitionsContributed: fn.MaxPartitions, MaxContributionsPerPartition: fn.MaxPerPartition,
		Lower: fn.Lower, Upper: fn.Upper,
	})
	if err != nil {
		return nil, err
	}
	j := &joint{fn: fn, enc: enc, unit: enc.Unit()}
	j.lo, _ = enc.Encode(fn.Lower)
	j.hi, _ = enc.Encode(fn.Upper)
	if fn.TestMode.enabled() {
		return j, nil
	}
	j.count, j.sum, j.normalised, err = jointMechanisms(fn, enc)
	return j, err
}

// jointMechanisms builds the coordinates' Gaussian mechanisms: for
// coordinate j, L0 = k·J and LInf = Δ_j, so sigma_j = Δ_j·GaussianSigma(ε,
// δ, √(k·J)) (see AggregatePerKey).
func jointMechanisms(fn *partitionFn, enc *agg.BoundedSum) (count, sum, normalised noise.Mechanism, err error) {
	hasCount, hasSum, hasNorm, n := fn.Joint.coordinates()
	m := float64(fn.MaxPerPartition)
	l, u := enc.RoundedBounds()
	if fn.MaxPartitions > math.MaxInt64/n {
		return nil, nil, nil, fmt.Errorf("MaxPartitionsContributed (%d) times the %d released coordinates overflows; use a realistic MaxPartitionsContributed", fn.MaxPartitions, n)
	}
	mech := func(what string, linf float64) (noise.Mechanism, error) {
		g, err := noise.NewGaussian(noise.Params{Epsilon: fn.Epsilon, Delta: fn.Delta, L0: fn.MaxPartitions * n, LInf: linf})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return g, nil
	}
	if hasCount {
		if count, err = mech("count", m); err != nil {
			return nil, nil, nil, err
		}
	}
	if hasSum {
		if sum, err = mech("sum", enc.Sensitivity()); err != nil {
			return nil, nil, nil, err
		}
	}
	if hasNorm {
		if normalised, err = mech("normalised sum", m*(u-l)/2); err != nil {
			return nil, nil, nil, err
		}
	}
	return count, sum, normalised, nil
}

func (j *joint) add(a *partAcc, c contribution) {
	for _, v := range c.Vals {
		u, ok := j.enc.Encode(v)
		if !ok {
			continue
		}
		a.Count++
		a.Sum = a.Sum.AddInt64(u)
		if j.fn.TestMode.bounding() {
			v = min(max(v, j.fn.Lower), j.fn.Upper)
		}
		a.ExactF += v
	}
}

func (j *joint) release(a partAcc) (partResult, error) {
	var r partResult
	p := j.fn.Joint
	if j.fn.TestMode.enabled() {
		r.I, r.F, r.Mean = a.Count, a.ExactF, a.ExactF/float64(a.Count)
	} else {
		units := a.Sum.Big()
		c := a.Count
		if j.count != nil {
			var err error
			if c, err = j.count.AddNoiseInt(a.Count); err != nil {
				return r, err
			}
			r.I = max(c, 0)
		}
		if j.sum != nil {
			s, err := j.sum.AddNoiseFloat(scaled(units, j.unit))
			if err != nil {
				return r, err
			}
			r.F = s
			if j.fn.ClampNegative {
				r.F = max(s, 0)
			}
		}
		if j.normalised != nil {
			// Σ (v − mid) = (2·units − n·(lo+hi))·unit/2, exactly until
			// the one rounding to float64.
			x := new(big.Int).Lsh(units, 1)
			x.Sub(x, new(big.Int).Mul(big.NewInt(a.Count), big.NewInt(j.lo+j.hi)))
			ns, err := j.normalised.AddNoiseFloat(scaled(x, j.unit/2))
			if err != nil {
				return r, err
			}
			l, u := j.enc.RoundedBounds()
			r.Mean = min(max(ns/math.Max(1, float64(c))+(l+u)/2, l), u)
		}
	}
	if !p.Count {
		r.I = 0
	}
	if !p.Sum {
		r.F = 0
	}
	if !p.Mean {
		r.Mean = 0
	}
	return r, nil
}

// scaled returns x·unit rounded once to float64 (unit a power of two),
// capped at ±MaxFloat64 as dp/agg caps its sums, so that no exact total
// turns into an infinity the noise cannot be added to.
func scaled(x *big.Int, unit float64) float64 {
	f, _ := new(big.Float).SetInt(x).Float64()
	return max(-math.MaxFloat64, min(math.MaxFloat64, f*unit))
}

type aggregatesOutFn struct{ Codec *elementCodec }

func (fn *aggregatesOutFn) ProcessElement(k string, r partResult, emit func(beam.W, Aggregates)) error {
	key, err := fn.Codec.decode([]byte(k))
	if err != nil {
		return err
	}
	emit(key, Aggregates{Count: r.I, Sum: r.F, Mean: r.Mean})
	return nil
}
