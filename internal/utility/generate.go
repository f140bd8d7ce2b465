// Package utility measures how useful dpsql's releases are: on a generated dataset whose exact
// answers are known, it runs the same anonymized query many times under each partition
// selection rule and noise kind, and reports the share of groups released and the relative
// error of counts, sums and medians. cmd/dpsql-utility is its command; docs/utility.md has
// the figures.
package utility

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/dpsql/dpsql"
)

// Dataset describes the generated data. Every value derives from Seed through DuckDB's string
// hash, so the same Dataset gives the same rows (on the same DuckDB version).
type Dataset struct {
	Users  int     // privacy units
	Groups int     // group keys 1..Groups; key g is drawn with probability proportional to g^-Zipf
	Zipf   float64 // the exponent: 1.5 gives a few groups with thousands of users and many with a handful
	// MaxGroups: each user draws a number of groups uniformly in 1..MaxGroups, each from the
	// Zipf law, duplicates removed; so a user is in at most MaxGroups groups.
	MaxGroups int
	Seed      int64
	// Lower and Upper are the public clamping bounds of the value (CLAMPED BETWEEN).
	Lower, Upper float64
}

// DefaultDataset is the benchmark's dataset: 20,000 users, 200 groups, Zipf exponent 1.5, 1-3
// groups per user, values in [0, 100].
func DefaultDataset() Dataset {
	return Dataset{Users: 20000, Groups: 200, Zipf: 1.5, MaxGroups: 3, Seed: 1, Lower: 0, Upper: 100}
}

// The relations Generate creates: Table is private (unit uid), KeysTable is public.
const (
	Table     = "spend"
	KeysTable = "categories"
)

// Truth is the exact answer for one group, computed by the owner with plain SQL.
type Truth struct {
	Key    int64
	Users  int64   // distinct users: what ANON_COUNT(DISTINCT uid) estimates
	Sum    float64 // sum over users of the user's value clamped to [Lower, Upper]: ANON_SUM
	Median float64 // median (interpolated, PERCENTILE_CONT 0.5) of the users' clamped values: ANON_MEDIAN
}

// Summary describes the generated data.
type Summary struct {
	Rows, Users, Groups int64 // rows of Table, users present, groups with at least one user
	MaxGroupsPerUser    int64
	MeanGroupsPerUser   float64
	ClampedShare        float64             // share of values above Upper
	Sizes               [NumBuckets - 1]int // groups per size bucket (BucketNames[1:])
	Largest             int64
}

func (s Summary) String() string {
	var sizes []string
	for i, n := range s.Sizes {
		sizes = append(sizes, fmt.Sprintf("%d with %s users", n, BucketNames[i+1]))
	}
	return fmt.Sprintf("%d rows, %d users, %d groups (%s; largest %d), "+
		"%.2f groups per user on average (at most %d), %.1f%% of values above the upper bound",
		s.Rows, s.Users, s.Groups, strings.Join(sizes, ", "), s.Largest,
		s.MeanGroupsPerUser, s.MaxGroupsPerUser, 100*s.ClampedShare)
}

// uniform is SQL for a pseudo-random double in [0, 1) from the seed and the given SQL
// expressions. DuckDB's multi-argument hash(a, b, ...) gives visibly correlated values for
// neighbouring arguments (correlation 0.6 between two salts), so the arguments are joined into
// one string, whose hash is well mixed.
func uniform(seed int64, args ...string) string {
	return fmt.Sprintf("(hash(concat_ws(':', %d, %s)) >> 11)::DOUBLE / 9007199254740992.0", seed, strings.Join(args, ", "))
}

// GenerateSQL is the owner script that builds the data: one row per (user, group) with the
// user's value in that group (for example a customer's yearly spend in a store category).
// Values are log-normal: a group median drawn in [10, 40] times exp(0.8 Z).
func (d Dataset) GenerateSQL() string {
	var b strings.Builder
	fmt.Fprintf(&b, `CREATE OR REPLACE TEMP TABLE utility_zipf AS
WITH w AS (SELECT range + 1 AS g, power(range + 1, -%g) AS w FROM range(%d)),
c AS (SELECT g, SUM(w) OVER (ORDER BY g ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) / SUM(w) OVER () AS hi FROM w)
SELECT g, COALESCE(LAG(hi) OVER (ORDER BY g), 0) AS lo, CASE WHEN g = %d THEN 2.0 ELSE hi END AS hi FROM c;
`, d.Zipf, d.Groups, d.Groups)
	fmt.Fprintf(&b, `CREATE OR REPLACE TABLE %s OPTIONS(anonymization_userid_column='uid') AS
WITH users AS (
  SELECT range AS uid, 1 + CAST(floor(%s * %d) AS BIGINT) AS m FROM range(%d)),
draws AS (
  SELECT uid, %s AS x FROM users, range(%d) r(j) WHERE j < m),
pairs AS (
  SELECT DISTINCT d.uid, z.g FROM draws d JOIN utility_zipf z ON d.x >= z.lo AND d.x < z.hi)
SELECT uid, g, round((10 + 30 * %s) * exp(0.8 * sqrt(-2 * ln(1 - %s)) * cos(2 * pi() * %s)), 2) AS v
FROM pairs;
`, Table,
		uniform(d.Seed, "range", "'m'"), d.MaxGroups, d.Users,
		uniform(d.Seed, "uid", "j", "'g'"), d.MaxGroups,
		uniform(d.Seed, "g", "'median'"), uniform(d.Seed, "uid", "g", "'z1'"), uniform(d.Seed, "uid", "g", "'z2'"))
	fmt.Fprintf(&b, "DROP TABLE utility_zipf;\n")
	fmt.Fprintf(&b, "CREATE OR REPLACE TABLE %s OPTIONS(public=true) AS SELECT range + 1 AS g FROM range(%d);\n", KeysTable, d.Groups)
	return b.String()
}

// TruthSQL computes the exact answers, with the engine's semantics: each user's values in a
// group are summed, then clamped (here one row per user and group, so the sum is the value).
func (d Dataset) TruthSQL() string {
	clamped := fmt.Sprintf("LEAST(GREATEST(v, %g), %g)", d.Lower, d.Upper)
	return fmt.Sprintf(`SELECT g, COUNT(DISTINCT uid) AS users, SUM(s) AS total, quantile_cont(s, 0.5) AS med
FROM (SELECT g, uid, %s AS s FROM (SELECT g, uid, SUM(v) AS v FROM %s GROUP BY g, uid))
GROUP BY g ORDER BY g`, clamped, Table)
}

func (d Dataset) validate() error {
	switch {
	case d.Users < 1 || d.Groups < 1 || d.MaxGroups < 1:
		return fmt.Errorf("users, groups and groups per user must be at least 1")
	case !(d.Zipf >= 0) || math.IsInf(d.Zipf, 0):
		return fmt.Errorf("the Zipf exponent must be a finite number >= 0")
	case !(d.Lower < d.Upper):
		return fmt.Errorf("the bounds must satisfy lower < upper")
	}
	return nil
}

// Generate builds the dataset in db (an owner session) and returns the exact answers, one per
// group present in the data, ordered by key.
func Generate(ctx context.Context, db *dpsql.DB, d Dataset) ([]Truth, Summary, error) {
	var sum Summary
	if err := d.validate(); err != nil {
		return nil, sum, err
	}
	if _, err := db.Exec(ctx, d.GenerateSQL()); err != nil {
		return nil, sum, fmt.Errorf("generating the data: %w", err)
	}
	res, err := db.Exec(ctx, d.TruthSQL())
	if err != nil {
		return nil, sum, fmt.Errorf("computing the truth: %w", err)
	}
	var truth []Truth
	for _, r := range res[0].Rows {
		t := Truth{Key: toInt(r[0]), Users: toInt(r[1]), Sum: toFloat(r[2]), Median: toFloat(r[3])}
		truth = append(truth, t)
		sum.Sizes[bucket(t.Users)-1]++
		sum.Largest = max(sum.Largest, t.Users)
	}
	sort.Slice(truth, func(i, j int) bool { return truth[i].Key < truth[j].Key })
	res, err = db.Exec(ctx, fmt.Sprintf(`SELECT COUNT(*), COUNT(DISTINCT uid), COUNT(DISTINCT g), AVG(CAST(v > %g AS INTEGER)),
  (SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM %s GROUP BY uid)) FROM %s`, d.Upper, Table, Table))
	if err != nil {
		return nil, sum, fmt.Errorf("describing the data: %w", err)
	}
	r := res[0].Rows[0]
	sum.Rows, sum.Users, sum.Groups = toInt(r[0]), toInt(r[1]), toInt(r[2])
	sum.ClampedShare, sum.MaxGroupsPerUser = toFloat(r[3]), toInt(r[4])
	if sum.Users > 0 {
		sum.MeanGroupsPerUser = float64(sum.Rows) / float64(sum.Users)
	}
	return truth, sum, nil
}

// NumBuckets counts the columns of the report: all groups, then groups by exact size.
const NumBuckets = 5

// BucketNames names the buckets of group size (exact users), as reported.
var BucketNames = [NumBuckets]string{"all", "1-9", "10-99", "100-999", "1000+"}

// bucket returns 1, 2, 3 or 4 for groups of 1-9, 10-99, 100-999 and 1000+ users.
func bucket(users int64) int {
	switch {
	case users < 10:
		return 1
	case users < 100:
		return 2
	case users < 1000:
		return 3
	}
	return 4
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case float32:
		return float64(x)
	case int64:
		return float64(x)
	case int32:
		return float64(x)
	case int:
		return float64(x)
	case uint64:
		return float64(x)
	case interface{ Float64() (float64, error) }:
		f, _ := x.Float64()
		return f
	case fmt.Stringer:
		var f float64
		fmt.Sscan(x.String(), &f)
		return f
	}
	return math.NaN()
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int32:
		return int64(x)
	case int:
		return int64(x)
	case uint64:
		return int64(x)
	}
	return int64(math.Round(toFloat(v)))
}
