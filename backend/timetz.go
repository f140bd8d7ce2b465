package backend

import (
	"fmt"
	"strings"
	"time"
)

// IsTimeTZ reports whether typ names DuckDB's TIME WITH TIME ZONE (TIMETZ), whose values come
// back as a time.Time on 0001-01-01 in their own UTC offset.
func IsTimeTZ(typ string) bool {
	t := strings.ToUpper(strings.TrimSpace(typ))
	return t == "TIMETZ" || t == "TIME WITH TIME ZONE"
}

// TimeTZText is a TIMETZ value as DuckDB and PostgreSQL print it: the time of day and its
// offset, 10:00:00+02 or 10:00:00+05:30. Two values that differ only in their offsets are
// different values (grouped apart), so the offset is always printed.
func TimeTZText(t time.Time) string {
	_, off := t.Zone()
	sign := "+"
	if off < 0 {
		sign, off = "-", -off
	}
	clock := t.Format("15:04:05.999999")
	if t.YearDay() == 2 && clock == "00:00:00" {
		clock = "24:00:00" // the driver gives 24:00:00 as the next day's midnight
	}
	s := clock + fmt.Sprintf("%s%02d", sign, off/3600)
	if m, sec := off%3600/60, off%60; m != 0 || sec != 0 {
		s += fmt.Sprintf(":%02d", m)
		if sec != 0 {
			s += fmt.Sprintf(":%02d", sec)
		}
	}
	return s
}
