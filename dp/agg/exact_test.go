package agg

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

func TestFixedPointExp(t *testing.T) {
	for _, c := range []struct {
		lower, upper float64
		want         int
	}{
		{0, 1, -40},
		{-1, 0.5, -40},
		{0, 1.5, -39},
		{-50, 49.9, 6 - 40},
		{0, 1024, 10 - 40},
		{0, 1025, 11 - 40},
		{-math.MaxFloat64, 0, 1024 - 40},
		{0, 1e-320, -1074}, // clamped at the smallest subnormal
	} {
		if got := fixedPointExp(c.lower, c.upper, SumFixedPointBits); got != c.want {
			t.Errorf("fixedPointExp(%v, %v) = %d, want %d", c.lower, c.upper, got, c.want)
		}
	}
}

func TestEncoding(t *testing.T) {
	e := newEncoding(-50, 49.9, SumFixedPointBits) // unit 2^-34
	if e.unit != math.Ldexp(1, -34) {
		t.Fatalf("unit = %v", e.unit)
	}
	if e.lo != -50<<34 {
		t.Errorf("lo = %d, want %d", e.lo, int64(-50)<<34)
	}
	// 49.9 is not a multiple of 2^-34: hi is the nearest multiple.
	if got := float64(e.hi) * e.unit; math.Abs(got-49.9) > e.unit/2 {
		t.Errorf("U' = %v, want within unit/2 of 49.9", got)
	}
	for _, c := range []struct {
		v    float64
		want int64
	}{
		{-1000, e.lo}, {1000, e.hi}, {math.Inf(1), e.hi}, {math.Inf(-1), e.lo},
		{1, 1 << 34}, {-0.5, -(1 << 33)},
		{math.Ldexp(1, -35), 0},                        // half a unit: to even (0)
		{3 * math.Ldexp(1, -35), 2},                    // 1.5 units: to even (2)
		{math.Ldexp(1, -35) + math.Ldexp(1, -60), 1},   // just above half: up
		{-3 * math.Ldexp(1, -35), -2},                  // -1.5 units: to even (-2)
		{5 * math.Ldexp(1, -35), 2},                    // 2.5 units: to even (2)
		{math.SmallestNonzeroFloat64, 0},               // far below a unit
		{49.9 + math.Ldexp(1, -30), e.hi},              // clamped first
		{-50 - math.SmallestNonzeroFloat64, -50 << 34}, // rounds to -50, clamps to -50
	} {
		if got := e.units(c.v); got != c.want {
			t.Errorf("units(%v) = %d, want %d", c.v, got, c.want)
		}
	}
	// Every encoded value is within [lo, hi], and |units| <= 2^bits.
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 10000; i++ {
		v := (r.Float64() - 0.5) * 300
		u := e.units(v)
		if u < e.lo || u > e.hi || u > 1<<SumFixedPointBits || u < -(1<<SumFixedPointBits) {
			t.Fatalf("units(%v) = %d outside [%d, %d]", v, u, e.lo, e.hi)
		}
	}
}

func TestExactSumSpillsIntoBigInt(t *testing.T) {
	var s exactSum
	want := new(big.Int)
	for i := 0; i < 1000; i++ {
		x := int64(math.MaxInt64 - i)
		if i%3 == 2 {
			x = math.MinInt64 + int64(i)
		}
		s.add(x)
		want.Add(want, big.NewInt(x))
	}
	huge, _ := new(big.Int).SetString("123456789012345678901234567890", 10)
	s.addBig(huge)
	want.Add(want, huge)
	s.addBig(big.NewInt(-7))
	want.Add(want, big.NewInt(-7))
	if got := s.value(); got.Cmp(want) != 0 {
		t.Errorf("exactSum = %v, want %v", got, want)
	}
}

func TestToFloat(t *testing.T) {
	for _, c := range []struct {
		x    *big.Int
		exp  int
		want float64
	}{
		{big.NewInt(3), -1, 1.5},
		{big.NewInt(-5), 2, -20},
		{big.NewInt(1), -1074, math.SmallestNonzeroFloat64},
		{big.NewInt(1), -1080, 0},
		{new(big.Int).Lsh(big.NewInt(1), 2000), 0, math.MaxFloat64}, // saturates
		{new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 2000)), 0, -math.MaxFloat64},
		// 2^60 + 1 rounds once to the nearest float64, 2^60.
		{new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), 60), big.NewInt(1)), 0, math.Ldexp(1, 60)},
	} {
		if got := toFloat(c.x, c.exp); got != c.want {
			t.Errorf("toFloat(%v, %d) = %v, want %v", c.x, c.exp, got, c.want)
		}
	}
}

// TestSumIsOrderIndependent is issue item 6: a sum of 10^5 clamped floats,
// added in many orders, gives identical exact totals and identical float64
// results, while naive float64 summation of the same terms does not.
func TestSumIsOrderIndependent(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	vals := make([]float64, 100000)
	for i := range vals {
		// Magnitudes spread over many binades, and some values outside the bounds.
		vals[i] = (r.Float64() - 0.3) * math.Pow(10, float64(r.IntN(9)-4))
	}
	base, err := NewBoundedSum(SumOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: -1000, Upper: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var first *big.Int
	var firstExact float64
	naive := map[float64]bool{}
	const orders = 20
	for k := 0; k < orders; k++ {
		r.Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
		s := base.Fresh()
		f := 0.0
		for _, v := range vals {
			if err := s.Add(v); err != nil {
				t.Fatal(err)
			}
			f += math.Min(math.Max(v, -1000), 1000)
		}
		naive[f] = true
		sum, err := s.Summary()
		if err != nil {
			t.Fatal(err)
		}
		if sum.Count != int64(len(vals)) {
			t.Fatalf("Count = %d", sum.Count)
		}
		if k == 0 {
			first, firstExact = sum.Units, s.exact()
			continue
		}
		if sum.Units.Cmp(first) != 0 || s.exact() != firstExact {
			t.Fatalf("order %d: units %v (%v), first order %v (%v)", k, sum.Units, s.exact(), first, firstExact)
		}
	}
	if len(naive) < 2 {
		t.Logf("naive float64 summation happened to agree in all %d orders", orders)
	} else {
		t.Logf("naive float64 summation gave %d different sums in %d orders; the exact sum gave 1", len(naive), orders)
	}
	// The exact sum is within n*unit/2 of the true (real-number) clamped sum.
	exact := new(big.Float).SetPrec(2000)
	for _, v := range vals {
		exact.Add(exact, new(big.Float).SetFloat64(math.Min(math.Max(v, -1000), 1000)))
	}
	ef, _ := exact.Float64()
	if tol := float64(len(vals)) * base.Unit() / 2; math.Abs(ef-firstExact) > tol {
		t.Errorf("exact fixed-point sum %v differs from the real sum %v by more than %v", firstExact, ef, tol)
	}
}

func TestNoiselessSum(t *testing.T) {
	s, err := NewBoundedSum(SumOptions{Epsilon: 1, MaxPartitionsContributed: 3, Lower: -2, Upper: 5})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Sensitivity(); got != 5 {
		t.Errorf("Sensitivity = %v, want 5", got)
	}
	noiseless(s)
	for _, v := range []float64{1, 2.5, -7, 100, math.NaN(), math.Inf(1)} {
		if err := s.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	// Merge a summary as the SQL backend would produce it: 0.25 and 5 (clamped).
	other := s.Fresh()
	u1, _ := other.Encode(0.25)
	u2, _ := other.Encode(7)
	if err := s.Merge(SumSummary{Count: 2, Units: big.NewInt(u1 + u2)}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + 2.5 - 2 + 5 + 5 + 0.25 + 5; got != want {
		t.Errorf("Result = %v, want %v", got, want)
	}
	if _, err := s.Result(); !errors.Is(err, ErrResultTaken) {
		t.Errorf("second Result: err = %v, want ErrResultTaken", err)
	}
	if err := s.Add(1); !errors.Is(err, ErrResultTaken) {
		t.Errorf("Add after Result: err = %v, want ErrResultTaken", err)
	}
	if _, err := s.Summary(); !errors.Is(err, ErrResultTaken) {
		t.Errorf("Summary after Result: err = %v, want ErrResultTaken", err)
	}
}

func TestMergeRejectsImpossibleSummaries(t *testing.T) {
	s, err := NewBoundedSum(SumOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: 0, Upper: 1})
	if err != nil {
		t.Fatal(err)
	}
	hi, _ := s.Encode(1)
	for _, sum := range []SumSummary{
		{Count: -1, Units: big.NewInt(0)},
		{Count: 2, Units: big.NewInt(2*hi + 1)}, // more than 2 values at the upper bound
		{Count: 2, Units: big.NewInt(-1)},       // below the lower bound
		{Count: 0, Units: big.NewInt(1)},
		{Count: 3, Units: big.NewInt(3)}, // a possible total (three tiny values)
	} {
		err := s.Merge(sum)
		if sum.Count == 3 {
			if err != nil {
				t.Errorf("Merge(%+v) = %v, want nil", sum, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("Merge(%+v) = nil, want an error", sum)
		}
	}
	// A nil Units is 0.
	if err := s.Merge(SumSummary{Count: 4}); err != nil {
		t.Errorf("Merge with nil Units: %v", err)
	}
}

func TestNoiselessSumInt(t *testing.T) {
	s, err := NewBoundedSumInt(IntSumOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: -3, Upper: 10})
	if err != nil {
		t.Fatal(err)
	}
	noiseless(s)
	for _, v := range []int64{1, 20, -5, math.MinInt64, math.MaxInt64, 4} {
		if err := s.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Merge(SumSummary{Count: 2, Units: big.NewInt(7)}); err != nil {
		t.Fatal(err)
	}
	v, lo, hi, err := s.ResultWithCI(0.9)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(1 + 10 - 3 - 3 + 10 + 4 + 7); v != want || lo != want || hi != want {
		t.Errorf("ResultWithCI = %d [%d, %d], want %d", v, lo, hi, want)
	}
}

func TestNoiselessCount(t *testing.T) {
	c, err := NewCount(CountOptions{Epsilon: 1, MaxPartitionsContributed: 2, MaxContributionsPerPartition: 3})
	if err != nil {
		t.Fatal(err)
	}
	if c.Sensitivity() != 3 {
		t.Errorf("Sensitivity = %v", c.Sensitivity())
	}
	noiseless(c)
	_ = c.Increment()
	_ = c.IncrementBy(10) // clamped to 3
	_ = c.IncrementBy(-4) // clamped to 0
	if err := c.Merge(CountSummary{Count: 5}); err != nil {
		t.Fatal(err)
	}
	if err := c.Merge(CountSummary{Count: -1}); err == nil {
		t.Error("Merge of a negative count succeeded")
	}
	if got, err := c.Result(); err != nil || got != 9 {
		t.Errorf("Result = %d, %v; want 9", got, err)
	}
}

func TestNoiselessMean(t *testing.T) {
	m, err := NewBoundedMean(MeanOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: 0, Upper: 10})
	if err != nil {
		t.Fatal(err)
	}
	cs, ss := m.Sensitivities()
	if cs != 1 || ss != 5 {
		t.Errorf("Sensitivities = %v, %v; want 1, 5", cs, ss)
	}
	noiseless(m)
	for _, v := range []float64{1, 2, 3, 100, -100, math.NaN()} { // 1, 2, 3, 10, 0
		_ = m.Add(v)
	}
	if got := m.normalisedSum(); got != 16-5*5 {
		t.Errorf("normalisedSum = %v, want %v", got, 16-25)
	}
	v, lo, hi, err := m.ResultWithCI(0.95)
	if err != nil {
		t.Fatal(err)
	}
	if v != 3.2 || !near(lo, 3.2, 1e-12) || !near(hi, 3.2, 1e-12) {
		t.Errorf("ResultWithCI = %v [%v, %v], want 3.2", v, lo, hi)
	}
	// An empty mean: noisy count clamped to 1, sum 0: the midpoint.
	e := noiseless(m.Fresh())
	if got, _ := e.Result(); got != 5 {
		t.Errorf("empty mean = %v, want the midpoint 5", got)
	}
}

func TestNoiselessVariance(t *testing.T) {
	vals := []float64{-3, 0.5, 2, 2, 7.25, 11, 100} // 100 clamps to 12
	v, err := NewBoundedVariance(VarianceOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: -4, Upper: 12})
	if err != nil {
		t.Fatal(err)
	}
	cs, ss, qs := v.Sensitivities()
	// d = 8; the squares' slack is (1 + |S|) Unit²/2 with Unit = 2^(4-26)
	// and S = units(-4) + units(12) = 8 * 2^22.
	slack := (1 + 8*math.Ldexp(1, 22)) * math.Ldexp(1, -44) / 2
	if cs != 1 || ss != 8 || qs != 32+slack {
		t.Errorf("Sensitivities = %v, %v, %v; want 1, 8, %v", cs, ss, qs, 32+slack)
	}
	noiseless(v)
	sum, sq := 0.0, 0.0
	for _, x := range vals {
		_ = v.Add(x)
		c := math.Min(x, 12)
		sum += c
		sq += c * c
	}
	n := float64(len(vals))
	want := sq/n - (sum/n)*(sum/n)
	// The exact normalised parts.
	ns, nq := v.normalised()
	mid := 4.0
	wantNS, wantNQ := 0.0, 0.0
	for _, x := range vals {
		c := math.Min(x, 12) - mid
		wantNS += c
		wantNQ += c*c - 8*8/2.0
	}
	if ns != wantNS || nq != wantNQ {
		t.Errorf("normalised = %v, %v; want %v, %v", ns, nq, wantNS, wantNQ)
	}
	got, lo, hi, err := v.ResultWithCI(0.9)
	if err != nil {
		t.Fatal(err)
	}
	if !near(got, want, 1e-9) || !near(lo, want, 1e-9) || !near(hi, want, 1e-9) {
		t.Errorf("variance = %v [%v, %v], want %v", got, lo, hi, want)
	}
	sd, err := NewBoundedStdDev(VarianceOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: -4, Upper: 12})
	if err != nil {
		t.Fatal(err)
	}
	noiseless(sd)
	s, _ := v.Summary()
	if !errors.Is(func() error { _, err := v.Summary(); return err }(), ErrResultTaken) {
		t.Error("Summary after Result succeeded")
	}
	_ = s
	for _, x := range vals {
		_ = sd.Add(x)
	}
	if got, err := sd.Result(); err != nil || !near(got, math.Sqrt(want), 1e-9) {
		t.Errorf("stddev = %v, %v; want %v", got, err, math.Sqrt(want))
	}
}

func TestVarianceSummaryRoundTrip(t *testing.T) {
	opts := VarianceOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: 0, Upper: 1}
	a, _ := NewBoundedVariance(opts)
	b := a.Fresh()
	noiseless(a)
	for i := 0; i < 100; i++ {
		x := float64(i) / 99
		if i%2 == 0 {
			_ = a.Add(x)
		} else {
			_ = b.Add(x)
		}
	}
	s, err := b.Summary()
	if err != nil {
		t.Fatal(err)
	}
	// As the SQL backend would: sums of u and u*u.
	var units, squares int64
	for i := 1; i < 100; i += 2 {
		u, _ := b.Encode(float64(i) / 99)
		units += u
		squares += u * u
	}
	if s.Units.Int64() != units || s.SquareUnits.Int64() != squares || s.Count != 50 {
		t.Fatalf("Summary = %+v, want %d, %d, 50", s, units, squares)
	}
	if err := a.Merge(s); err != nil {
		t.Fatal(err)
	}
	bad := VarianceSummary{Count: 1, Units: big.NewInt(1), SquareUnits: big.NewInt(1 << 60)}
	if err := a.Merge(bad); err == nil {
		t.Error("Merge accepted SquareUnits beyond Count*hi²")
	}
	got, _ := a.Result()
	// Variance of 0, 1/99, ..., 1: (n²-1)/(12 (n-1)²) with n = 100.
	want := (100.0*100 - 1) / (12 * 99 * 99)
	if !near(got, want, 1e-6) {
		t.Errorf("variance = %v, want %v", got, want)
	}
}

// TestShiftedSummaries: sums given in finer units (SumSummary.Shift, the SQL stage's one-pass
// implicit bounds) merge exactly with whole units, into the same exact value as the values
// added one by one would give at that precision; the range check scales with the shift, and
// integer sums refuse a shift.
func TestShiftedSummaries(t *testing.T) {
	s, err := NewBoundedSum(SumOptions{Epsilon: 1, MaxPartitionsContributed: 1, MaxContributionsPerPartition: 1, Lower: -8, Upper: 8})
	if err != nil {
		t.Fatal(err)
	}
	// 3 values: 2^-60 (far below the unit 2^-37), 5.5, -8; as 2^-60 units: shift 23.
	units := new(big.Int).Lsh(big.NewInt(11), 59) // 5.5 = 11 * 2^-1
	units.Add(units, big.NewInt(1))
	units.Sub(units, new(big.Int).Lsh(big.NewInt(8), 60))
	if err := s.Merge(SumSummary{Count: 3, Units: units, Shift: 23}); err != nil {
		t.Fatal(err)
	}
	if err := s.Merge(SumSummary{Count: 1, Units: big.NewInt(1 << 37)}); err != nil { // 1.0 in whole units
		t.Fatal(err)
	}
	want := math.Ldexp(1, -60) + 5.5 - 8 + 1
	if got := s.exact(); got != want {
		t.Errorf("exact sum %v, want %v", got, want)
	}
	sum, _ := s.Summary()
	if sum.Shift != 23 || sum.Count != 4 {
		t.Errorf("summary shift %d count %d, want 23 and 4", sum.Shift, sum.Count)
	}
	// 9 > 8 in 2^-60 units is out of range for one value.
	over := new(big.Int).Lsh(big.NewInt(9), 60)
	if err := s.Fresh().Merge(SumSummary{Count: 1, Units: over, Shift: 23}); err == nil {
		t.Error("a shifted sum above Count*Upper merged")
	}
	m, err := NewBoundedMean(MeanOptions{Epsilon: 1, MaxPartitionsContributed: 1, MaxContributionsPerPartition: 1, Lower: 0, Upper: 8})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Merge(MeanSummary{Count: 2, Units: new(big.Int).Lsh(big.NewInt(3), 60), Shift: 23}); err != nil { // 1 + 2
		t.Fatal(err)
	}
	if got := m.normalisedSum(); got != 3-2*4 { // offsets from the midpoint 4
		t.Errorf("normalised sum %v, want -5", got)
	}
	si, err := NewBoundedSumInt(IntSumOptions{Epsilon: 1, MaxPartitionsContributed: 1, MaxContributionsPerPartition: 1, Lower: 0, Upper: 8})
	if err != nil {
		t.Fatal(err)
	}
	if err := si.Merge(SumSummary{Count: 1, Units: big.NewInt(2), Shift: 1}); err == nil {
		t.Error("BoundedSumInt merged a shifted summary")
	}
}
