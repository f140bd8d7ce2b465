package agg

import (
	"fmt"
	"math"

	"github.com/dpsql/dpsql/dp/noise"
)

// The quantile's confidence interval inverts a rank test on the noisy tree.
//
// For a point x of the value range, let C(x) be the exact number of values
// below x and N the exact total. The rank statistic is R(x) = M(x) - p N',
// where N' is the sum of the noisy first-level counts and M(x), the noisy
// mass below x, is continued down the tree along x's path: across a shaped
// node, M grows by the node's own noisy count, spread over its width by its
// children's noisy counts (their running sum, minus its even share of their
// total, plus an even share of the node's count and of what its ancestors'
// counts left over); across an unshaped node, linearly. The root and the
// first level are always shaped; a deeper node is shaped when it is heavy
// (it holds heavyCut standard deviations of R's noise, so that its values'
// own unevenness would bias R) or its children show a lump, as an atom (a
// value many rows share) makes, or a slope. So R is continuous in x, and
// R(x) - (C(x) - p N) is a known linear combination of the node noises
// (noise.CombinationTail gives its law) when the values inside the unshaped
// node around x are spread evenly.
//
// The lower end is the first point where R stops being too low (below the
// lower (1 - level)/2 tail of its noise), the upper end the first point
// where it becomes too high, each found by a descent (descend). Where R is
// monotone, "the lower end is above the exact quantile q" is exactly "R(q)
// is too low", so the interval covers at its level. An end inside a leaf
// heavy enough to hold an atom is rounded out to the leaf's edge, and the
// interval is widened to contain the released value (the search's, which
// is more accurate than where R crosses 0).
//
// Measured at 0.9 (TestQuantileCICoverage, TestQuantileCICoverageShapes and
// the sweep in docs/aggregations.md): 0.88-0.92 on continuous data, 0.90
// on average over data sets (a given data set's values depart from an even
// spread inside unshaped nodes, which moves its coverage by a percent or
// two); more in small groups (R wiggles where the counts are small against
// the noise, and an end is the first crossing) and on integer data, whose
// atoms make the exact quantile a step of the CDF. The version before this
// one read the children of heavy nodes one by one, as sums of the nodes
// tiling [0, x): R jumped where a node's own count met its children's sum,
// an end came at the first of several crossings, and it covered 0.92-0.93
// on large groups and normal medians, with intervals up to twice as wide.

// rankTest evaluates the two one-sided tests at points of the value range.
type rankTest struct {
	t     *countTree
	rank  float64
	level float64
	mech  noise.Mechanism
	noisy func(treeNode) (float64, error)
	first []float64 // noisy first-level counts
	total form      // their sum, N'

	termBuf []noise.Term // terms' result, reused
	bisect  []nodeCoef   // the bisection's forms, reused
}

// form is a linear combination of the tree's noisy counts: its value and
// the coefficient of each node's count, in the order of the nodes (level,
// then index). The descent builds thousands of them per interval, so they
// are sorted slices, merged, not maps.
type form struct {
	value float64
	coef  []nodeCoef
}

// nodeCoef is one node's coefficient in a form.
type nodeCoef struct {
	node treeNode
	c    float64
}

// before orders the nodes of a form.
func (n treeNode) before(m treeNode) bool {
	return n.level < m.level || n.level == m.level && n.index < m.index
}

// nodeForm is the noisy count c of node n alone.
func nodeForm(n treeNode, c float64) form {
	return form{value: c, coef: []nodeCoef{{n, 1}}}
}

// plus returns a + s b.
func (a form) plus(s float64, b form) form { return a.plusInto(nil, s, b) }

// plusInto returns a + s b in buf's memory when it is large enough: for the
// forms the bisection builds by the dozen and drops at once.
func (a form) plusInto(buf []nodeCoef, s float64, b form) form {
	n := len(a.coef) + len(b.coef)
	if cap(buf) < n {
		buf = make([]nodeCoef, 0, n)
	}
	out := form{value: a.value + s*b.value, coef: buf[:0]}
	i, j := 0, 0
	for i < len(a.coef) || j < len(b.coef) {
		switch {
		case j == len(b.coef) || i < len(a.coef) && a.coef[i].node.before(b.coef[j].node):
			out.coef = append(out.coef, a.coef[i])
			i++
		case i == len(a.coef) || b.coef[j].node.before(a.coef[i].node):
			out.coef = append(out.coef, nodeCoef{b.coef[j].node, s * b.coef[j].c})
			j++
		default:
			out.coef = append(out.coef, nodeCoef{a.coef[i].node, a.coef[i].c + s*b.coef[j].c})
			i++
			j++
		}
	}
	return out
}

// terms returns the noise terms of R = mass - p N' for the mass form m:
// the first level's nodes in order, then the deeper nodes of m.
// The slice is r's, valid until the next call.
func (r *rankTest) terms(m form) []noise.Term {
	out := r.termBuf[:0]
	for range r.first {
		out = append(out, noise.Term{Mech: r.mech, Coef: -r.rank})
	}
	for _, nc := range m.coef {
		switch {
		case nc.node.level == 1:
			out[nc.node.index].Coef = nc.c - r.rank
		case nc.node.level > 1:
			out = append(out, noise.Term{Mech: r.mech, Coef: nc.c})
		}
	}
	r.termBuf = out
	return out
}

// noiseSD returns the standard deviation of R's noise for the mass m.
func (r *rankTest) noiseSD(m form) float64 {
	v := 0.0
	for _, term := range r.terms(m) {
		v += term.Coef * term.Coef
	}
	return math.Sqrt(v) * r.nodeSD()
}

// nodeSD returns the standard deviation of one node's noise.
func (r *rankTest) nodeSD() float64 {
	if r.mech.Kind() == noise.Laplace {
		return math.Sqrt2 * r.mech.Scale()
	}
	return r.mech.Scale()
}

// notTooLow reports whether R for the mass m is not below the lower tail of
// its noise; notTooHigh whether it is not above the upper tail.
func (r *rankTest) notTooLow(m form) (bool, error) {
	return r.within(m, -(m.value - r.rank*r.total.value))
}

func (r *rankTest) notTooHigh(m form) (bool, error) {
	return r.within(m, m.value-r.rank*r.total.value)
}

// within reports whether P(Z >= x) >= (1 - level)/2 for R's noise Z (which
// is symmetric).
func (r *rankTest) within(m form, x float64) (bool, error) {
	if x <= 0 {
		return true, nil
	}
	tail, err := noise.CombinationTail(r.terms(m), x)
	if err != nil {
		return false, fmt.Errorf("agg: quantile interval: %w", err)
	}
	return tail >= (1-r.level)/2, nil
}

// lowest returns the lower end: the left edge of the leaf where R stops
// being too low.
func (r *rankTest) lowest(lower, upper float64) (float64, error) {
	if ok, err := r.notTooLow(form{}); err != nil || ok {
		return lower, err
	}
	v, atLeaf, err := r.descend(r.notTooLow, lower, upper)
	if atLeaf {
		v = r.t.leafFloor(v, lower, upper)
	}
	return v, err
}

// highest returns the upper end: the right edge of the leaf where R becomes
// too high.
func (r *rankTest) highest(lower, upper float64) (float64, error) {
	if ok, err := r.notTooHigh(r.total); err != nil || ok {
		return upper, err
	}
	v, atLeaf, err := r.descend(func(m form) (bool, error) {
		ok, err := r.notTooHigh(m)
		return !ok, err
	}, lower, upper)
	if atLeaf {
		v = r.t.leafCeil(v, lower, upper)
	}
	return v, err
}

// frame is a shaped node during a descent: the mass before a point at a
// fraction f of its width is start + f (drift + total) + (the children's
// departure from an even spread up to the point), where total is the
// node's own noisy count (the root's: N') and drift carries its ancestors'
// departures, which are spread evenly over it.
type frame struct {
	node                treeNode
	start, drift, total form
	kids                []float64 // noisy counts of the children
}

// descend walks from the root to the point where stop starts to hold. In
// a shaped node it chooses the first child at whose end stop holds (the
// last if none does); it shapes that child too if it is heavy or its own
// children depart from an even spread (see shaped), and otherwise places
// the point inside it by bisection, the mass growing linearly across it.
// atLeaf reports that the point is inside a leaf holding at least roundCut
// standard deviations of one node's noise, which the caller rounds out.
func (r *rankTest) descend(stop func(form) (bool, error), lower, upper float64) (v float64, atLeaf bool, err error) {
	fr := frame{node: treeNode{0, 0}, total: r.total, kids: r.first}
	k := r.t.branching
	for {
		// even = drift + total - sum of the children: what the node's
		// children do not account for, spread evenly over it.
		even := fr.drift.plus(1, fr.total)
		first := fr.node.index * int64(k)
		kid := func(i int) form { return nodeForm(treeNode{fr.node.level + 1, first + int64(i)}, fr.kids[i]) }
		for i := range fr.kids {
			even = even.plus(-1, kid(i))
		}
		start, m := fr.start, k-1
		for i := 0; i < k; i++ {
			end := start.plus(1/float64(k), even).plus(1, kid(i))
			ok, err := stop(end)
			if err != nil {
				return 0, false, err
			}
			if ok {
				m = i
				break
			}
			if i < k-1 {
				start = end
			}
		}
		child := treeNode{fr.node.level + 1, first + int64(m)}
		drift, total := form{}.plus(1/float64(k), even), kid(m)
		if child.level < r.t.height {
			kids := make([]float64, k)
			if _, err := r.t.children(child, kids, r.noisy); err != nil {
				return 0, false, err
			}
			heavy := fr.kids[m] >= heavyCut*r.noiseSD(start)
			if child.level == 1 || heavy || r.shaped(kids) {
				fr = frame{node: child, start: start, drift: drift, total: total, kids: kids}
				continue
			}
		}
		slope := drift.plus(1, total)
		lo, hi := 0.0, 1.0
		for i := 0; i < 30; i++ {
			mid := (lo + hi) / 2
			m := start.plusInto(r.bisect, mid, slope) // stop keeps no form
			r.bisect = m.coef
			ok, err := stop(m)
			if err != nil {
				return 0, false, err
			}
			if ok {
				hi = mid
			} else {
				lo = mid
			}
		}
		a, z := r.t.nodeRange(child, lower, upper)
		roundOut := child.level == r.t.height && fr.kids[m] >= roundCut*r.nodeSD()
		return a + (z-a)*(lo+hi)/2, roundOut, nil
	}
}

// shaped reports whether a node's values must be placed by its children's
// noisy counts kids rather than spread evenly across it: one child departs
// from the least-squares line through them by at least lumpCut standard
// deviations of one node's noise, as an atom (a value many rows share)
// does, or their running sum departs from an even spread by at least
// shapeCut standard deviations of that departure's noise, as a slope does.
// With no noise every node is shaped, down to the leaves.
func (r *rankTest) shaped(kids []float64) bool {
	k := len(kids)
	sd := r.nodeSD()
	mean, S, slope, sum := 0.0, 0.0, 0.0, 0.0
	for i, c := range kids {
		u := (float64(i)+0.5)/float64(k) - 0.5
		mean += c / float64(k)
		S += u * u
		slope += u * c
		sum += c
	}
	slope /= S
	run := 0.0
	for i, c := range kids {
		u := (float64(i)+0.5)/float64(k) - 0.5
		if math.Abs(c-mean-slope*u) >= lumpCut*sd {
			return true
		}
		if i > 0 {
			d := run - float64(i)/float64(k)*sum
			if math.Abs(d) >= shapeCut*sd*math.Sqrt(float64(i*(k-i))/float64(k)) {
				return true
			}
		}
		run += c
	}
	return false
}

// Cuts of the descent, in standard deviations of noise (see descend and
// shaped). They change how the interval is computed, never its privacy.
const (
	// heavyCut: a child holding at least this many standard deviations of
	// R's noise is shaped. Spread evenly, its values' own unevenness (a
	// random sample of c values departs from an even spread by about
	// sqrt(c)/2) and any slope of their density would bias R; without this
	// rule 100 000 uniform values covered 0.87.
	heavyCut = 2.0
	// lumpCut: a child departing by this many standard deviations of one
	// node's noise from the line through its siblings is a lump (an atom).
	lumpCut = 4.0
	// shapeCut: a running sum of the children departing from an even
	// spread by this many standard deviations of that departure's noise is
	// a slope.
	shapeCut = 3.0
	// roundCut: an end placed inside a leaf whose noisy count is at least
	// this many standard deviations of one node's noise is rounded out to
	// the leaf's edge: the leaf may hold an atom, and where inside it the
	// atom lies is unknown. A lighter leaf cannot move R by much, and
	// rounding it out made large groups over-cover (0.92-0.93).
	roundCut = 1.0
)

// rankInterval returns the interval of the quantile at rank for the noisy
// tree read through noisy (see the comment at the top of this file).
func (t *countTree) rankInterval(rank, level, lower, upper float64, mech noise.Mechanism, noisy func(treeNode) (float64, error)) (lo, hi float64, err error) {
	r := &rankTest{t: t, rank: rank, level: level, mech: mech, noisy: noisy, first: make([]float64, t.branching)}
	if _, err := t.children(treeNode{0, 0}, r.first, noisy); err != nil {
		return 0, 0, err
	}
	terms := make([]noise.Term, len(r.first))
	for i, c := range r.first {
		r.total = r.total.plus(1, nodeForm(treeNode{1, int64(i)}, c))
		terms[i] = noise.Term{Mech: mech, Coef: 1}
	}
	// A noisy total consistent with no value at all (below 1/2, nearer no value than one,
	// or not above the upper tail of its noise) says nothing about where a quantile lies:
	// the interval is the whole range (as ZetaSQL's for an empty group). Without this, the
	// rank test read pure noise and could reject parts of the range. The 1/2 matters at huge
	// epsilons, where the noise grid is coarser than the noise's scale and a lone grid step
	// looks like many standard deviations.
	if r.total.value < 0.5 {
		return lower, upper, nil
	}
	tail, err := noise.CombinationTail(terms, r.total.value)
	if err != nil {
		return 0, 0, fmt.Errorf("agg: quantile interval: %w", err)
	}
	if tail >= (1-level)/2 {
		return lower, upper, nil
	}
	if lo, err = r.lowest(lower, upper); err != nil {
		return 0, 0, err
	}
	if hi, err = r.highest(lower, upper); err != nil {
		return 0, 0, err
	}
	return lo, hi, nil
}
