package bench

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// AggKind is the per-user partial an anonymized aggregate needs from stage 1.
type AggKind int

const (
	// Sum is ANON_SUM(expr CLAMPED BETWEEN Lo AND Hi): stage 1 SUM(expr) per user and key,
	// stage 3 clamps it and sums it in fixed point.
	Sum AggKind = iota
	// Count is ANON_COUNT(expr or *) CLAMPED BETWEEN Lo AND Hi: stage 1 COUNT per user and key,
	// stage 3 clamps it and sums it as an integer.
	Count
)

// Agg is one anonymized aggregate.
type Agg struct {
	Kind AggKind
	Expr string // the argument; "" or "*" for COUNT(*)
	Lo   float64
	Hi   float64
}

// Spec is what the SQL generator knows about one anonymized query: the private relation, the
// privacy unit column, the grouping keys (any number, NULL allowed) and the aggregates.
type Spec struct {
	Table string   // a table name or a parenthesised subquery with an alias
	UID   string   // privacy unit expression
	Keys  []string // grouping key expressions
	Aggs  []Agg
	Kappa int
	// UnitExp sets the fixed-point unit 2^-UnitExp for clamped sums (30 if zero).
	UnitExp int
	// FixedPartials converts each row to fixed point before stage 1 (sum(CAST(x * 2^e AS
	// BIGINT))), so per-user partials are exact integers too and the whole result is
	// bit-for-bit reproducible; otherwise the per-user sum is a DOUBLE sum whose last bits
	// depend on the order DuckDB's threads add rows in.
	FixedPartials bool
}

// partial is the stage-1 aggregate of a.
func (s Spec) partial(a Agg) string {
	if s.FixedPartials && a.Kind == Sum {
		return fmt.Sprintf("sum(CAST((%s) * %s AS BIGINT))", a.Expr, lit(float64(uint64(1)<<s.unitExp())))
	}
	return a.partial()
}

// DefaultSpec is the query of the benchmark:
//
//	SELECT WITH ANONYMIZATION OPTIONS(kappa=K) k, ANON_SUM(v CLAMPED BETWEEN 0 AND 50)
//	FROM t GROUP BY k
//
// plus the user count every anonymized query computes for partition selection.
func DefaultSpec(table string, kappa int) Spec {
	return Spec{
		Table: table, UID: "uid", Keys: []string{"k"}, Kappa: kappa,
		Aggs: []Agg{{Kind: Sum, Expr: "v", Lo: 0, Hi: 50}},
	}
}

func (s Spec) unitExp() int {
	if s.UnitExp == 0 {
		return 30
	}
	return s.UnitExp
}

// lit spells a float as a DOUBLE literal DuckDB reads back exactly.
func lit(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64) + "::DOUBLE"
}

// keyCols is "g0, g1, ..." (the stage-1 names of the keys).
func (s Spec) keyCols(prefix string) string {
	parts := make([]string, len(s.Keys))
	for i := range s.Keys {
		parts[i] = prefix + "g" + strconv.Itoa(i)
	}
	return strings.Join(parts, ", ")
}

// stage1Select is the select list of stage 1: keys as g<i>, uid as u, partials as p<j>.
func (s Spec) stage1Select() string {
	var b strings.Builder
	for i, k := range s.Keys {
		fmt.Fprintf(&b, "%s AS g%d, ", k, i)
	}
	fmt.Fprintf(&b, "%s AS u", s.UID)
	for j, a := range s.Aggs {
		fmt.Fprintf(&b, ", %s AS p%d", s.partial(a), j)
	}
	return b.String()
}

// groupByAll is "1, 2, ..., len(keys)+1": keys and uid by position.
func (s Spec) stage1GroupBy() string {
	parts := make([]string, len(s.Keys)+1)
	for i := range parts {
		parts[i] = strconv.Itoa(i + 1)
	}
	return strings.Join(parts, ", ")
}

func (a Agg) partial() string {
	switch a.Kind {
	case Count:
		if a.Expr == "" || a.Expr == "*" {
			return "count(*)"
		}
		return "count(" + a.Expr + ")"
	default:
		return "sum(" + a.Expr + ")"
	}
}

// src is the private relation without rows whose privacy unit is NULL. Such rows have no
// owner to bound: every strategy drops them (a LEFT JOIN or a GROUP BY would otherwise let a
// NULL "user" contribute to any number of keys, or treat all of them as one user).
func (s Spec) src() string {
	return fmt.Sprintf("(SELECT * FROM %s WHERE %s IS NOT NULL)", s.Table, s.UID)
}

// Stage1 is the per-user partial aggregation: one row per (keys, uid).
func (s Spec) Stage1() string {
	return fmt.Sprintf("SELECT %s FROM %s GROUP BY %s", s.stage1Select(), s.src(), s.stage1GroupBy())
}

// final is the stage-3 select list over rows named by prefix (e.g. "" or "r."): the keys, the
// user count, and per aggregate the clamped exact sum.
func (s Spec) final(prefix string) string {
	var b strings.Builder
	b.WriteString(s.keyCols(prefix))
	b.WriteString(", count(*) AS users")
	for j, a := range s.Aggs {
		p := prefix + "p" + strconv.Itoa(j)
		unit := float64(uint64(1) << s.unitExp())
		switch {
		case a.Kind == Count:
			fmt.Fprintf(&b, ", sum(least(greatest(%s, %d), %d)) AS a%d", p, int64(a.Lo), int64(a.Hi), j)
		case s.FixedPartials:
			// p is already in units of 2^-UnitExp (HUGEINT); clamp to the scaled bounds.
			fmt.Fprintf(&b, ", sum(least(greatest(%s, CAST(%s AS BIGINT)), CAST(%s AS BIGINT))) AS a%d",
				p, lit(math.Round(a.Lo*unit)), lit(math.Round(a.Hi*unit)), j)
		default:
			// CAST(DOUBLE AS BIGINT) rounds half away from zero, like round(). The per-user
			// value fits BIGINT when max(|Lo|,|Hi|) * 2^UnitExp < 2^63; sum(BIGINT) accumulates
			// in HUGEINT, so the total is exact and independent of the order of the rows.
			fmt.Fprintf(&b, ", sum(CAST(least(greatest(CAST(%s AS DOUBLE), %s), %s) * %s AS BIGINT)) AS a%d",
				p, lit(a.Lo), lit(a.Hi), lit(float64(uint64(1)<<s.unitExp())), j)
		}
	}
	return b.String()
}

// HashExpr is the per-(uid, keys) pseudo-random rank used to sample kappa keys per user:
// hash(hash(u, g0, ..., seed)). The outer hash matters: DuckDB's multi-argument hash ends by
// XOR-ing in the hash of the last argument, and ordering values by (c XOR x) for a random c is
// NOT a uniformly random order (it follows the binary trie of the x). See docs/design/bounding-on-duckdb.md.
func (s Spec) HashExpr(prefix string, seed uint64) string {
	return HashSQL(prefix+"u", s.keyCols(prefix), seedLit(seed))
}

// HashSQL spells the sampling rank of one (uid, keys) pair: hash(hash(uid, keys..., seed)).
// keys is a comma-separated list of key expressions, seed a UBIGINT expression.
func HashSQL(uid, keys, seed string) string {
	return fmt.Sprintf("hash(hash(%s, %s, %s))", uid, keys, seed)
}

// HashSQLXor is the one-level hash(uid, keys..., seed), biased: do not use.
func HashSQLXor(uid, keys, seed string) string {
	return fmt.Sprintf("hash(%s, %s, %s)", uid, keys, seed)
}

func seedLit(seed uint64) string { return fmt.Sprintf("%d::UBIGINT", seed) }

// HashExprXor is the tempting one-level hash(u, g0, ..., seed); kept only to show its bias.
func (s Spec) HashExprXor(prefix string, seed uint64) string {
	return HashSQLXor(prefix+"u", s.keyCols(prefix), seedLit(seed))
}
