package limits

import (
	"strings"
	"testing"
	"time"
)

func TestParseTimeout(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"60s": time.Minute, " 5m ": 5 * time.Minute, "1h30m": 90 * time.Minute, "1500ms": 1500 * time.Millisecond,
		"1ms": time.Millisecond, "24h": 24 * time.Hour, "1500us": 2 * time.Millisecond,
	} {
		got, err := ParseTimeout(in)
		if err != nil || got != want {
			t.Errorf("ParseTimeout(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "60", "0s", "-1s", "25h", "500us", "1 minute", "NaN"} {
		if got, err := ParseTimeout(in); err == nil {
			t.Errorf("ParseTimeout(%q) = %v, want an error", in, got)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"2GB": 2e9, "512MiB": 512 << 20, "1.5GB": 1.5e9, " 16 MiB ": 16 << 20, "4gb": 4e9,
		"1TiB": 1 << 40, "20000000 bytes": 2e7, "1024PiB": 0,
	} {
		got, err := ParseSize(in)
		if want == 0 {
			if err == nil {
				t.Errorf("ParseSize(%q) = %d, want an error", in, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
		if back, err := ParseSize(FormatSize(got)); err != nil || back != got {
			t.Errorf("FormatSize(%d) = %q reads back as %d, %v", got, FormatSize(got), back, err)
		}
	}
	for _, in := range []string{"", "2", "GB", "-2GB", "2 GBs", "1MB", "2000TB", "80%", "1e9B", "2..5GB"} {
		got, err := ParseSize(in)
		if err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		} else if !strings.Contains(err.Error(), "2GB") && !strings.Contains(err.Error(), "outside") {
			t.Errorf("ParseSize(%q): %v does not say what a size looks like", in, err)
		}
	}
}

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{2e9: "2GB", 2 << 30: "2GiB", 1.5e9: "1500MB", 1500000001: "1500000001B", 1 << 40: "1TiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
	for d, want := range map[time.Duration]string{time.Minute: "1m", time.Hour: "1h", 90 * time.Second: "1m30s", 250 * time.Millisecond: "250ms", 2 * time.Second: "2s"} {
		if got := FormatTimeout(d); got != want {
			t.Errorf("FormatTimeout(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestStricter(t *testing.T) {
	for _, c := range [][3]int64{{0, 0, 0}, {0, 5, 5}, {5, 0, 5}, {3, 5, 3}, {5, 3, 3}, {-1, 5, 5}, {-1, 0, 0}} {
		if got := Stricter(c[0], c[1]); got != c[2] {
			t.Errorf("Stricter(%d, %d) = %d, want %d", c[0], c[1], got, c[2])
		}
	}
}
