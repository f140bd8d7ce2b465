package sqlgen

import (
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/plan"
)

// BoundsStage prints the query that computes the logarithmic histogram of aggregate j's
// per-unit values, for estimating implicit bounds: the same rows, per-unit aggregation and
// contribution bounding (same seed, so the same groups per unit) as the stage, then one row
// per (sign, bin) with its count. Bins follow exec.Histogram: bin 0 holds magnitudes up to
// 2^scaleExp, bin i those in (2^(scaleExp+i-1), 2^(scaleExp+i)], the last bin everything
// larger (and infinities).
//
// Per-unit values are the unit's per-group count, sum or average; for per-row functions
// (VAR_POP, STDDEV_POP, percentiles and quantiles) each of the at most plan.RowsPerGroup rows
// the stage keeps from the unit's rows in the group.
func BoundsStage(p *plan.Plan, d backend.Dialect, j int, scaleExp, numBins int) (string, error) {
	a := p.Aggregates[j]
	v := "_dp_v"
	var partials []string
	switch a.Func {
	case analyzer.CountRows:
		partials = []string{"COUNT(*)"}
	case analyzer.CountValues:
		partials = []string{"COUNT(" + v + ")"}
	case analyzer.Sum:
		partials = []string{notNaN(d, unitSum(d, v))}
	case analyzer.Avg:
		partials = []string{notNaN(d, unitAvg(d, v))}
	case analyzer.VarPop, analyzer.StddevPop, analyzer.Percentile, analyzer.Quantiles:
		// The rows the stage keeps (rankExpr), one slot each.
		for i := 1; i <= plan.RowsPerGroup; i++ {
			partials = append(partials, fmt.Sprintf("MIN(%s) FILTER (WHERE %s = %d)", v, RankColumn(j), i))
		}
	default:
		return "", fmt.Errorf("sqlgen: implicit bounds are not supported for %s", a.Func)
	}
	values := make([]string, j+1)
	values[j] = argValue(p, d, j)
	for i, x := range partials {
		x = strings.ReplaceAll(x, "_dp_v", fmt.Sprintf("_dp_v%d", j))
		partials[i] = fmt.Sprintf("%s AS _dp_x%d", x, i)
	}
	var b strings.Builder
	writePrefix(&b, p, d, values, partials)
	dbl := doubleType(d)
	var sides []string
	if p.MaxRows > 0 {
		sides = []string{fmt.Sprintf("SELECT CAST(_dp_v%d AS %s) AS x FROM _dp_bounded", j, dbl)}
	} else {
		for i := range partials {
			sides = append(sides, fmt.Sprintf("SELECT CAST(_dp_x%d AS %s) AS x FROM _dp_bounded", i, dbl))
		}
	}
	fmt.Fprintf(&b, ",\n_dp_values AS (\n  %s\n),\n", strings.Join(sides, "\n  UNION ALL "))
	fmt.Fprintf(&b, "_dp_exp AS (\n  SELECT x, CAST(CEIL(LN(ABS(x)) / LN(2.0)) AS INTEGER) AS e FROM _dp_values\n  WHERE x IS NOT NULL AND ABS(x) > %s AND ABS(x) < CAST('Infinity' AS %s)\n)\n", num(pow2(scaleExp)), dbl)
	// ceil(log2|x|) is computed in floating point and corrected exactly against powers of
	// two (which POWER computes exactly in floating point; PostgreSQL's POWER(2.0, e) would be
	// NUMERIC, rounded for very negative e).
	two := "CAST(2 AS " + dbl + ")"
	exact := fmt.Sprintf("(e + CASE WHEN ABS(x) > POWER(%s, e) THEN 1 WHEN ABS(x) <= POWER(%s, e - 1) THEN -1 ELSE 0 END)", two, two)
	fmt.Fprintf(&b, "SELECT x < 0 AS neg, LEAST(%d, %s - (%d)) AS bin, COUNT(*) AS n FROM _dp_exp GROUP BY 1, 2\n", numBins-1, exact, scaleExp)
	fmt.Fprintf(&b, "UNION ALL SELECT x < 0, CASE WHEN ABS(x) <= %s THEN 0 ELSE %d END, COUNT(*) FROM _dp_values\n  WHERE x IS NOT NULL AND (ABS(x) <= %s OR ABS(x) = CAST('Infinity' AS %s)) GROUP BY 1, 2",
		num(pow2(scaleExp)), numBins-1, num(pow2(scaleExp)), dbl)
	return b.String(), nil
}

func pow2(e int) float64 {
	v := 1.0
	for ; e > 0; e-- {
		v *= 2
	}
	for ; e < 0; e++ {
		v /= 2
	}
	return v
}

func doubleType(d backend.Dialect) string {
	if d == backend.Postgres {
		return "DOUBLE PRECISION"
	}
	return "DOUBLE"
}

// writePrefix writes the CTEs every stage query starts with: the analyst's CTEs; _dp_rows
// (keys, privacy unit and the value columns _dp_v<j> for the non-empty values[j], filtered,
// units not NULL); _dp_per_unit (one row per group and unit with the given partial
// aggregates, each "expression AS name"); _dp_bounded (at most kappa groups per unit). It
// returns the key column names.
func writePrefix(b *strings.Builder, p *plan.Plan, d backend.Dialect, values []string, partials []string) []string {
	keys := writeRows(b, p, d, values)
	if p.MaxRows > 0 {
		// max_rows_contributed: at most MaxRows rows per unit, chosen at random; no
		// per-unit aggregation (values are clamped per row).
		fmt.Fprintf(b, "_dp_bounded AS (\n  SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY _dp_uid ORDER BY %s) AS _dp_rank FROM _dp_rows) AS _dp_ranked WHERE _dp_rank <= %d\n)",
			rowPriority(p, d, keys, values), p.MaxRows)
		return keys
	}
	if UsesPrefilter(p, d) {
		writePrefilter(b, p, d, keys, values, partials)
		return keys
	}
	if d == backend.DuckDB && !p.Unbounded {
		writeAggregateFirst(b, p, keys, values, partials)
		return keys
	}
	cols := append(append(append([]string(nil), keys...), "_dp_uid"), partials...)
	group := strings.Join(append(append([]string(nil), keys...), "_dp_uid"), ", ")
	from := writeRanks(b, p, d, keys, append([]string{"_dp_uid"}, keys...), values, "_dp_rows")
	b.WriteString("_dp_per_unit AS (\n  SELECT " + strings.Join(cols, ", ") + "\n  FROM " + from + "\n  GROUP BY " + group + "\n),\n")
	if p.Unbounded {
		// A NULL kappa (plan.Plan.Unbounded): every group of every unit is kept.
		b.WriteString("_dp_bounded AS (\n  SELECT * FROM _dp_per_unit\n)")
		return keys
	}
	if h, ok := pgPriority(p, keys); ok && d == backend.Postgres {
		// The prefilter's priorities and tie order: both forms keep the same groups for a
		// seed, so which one the executor picks from the data's statistics changes nothing
		// but the speed (a unit's choice must never depend on other units' data).
		order := strings.Join(append([]string{h}, keys...), ", ")
		fmt.Fprintf(b, "_dp_bounded AS (\n  SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY _dp_uid ORDER BY %s) AS _dp_rank FROM _dp_per_unit) AS _dp_ranked WHERE _dp_rank <= %d\n)", order, p.Kappa)
		return keys
	}
	b.WriteString("_dp_bounded AS (\n" + boundContributions(d, keys, p.Kappa, p.Seed) + "\n)")
	return keys
}

// writeRanks writes, when p has per-row aggregates with values (values[j] != ""), the CTE
// _dp_ranked: the rows of from with each such aggregate's rank within its unit and group
// (rankExpr; part: the columns that make one unit's group), and returns the name of the
// relation the per-unit aggregation reads (from itself without per-row aggregates).
func writeRanks(b *strings.Builder, p *plan.Plan, d backend.Dialect, keys, part, values []string, from string) string {
	var ranks []string
	for j, a := range p.Aggregates {
		if j < len(values) && values[j] != "" && perRow(p, a) {
			ranks = append(ranks, rankExpr(p, d, keys, part, j))
		}
	}
	if len(ranks) == 0 {
		return from
	}
	fmt.Fprintf(b, "_dp_ranked AS (\n  SELECT *, %s\n  FROM %s\n),\n", strings.Join(ranks, ", "), from)
	return "_dp_ranked"
}

// rowPriority is the priority of a row of _dp_rows under max_rows_contributed: a hash of the
// unit, the keys and every value column (values[j] != ""), and the seed.
func rowPriority(p *plan.Plan, d backend.Dialect, keys, values []string) string {
	cols := append([]string(nil), keys...)
	for j, v := range values {
		if v != "" {
			cols = append(cols, fmt.Sprintf("_dp_v%d", j))
		}
	}
	return priority(d, cols, p.Seed)
}

// writePrefilter bounds contributions before the per-unit aggregation, which is what makes
// it cheap (docs/design/bounding-on-duckdb.md): every row gets its group's priority h =
// hash(hash(unit, keys, seed)); a row is kept if its group is one of the kappa of its unit
// that come first in the order of (h, keys), and the kept rows are aggregated per (unit,
// group). The keys after h make the order count groups even when two of a unit's groups
// collide on h (which a unit can craft with keys whose hashes collide,
// docs/design/bounding-on-duckdb.md §5.2), so a unit never reaches more than kappa groups,
// and break such ties the way aggregating first (writeAggregateFirst) and the shards' merge
// (internal/shard) do: every form keeps the same groups for a seed. DuckDB ranks each unit's
// rows in a window, dense_rank() over the unit's rows ordered by (h, keys), and keeps those
// ranked at most kappa: it partitions and sorts them within its memory limit, spilling to
// disk, and reads the rows once. Per-unit lists of h, with the rows read a second time
// against them, were tried and removed: never faster than the window from 10^5 to 10^8 rows
// of the hard shape (docs/benchmarks.md), held in memory that cannot spill, and safe only on
// rows that every read gives alike. So was a top-n of each unit's kappa + 1 smallest
// priorities that sends the kept rows of units without repeats straight to the final
// aggregation (0.08 of the floor faster at 10^7, docs/benchmarks.md "DuckDB 2.0, the window's
// sort key, ...").
func writePrefilter(b *strings.Builder, p *plan.Plan, d backend.Dialect, keys, values, partials []string) {
	if d == backend.Postgres {
		writePgPrefilter(b, p, keys, values, partials)
		return
	}
	fmt.Fprintf(b, "_dp_hashed AS (\n  SELECT *, %s AS _dp_h FROM _dp_rows\n),\n", priority(backend.DuckDB, keys, p.Seed))
	order := strings.Join(append([]string{"_dp_h"}, keys...), ", ")
	fmt.Fprintf(b, "_dp_kept AS (\n  SELECT * EXCLUDE (_dp_grank, _dp_h) FROM (SELECT *, dense_rank() OVER (PARTITION BY _dp_uid ORDER BY %s) AS _dp_grank FROM _dp_hashed) AS _dp_g WHERE _dp_grank <= %d\n),\n", order, p.Kappa)
	writePerUnit(b, p, keys, values, partials, "_dp_bounded", "AS", "_dp_kept")
}

// writePerUnit writes the CTE name (as is "AS" or "AS MATERIALIZED"; no comma after it): the
// rows of from aggregated per unit and group, with the partial aggregates (each "expression
// AS name"), after the ranks of per-row aggregates (writeRanks).
func writePerUnit(b *strings.Builder, p *plan.Plan, keys, values, partials []string, name, as, from string) {
	part := append([]string{"_dp_uid"}, keys...)
	from = writeRanks(b, p, backend.DuckDB, keys, part, values, from)
	cols := append(append(append([]string(nil), keys...), "_dp_uid"), partials...)
	b.WriteString(name + " " + as + " (\n  SELECT " + strings.Join(cols, ", ") + "\n  FROM " + from + "\n  GROUP BY " + strings.Join(part, ", ") + "\n)")
}

// writeAggregateFirst is DuckDB's other form of contribution bounding, for data where the
// per-unit aggregation shrinks the rows by itself or few units exceed kappa (the executor
// picks it from a sample: chooseBounding): aggregate per (unit, group) first, as a plain
// query would, then keep, for the units with more than kappa groups only, the kappa that
// come first in the order of (h, keys), ranked in a window over those units' per-unit rows
// alone; the others keep every group. It keeps exactly the prefilter's groups for a seed
// (same priorities, same order), so the choice changes only the speed. On data where every
// unit is within kappa it costs about one aggregation more than the plain query: the count of
// each unit's groups (docs/benchmarks.md).
func writeAggregateFirst(b *strings.Builder, p *plan.Plan, keys, values, partials []string) {
	writePerUnit(b, p, keys, values, partials, "_dp_per_unit", "AS MATERIALIZED", "_dp_rows")
	fmt.Fprintf(b, ",\n_dp_heavy AS (\n  SELECT _dp_uid FROM _dp_per_unit GROUP BY _dp_uid HAVING COUNT(*) > %d\n),\n", p.Kappa)
	order := strings.Join(append([]string{priority(backend.DuckDB, keys, p.Seed)}, keys...), ", ")
	// _dp_per_unit is read three times and materialized, so the units counted and the rows
	// they choose from come from one read even where every read of a relation differs (a
	// view with USING SAMPLE): a unit counted within kappa keeps at most kappa groups.
	fmt.Fprintf(b, "_dp_bounded AS (\n  SELECT r.* FROM _dp_per_unit AS r ANTI JOIN _dp_heavy AS h ON r._dp_uid = h._dp_uid\n"+
		"  UNION ALL\n  SELECT * EXCLUDE (_dp_rank) FROM (SELECT r.*, row_number() OVER (PARTITION BY r._dp_uid ORDER BY %s) AS _dp_rank\n"+
		"    FROM _dp_per_unit AS r SEMI JOIN _dp_heavy AS h ON r._dp_uid = h._dp_uid) AS _dp_r WHERE _dp_rank <= %d\n)", order, p.Kappa)
}

// writePgPrefilter is PostgreSQL's prefilter: contributions are bounded on the rows, before
// the per-unit aggregation, with one sort and no hash aggregation of all (unit, group) pairs.
// Every row gets its group's priority _dp_h (pgPriority: typed hashes, no text); a
// dense_rank over each unit's rows ordered by (_dp_h, keys) numbers the unit's distinct
// groups in priority order, and the rows of the first kappa are aggregated, grouped by (unit,
// _dp_h, keys). The rows arrive sorted by that grouping, so PostgreSQL aggregates them
// without another sort or hash table, where the window form (boundContributions) hashes every
// pair (which spills past work_mem when units are many) and then sorts them again.
//
// The keys in the ORDER BY make the rank count distinct groups even when two of a unit's
// groups collide on _dp_h, so a unit never reaches more than kappa groups; the ranks are the
// window form's row numbers when nothing collides, so both forms keep the same groups for a
// given seed. _dp_h is the same for every row of a (unit, group), since the typed hashes agree
// with their type's equality and the keys are normalised (NormaliseKey).
func writePgPrefilter(b *strings.Builder, p *plan.Plan, keys, values, partials []string) {
	d := backend.Postgres
	h, _ := pgPriority(p, keys)
	fmt.Fprintf(b, "_dp_hashed AS (\n  SELECT *, %s AS _dp_h FROM _dp_rows\n),\n", h)
	order := strings.Join(append([]string{"_dp_h"}, keys...), ", ")
	fmt.Fprintf(b, "_dp_kept AS (\n  SELECT * FROM (SELECT *, dense_rank() OVER (PARTITION BY _dp_uid ORDER BY %s) AS _dp_grank FROM _dp_hashed) AS _dp_g WHERE _dp_grank <= %d\n),\n", order, p.Kappa)
	part := append([]string{"_dp_uid", "_dp_h"}, keys...)
	from := writeRanks(b, p, d, keys, part, values, "_dp_kept")
	cols := append(append(append([]string(nil), keys...), "_dp_uid"), partials...)
	b.WriteString("_dp_bounded AS (\n  SELECT " + strings.Join(cols, ", ") + "\n  FROM " + from + "\n  GROUP BY " + strings.Join(part, ", ") + "\n)")
}

// pgHashes are PostgreSQL's seeded hash functions by the type of their argument (as
// format_type prints it, upper case), with a value of the type that stands in for NULL keys:
// each is its type's hash support function, so values equal by the type's equality hash
// equally (1.0 and 1.00, -0 and 0, text by its collation). Only types listed here (and the
// text types, which keys are normalised to) take the prefilter.
var pgHashes = map[string][2]string{
	"SMALLINT": {"hashint4extended", "0"}, "INTEGER": {"hashint4extended", "0"},
	"BIGINT": {"hashint8extended", "0"}, "NUMERIC": {"hash_numeric_extended", "0"},
	"REAL": {"hashfloat4extended", "0"}, "DOUBLE PRECISION": {"hashfloat8extended", "0"},
	"TEXT": {"hashtextextended", "''"}, "CHARACTER VARYING": {"hashtextextended", "''"},
	"UUID":                        {"uuid_hash_extended", "CAST('00000000-0000-0000-0000-000000000000' AS UUID)"},
	"TIMESTAMP WITHOUT TIME ZONE": {"timestamp_hash_extended", "CAST('epoch' AS TIMESTAMP)"},
	"INTERVAL":                    {"interval_hash_extended", "CAST('0' AS INTERVAL)"},
}

// pgKeyHash is the hash function of a group key of type typ after NormaliseKey (text types
// become TEXT COLLATE "C") and its stand-in for NULL; ok is false when pgHashes has none.
func pgKeyHash(typ string) (h [2]string, ok bool) {
	t := strings.ToUpper(strings.TrimSpace(typ))
	switch {
	case NormaliseKey(backend.Postgres, "x", t) == `(CAST(x AS TEXT) COLLATE "C")`:
		return pgHashes["TEXT"], true
	case strings.HasPrefix(t, "NUMERIC("):
		return pgHashes["NUMERIC"], true
	}
	h, ok = pgHashes[t]
	return h, ok
}

// pgPriority is the PostgreSQL priority of a row's (unit, group) from its columns in
// _dp_rows, and whether the unit's and keys' types have hash functions (pgHashes): the unit
// hashed with the seed, each key hashed with the previous hash as its seed (a NULL key is
// its type's stand-in hashed with the previous hash XOR 1, so it differs from the stand-in),
// and the result hashed once more with the seed. Without the last step the choice is not
// uniform over kappa-subsets (lookup3 chained through its seed orders one unit's keys the
// same way for many seeds; see priority); TestPostgresPriorityUniform checks the whole
// expression. Typed hashes render no text per row, unlike priority's text of the row.
func pgPriority(p *plan.Plan, keys []string) (string, bool) {
	// Units are not normalised: only their own type's hash will do (a CITEXT unit hashed as
	// TEXT would tell 'a' from 'A', which its equality does not).
	unit, ok := pgHashes[strings.ToUpper(strings.TrimSpace(p.UnitType))]
	if !ok || len(p.KeyTypes) != len(keys) {
		return "", false
	}
	h := fmt.Sprintf("%s(_dp_uid, %d)", unit[0], p.Seed)
	for i, k := range keys {
		f, ok := pgKeyHash(p.KeyTypes[i])
		if !ok {
			return "", false
		}
		h = fmt.Sprintf("%s(COALESCE(%s, %s), %s # CAST(CAST(%s IS NULL AS INTEGER) AS BIGINT))", f[0], k, f[1], h, k)
	}
	return fmt.Sprintf("hashint8extended(%s, %d)", h, p.Seed), true
}

// UsesPrefilter reports whether the stage of p would bound contributions with the prefilter
// (before per-unit aggregation), which pays off only when many units exceed kappa. On
// PostgreSQL it needs hash functions for the unit's and keys' types (pgPriority).
func UsesPrefilter(p *plan.Plan, d backend.Dialect) bool {
	if p.MaxRows > 0 || p.Unbounded || p.AggregateFirst {
		return false
	}
	if d == backend.Postgres {
		_, ok := pgPriority(p, make([]string, len(p.Query.Keys)))
		return ok
	}
	return d == backend.DuckDB
}

// ShapeStats prints a query over a 1/64 sample of the units (by hash) that returns the sampled
// units, rows, distinct (unit, group) pairs, and the pairs kappa bounding would remove. The
// executor uses it to choose how to bound contributions; the choice changes only the speed,
// never the result, and the statistics are never shown.
func ShapeStats(p *plan.Plan, d backend.Dialect) string {
	var b strings.Builder
	keys := writeRows(&b, p, d, nil)
	group := strings.Join(append(append([]string(nil), keys...), "_dp_uid"), ", ")
	sample := "hash(_dp_uid) % 64 = 0"
	if d == backend.Postgres {
		// UsesPrefilter: the unit's type has a hash function.
		sample = fmt.Sprintf("(%s(_dp_uid, 0) & 63) = 0", pgHashes[strings.ToUpper(strings.TrimSpace(p.UnitType))][0])
	}
	fmt.Fprintf(&b, "_dp_pairs AS (SELECT %s, COUNT(*) AS r FROM _dp_rows WHERE %s GROUP BY %s)\n", group, sample, group)
	fmt.Fprintf(&b, "SELECT COUNT(*), COALESCE(SUM(rows), 0), COALESCE(SUM(pairs), 0), COALESCE(SUM(GREATEST(pairs - %d, 0)), 0) FROM (SELECT _dp_uid, SUM(r) AS rows, COUNT(*) AS pairs FROM _dp_pairs GROUP BY _dp_uid) AS u", p.Kappa)
	return b.String()
}

// writeRows writes the analyst's CTEs and _dp_rows (keys, privacy unit and the value columns
// _dp_v<j> for the non-empty values[j], filtered, units not NULL), and returns the key column
// names.
func writeRows(b *strings.Builder, p *plan.Plan, d backend.Dialect, values []string) []string {
	q := p.Query
	pr := func(n ast.Node) string { return PrintData(d, n) }
	b.WriteString("WITH ")
	for _, cte := range q.With {
		b.WriteString(pr(cte))
		b.WriteString(",\n")
	}
	keys := make([]string, len(q.Keys))
	cols := []string{}
	for i, k := range q.Keys {
		keys[i] = analyzer.KeyColumn(i)
		cols = append(cols, fmt.Sprintf("%s AS %s", keyExpr(p, d, i, pr(k.Expr)), keys[i]))
	}
	cols = append(cols, pr(q.Unit)+" AS _dp_uid")
	for j, v := range values {
		if v != "" {
			cols = append(cols, fmt.Sprintf("%s AS _dp_v%d", v, j))
		}
	}
	b.WriteString("_dp_rows AS (\n  SELECT " + strings.Join(cols, ", ") + "\n  FROM " + printList(pr, q.From))
	b.WriteString("\n  WHERE ")
	if q.Where != nil {
		b.WriteString("(" + PrintData(d, condition(d, q.Where)) + ") AND ")
	}
	b.WriteString("(" + pr(q.Unit) + ") IS NOT NULL\n),\n")
	return keys
}
