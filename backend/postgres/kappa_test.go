package postgres_test

// The SQL shapes that docs/design/postgres-backend.md compares for per-user contribution bounding (keep at
// most kappa partitions per user, chosen at random), checked for exactness on small data by
// TestKappaSQL and timed on 10^6 rows by BenchmarkKappa:
//
//	go test ./backend/postgres -run '^$' -bench Kappa -benchtime 3x -timeout 30m

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/postgres"
)

const kappaSeed = 7340987613 // any bigint; the engine would draw one per query with crypto/rand

// perUser is stage 2: one row per (partition, user).
const perUser = `SELECT key, uid, SUM(v) AS s FROM %[1]s GROUP BY key, uid`

// floorSQL aggregates per user then per key with no bounding: the cost floor.
const floorSQL = `SELECT key, SUM(s), COUNT(*) FROM (` + perUser + `) x GROUP BY key`

// windowSQL keeps the kappa partitions with the smallest sort key per user, clamps and
// aggregates. %[2]s is the ORDER BY expression, %[3]d is kappa.
const windowSQL = `SELECT key, SUM(LEAST(GREATEST(s, 0), 50)), COUNT(*) FROM (
	SELECT key, uid, s, row_number() OVER (PARTITION BY uid ORDER BY %[2]s) AS rn
	FROM (` + perUser + `) x) y
WHERE rn <= %[3]d GROUP BY key`

// distinctOnSQL keeps one partition per user (kappa = 1 only).
const distinctOnSQL = `SELECT key, SUM(LEAST(GREATEST(s, 0), 50)), COUNT(*) FROM (
	SELECT DISTINCT ON (uid) key, uid, s FROM (` + perUser + `) x ORDER BY uid, %[2]s) y
GROUP BY key`

type kappaVariant struct {
	name  string
	sql   string // format with table, order expression, kappa
	order string
	k1    bool // valid for kappa = 1 only
}

func kappaVariants() []kappaVariant {
	seed := fmt.Sprint(kappaSeed)
	return []kappaVariant{
		{name: "floor", sql: floorSQL},
		{name: "window-chained-hash", sql: windowSQL,
			order: "hashint4extended(key, hashint8extended(uid, " + seed + "))"},
		{name: "window-text-hash", sql: windowSQL,
			order: "hashtextextended(uid::text || '|' || key::text, " + seed + ")"},
		{name: "window-rowtext-hash", sql: windowSQL,
			order: "hashtextextended(CAST(ROW(uid, key) AS TEXT), " + seed + ")"},
		{name: "window-record-hash", sql: windowSQL,
			order: "hash_record_extended(ROW(uid, key), " + seed + ")"},
		{name: "window-md5", sql: windowSQL,
			order: "md5('" + seed + "|' || uid::text || '|' || key::text) COLLATE \"C\""},
		{name: "window-random", sql: windowSQL, order: "random()"},
		{name: "distinct-on-chained-hash", sql: distinctOnSQL, k1: true,
			order: "hashint4extended(key, hashint8extended(uid, " + seed + "))"},
	}
}

func (v kappaVariant) query(table string, kappa int) string {
	return fmt.Sprintf(v.sql, table, v.order, kappa)
}

// makeKappaTable creates table name with rows (uid, key, v): users uniform in [0, users),
// keys uniform in [0, keys), v uniform in [0, 100]; the same data for the same arguments.
func makeKappaTable(ctx context.Context, db *postgres.DB, name string, rows, users, keys int) error {
	// One connection (MaxConns 1), so that setseed applies to the CREATE.
	err := db.Exec(ctx, fmt.Sprintf(`SELECT setseed(0.25);
		CREATE TABLE %[1]s AS SELECT floor(random() * %[3]d)::bigint AS uid,
			floor(random() * %[4]d)::integer AS key, floor(random() * 101)::bigint AS v
		FROM generate_series(1, %[2]d)`, name, rows, users, keys))
	if err != nil {
		return err
	}
	return db.Exec(ctx, "ANALYZE "+name)
}

// TestKappaSQL checks every variant on small data: each user contributes exactly
// min(partitions, kappa) rows, and the floor counts every (user, partition).
func TestKappaSQL(t *testing.T) {
	db, _ := open(t, postgres.Options{Mode: backend.Owner, MaxConns: 1})
	ctx := context.Background()
	if err := makeKappaTable(ctx, db, "small", 20000, 500, 60); err != nil {
		t.Fatal(err)
	}
	for _, kappa := range []int{1, 3} {
		for _, v := range kappaVariants() {
			if v.k1 && kappa != 1 {
				continue
			}
			k := kappa
			if v.name == "floor" {
				k = math.MaxInt32
			}
			exp := mustQuery(t, db, fmt.Sprintf(`SELECT sum(least(n, %d))::bigint FROM
				(SELECT uid, count(DISTINCT key) AS n FROM small GROUP BY uid) u`, k)).Values[0][0].(int64)
			rows := mustQuery(t, db, v.query("small", kappa))
			var users int64
			for _, r := range rows.Values {
				users += r[2].(int64)
			}
			if users != exp {
				t.Errorf("kappa %d, %s: %d user rows, want %d", kappa, v.name, users, exp)
			}
		}
	}
}

// TestKappaSamplingIsPerUser checks the recommended sort key: for one user with 10
// partitions and kappa = 1, each partition is kept about 1/10 of the time over many seeds;
// and two users with the same partitions choose independently (same choice 1/10 of the
// time), which a hash of the key alone would not do (same choice always).
func TestKappaSamplingIsPerUser(t *testing.T) {
	db, _ := open(t, postgres.Options{Mode: backend.Owner})
	const seeds = 20000
	rows := mustQuery(t, db, fmt.Sprintf(`WITH pick AS (
		SELECT s,
			(array_agg(k ORDER BY hashint4extended(k, hashint8extended(1, s))))[1] AS k1,
			(array_agg(k ORDER BY hashint4extended(k, hashint8extended(2, s))))[1] AS k2
		FROM generate_series(1, %d) s, generate_series(0, 9) k
		GROUP BY s)
	SELECT k1, count(*) FROM pick GROUP BY k1
	UNION ALL
	SELECT -1, count(*) FILTER (WHERE k1 = k2) FROM pick
	ORDER BY 1`, seeds))
	var chi2 float64
	for _, r := range rows.Values {
		k, n := r[0].(int64), float64(r[1].(int64))
		exp := seeds / 10.0
		if k == -1 {
			if math.Abs(n-exp) > 5*math.Sqrt(exp*0.9) {
				t.Errorf("two users chose the same partition %v times in %d, want about %v", n, seeds, exp)
			}
			continue
		}
		chi2 += (n - exp) * (n - exp) / exp
	}
	// 9 degrees of freedom: P(chi2 > 33.7) = 1e-4.
	if chi2 > 33.7 {
		t.Errorf("chi-square %.1f over 10 partitions: the choice is not uniform (%v)", chi2, rows.Values)
	}
}

// BenchmarkKappa times each variant on 10^6 rows. Besides wall time it reports the server
// backend's CPU time per query (cpu-ms/op, from /proc, with parallel workers off so that the
// backend does all the work), which other load on the machine disturbs much less, and that
// time as a multiple of the floor query's (x-floor).
func BenchmarkKappa(b *testing.B) {
	cluster := pg.Cluster(b)
	ctx := context.Background()
	url := cluster.NewDatabase(b)
	db, err := postgres.Open(ctx, url, postgres.Options{Mode: backend.Owner, MaxConns: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := db.Exec(ctx, "SET max_parallel_workers_per_gather = 0"); err != nil {
		b.Fatal(err)
	}
	pid := mustQuery(b, db, "SELECT pg_backend_pid()").Values[0][0].(int64)
	shapes := []struct {
		name              string
		rows, users, keys int
	}{
		{"1e6rows-1e5users-1e3keys", 1_000_000, 100_000, 1000},
		{"1e6rows-1e3users-1e2keys", 1_000_000, 1000, 100},
	}
	for _, sh := range shapes {
		table := "t_" + strings.NewReplacer("-", "_").Replace(sh.name)
		if err := makeKappaTable(ctx, db, table, sh.rows, sh.users, sh.keys); err != nil {
			b.Fatal(err)
		}
		for _, workMem := range []string{"4MB", "64MB"} {
			if err := db.Exec(ctx, "SET work_mem = '"+workMem+"'"); err != nil {
				b.Fatal(err)
			}
			var floorCPU float64
			for _, kappa := range []int{1, 4} {
				for _, v := range kappaVariants() {
					if v.k1 && kappa != 1 || v.name == "floor" && kappa != 1 {
						continue
					}
					name := fmt.Sprintf("%s/work_mem=%s/kappa=%d/%s", sh.name, workMem, kappa, v.name)
					q := v.query(table, kappa)
					b.Run(name, func(b *testing.B) {
						var n int
						before := cpuTime(b, pid)
						for b.Loop() {
							if _, err := db.Query(ctx, q); err != nil {
								b.Fatal(err)
							}
							n++
						}
						cpu := (cpuTime(b, pid) - before).Seconds() * 1000 / float64(n)
						if v.name == "floor" {
							floorCPU = cpu
						}
						b.ReportMetric(cpu, "cpu-ms/op")
						if floorCPU > 0 {
							b.ReportMetric(cpu/floorCPU, "x-floor")
						}
					})
				}
			}
		}
	}
}

// cpuTime is the user plus system CPU time of process pid, from /proc/pid/stat (in clock
// ticks of 1/100 s, USER_HZ on Linux).
func cpuTime(b *testing.B, pid int64) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The command name (field 2) may contain spaces; the fields after it are plain.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		b.Fatalf("parse /proc/%d/stat: %v %v", pid, err1, err2)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
