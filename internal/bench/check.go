package bench

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"
)

// ResultRows is a query result keyed by its key columns (fmt of the values, NULL as <nil>),
// each value rendered with fmt so BIGINT, HUGEINT (*big.Int) and DOUBLE compare as text.
type ResultRows map[string][]string

// Collect runs a query and renders its rows; the first nKeys columns are the key.
func Collect(ctx context.Context, db *sql.DB, query string, nKeys int) (ResultRows, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	out := ResultRows{}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		strs := make([]string, len(vals))
		for i, v := range vals {
			strs[i] = render(v)
		}
		k := strings.Join(strs[:nKeys], "\x00")
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("bench: duplicate key %q", k)
		}
		out[k] = strs[nKeys:]
	}
	return out, rows.Err()
}

func render(v any) string {
	switch x := v.(type) {
	case nil:
		return "<nil>"
	case *big.Int:
		return x.String()
	case []byte:
		return string(x)
	default:
		return fmt.Sprint(x)
	}
}

// Diff describes the first few differences between two results ("" if equal).
func Diff(want, got ResultRows) string {
	var b strings.Builder
	n := 0
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		g, ok := got[k]
		switch {
		case !ok:
			fmt.Fprintf(&b, "missing key %q (want %v)\n", k, want[k])
		case strings.Join(g, ",") != strings.Join(want[k], ","):
			fmt.Fprintf(&b, "key %q: got %v, want %v\n", k, g, want[k])
		default:
			continue
		}
		if n++; n >= 5 {
			return b.String() + "...\n"
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			fmt.Fprintf(&b, "extra key %q: %v\n", k, g)
			if n++; n >= 5 {
				break
			}
		}
	}
	return b.String()
}

// Reference computes the exact expected output of the bounded query in Go from the stage-1
// pairs and their hashes (fetched from DuckDB, so the same hash function): per user keep the
// min(n, kappa) pairs with the smallest hash, clamp each partial, convert to fixed point with
// Go's math.Round (half away from zero, as DuckDB's cast), and sum per key. Only for small
// tables. It also returns the largest number of keys any user kept.
func Reference(ctx context.Context, db *sql.DB, s Spec, seed uint64) (ResultRows, int, error) {
	q := fmt.Sprintf("SELECT *, %s AS h FROM (%s)", s.HashExpr("", seed), s.Stage1())
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	nk, na := len(s.Keys), len(s.Aggs)
	type pair struct {
		key   string
		parts []any
		h     uint64
	}
	users := map[string][]pair{}
	vals := make([]any, nk+1+na+1)
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, 0, err
		}
		ks := make([]string, nk)
		for i := range ks {
			ks[i] = render(vals[i])
		}
		u := render(vals[nk])
		h, ok := vals[len(vals)-1].(uint64)
		if !ok {
			return nil, 0, fmt.Errorf("bench: hash is %T", vals[len(vals)-1])
		}
		users[u] = append(users[u], pair{key: strings.Join(ks, "\x00"), parts: append([]any(nil), vals[nk+1:nk+1+na]...), h: h})
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	type acc struct {
		users int64
		sums  []*big.Int
	}
	accs := map[string]*acc{}
	maxKept := 0
	unit := math.Ldexp(1, s.unitExp())
	for _, ps := range users {
		sort.Slice(ps, func(a, b int) bool { return ps[a].h < ps[b].h })
		if len(ps) > s.Kappa {
			ps = ps[:s.Kappa]
		}
		maxKept = max(maxKept, len(ps))
		for _, p := range ps {
			a := accs[p.key]
			if a == nil {
				a = &acc{sums: make([]*big.Int, na)}
				for j := range a.sums {
					a.sums[j] = new(big.Int)
				}
				accs[p.key] = a
			}
			a.users++
			for j, ag := range s.Aggs {
				if p.parts[j] == nil {
					continue
				}
				var x float64
				switch v := p.parts[j].(type) {
				case float64:
					x = v
				case int64:
					x = float64(v)
				case *big.Int:
					x, _ = new(big.Float).SetInt(v).Float64()
				default:
					return nil, 0, fmt.Errorf("bench: partial is %T", v)
				}
				if s.FixedPartials && ag.Kind == Sum {
					lo, hi := math.Round(ag.Lo*unit), math.Round(ag.Hi*unit)
					a.sums[j].Add(a.sums[j], big.NewInt(int64(math.Min(math.Max(x, lo), hi))))
					continue
				}
				x = math.Min(math.Max(x, ag.Lo), ag.Hi)
				if ag.Kind == Count {
					a.sums[j].Add(a.sums[j], big.NewInt(int64(x)))
				} else {
					a.sums[j].Add(a.sums[j], big.NewInt(int64(math.Round(x*unit))))
				}
			}
		}
	}
	out := ResultRows{}
	for k, a := range accs {
		r := []string{fmt.Sprint(a.users)}
		for _, sm := range a.sums {
			r = append(r, sm.String())
		}
		out[k] = r
	}
	return out, maxKept, nil
}

// KeptFrequencies evaluates hashExpr (a SQL expression over u, g0 and s, the seed) for one user
// with n keys 0..n-1 and seeds 1..seeds, keeps the kappa smallest per seed as the strategies do,
// and returns how often each key was kept and how often each kappa-subset (as a bitmask) was
// chosen. With a good hash each key is kept seeds*kappa/n times and each subset equally often.
func KeptFrequencies(ctx context.Context, db *sql.DB, hashExpr string, user any, n, kappa, seeds int) (perKey []int, perSubset map[uint64]int, err error) {
	q := fmt.Sprintf(`SELECT s, list(g0 ORDER BY h) FROM (
  SELECT s, g0, %s AS h FROM (SELECT ?::%s AS u) , range(%d) k(g0), range(1, %d) seeds(s)
) GROUP BY s`, hashExpr, sqlType(user), n, seeds+1)
	rows, err := db.QueryContext(ctx, q, user)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	perKey = make([]int, n)
	perSubset = map[uint64]int{}
	for rows.Next() {
		var s int64
		var order any
		if err := rows.Scan(&s, &order); err != nil {
			return nil, nil, err
		}
		list, ok := order.([]any)
		if !ok {
			return nil, nil, fmt.Errorf("bench: list is %T", order)
		}
		var mask uint64
		for i := 0; i < kappa && i < len(list); i++ {
			g := list[i].(int64)
			perKey[g]++
			mask |= 1 << uint(g)
		}
		perSubset[mask]++
	}
	return perKey, perSubset, rows.Err()
}

func sqlType(v any) string {
	switch v.(type) {
	case string:
		return "VARCHAR"
	default:
		return "BIGINT"
	}
}

// ChiSquare returns the chi-square statistic of counts against equal expected frequencies
// over cells cells (cells missing from counts count as zero), and its degrees of freedom.
func ChiSquare(counts []int, cells int) (stat float64, df int) {
	total := 0
	for _, c := range counts {
		total += c
	}
	e := float64(total) / float64(cells)
	for i := 0; i < cells; i++ {
		c := 0
		if i < len(counts) {
			c = counts[i]
		}
		d := float64(c) - e
		stat += d * d / e
	}
	return stat, cells - 1
}

// ChiSquareCritical approximates the 1-alpha quantile of chi-square with df degrees of freedom
// (Wilson-Hilferty), z the standard normal quantile (e.g. 3.09 for alpha = 0.001).
func ChiSquareCritical(df int, z float64) float64 {
	k := float64(df)
	a := 2 / (9 * k)
	c := 1 - a + z*math.Sqrt(a)
	return k * c * c * c
}
