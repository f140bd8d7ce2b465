package agg

import (
	"fmt"
	"math"

	"github.com/dpsql/dpsql/dp/noise"
)

// The quantile's confidence interval inverts a rank test on the noisy tree.
//
// For a leaf boundary j, let C(j) be the exact number of values in the
// leaves before j and N the exact total; their noisy counterparts C'(j) and
// N' are sums of noisy nodes: C'(j) of the nodes that tile [0, j) (at each
// level, the left siblings of j's ancestor), N' of the first level. The rank
// statistic R(j) = C'(j) - p N' is C(j) - p N plus a known linear
// combination Z(j) of the nodes' noises (coefficient 1 - p for a first-level
// node in the tiling, -p for the other first-level nodes, 1 for deeper tiling
// nodes). Inside a node the statistic is continued (inside): the node's own
// noisy count spread over its width by its children's noisy counts, linearly
// within each child, so that R is continuous from one end of the node to the
// other and its noise is still a known combination. At the exact quantile q,
// C(q) = p N up to one value. The lower end is where R stops being too low
// (below the lower (1 - level)/2 tail of Z), the upper end where it becomes
// too high; where R is monotone, "the lower end is above q" is exactly "R(q)
// is too low", so the interval covers at its level when the values are
// spread evenly inside the children around q.
//
// Both ends are found by a descent: at each node, the child in which the
// crossing lies is chosen by testing its children's end boundaries. The
// descent reads that child's own children one by one only if one of them is
// a step the test can see (lumpy: a child holding 2 standard deviations of
// the test's noise, or one departing from a straight line through its
// siblings by 4 of one node's noise, as an atom of a repeated value does);
// otherwise it places the crossing inside the child by bisection. Reading
// children that the noise cannot tell apart one by one ends the interval at
// the first of many boundaries that pass, and the interval this one
// replaced, which did that down to the leaves, covered 0.92-0.98 at 0.9.
// Measured at 0.9 (TestQuantileCICoverage, TestQuantileCICoverageShapes and
// a wider sweep in docs/aggregations.md): 0.89-0.93 on continuous data, more
// on integer data, whose atoms make the exact quantile a step of the CDF,
// and 30% narrower than the interval it replaced. Ends are rounded out to
// whole leaves, and the interval is widened to contain the released value.

// rankTest evaluates the two one-sided tests at leaf boundaries.
type rankTest struct {
	t     *countTree
	rank  float64
	level float64
	mech  noise.Mechanism
	noisy func(treeNode) (float64, error)
	first []float64 // noisy first-level counts
	total float64   // their sum, N'
}

// boundary is a leaf boundary reached during a descent: the noisy count
// before it and the nodes that tile it.
type boundary struct {
	count float64
	digit int        // how many first-level nodes the tiling holds
	deep  []treeNode // the tiling's deeper nodes
	// For a point inside a node (see inside): the weight frac of that node's
	// own noisy count (firstLevel: it is a first-level node) and the
	// coefficients of its children's noises in the mass before the point.
	frac       float64
	firstLevel bool
	weights    []float64
}

// terms returns Z's noise terms at the boundary.
func (r *rankTest) terms(b boundary) []noise.Term {
	out := make([]noise.Term, 0, len(r.first)+len(b.deep))
	for i := range r.first {
		c := -r.rank
		if i < b.digit {
			c += 1
		}
		if b.firstLevel && i == b.digit {
			c += b.frac
		}
		out = append(out, noise.Term{Mech: r.mech, Coef: c})
	}
	for range b.deep {
		out = append(out, noise.Term{Mech: r.mech, Coef: 1})
	}
	if b.frac != 0 && !b.firstLevel {
		out = append(out, noise.Term{Mech: r.mech, Coef: b.frac})
	}
	for _, w := range b.weights {
		out = append(out, noise.Term{Mech: r.mech, Coef: w})
	}
	return out
}

// noiseSD returns the standard deviation of Z at a boundary.
func (r *rankTest) noiseSD(b boundary) float64 {
	v := 0.0
	for _, term := range r.terms(b) {
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

// notTooLow reports whether R at the boundary is not below the lower tail of
// Z; notTooHigh whether it is not above the upper tail.
func (r *rankTest) notTooLow(b boundary) (bool, error) {
	return r.within(b, -(b.count - r.rank*r.total))
}

func (r *rankTest) notTooHigh(b boundary) (bool, error) {
	return r.within(b, b.count-r.rank*r.total)
}

// within reports whether P(Z >= x) >= (1 - level)/2 (Z is symmetric).
func (r *rankTest) within(b boundary, x float64) (bool, error) {
	if x <= 0 {
		return true, nil
	}
	tail, err := noise.CombinationTail(r.terms(b), x)
	if err != nil {
		return false, fmt.Errorf("agg: quantile interval: %w", err)
	}
	return tail >= (1-r.level)/2, nil
}

// children returns the boundaries inside node n at its children: entry i is
// the boundary after i children (0 <= i <= branching), given the boundary at
// n's start.
func (r *rankTest) children(n treeNode, start boundary) ([]boundary, error) {
	b := r.t.branching
	out := make([]boundary, b+1)
	out[0] = start
	firstChild := n.index * int64(b)
	for i := 1; i <= b; i++ {
		child := treeNode{n.level + 1, firstChild + int64(i-1)}
		c, err := r.noisy(child)
		if err != nil {
			return nil, err
		}
		prev := out[i-1]
		next := boundary{count: prev.count + c, digit: prev.digit, deep: prev.deep}
		if child.level == 1 {
			next.digit++
		} else {
			next.deep = append(append([]treeNode(nil), prev.deep...), child)
		}
		out[i] = next
	}
	return out, nil
}

// lowest returns the lower end: the left edge of the leaf where R stops
// being too low.
func (r *rankTest) lowest(lower, upper float64) (float64, error) {
	if ok, err := r.notTooLow(boundary{}); err != nil || ok {
		return lower, err
	}
	v, err := r.descend(r.notTooLow, lower, upper)
	return r.t.leafFloor(v, lower, upper), err
}

// highest returns the upper end: the right edge of the leaf where R becomes
// too high.
func (r *rankTest) highest(lower, upper float64) (float64, error) {
	whole := boundary{count: r.total, digit: len(r.first)}
	if ok, err := r.notTooHigh(whole); err != nil || ok {
		return upper, err
	}
	v, err := r.descend(func(b boundary) (bool, error) {
		ok, err := r.notTooHigh(b)
		return !ok, err
	}, lower, upper)
	return r.t.leafCeil(v, lower, upper), err
}

// descend walks from the root to the point where stop starts to hold: at
// each node, into the child before the first of its children's end
// boundaries where stop holds (the last child if none does). It reads that
// child's children one by one only if they are lumpy; otherwise the test
// cannot tell their boundaries apart, reading them one by one would end the
// interval at the first of many that pass (conservative), and the point is
// placed inside the child (see inside). A leaf is returned by its middle.
func (r *rankTest) descend(stop func(boundary) (bool, error), lower, upper float64) (float64, error) {
	cur, start := treeNode{0, 0}, boundary{}
	bs, err := r.children(cur, start)
	if err != nil {
		return 0, err
	}
	for {
		b := r.t.branching
		t := b
		for i := 1; i <= b; i++ {
			ok, err := stop(bs[i])
			if err != nil {
				return 0, err
			}
			if ok {
				t = i
				break
			}
		}
		child := treeNode{cur.level + 1, cur.index*int64(b) + int64(t-1)}
		if child.level == r.t.height {
			a, z := r.t.nodeRange(child, lower, upper)
			return (a + z) / 2, nil
		}
		inner, err := r.children(child, bs[t-1])
		if err != nil {
			return 0, err
		}
		if !r.lumpy(inner) {
			return r.inside(child, bs[t].count-bs[t-1].count, inner, stop, lower, upper)
		}
		cur, bs = child, inner
	}
}

// lumpy reports whether the children (boundaries bs) must be read one by
// one because inside would misplace the crossing: one of them holds at
// least insideCut standard deviations of the test's noise (its values'
// spread inside it could matter), or one departs from the least-squares
// line through their counts by at least lumpCut standard deviations of one
// node's noise, as an atom (a value many rows share) does.
func (r *rankTest) lumpy(bs []boundary) bool {
	k := len(bs) - 1
	sd := r.noiseSD(bs[k/2])
	mean, S, slope := 0.0, 0.0, 0.0
	for i := 0; i < k; i++ {
		c := bs[i+1].count - bs[i].count
		if c >= insideCut*sd {
			return true
		}
		u := (float64(i)+0.5)/float64(k) - 0.5
		mean += c / float64(k)
		S += u * u
		slope += u * c
	}
	slope /= S
	for i := 0; i < k; i++ {
		u := (float64(i)+0.5)/float64(k) - 0.5
		if math.Abs(bs[i+1].count-bs[i].count-mean-slope*u) >= lumpCut*r.nodeSD() {
			return true
		}
	}
	return false
}

// insideCut and lumpCut: see lumpy.
const (
	insideCut = 2
	lumpCut   = 4
)

// inside places the crossing inside node n, whose noisy count is c and
// whose children's boundaries are bs. At a fraction f of n's width, inside
// child m at a fraction l of its width (f = (m + l)/k), the mass before the
// point is taken as f c' plus the children's departure from an even spread,
// sum_{i<m} c'_i + l c'_m - f sum_i c'_i: so R is continuous from one end
// of n to the other (n's own count gives its total, as at the parent's
// boundaries), follows the children's counts in between, and its noise is
// Z(start) + f e_n + sum_i (1[i<m] + l 1[i=m] - f) e_i, a known
// combination. It is exact when the values are spread evenly inside each
// child; stop is found to switch from false to true by bisection on f.
func (r *rankTest) inside(n treeNode, c float64, bs []boundary, stop func(boundary) (bool, error), lower, upper float64) (float64, error) {
	k := len(bs) - 1
	all := bs[k].count - bs[0].count
	at := func(f float64) boundary {
		s := bs[0]
		m := min(int(f*float64(k)), k-1)
		l := f*float64(k) - float64(m)
		w := make([]float64, k)
		for i := range w {
			w[i] = -f
			if i < m {
				w[i]++
			} else if i == m {
				w[i] += l
			}
		}
		count := s.count + f*c + (bs[m].count - s.count) + l*(bs[m+1].count-bs[m].count) - f*all
		return boundary{count: count, digit: s.digit, deep: s.deep,
			frac: f, firstLevel: n.level == 1, weights: w}
	}
	lo, hi := 0.0, 1.0
	for i := 0; i < 30; i++ {
		mid := (lo + hi) / 2
		ok, err := stop(at(mid))
		if err != nil {
			return 0, err
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	a, z := r.t.nodeRange(n, lower, upper)
	return a + (z-a)*(lo+hi)/2, nil
}

// rankInterval returns the interval of the quantile at rank for the noisy
// tree read through noisy (see the comment at the top of this file).
func (t *countTree) rankInterval(rank, level, lower, upper float64, mech noise.Mechanism, noisy func(treeNode) (float64, error)) (lo, hi float64, err error) {
	r := &rankTest{t: t, rank: rank, level: level, mech: mech, noisy: noisy, first: make([]float64, t.branching)}
	if _, err := t.children(treeNode{0, 0}, r.first, noisy); err != nil {
		return 0, 0, err
	}
	for _, c := range r.first {
		r.total += c
	}
	if lo, err = r.lowest(lower, upper); err != nil {
		return 0, 0, err
	}
	if hi, err = r.highest(lower, upper); err != nil {
		return 0, 0, err
	}
	return lo, hi, nil
}
