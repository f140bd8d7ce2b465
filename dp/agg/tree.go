package agg

import (
	"cmp"
	"math"
	"slices"
)

// Post-processing constants of the quantile search (Google's quantile tree;
// they have no privacy effect).
const (
	// treeAlpha: a child whose noisy count is below this fraction of the total
	// of its siblings is treated as empty...
	treeAlpha = 0.005
	// treeNoiseCut: ...but never a child whose noisy count is at least this
	// many noise scales. Google's cut is relative only: with 50 000 values a
	// child holding 250 of them (0.5%) is dropped although the noise is a
	// few units, which moved the 10th percentile of normal data by half a
	// percent of rank (value error 0.29 where 0.013 was possible). A pure
	// noise count reaches 4 scales with probability e^-4/2 < 1% (Laplace)
	// or 3e-5 (Gaussian), so the cap keeps the cut's purpose, dropping
	// empty children, and changes nothing for small groups, where the
	// relative cut is the smaller one. With no noise (scale 0) nothing is cut.
	treeNoiseCut = 4
	// treeTolerance: slack on the rank when choosing a child.
	treeTolerance = 1e-6
	// minRank and maxRank: ranks are clamped into [minRank, maxRank]; the tree
	// is inaccurate for the extreme ranks (0 = min, 1 = max) because of the
	// noise in nearly empty subtrees.
	minRank = 0.005
	maxRank = 0.995
)

// countTree holds the exact counts of a complete tree with the given branching
// factor and height over numLeaves = branching^height equal-width leaves.
// Level 0 is the root (never noised), level height holds the leaves. Only
// the non-empty leaves are stored while values are added; the counts of the
// inner levels are derived from them once, when the first is read.
type countTree struct {
	height, branching int
	numLeaves         int64
	leaves            map[int64]int64
	// levels[l] holds the nodes of level l (0 <= index < branching^l) with
	// leaves under them and their exact counts, by index, for 1 <= l <
	// height; nil until built. Sorted slices, not maps: a release builds them
	// once per group and reads a few hundred nodes, and filling a map per
	// level cost more than the whole search (a group of 5,000 distinct values).
	levels [][]nodeCount
	// span[l] = branching^(height-l): the number of leaves under a node of
	// level l.
	span []int64
}

func newCountTree(height, branching int) *countTree {
	t := &countTree{height: height, branching: branching, leaves: make(map[int64]int64)}
	t.span = make([]int64, height+1)
	s := int64(1)
	for l := height; l >= 0; l-- {
		t.span[l] = s
		if l > 0 {
			s *= int64(branching)
		}
	}
	t.numLeaves = t.span[0]
	return t
}

// addLeaf adds c to a leaf.
func (t *countTree) addLeaf(leaf, c int64) {
	t.leaves[leaf] += c
	t.levels = nil
}

// nodeCount is a node's index within its level and its exact count.
type nodeCount struct{ index, count int64 }

// build derives the inner levels' counts from the leaves, each level from
// the one below it.
func (t *countTree) build() {
	below := make([]nodeCount, 0, len(t.leaves))
	for leaf, c := range t.leaves {
		below = append(below, nodeCount{leaf, c})
	}
	slices.SortFunc(below, func(a, b nodeCount) int { return cmp.Compare(a.index, b.index) })
	t.levels = make([][]nodeCount, t.height)
	for l := t.height - 1; l >= 1; l-- {
		var level []nodeCount
		for _, n := range below {
			parent := n.index / int64(t.branching)
			if last := len(level) - 1; last >= 0 && level[last].index == parent {
				level[last].count += n.count
			} else {
				level = append(level, nodeCount{parent, n.count})
			}
		}
		t.levels[l], below = level, level
	}
}

// count returns the exact count of a node below the root.
func (t *countTree) count(level int, index int64) int64 {
	if level == t.height {
		return t.leaves[index]
	}
	if t.levels == nil {
		t.build()
	}
	nodes := t.levels[level]
	if i, ok := slices.BinarySearchFunc(nodes, index, func(n nodeCount, x int64) int { return cmp.Compare(n.index, x) }); ok {
		return nodes[i].count
	}
	return 0
}

// leafCounts returns a copy of the non-empty leaf counts.
func (t *countTree) leafCounts() map[int]int64 {
	out := make(map[int]int64, len(t.leaves))
	for i, c := range t.leaves {
		if c != 0 {
			out[int(i)] = c
		}
	}
	return out
}

// treeNode identifies a node by level and index within its level.
type treeNode struct {
	level int
	index int64
}

// search runs the quantile-tree search for one rank: from the root, choose the
// child whose cumulative noisy count reaches the rank (ignoring children whose
// noisy count is below treeAlpha of the total, or below treeNoiseCut noise
// scales if that is smaller; scale is the noise's), rescale the rank within that
// child, and repeat until a leaf, or a node whose children all look empty. The
// result interpolates linearly within the final node's value range. noisy
// returns the (memoised) noisy count of a node.
func (t *countTree) search(rank, lower, upper, scale float64, noisy func(treeNode) (float64, error)) (float64, error) {
	n, r, err := t.descend(rank, scale, noisy)
	if err != nil {
		return 0, err
	}
	return t.interpolate(n, r, lower, upper), nil
}

// descend is search's walk: it returns the node where it stops and the rank within it.
func (t *countTree) descend(rank, scale float64, noisy func(treeNode) (float64, error)) (treeNode, float64, error) {
	rank = clampRank(rank)
	cur := treeNode{level: 0, index: 0}
	counts := make([]float64, t.branching)
	for cur.level < t.height {
		first, err := t.children(cur, counts, noisy)
		if err != nil {
			return treeNode{}, 0, err
		}
		i, r, ok := step(rank, counts, treeNoiseCut*scale)
		if !ok {
			break // all children look empty
		}
		cur, rank = treeNode{cur.level + 1, first + int64(i)}, r
	}
	return cur, rank, nil
}

func clampRank(r float64) float64 { return math.Min(math.Max(r, minRank), maxRank) }

// children fills counts with the noisy counts of n's children and returns
// the index of the first child.
func (t *countTree) children(n treeNode, counts []float64, noisy func(treeNode) (float64, error)) (int64, error) {
	first := n.index * int64(t.branching)
	for i := range counts {
		c, err := noisy(treeNode{n.level + 1, first + int64(i)})
		if err != nil {
			return 0, err
		}
		counts[i] = c
	}
	return first, nil
}

// interpolate returns (1-rank)*lo + rank*hi over n's value range.
func (t *countTree) interpolate(n treeNode, rank, lower, upper float64) float64 {
	lo, hi := t.nodeRange(n, lower, upper)
	return (1-rank)*lo + rank*hi
}

// step chooses, among children with the given counts, the one whose
// cumulative count reaches rank (children below treeAlpha of the total of
// the positive counts, or below maxCut if that is smaller, are treated as
// empty, and so are those not above 0), and returns its position and the
// rank rescaled within it; ok is false when all children look empty.
func step(rank float64, counts []float64, maxCut float64) (child int, next float64, ok bool) {
	total := 0.0
	for _, c := range counts {
		total += math.Max(c, 0)
	}
	if total <= 0 {
		return 0, 0, false
	}
	cut := math.Min(total*treeAlpha, maxCut)
	kept := func(c float64) bool { return c > 0 && c >= cut }
	corrected := 0.0
	for _, c := range counts {
		if kept(c) {
			corrected += c
		}
	}
	if corrected <= 0 {
		return 0, 0, false
	}
	partial := 0.0
	last := -1
	for i, c := range counts {
		if !kept(c) {
			continue
		}
		last = i
		partial += c
		if partial/corrected >= rank-treeTolerance {
			r := (rank - (partial-c)/corrected) / (c / corrected)
			return i, math.Min(math.Max(r, 0), 1), true
		}
	}
	// Only reachable through rounding: the last non-empty child, at its top.
	return last, 1, last >= 0
}

// nodeRange returns the value range [lo, hi] covered by a node.
func (t *countTree) nodeRange(n treeNode, lower, upper float64) (float64, float64) {
	firstLeaf := n.index * t.span[n.level]
	lastLeaf := firstLeaf + t.span[n.level] // exclusive
	qlo := float64(firstLeaf) / float64(t.numLeaves)
	qhi := float64(lastLeaf) / float64(t.numLeaves)
	return qlo*upper + (1-qlo)*lower, qhi*upper + (1-qhi)*lower
}

// leafIndex returns floor((clamp(v, lower, upper) - lower) / (upper - lower) *
// numLeaves), with the top value mapped to numLeaves-1. v must not be NaN.
func leafIndex(v, lower, upper float64, numLeaves int64) int64 {
	if v < lower {
		v = lower
	} else if v > upper {
		v = upper
	}
	i := int64(math.Floor((v - lower) / (upper - lower) * float64(numLeaves)))
	if i >= numLeaves {
		i = numLeaves - 1
	}
	if i < 0 {
		i = 0
	}
	return i
}

// leafFloor and leafCeil round a value out to the edges of its leaf.
func (t *countTree) leafFloor(v, lower, upper float64) float64 {
	lo, _ := t.nodeRange(treeNode{t.height, leafIndex(v, lower, upper, t.numLeaves)}, lower, upper)
	return lo
}

func (t *countTree) leafCeil(v, lower, upper float64) float64 {
	_, hi := t.nodeRange(treeNode{t.height, leafIndex(v, lower, upper, t.numLeaves)}, lower, upper)
	return hi
}
