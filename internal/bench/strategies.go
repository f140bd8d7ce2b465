package bench

import (
	"fmt"
	"strings"
)

// Strategy is one way to spell stages 1 to 3 in SQL.
type Strategy struct {
	Name string
	// Exact is true when the strategy keeps, for every user, exactly the min(n, kappa) keys with
	// the smallest HashExpr: all exact strategies return identical rows for the same seed.
	Exact bool
	// TieSafe is true when a user keeps at most kappa keys even if two of its keys get the same
	// hash (craftable: DuckDB's hash() is not collision resistant, see TestHashTies).
	TieSafe bool
	// Floor marks the non-private reference (no bounding, no clamping).
	Floor bool
	Note  string
	SQL   func(s Spec, seed uint64) string
}

// Strategies lists every strategy the harness knows, the floor first.
func Strategies() []Strategy {
	return []Strategy{
		{Name: "floor", Floor: true, Note: "non-private: GROUP BY key, uid then GROUP BY key", SQL: floorSQL},
		{Name: "window_random", TieSafe: true, Note: "textbook ROW_NUMBER() OVER (PARTITION BY uid ORDER BY random()); reference only, not reproducible", SQL: windowRandomSQL},
		{Name: "window_hash", TieSafe: true, Exact: true, Note: "QUALIFY row_number() OVER (PARTITION BY uid ORDER BY h) <= kappa", SQL: windowHashSQL},
		{Name: "minby_struct", TieSafe: true, Exact: true, Note: "min_by(struct of keys and partials, h, kappa) GROUP BY uid, UNNEST, GROUP BY key", SQL: minByStructSQL},
		{Name: "minby_lists", TieSafe: true, Note: "one min_by(col, h, kappa) per column, UNNESTed side by side; WRONG with NULL keys or partials (min_by skips NULL arguments, so the lists misalign)", SQL: minByListsSQL},
		{Name: "threshold_join", Exact: true, Note: "per-user kappa-th smallest h by aggregation, joined back", SQL: thresholdJoinSQL},
		{Name: "threshold_join_fast", Exact: true, Note: "threshold only for users with more than kappa keys, LEFT JOIN", SQL: thresholdJoinFastSQL},
		{Name: "prefilter_join_bykey", Exact: true, Note: "prefilter_join grouping kept rows by (keys, uid) instead of (uid, h): not tie-safe", SQL: prefilterJoinByKeySQL},
		{Name: "prefilter_join", TieSafe: true, Exact: true, Note: "per-user kappa-th smallest distinct h from a list of raw-row hashes; join raw rows, keep h <= threshold, stage 1 grouped by (uid, h), stage 3", SQL: prefilterJoinSQL},
		{Name: "prefilter_tiesafe", TieSafe: true, Exact: true, Note: "prefilter_join ranking by the struct (h, keys...) instead of h: two keys of a user can never tie, so never more than kappa keys even if hash() collides", SQL: prefilterTieSafeSQL},
		{Name: "prefilter_join_mat", TieSafe: true, Exact: true, Note: "prefilter_join over a MATERIALIZED copy of the relation (the price of not computing an expensive relation twice)", SQL: prefilterJoinMatSQL},
		{Name: "prefilter_sort", TieSafe: true, Exact: true, Note: "prefilter_join with list_sort(list_distinct(hs))[kappa] (users with more than kappa rows only) instead of kappa min passes", SQL: prefilterSortSQL},
		{Name: "post_lists", Exact: true, Note: "stage 1, then per-user lists of h, keys, partials; kappa-th smallest h by min passes; UNNEST kept pairs; stage 3 (no join)", SQL: postListsSQL},
		{Name: "post_thr_leftjoin", TieSafe: true, Exact: true, Note: "stage 1 grouped by (uid, h) (materialised), threshold from list(h) for users over kappa only, LEFT JOIN back", SQL: postThrLeftJoinSQL},
		{Name: "post_heavy", TieSafe: true, Exact: true, Note: "post_thr_leftjoin building lists only for users with more than kappa pairs (count first, semi-join)", SQL: postHeavySQL},
		{Name: "post_tiesafe", TieSafe: true, Exact: true, Note: "post_thr_leftjoin ranking by the struct (h, keys...)", SQL: postTieSafeSQL},
		{Name: "prefilter_lists", Exact: true, Note: "one scan: per-user lists of key, values and h; threshold; UNNEST the kept rows; stages 1 and 3", SQL: prefilterListsSQL},
	}
}

// StrategyByName finds a strategy.
func StrategyByName(name string) (Strategy, bool) {
	for _, st := range Strategies() {
		if st.Name == name {
			return st, true
		}
	}
	return Strategy{}, false
}

func floorSQL(s Spec, _ uint64) string {
	var b strings.Builder
	b.WriteString("SELECT " + s.keyCols("") + ", count(*) AS users")
	for j := range s.Aggs {
		fmt.Fprintf(&b, ", sum(p%d) AS a%d", j, j)
	}
	fmt.Fprintf(&b, " FROM (%s) GROUP BY %s", s.Stage1(), s.keyCols(""))
	return b.String()
}

func windowRandomSQL(s Spec, _ uint64) string {
	return fmt.Sprintf(`SELECT %s FROM (
  SELECT * FROM (%s) QUALIFY row_number() OVER (PARTITION BY u ORDER BY random()) <= %d
) GROUP BY %s`, s.final(""), s.Stage1(), s.Kappa, s.keyCols(""))
}

func windowHashSQL(s Spec, seed uint64) string {
	return fmt.Sprintf(`SELECT %s FROM (
  SELECT * FROM (%s) QUALIFY row_number() OVER (PARTITION BY u ORDER BY %s) <= %d
) GROUP BY %s`, s.final(""), s.Stage1(), s.HashExpr("", seed), s.Kappa, s.keyCols(""))
}

// structPack is "struct_pack(g0 := g0, ..., p0 := p0, ...)".
func (s Spec) structPack() string {
	var parts []string
	for i := range s.Keys {
		parts = append(parts, fmt.Sprintf("g%d := g%d", i, i))
	}
	for j := range s.Aggs {
		parts = append(parts, fmt.Sprintf("p%d := p%d", j, j))
	}
	return "struct_pack(" + strings.Join(parts, ", ") + ")"
}

func minByStructSQL(s Spec, seed uint64) string {
	return fmt.Sprintf(`SELECT %s FROM (
  SELECT unnest(min_by(%s, %s, %d)) AS r FROM (%s) GROUP BY u
) GROUP BY %s`, s.final("r."), s.structPack(), s.HashExpr("", seed), s.Kappa, s.Stage1(), s.keyCols("r."))
}

func minByListsSQL(s Spec, seed uint64) string {
	var cols []string
	for i := range s.Keys {
		cols = append(cols, fmt.Sprintf("unnest(min_by(g%d, h, %d)) AS g%d", i, s.Kappa, i))
	}
	for j := range s.Aggs {
		cols = append(cols, fmt.Sprintf("unnest(min_by(p%d, h, %d)) AS p%d", j, s.Kappa, j))
	}
	return fmt.Sprintf(`SELECT %s FROM (
  SELECT %s FROM (SELECT *, %s AS h FROM (%s)) GROUP BY u
) GROUP BY %s`, s.final(""), strings.Join(cols, ", "), s.HashExpr("", seed), s.Stage1(), s.keyCols(""))
}

func thresholdJoinSQL(s Spec, seed uint64) string {
	return fmt.Sprintf(`WITH p AS (SELECT *, %s AS h FROM (%s))
SELECT %s FROM p JOIN (SELECT u, list_max(min(h, %d)) AS t FROM p GROUP BY u) th
  ON p.u = th.u AND p.h <= th.t
GROUP BY %s`, s.HashExpr("", seed), s.Stage1(), s.final("p."), s.Kappa, s.keyCols("p."))
}

func thresholdJoinFastSQL(s Spec, seed uint64) string {
	return fmt.Sprintf(`WITH p AS (SELECT *, %s AS h FROM (%s))
SELECT %s FROM p LEFT JOIN (SELECT u, list_max(min(h, %d)) AS t FROM p GROUP BY u HAVING count(*) > %d) th
  ON p.u = th.u
WHERE th.t IS NULL OR p.h <= th.t
GROUP BY %s`, s.HashExpr("", seed), s.Stage1(), s.final("p."), s.Kappa, s.Kappa, s.keyCols("p."))
}

// rawHash is HashExpr over the raw relation's own columns (before stage 1).
func (s Spec) rawHash(seed uint64) string {
	return HashSQL(s.UID, strings.Join(s.Keys, ", "), seedLit(seed))
}

// kthDistinctCTEs returns CTEs that compute, per user u, m = the kappa-th smallest distinct
// value of the list hs, or NULL when the user has at most kappa values (then it keeps all of
// its keys). It takes kappa passes of "smallest value greater than the previous one" over a
// working list w that shrinks at every pass (list_filter then list_min: cheap and vectorised;
// sorting the lists costs more for small kappa), and skips users whose list has at most kappa
// entries. carry lists other columns to keep (", a, b"); the last CTE keeps hs only if keepHs.
// It returns the CTE text and the name of the last CTE, which has columns u, [hs,] carry, w, m.
func kthDistinctCTEs(first string, kappa int, carry string, keepHs bool) (ctes, last string) {
	if kappa < 1 {
		panic("bench: kappa < 1")
	}
	keep := carry
	if keepHs {
		keep = ", hs" + carry
	}
	var b strings.Builder
	fmt.Fprintf(&b, "m1 AS (SELECT *, list_min(w) AS m FROM (SELECT u%s, CASE WHEN len(hs) > %d THEN hs END AS w FROM %s))",
		keep, kappa, first)
	last = "m1"
	for i := 2; i <= kappa; i++ {
		fmt.Fprintf(&b, ",\nm%d AS (SELECT *, list_min(w) AS m FROM (SELECT u%s, list_filter(w, lambda x: x > m) AS w FROM %s))", i, keep, last)
		last = fmt.Sprintf("m%d", i)
	}
	return b.String(), last
}

// rawStage1 is stage 1 over the raw rows r joined with the threshold table th.
func (s Spec) rawStage1Select(prefix string) string {
	var b strings.Builder
	for i, k := range s.Keys {
		fmt.Fprintf(&b, "%s%s AS g%d, ", prefix, k, i)
	}
	fmt.Fprintf(&b, "%s%s AS u", prefix, s.UID)
	for j, a := range s.Aggs {
		ap := a
		if ap.Expr != "" && ap.Expr != "*" {
			ap.Expr = prefix + ap.Expr
		}
		fmt.Fprintf(&b, ", %s AS p%d", s.partial(ap), j)
	}
	return b.String()
}

// Recommended names the strategy docs/design/bounding-on-duckdb.md recommends to the SQL generator.
const Recommended = "prefilter_join"

// prefilterBounded returns the WITH clause and the bounded stage-1 query of prefilter_join:
// one row per kept (uid, h) with the keys and the partials, at most kappa rows per uid.
func prefilterBounded(s Spec, seed uint64) (with, bounded string) {
	return prefilterBoundedFrom(s, seed, "", s.src(), true)
}

// prefilterBoundedFrom reads the private relation from src (twice), after the CTEs in pre.
//
// byHash groups the kept rows by (uid, h) instead of (keys, uid), taking min() of each key
// column. Without hash collisions that is the same grouping; with a collision (two key tuples
// of one user with the same h, which DuckDB's hash() lets a user craft) the two tuples merge
// into one contribution, so a user still contributes at most kappa rows: the threshold allows
// at most kappa distinct h per user. Grouping by keys instead lets such a user into kappa+1
// keys or more (TestHashTies).
func prefilterBoundedFrom(s Spec, seed uint64, pre, src string, byHash bool) (with, bounded string) {
	ctes, last := kthDistinctCTEs("l", s.Kappa, "", false)
	if byHash {
		return prefilterBoundedWith(s, seed, pre, src, ctes, last)
	}
	with = fmt.Sprintf("WITH %sl AS (SELECT %s AS u, list(%s) AS hs FROM %s GROUP BY 1),\n%s",
		pre, s.UID, s.rawHash(seed), src, ctes)
	bounded = fmt.Sprintf(`SELECT %s FROM %s AS r JOIN %s AS th ON r.%s = th.u
  WHERE th.m IS NULL OR %s <= th.m
  GROUP BY %s`, s.rawStage1Select("r."), src, last, s.UID,
		HashSQL("r."+s.UID, prefixed("r.", s.Keys), seedLit(seed)), s.stage1GroupBy())
	return with, bounded
}

// prefilterBoundedWith is the tie-safe bounded stage 1 with the threshold CTEs ctes, the last
// of which, named last, has columns u and m.
func prefilterBoundedWith(s Spec, seed uint64, pre, src, ctes, last string) (with, bounded string) {
	with = fmt.Sprintf("WITH %sl AS (SELECT %s AS u, list(%s) AS hs FROM %s GROUP BY 1),\n%s",
		pre, s.UID, s.rawHash(seed), src, ctes)
	var inner, outer []string
	for i, k := range s.Keys {
		inner = append(inner, fmt.Sprintf("r.%s AS g%d", k, i))
		outer = append(outer, fmt.Sprintf("min(g%d) AS g%d", i, i))
	}
	inner = append(inner, "r."+s.UID+" AS u")
	outer = append(outer, "u")
	for j, a := range s.Aggs {
		ap := a
		if a.Expr != "" && a.Expr != "*" {
			inner = append(inner, fmt.Sprintf("r.%s AS x%d", a.Expr, j))
			ap.Expr = fmt.Sprintf("x%d", j)
		}
		outer = append(outer, fmt.Sprintf("%s AS p%d", s.partial(ap), j))
	}
	inner = append(inner, HashSQL("r."+s.UID, prefixed("r.", s.Keys), seedLit(seed))+" AS h", "th.m")
	bounded = fmt.Sprintf(`SELECT %s FROM (
    SELECT %s
    FROM %s AS r JOIN %s AS th ON r.%s = th.u
  ) WHERE m IS NULL OR h <= m
  GROUP BY u, h`, strings.Join(outer, ", "), strings.Join(inner, ", "), src, last, s.UID)
	return with, bounded
}

// prefilterJoinByKeySQL is prefilter_join grouping the kept rows by (keys, uid): not tie-safe.
func prefilterJoinByKeySQL(s Spec, seed uint64) string {
	with, bounded := prefilterBoundedFrom(s, seed, "", s.src(), false)
	return fmt.Sprintf("%s\nSELECT %s FROM (\n  %s\n) GROUP BY %s", with, s.final(""), bounded, s.keyCols(""))
}

// prefilterJoinMatSQL is prefilter_join reading the private relation from a materialised CTE:
// what it costs when the relation is an expensive query (a join) that must not run twice.
func prefilterJoinMatSQL(s Spec, seed uint64) string {
	with, bounded := prefilterBoundedFrom(s, seed, "src AS MATERIALIZED "+s.src()+",\n", "src", true)
	return fmt.Sprintf("%s\nSELECT %s FROM (\n  %s\n) GROUP BY %s", with, s.final(""), bounded, s.keyCols(""))
}

// KeptPairsSQL returns the stage-2 output of the recommended strategy: columns g0.., u and the
// partials, one row per kept (keys, uid). Tests count rows per u.
func KeptPairsSQL(s Spec, seed uint64) string {
	with, bounded := prefilterBounded(s, seed)
	return with + "\n" + bounded
}

func prefilterJoinSQL(s Spec, seed uint64) string {
	with, bounded := prefilterBounded(s, seed)
	return fmt.Sprintf("%s\nSELECT %s FROM (\n  %s\n) GROUP BY %s", with, s.final(""), bounded, s.keyCols(""))
}

func prefilterSortSQL(s Spec, seed uint64) string {
	th := fmt.Sprintf("th AS (SELECT u, CASE WHEN len(hs) > %d THEN list_sort(list_distinct(hs))[%d] END AS m FROM l)", s.Kappa, s.Kappa)
	with, bounded := prefilterBoundedWith(s, seed, "", s.src(), th, "th")
	return fmt.Sprintf("%s\nSELECT %s FROM (\n  %s\n) GROUP BY %s", with, s.final(""), bounded, s.keyCols(""))
}

func prefilterListsSQL(s Spec, seed uint64) string {
	// lists: hs, one per key (k0s...), one per aggregate argument (a0s...).
	var lists, carry, unn []string
	for i, k := range s.Keys {
		lists = append(lists, fmt.Sprintf("list(%s) AS k%ds", k, i))
		carry = append(carry, fmt.Sprintf("k%ds", i))
		unn = append(unn, fmt.Sprintf("unnest(k%ds) AS g%d", i, i))
	}
	var parts []string
	for j, a := range s.Aggs {
		arg := a.Expr
		if arg == "" || arg == "*" {
			arg = "1"
		}
		lists = append(lists, fmt.Sprintf("list(%s) AS a%ds", arg, j))
		carry = append(carry, fmt.Sprintf("a%ds", j))
		unn = append(unn, fmt.Sprintf("unnest(a%ds) AS x%d", j, j))
		ap := a
		ap.Expr = fmt.Sprintf("x%d", j)
		if a.Kind == Count && (a.Expr == "" || a.Expr == "*") {
			ap.Expr = "*"
		}
		parts = append(parts, fmt.Sprintf("%s AS p%d", s.partial(ap), j))
	}
	c := ", " + strings.Join(carry, ", ")
	ctes, last := kthDistinctCTEs("l", s.Kappa, c, true)
	return fmt.Sprintf(`WITH l AS (SELECT %[1]s AS u, list(%[2]s) AS hs, %[3]s FROM %[4]s GROUP BY 1),
%[5]s,
r AS (SELECT u, m, unnest(hs) AS h, %[6]s FROM %[7]s)
SELECT %[8]s FROM (
  SELECT %[9]s, u, %[10]s FROM r WHERE m IS NULL OR h <= m GROUP BY %[11]s
) GROUP BY %[9]s`, s.UID, s.rawHash(seed), strings.Join(lists, ", "), s.src(), ctes, strings.Join(unn, ", "),
		last, s.final(""), s.keyCols(""), strings.Join(parts, ", "), s.stage1GroupBy())
}

func prefixed(prefix string, xs []string) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = prefix + x
	}
	return strings.Join(out, ", ")
}

// stage1WithHash is stage 1 plus the sampling rank h of each (keys, uid) pair.
func (s Spec) stage1WithHash(seed uint64) string {
	return fmt.Sprintf("SELECT *, %s AS h FROM (%s)", s.HashExpr("", seed), s.Stage1())
}

func postListsSQL(s Spec, seed uint64) string {
	var lists, carry, unn []string
	for i := range s.Keys {
		lists = append(lists, fmt.Sprintf("list(g%d) AS g%ds", i, i))
		carry = append(carry, fmt.Sprintf("g%ds", i))
		unn = append(unn, fmt.Sprintf("unnest(g%ds) AS g%d", i, i))
	}
	for j := range s.Aggs {
		lists = append(lists, fmt.Sprintf("list(p%d) AS p%ds", j, j))
		carry = append(carry, fmt.Sprintf("p%ds", j))
		unn = append(unn, fmt.Sprintf("unnest(p%ds) AS p%d", j, j))
	}
	ctes, last := kthDistinctCTEs("l", s.Kappa, ", "+strings.Join(carry, ", "), true)
	return fmt.Sprintf(`WITH l AS (SELECT u, list(h) AS hs, %s FROM (%s) GROUP BY u),
%s,
r AS (SELECT m, unnest(hs) AS h, %s FROM %s)
SELECT %s FROM r WHERE m IS NULL OR h <= m GROUP BY %s`,
		strings.Join(lists, ", "), s.stage1WithHash(seed), ctes, strings.Join(unn, ", "), last, s.final(""), s.keyCols(""))
}

// stage1ByHash is stage 1 grouped by (uid, h) with min() of each key column: one row per
// distinct rank per user, so a threshold on h admits at most kappa rows per user even when
// two key tuples collide (see prefilterBoundedFrom).
func (s Spec) stage1ByHash(seed uint64) string {
	var inner, outer []string
	for i, k := range s.Keys {
		inner = append(inner, fmt.Sprintf("%s AS g%d", k, i))
		outer = append(outer, fmt.Sprintf("min(g%d) AS g%d", i, i))
	}
	inner = append(inner, s.UID+" AS u")
	outer = append(outer, "u", "h")
	for j, a := range s.Aggs {
		ap := a
		if a.Expr != "" && a.Expr != "*" {
			inner = append(inner, fmt.Sprintf("%s AS x%d", a.Expr, j))
			ap.Expr = fmt.Sprintf("x%d", j)
		}
		outer = append(outer, fmt.Sprintf("%s AS p%d", s.partial(ap), j))
	}
	inner = append(inner, s.rawHash(seed)+" AS h")
	return fmt.Sprintf("SELECT %s FROM (SELECT %s FROM %s) GROUP BY u, h",
		strings.Join(outer, ", "), strings.Join(inner, ", "), s.src())
}

func postThrLeftJoinSQL(s Spec, seed uint64) string {
	ctes, last := kthDistinctCTEs("l", s.Kappa, "", false)
	return fmt.Sprintf(`WITH p AS MATERIALIZED (%s),
l AS (SELECT u, list(h) AS hs FROM p GROUP BY u HAVING count(*) > %d),
%s
SELECT %s FROM p LEFT JOIN %s AS th ON p.u = th.u
WHERE th.m IS NULL OR p.h <= th.m GROUP BY %s`,
		s.stage1ByHash(seed), s.Kappa, ctes, s.final("p."), last, s.keyCols("p."))
}

// rankStruct is {'h': hash, 'k0': key0, ...}: the hash with the keys as tie-breakers. Structs
// compare field by field (a NULL field sorts after every value and equals NULL), so distinct
// key tuples always get distinct ranks.
func (s Spec) rankStruct(prefix string, seed uint64) string {
	parts := []string{"'h': " + HashSQL(prefix+s.UID, prefixed(prefix, s.Keys), seedLit(seed))}
	for i, k := range s.Keys {
		parts = append(parts, fmt.Sprintf("'k%d': %s%s", i, prefix, k))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func prefilterTieSafeSQL(s Spec, seed uint64) string {
	ctes, last := kthDistinctCTEs("l", s.Kappa, "", false)
	return fmt.Sprintf(`WITH l AS (SELECT %[1]s AS u, list(%[2]s) AS hs FROM %[3]s GROUP BY 1),
%[4]s
SELECT %[5]s FROM (
  SELECT %[6]s FROM %[3]s AS r JOIN %[7]s AS th ON r.%[1]s = th.u
  WHERE th.m IS NULL OR %[8]s <= th.m
  GROUP BY %[9]s
) GROUP BY %[10]s`, s.UID, s.rankStruct("", seed), s.src(), ctes, s.final(""), s.rawStage1Select("r."), last,
		s.rankStruct("r.", seed), s.stage1GroupBy(), s.keyCols(""))
}

func postTieSafeSQL(s Spec, seed uint64) string {
	ctes, last := kthDistinctCTEs("l", s.Kappa, "", false)
	rank := []string{"'h': h"}
	for i := range s.Keys {
		rank = append(rank, fmt.Sprintf("'k%d': g%d", i, i))
	}
	r := "{" + strings.Join(rank, ", ") + "}"
	return fmt.Sprintf(`WITH p AS MATERIALIZED (SELECT *, %s AS rk FROM (%s)),
l AS (SELECT u, list(rk) AS hs FROM p GROUP BY u HAVING count(*) > %d),
%s
SELECT %s FROM p LEFT JOIN %s AS th ON p.u = th.u
WHERE th.m IS NULL OR p.rk <= th.m GROUP BY %s`,
		r, s.stage1WithHash(seed), s.Kappa, ctes, s.final("p."), last, s.keyCols("p."))
}

func postHeavySQL(s Spec, seed uint64) string {
	ctes, last := kthDistinctCTEs("l", s.Kappa, "", false)
	return fmt.Sprintf(`WITH p AS MATERIALIZED (%s),
heavy AS (SELECT u FROM p GROUP BY u HAVING count(*) > %d),
l AS (SELECT u, list(h) AS hs FROM p SEMI JOIN heavy USING (u) GROUP BY u),
%s
SELECT %s FROM p LEFT JOIN %s AS th ON p.u = th.u
WHERE th.m IS NULL OR p.h <= th.m GROUP BY %s`,
		s.stage1ByHash(seed), s.Kappa, ctes, s.final("p."), last, s.keyCols("p."))
}
