package sqlgen

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/plan"
)

// Result columns of the stage query, one row per group:
//
//	_dp_k<i>  the group's keys
//	_dp_n     the number of privacy units in the group (after contribution bounding)
//	_dp_c<j>  aggregate j: how many units contributed a value
//	_dp_s<j>  aggregate j: the exact sum of the units' encoded values
//	_dp_q<j>  aggregate j: the exact sum of the units' encoded squares (variance)
//	_dp_leaves<j>, _dp_leaf_counts<j>
//	          aggregate j (percentile, quantiles): its quantile tree's leaf counts (writeLeaves)
const (
	UnitsColumn = "_dp_n"
)

// CountColumn, SumColumn and SquareColumn name aggregate j's stage columns.
func CountColumn(j int) string  { return "_dp_c" + strconv.Itoa(j) }
func SumColumn(j int) string    { return "_dp_s" + strconv.Itoa(j) }
func SquareColumn(j int) string { return "_dp_q" + strconv.Itoa(j) }

// Stage prints the query the database runs for plan p: per-unit partial aggregation per
// group, the random choice of at most kappa groups per unit, clamping, and per-group exact
// sums and quantile leaf counts. Its rows are the only data that reach Go: every per-group
// datum comes on its group's own row, so nothing is matched to a group outside the database.
func Stage(p *plan.Plan, d backend.Dialect) (string, error) {
	return stage(p, d, nil)
}

// stage prints Stage's query; with hist (StageBinned), the aggregates with implicit bounds
// come back binned instead of clamped.
func stage(p *plan.Plan, d backend.Dialect, hist []BinLayout) (string, error) {
	q := p.Query
	values := make([]string, len(p.Aggregates))
	var partials []string
	for j, a := range p.Aggregates {
		values[j] = argValue(p, d, j)
		v := fmt.Sprintf("_dp_v%d", j)
		switch a.Func {
		case analyzer.CountUnits:
			// The unit count is the group's row count.
		case analyzer.Percentile, analyzer.Quantiles:
			if p.MaxRows == 0 {
				partials = append(partials, picks(j)...)
			}
		case analyzer.CountRows:
			partials = append(partials, fmt.Sprintf("COUNT(*) AS _dp_p%d", j))
		case analyzer.CountValues:
			partials = append(partials, fmt.Sprintf("COUNT(%s) AS _dp_p%d", v, j))
		case analyzer.Sum:
			// +Infinity and -Infinity in one unit's values sum to NaN: like a NaN value,
			// that partial is not a value (valueExpr makes it NULL, skipped).
			partials = append(partials, fmt.Sprintf("%s AS _dp_p%d", notNaN(d, unitSum(d, v)), j))
		case analyzer.Avg:
			partials = append(partials, fmt.Sprintf("%s AS _dp_p%d", notNaN(d, unitAvg(d, v)), j))
		case analyzer.VarPop, analyzer.StddevPop:
			// The unit's kept rows (at most plan.RowsPerGroup), each clamped and encoded:
			// their number, the exact sum of their units and of their squared units.
			if p.MaxRows == 0 {
				e, f := a.Encoding, keptFilter(j)
				u := encodedUnits(d, v, e.Unit, e.LowerUnits, e.UpperUnits)
				partials = append(partials, fmt.Sprintf("COUNT(%s) %s AS _dp_p%d", v, f, j),
					fmt.Sprintf("SUM(%s) %s AS _dp_ps%d", u, f, j),
					fmt.Sprintf("SUM(%s * %s) %s AS _dp_pq%d", u, u, f, j))
			}
		default:
			return "", fmt.Errorf("sqlgen: %s is not supported in the SQL stage yet", a.Func)
		}
	}
	var b strings.Builder
	keys := writePrefix(&b, p, d, values, partials)
	from := "_dp_bounded"
	slots := false
	for _, a := range p.Aggregates {
		if isQuantile(a) {
			slots = writeLeaves(&b, p, keys)
			from = "_dp_leafed"
			break
		}
	}
	f := slotFilter(slots)

	// Per group: the unit count and exact sums of encoded, clamped partials.
	public := q.Domain != nil || q.KeyDomains != nil
	units := "COUNT(*)" + f
	if p.MaxRows > 0 {
		units = "COUNT(DISTINCT _dp_uid)"
	}
	cols := []string{units + " AS " + UnitsColumn}
	for j, a := range p.Aggregates {
		if hist != nil && hist[j].NumBins > 0 {
			cols = append(cols, binnedPartials(j)...)
			continue
		}
		cols = append(cols, groupColumns(p, d, a, j, f)...)
	}
	if hist != nil {
		from, cols = writeBinned(&b, p, d, keys, hist, from, cols)
	}
	if public {
		b.WriteString(",\n_dp_groups AS (")
	}
	cols = append(append([]string(nil), keys...), cols...)
	b.WriteString("\nSELECT " + strings.Join(cols, ", "))
	b.WriteString("\nFROM " + from)
	if len(keys) > 0 {
		b.WriteString("\nGROUP BY " + strings.Join(keys, ", "))
	}
	if public {
		b.WriteString("\n)")
		writeDomainJoin(&b, p, d, keys, cols)
	}
	return b.String(), nil
}

// groupColumns are aggregate j's stage columns, "expression AS name", aggregated over its
// group's per-unit rows (f: the quantile slots' filter, or "").
func groupColumns(p *plan.Plan, d backend.Dialect, a *plan.Aggregate, j int, f string) []string {
	pj := fmt.Sprintf("_dp_p%d", j)
	e := a.Encoding
	if isQuantile(a) {
		return leafColumns(d, j)
	}
	if p.MaxRows > 0 {
		return rowModeColumns(d, a, j, e)
	}
	switch a.Func {
	case analyzer.CountRows, analyzer.CountValues:
		return []string{fmt.Sprintf("CAST(SUM(%s)%s AS BIGINT) AS %s", clampExpr(pj, a.Lower, a.Upper), f, SumColumn(j))}
	case analyzer.Sum, analyzer.Avg:
		return []string{fmt.Sprintf("COUNT(%s)%s AS %s", pj, f, CountColumn(j)),
			fmt.Sprintf("%s%s AS %s", exactSum(d, pj, e.Unit, e.LowerUnits, e.UpperUnits), f, SumColumn(j))}
	case analyzer.VarPop, analyzer.StddevPop:
		// Sums of the units' exact partials over their kept rows.
		return []string{fmt.Sprintf("CAST(COALESCE(SUM(%s)%s, 0) AS BIGINT) AS %s", pj, f, CountColumn(j)),
			fmt.Sprintf("SUM(_dp_ps%d)%s AS %s", j, f, SumColumn(j)),
			fmt.Sprintf("SUM(_dp_pq%d)%s AS %s", j, f, SquareColumn(j))}
	}
	return nil
}

// writeDomainJoin releases exactly the public groups: the distinct keys of the public
// relation, each with its stage row if it has one (empty groups get zero counts and sums),
// and no group outside the domain.
func writeDomainJoin(b *strings.Builder, p *plan.Plan, d backend.Dialect, keys, cols []string) {
	var on, out []string
	for i := range p.Query.Keys {
		on = append(on, fmt.Sprintf("_dp_domain.%s IS NOT DISTINCT FROM _dp_groups.%s", keys[i], keys[i]))
		out = append(out, "_dp_domain."+keys[i])
	}
	for _, c := range cols[len(keys):] {
		name := c[strings.LastIndex(c, " AS ")+4:]
		out = append(out, fmt.Sprintf("_dp_groups.%s AS %s", name, name))
	}
	fmt.Fprintf(b, ",\n_dp_domain AS (%s)\n", domainSelect(p, d, keys))
	fmt.Fprintf(b, "SELECT %s\nFROM _dp_domain LEFT JOIN _dp_groups ON %s", strings.Join(out, ", "), strings.Join(on, " AND "))
}

// domainSelect is the query of the public groups' keys, named keys: the distinct keys of the
// public relation (or of the owner's declared domains' cross product). Domain values are cast
// to their key's type and normalised like the key (NormaliseKey) before DISTINCT, so the join
// compares equal types with no implicit conversion, and one domain value meets at most one
// group.
func domainSelect(p *plan.Plan, d backend.Dialect, keys []string) string {
	q := p.Query
	if q.KeyDomains != nil {
		var parts, vals []string
		for i, dom := range q.KeyDomains {
			parts = append(parts, domainSQL(d, dom, keys[i]))
			v := keys[i]
			if i < len(p.KeyTypes) && p.KeyTypes[i] != "" {
				v = fmt.Sprintf("CAST(%s AS %s)", v, p.KeyTypes[i])
			}
			vals = append(vals, fmt.Sprintf("%s AS %s", keyExpr(p, d, i, v), keys[i]))
		}
		return fmt.Sprintf("SELECT DISTINCT %s FROM %s", strings.Join(vals, ", "), strings.Join(parts, " CROSS JOIN "))
	}
	var dk []string
	for i, k := range q.Keys {
		dk = append(dk, fmt.Sprintf("%s AS %s", keyExpr(p, d, i, Print(d, k.Expr)), keys[i]))
	}
	return fmt.Sprintf("SELECT DISTINCT %s FROM %s", strings.Join(dk, ", "), Print(d, q.Domain))
}

// argValue is aggregate j's value column _dp_v<j> in _dp_rows ("" without an argument): its
// argument as a double with NaN as NULL, or as it is for COUNT, which counts non-NULL values
// of any type.
func argValue(p *plan.Plan, d backend.Dialect, j int) string {
	arg := p.Query.Aggregates[j].Arg
	switch {
	case arg == nil:
		return ""
	case p.Aggregates[j].Func == analyzer.CountValues:
		return PrintData(d, arg)
	}
	x := PrintData(d, arg)
	if j < len(p.ValueTypes) {
		if v, ok := typedValue(d, x, p.ValueTypes[j]); ok {
			return v
		}
	}
	return valueExpr(d, x)
}

// typedValue is valueExpr for an argument of a known database type t (plan.Plan.ValueTypes)
// that converts to a double without ever failing: integers and decimals (DuckDB; on
// PostgreSQL NUMERIC can exceed a double's range, so it keeps the total cast) are cast and
// cannot be NaN, floats only need NaN made NULL. ok is false for other types.
func typedValue(d backend.Dialect, x, t string) (string, bool) {
	t = strings.ToUpper(t)
	dbl := doubleType(d)
	switch {
	case t == dbl:
		return notNaN(d, x), true
	case t == "FLOAT" || t == "REAL" || t == "FLOAT4":
		return notNaN(d, "CAST("+x+" AS "+dbl+")"), true
	}
	ints := []string{"SMALLINT", "INTEGER", "BIGINT"}
	if d == backend.DuckDB {
		ints = append(ints, "TINYINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT")
		if strings.HasPrefix(t, "DECIMAL") {
			return "CAST(" + x + " AS " + dbl + ")", true
		}
	}
	for _, i := range ints {
		if t == i {
			return "CAST(" + x + " AS " + dbl + ")", true
		}
	}
	return "", false
}

// unitSum is the sum of a unit's values v (doubles) in a group. PostgreSQL's float sum
// raises "value out of range: overflow" where DuckDB's gives an infinity, so two values of
// 1e308 in one unit's rows failed the query only with that unit (an outside review). There,
// each finite value is first brought within +-1e280: a sum of them cannot overflow before
// 10^28 rows, more than any database reads, and a value beyond 1e280 is clamped to the
// aggregate's bounds afterwards anyway (bounds beyond 1e280 lose nothing a double can add).
// Infinities stay: a sum with one never raises.
func unitSum(d backend.Dialect, v string) string {
	if d != backend.Postgres {
		return "SUM(" + v + ")"
	}
	return "SUM(" + pgWithinSum(v) + ")"
}

// unitAvg is the average of a unit's values v in a group: on PostgreSQL their sum (unitSum)
// over their count, since PostgreSQL's float average also accumulates the squares of the
// deviations and raises when they overflow (values of +-1e160: an outside review).
func unitAvg(d backend.Dialect, v string) string {
	if d != backend.Postgres {
		return "AVG(" + v + ")"
	}
	return "SUM(" + pgWithinSum(v) + ") / COUNT(" + v + ")"
}

// pgWithinSum is the double v with finite values beyond +-1e280 made +-1e280 (unitSum).
func pgWithinSum(v string) string {
	const max, inf = "CAST(1e280 AS DOUBLE PRECISION)", "CAST('Infinity' AS DOUBLE PRECISION)"
	return fmt.Sprintf("CASE WHEN %s > %s AND %s < %s THEN %s WHEN %s < -%s AND %s > -%s THEN -%s ELSE %s END",
		v, max, v, inf, max, v, max, v, inf, max, v)
}

// notNaN is the double x with NaN as NULL.
func notNaN(d backend.Dialect, x string) string {
	return fmt.Sprintf("NULLIF(%s, CAST('NaN' AS %s))", x, doubleType(d))
}

// valueExpr converts an aggregate argument to a double with NaN as NULL: NaN is not a value
// (it is skipped, as in ZetaSQL) and must not reach clamping.
func valueExpr(d backend.Dialect, x string) string {
	if d == backend.Postgres {
		// The total cast (see PrintData): a text or an out-of-range numeric argument is no
		// value, not an error that would depend on the data.
		return fmt.Sprintf("NULLIF(%s, CAST('NaN' AS DOUBLE PRECISION))", pgTotalCast(x, "DOUBLE PRECISION", "float8"))
	}
	// TRY_CAST: a value that is not a number (a string argument) is no value, not an error
	// that would depend on the data (see PrintData).
	return fmt.Sprintf("NULLIF(TRY_CAST(%s AS DOUBLE), CAST('NaN' AS DOUBLE))", x)
}

// clampExpr clamps x into [lo, hi] and keeps NULL as NULL: GREATEST and LEAST skip NULL
// arguments in DuckDB and PostgreSQL, so without the CASE a NULL (a unit without a value, or a
// NaN made NULL by valueExpr) would become lo and be summed and counted.
func clampExpr(x string, lo, hi float64) string {
	return clampSQL(x, num(lo), num(hi))
}

func clampSQL(x, lo, hi string) string {
	return fmt.Sprintf("CASE WHEN %s IS NOT NULL THEN LEAST(GREATEST(%s, %s), %s) END", x, x, lo, hi)
}

// exactSum sums the fixed-point encodings of x: each value is clamped to [lo, hi] units,
// divided by unit and rounded, so the sum is exact and its terms are within the bounds the
// sensitivity was computed from, whatever the rounding mode (lo and hi are integers).
//
// The clamp comes before the cast to BIGINT: a value beyond the range of BIGINT units (a
// large per-unit sum, or +-Infinity) must clamp like any other, not fail the query, since
// whether a query fails must not depend on one unit's data. NULL stays NULL (not summed).
//
// Each term is a BIGINT (at most 2^40 in magnitude, 2^52 for a variance's squares), and SUM of
// BIGINT is exact in both dialects: HUGEINT in DuckDB (a 128-bit accumulator), NUMERIC in
// PostgreSQL. Casting each term to HUGEINT or NUMERIC first, as the stage once did, costs a
// wide addition per row for nothing.
func exactSum(d backend.Dialect, x string, unit float64, lo, hi int64) string {
	return fmt.Sprintf("SUM(%s)", encodedUnits(d, x, unit, lo, hi))
}

// encodedUnits is x's fixed-point encoding: x clamped to [lo*unit, hi*unit] (exact: unit is a
// power of two), divided by unit and rounded, as a BIGINT in [lo, hi]. The clamp comes before
// the division so that it cannot overflow either (PostgreSQL fails on float overflow).
//
// On PostgreSQL a value much smaller than the unit is 0 without the division, which would
// fail there with "underflow" (a subnormal quotient): a single tiny value must not make the
// query fail.
func encodedUnits(d backend.Dialect, x string, unit float64, lo, hi int64) string {
	clamped := clampSQL(x, num(float64(lo)*unit), num(float64(hi)*unit))
	if d == backend.Postgres {
		return fmt.Sprintf("CAST(CASE WHEN ABS(%s) < %s THEN 0 ELSE ROUND((%s) / %s) END AS BIGINT)", clamped, num(unit/4), clamped, num(unit))
	}
	return fmt.Sprintf("CAST(ROUND((%s) / %s) AS BIGINT)", clamped, num(unit))
}

func num(v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	if strings.HasPrefix(s, "-") {
		return "(" + s + ")"
	}
	return s
}

// boundContributions keeps at most kappa rows of _dp_per_unit per unit, chosen uniformly at
// random: each (unit, group) row gets a pseudo-random priority from a hash of unit, keys and
// seed, and the kappa smallest priorities of each unit are kept. The seed is fresh for every
// query.
//
// DuckDB's hash(a, b, seed) combines the hashes of its arguments by XOR, so the order of the
// priorities of one unit's groups under different seeds follows a fixed binary trie and some
// kappa-subsets are never chosen (internal/bench's TestUniformity shows it); hashing that
// hash again, hash(hash(...)), mixes the seed in and the choice is uniform.
func boundContributions(d backend.Dialect, keys []string, kappa, seed int64) string {
	return fmt.Sprintf("  SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY _dp_uid ORDER BY %s) AS _dp_rank FROM _dp_per_unit) AS _dp_ranked WHERE _dp_rank <= %d",
		priority(d, keys, seed), kappa)
}

// priority is the sampling priority of a (unit, group) row of _dp_per_unit.
//
// On PostgreSQL the seed enters Jenkins' lookup3 (hashtextextended) only through its initial
// mix, and the order of one unit's priorities over random seeds is far from uniform: for unit
// 0 and 6 keys, kappa 3, 20,000 seeds, chi-square 1,668 against a critical value of 44
// (TestPostgresPriorityUniform). Hashing that hash again with the seed (hashint8extended, a
// full lookup3 of its input) makes the choice uniform, as hash(hash(...)) does on DuckDB.
func priority(d backend.Dialect, keys []string, seed int64) string {
	args := strings.Join(append([]string{"_dp_uid"}, keys...), ", ")
	if d == backend.Postgres {
		return fmt.Sprintf("hashint8extended(hashtextextended(CAST(ROW(%s) AS TEXT), %d), %d)", args, seed, seed)
	}
	return fmt.Sprintf("hash(hash(%s, %d))", args, seed)
}

// domainSQL prints an owner-declared public domain (see analyzer.ParseDomain) as a derived
// table with one column, key.
func domainSQL(d backend.Dialect, dom ast.Expr, key string) string {
	alias := "_dp_d" + strings.TrimPrefix(key, "_dp_k")
	switch x := dom.(type) {
	case *ast.Tuple:
		var rows []string
		for _, e := range x.Elems {
			rows = append(rows, "("+Print(d, e)+")")
		}
		return fmt.Sprintf("(VALUES %s) AS %s(%s)", strings.Join(rows, ", "), alias, key)
	case *ast.FuncCall: // range(lo, hi), both included
		lo, hi := Print(d, x.Args[0]), Print(d, x.Args[1])
		if d == backend.Postgres {
			return fmt.Sprintf("(SELECT generate_series(%s, %s) AS %s) AS %s", lo, hi, key, alias)
		}
		return fmt.Sprintf("(SELECT range AS %s FROM range(%s, (%s) + 1)) AS %s", key, lo, hi, alias)
	case *ast.ColumnRef:
		rel := &ast.TableName{Name: x.Parts[:len(x.Parts)-1]}
		return fmt.Sprintf("(SELECT DISTINCT %s AS %s FROM %s) AS %s", Print(d, x.Parts[len(x.Parts)-1]), key, Print(d, rel), alias)
	}
	return fmt.Sprintf("(VALUES (%s)) AS %s(%s)", Print(d, dom), alias, key)
}

// rowModeColumns are aggregate j's stage columns under max_rows_contributed, computed from
// the kept rows themselves: each row's value clamped and encoded (no per-unit aggregation).
func rowModeColumns(d backend.Dialect, a *plan.Aggregate, j int, e plan.Encoding) []string {
	v := fmt.Sprintf("_dp_v%d", j)
	switch a.Func {
	case analyzer.CountRows:
		return []string{fmt.Sprintf("CAST(COUNT(*) AS BIGINT) AS %s", SumColumn(j))}
	case analyzer.CountValues:
		return []string{fmt.Sprintf("CAST(COUNT(%s) AS BIGINT) AS %s", v, SumColumn(j))}
	case analyzer.Sum, analyzer.Avg:
		return []string{fmt.Sprintf("COUNT(%s) AS %s", v, CountColumn(j)),
			fmt.Sprintf("%s AS %s", exactSum(d, v, e.Unit, e.LowerUnits, e.UpperUnits), SumColumn(j))}
	case analyzer.VarPop, analyzer.StddevPop:
		u := encodedUnits(d, v, e.Unit, e.LowerUnits, e.UpperUnits)
		return []string{fmt.Sprintf("COUNT(%s) AS %s", v, CountColumn(j)),
			fmt.Sprintf("SUM(%s) AS %s", u, SumColumn(j)),
			fmt.Sprintf("SUM(%s * %s) AS %s", u, u, SquareColumn(j))}
	}
	return nil
}
