// Package bench measures the SQL that dpsql sends to DuckDB for contribution bounding against
// the non-private floor on the same data, in the same process.
//
// Data is generated inside DuckDB (range() and hash()), never streamed from Go, so a table of
// 10^8 rows takes seconds. Queries are compared as ratios to the floor measured in the same run:
// the machines are small and noisy, absolute times are not comparable between runs.
package bench

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// ShapeKind names a data layout.
type ShapeKind string

const (
	// Hard: every row of a user lands in a uniformly random key, so with 10 rows per user and
	// 1000 keys almost every user touches ~10 keys, well over kappa, and stage 1 (GROUP BY key,
	// uid) barely reduces the data. This is the worst case for contribution bounding.
	Hard ShapeKind = "hard"
	// Easy: each user touches 1 to MaxKeysPerUser (default 3) keys, chosen per user, so with the
	// default most users are at or under a kappa of 3 or 4, and stage 1 reduces the rows
	// several-fold.
	Easy ShapeKind = "easy"
)

// Shape describes a synthetic table t(uid, k, v).
type Shape struct {
	Kind  ShapeKind
	Rows  int64 // total rows
	Users int64 // distinct users; rows per user is Rows/Users (rows are interleaved, not sorted by user)
	Keys  int64 // distinct partition keys
	// Values: "uniform" (v uniform in [0,100)), "exp" (exponential with mean 10, a heavy right
	// tail so clamping matters) or "quarters" (multiples of 1/4, for exact comparisons).
	Values string
	// UIDType: "bigint" (dense 0..Users-1), "sparse" (the default: BIGINT spread over the whole
	// 64-bit range, as real ids are; dense ids let DuckDB use perfect hashing in joins and
	// aggregates, which flatters some strategies) or "varchar" ('u' || number), to measure
	// hashing and grouping on strings.
	UIDType string
	// NullKeyFrac: fraction of rows whose key is NULL (NULL is a group of its own).
	NullKeyFrac float64
	// MaxKeysPerUser bounds the distinct keys of a user in the easy shape (default 3): user u
	// gets 1 + hash(u) % MaxKeysPerUser keys.
	MaxKeysPerUser int64
	// Seed makes the data reproducible.
	Seed uint64
}

// DefaultShape returns the shape used throughout docs/benchmarks.md: 1000 keys, 10 rows per
// user.
func DefaultShape(kind ShapeKind, rows int64) Shape {
	users := rows / 10
	if users < 1 {
		users = 1
	}
	return Shape{Kind: kind, Rows: rows, Users: users, Keys: 1000, Values: "uniform", UIDType: "sparse", Seed: 42}
}

func (s Shape) String() string {
	extra := ""
	if s.Kind == Easy {
		extra = fmt.Sprintf(" maxkeys/user=%d", max(s.MaxKeysPerUser, 3*boolInt(s.MaxKeysPerUser <= 0)))
	}
	return fmt.Sprintf("%s rows=%d users=%d keys=%d values=%s uid=%s nullkeys=%g%s",
		s.Kind, s.Rows, s.Users, s.Keys, s.Values, s.uidType(), s.NullKeyFrac, extra)
}

func (s Shape) uidType() string {
	if s.UIDType == "" {
		return "sparse"
	}
	return s.UIDType
}

// GenerateSQL returns the CREATE TABLE statement that builds the table.
//
// Row i belongs to user i % Users, so one user's rows are spread over the whole table, as in
// real event logs, and stage 1 gets no help from locality. Its j-th row (j = i / Users) goes to
// key hash(i) % Keys for the hard shape, and to one of the user's c = 1 + hash(uid) % 3 keys
// for the easy shape.
func (s Shape) GenerateSQL(table string) (string, error) {
	if s.Rows <= 0 || s.Users <= 0 || s.Keys <= 0 {
		return "", fmt.Errorf("bench: shape needs positive rows, users and keys: %v", s)
	}
	seed := s.Seed % (1 << 62)
	uidExpr := fmt.Sprintf("(i %% %d)", s.Users)
	var key string
	switch s.Kind {
	case Hard:
		key = fmt.Sprintf("hash(i, %d::UBIGINT) %% %d", seed, s.Keys)
	case Easy:
		// c in 1..MaxKeysPerUser keys per user; the row's slot j % c picks one of them.
		maxk := s.MaxKeysPerUser
		if maxk <= 0 {
			maxk = 3
		}
		key = fmt.Sprintf("hash(%[1]s, ((i // %[2]d) %% (1 + hash(%[1]s, %[3]d::UBIGINT) %% %[5]d)), %[3]d::UBIGINT) %% %[4]d",
			uidExpr, s.Users, seed, s.Keys, maxk)
	default:
		return "", fmt.Errorf("bench: unknown shape %q", s.Kind)
	}
	key = "CAST(" + key + " AS INTEGER)"
	if s.NullKeyFrac > 0 {
		cut := uint64(s.NullKeyFrac * float64(1<<32))
		key = fmt.Sprintf("CASE WHEN hash(i, %d::UBIGINT) %% 4294967296 < %d THEN NULL ELSE %s END", seed+2, cut, key)
	}
	// u in [0,1) from 53 bits of a hash.
	u := fmt.Sprintf("((hash(i, %d::UBIGINT) >> 11)::DOUBLE / 9007199254740992.0)", seed+1)
	var val string
	switch s.Values {
	case "", "uniform":
		val = "(" + u + " * 100.0)"
	case "exp":
		val = "(-10.0 * ln(1.0 - " + u + "))"
	case "quarters":
		// multiples of 1/4 in [0,100): sums are exact in any order, so strategies can be
		// compared bit for bit.
		val = "(floor(" + u + " * 400.0) / 4.0)"
	default:
		return "", fmt.Errorf("bench: unknown value distribution %q", s.Values)
	}
	var uid string
	switch strings.ToLower(s.uidType()) {
	case "bigint":
		uid = "CAST(" + uidExpr + " AS BIGINT)"
	case "sparse":
		uid = fmt.Sprintf("CAST(hash(%s, %d::UBIGINT) >> 1 AS BIGINT)", uidExpr, seed+3)
	case "varchar":
		uid = "'u' || CAST(" + uidExpr + " AS VARCHAR)"
	default:
		return "", fmt.Errorf("bench: unknown uid type %q", s.UIDType)
	}
	return fmt.Sprintf("CREATE OR REPLACE TABLE %s AS SELECT %s AS uid, %s AS k, %s AS v FROM range(%d) r(i)",
		table, uid, key, val, s.Rows), nil
}

// Generate creates (or replaces) the table in db.
func Generate(ctx context.Context, db *sql.DB, table string, s Shape) error {
	q, err := s.GenerateSQL(table)
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("bench: generate %s: %w", table, err)
	}
	return nil
}

// ShapeStats describes generated data as DuckDB sees it.
type ShapeStats struct {
	Rows, Users, Pairs int64   // rows, distinct users, distinct (uid, key) pairs
	MeanKeysPerUser    float64 // Pairs / Users
	UsersOverKappa     int64   // users with more than kappa distinct keys
}

// Stats measures the table: how many (uid, key) pairs stage 1 produces and how many users
// contribution bounding has to cut.
func Stats(ctx context.Context, db *sql.DB, table string, kappa int) (ShapeStats, error) {
	var st ShapeStats
	q := fmt.Sprintf(`SELECT (SELECT count(*) FROM %[1]s), count(*), sum(n), sum(n)/count(*), count(*) FILTER (WHERE n > %[2]d)
FROM (SELECT uid, count(*) AS n FROM (SELECT DISTINCT uid, k FROM %[1]s) GROUP BY uid)`, table, kappa)
	var pairs sql.NullFloat64
	var mean sql.NullFloat64
	if err := db.QueryRowContext(ctx, q).Scan(&st.Rows, &st.Users, &pairs, &mean, &st.UsersOverKappa); err != nil {
		return st, fmt.Errorf("bench: stats: %w", err)
	}
	st.Pairs = int64(pairs.Float64)
	st.MeanKeysPerUser = mean.Float64
	return st, nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
