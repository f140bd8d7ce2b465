// Package limits holds the resource limits of analyst sessions: the statement timeout and the
// memory limit that the data owner stores with the policy (SET LIMITS OPTIONS(...), kept in
// dpsql.limits by internal/store) and that the process's own settings (--timeout,
// --memory-limit) may only tighten. It parses and prints the values and picks the stricter
// of two limits; it has no dependency on the rest of dpsql, so that backends can use it.
package limits

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Limits are the limits of one analyst session. A zero field means no limit.
type Limits struct {
	// StatementTimeout bounds each statement; whole milliseconds.
	StatementTimeout time.Duration
	// MemoryLimit is the memory a DuckDB instance may use, in bytes.
	MemoryLimit int64
}

// Bounds of the values the owner may store.
const (
	MinStatementTimeout = time.Millisecond
	MaxStatementTimeout = 24 * time.Hour
	MinMemoryLimit      = 16 << 20 // DuckDB can hardly run a query in less
	MaxMemoryLimit      = 1 << 50  // 1 PiB
)

// Stricter is the stricter of two limits, where 0 (or less) means none.
func Stricter[T ~int64](a, b T) T {
	switch {
	case a <= 0:
		return max(b, 0)
	case b <= 0 || a < b:
		return a
	}
	return b
}

// ParseTimeout reads a statement timeout written as a Go duration ("60s", "5m", "1h30m",
// "1500ms") between MinStatementTimeout and MaxStatementTimeout. It is rounded up to whole
// milliseconds, the unit PostgreSQL's statement_timeout takes.
func ParseTimeout(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	if d < MinStatementTimeout || d > MaxStatementTimeout {
		return 0, fmt.Errorf("%q is outside [%v, %v]", s, MinStatementTimeout, MaxStatementTimeout)
	}
	if r := d % time.Millisecond; r != 0 {
		d += time.Millisecond - r
	}
	return d, nil
}

// units are the size units DuckDB's memory_limit accepts, by lower-case name: decimal (KB =
// 1000 bytes) and binary (KiB = 1024 bytes), as DuckDB reads them.
var units = map[string]float64{
	"b": 1, "byte": 1, "bytes": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// ParseSize reads a memory size with a unit ("2GB", "512 MiB", "1.5GB") as DuckDB reads it, in
// bytes, between MinMemoryLimit and MaxMemoryLimit. A number without a unit is refused: DuckDB
// and PostgreSQL read it differently.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.') })
	if i <= 0 {
		return 0, fmt.Errorf("%q is not a size with a unit, like '2GB' or '512MiB'", s)
	}
	n, err := strconv.ParseFloat(t[:i], 64)
	unit, ok := units[strings.ToLower(strings.TrimSpace(t[i:]))]
	if err != nil || !ok {
		return 0, fmt.Errorf("%q is not a size with a unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), like '2GB' or '512MiB'", s)
	}
	b := n * unit
	if !(b >= MinMemoryLimit && b <= MaxMemoryLimit) {
		return 0, fmt.Errorf("%q is outside [%s, %s]", s, FormatSize(MinMemoryLimit), FormatSize(MaxMemoryLimit))
	}
	return int64(math.Round(b)), nil
}

// FormatSize prints a size in bytes with the largest unit that divides it exactly ("2GB",
// "512MiB"), else in bytes ("1500000001B"). ParseSize reads it back exactly, and so does DuckDB.
func FormatSize(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"TB", 1e12}, {"GiB", 1 << 30}, {"GB", 1e9}, {"MiB", 1 << 20}, {"MB", 1e6}, {"KiB", 1 << 10}, {"KB", 1e3}} {
		if n > 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// FormatTimeout prints a timeout as ParseTimeout reads it ("1m30s", "250ms").
func FormatTimeout(d time.Duration) string {
	s := d.String()
	// time.Duration prints 1m0s and 1h0m0s: drop the zero tails.
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
