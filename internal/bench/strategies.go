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
	// Floor marks the non-private reference (no bounding, no clamping).
	Floor bool
	Note  string
	SQL   func(s Spec, seed uint64) string
}

// Strategies lists every strategy the harness knows, the floor first.
func Strategies() []Strategy {
	return []Strategy{
		{Name: "floor", Floor: true, Note: "non-private: GROUP BY key, uid then GROUP BY key", SQL: floorSQL},
		{Name: "window_random", Note: "textbook ROW_NUMBER() OVER (PARTITION BY uid ORDER BY random()); reference only, not reproducible", SQL: windowRandomSQL},
		{Name: "window_hash", Exact: true, Note: "QUALIFY row_number() OVER (PARTITION BY uid ORDER BY h) <= kappa", SQL: windowHashSQL},
		{Name: "minby_struct", Exact: true, Note: "min_by(struct of keys and partials, h, kappa) GROUP BY uid, UNNEST, GROUP BY key", SQL: minByStructSQL},
		{Name: "minby_lists", Exact: true, Note: "one min_by(col, h, kappa) per column, UNNESTed side by side", SQL: minByListsSQL},
		{Name: "threshold_join", Exact: true, Note: "per-user kappa-th smallest h by aggregation, joined back", SQL: thresholdJoinSQL},
		{Name: "threshold_join_fast", Exact: true, Note: "threshold only for users with more than kappa keys, LEFT JOIN", SQL: thresholdJoinFastSQL},
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
