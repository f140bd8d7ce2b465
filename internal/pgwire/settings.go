package pgwire

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A setting is a PostgreSQL session setting that pgwire answers itself (SET, RESET, SHOW,
// current_setting, ParameterStatus). Values are stored normalized.
type setting struct {
	name     string // as PostgreSQL spells it in SHOW and ParameterStatus
	key      string // lower case
	def      func(c *conn) string
	report   bool // sent as ParameterStatus at startup and when it changes
	readOnly bool
	check    func(string) (string, error) // nil: any value
}

func fixed(v string) func(*conn) string { return func(*conn) string { return v } }

// serverVersion is the PostgreSQL version dpsql presents: clients parse the number.
const serverVersion = "16.0"

var settingList = []*setting{
	{name: "server_version", def: func(c *conn) string { return serverVersion + " (dpsql " + c.s.version() + ")" }, report: true, readOnly: true},
	{name: "server_version_num", def: fixed("160000"), readOnly: true},
	{name: "server_encoding", def: fixed("UTF8"), report: true, readOnly: true},
	{name: "client_encoding", def: fixed("UTF8"), report: true, check: checkEncoding},
	{name: "DateStyle", def: fixed("ISO, MDY"), report: true, check: checkDateStyle},
	{name: "integer_datetimes", def: fixed("on"), report: true, readOnly: true},
	{name: "standard_conforming_strings", def: fixed("on"), report: true, check: only("on")},
	{name: "TimeZone", def: fixed("UTC"), report: true, check: checkTimeZone},
	{name: "IntervalStyle", def: fixed("postgres"), report: true, check: only("postgres")},
	{name: "application_name", def: fixed(""), report: true},
	{name: "is_superuser", def: fixed("off"), report: true, readOnly: true},
	{name: "session_authorization", def: func(c *conn) string { return c.user }, report: true, readOnly: true},
	{name: "default_transaction_read_only", def: fixed("off"), report: true},
	{name: "in_hot_standby", def: fixed("off"), report: true, readOnly: true},
	{name: "extra_float_digits", def: fixed("1"), check: checkInt(-15, 3)},
	{name: "search_path", def: fixed(`"$user", public`)},
	{name: "statement_timeout", def: fixed("0"), check: checkTimeout},
	{name: "lock_timeout", def: fixed("0")},
	{name: "idle_in_transaction_session_timeout", def: fixed("0")},
	{name: "bytea_output", def: fixed("hex"), check: only("hex")},
	{name: "client_min_messages", def: fixed("notice")},
	{name: "transaction_isolation", def: fixed("read committed")},
	{name: "default_transaction_isolation", def: fixed("read committed")},
	{name: "transaction_read_only", def: fixed("off")},
	{name: "max_identifier_length", def: fixed("63"), readOnly: true},
	{name: "lc_messages", def: fixed("C")},
	{name: "lc_monetary", def: fixed("C")},
	{name: "lc_numeric", def: fixed("C")},
	{name: "lc_time", def: fixed("C")},
	{name: "lc_collate", def: fixed("C.UTF-8"), readOnly: true},
	{name: "lc_ctype", def: fixed("C.UTF-8"), readOnly: true},
	{name: "geqo", def: fixed("on")},
	{name: "jit", def: fixed("off")},
	{name: "row_security", def: fixed("on")},
	{name: "synchronous_commit", def: fixed("on")},
	{name: "work_mem", def: fixed("4MB")},
	{name: "timezone_abbreviations", def: fixed("Default")},
	{name: "escape_string_warning", def: fixed("on")},
}

var settingsByKey = map[string]*setting{}

func init() {
	for _, s := range settingList {
		s.key = strings.ToLower(s.name)
		if s.check == nil {
			s.check = func(v string) (string, error) { return v, nil }
		}
		settingsByKey[s.key] = s
	}
}

func lookupSetting(name string) (*setting, bool) {
	s, ok := settingsByKey[strings.ToLower(name)]
	return s, ok
}

func (s *Server) version() string {
	if s.Version == "" {
		return "dev"
	}
	return s.Version
}

func defaultSettings(c *conn) map[string]string {
	m := make(map[string]string, len(settingList))
	for _, s := range settingList {
		m[s.key] = s.def(c)
	}
	return m
}

func only(v string) func(string) (string, error) {
	return func(x string) (string, error) {
		if strings.EqualFold(x, v) {
			return v, nil
		}
		return "", fmt.Errorf("dpsql supports only %s", v)
	}
}

// checkTimeZone accepts the names of UTC only: dpsql serves times in UTC (a TIMESTAMPTZ goes
// out as +00), so the TimeZone a client is told, by SHOW and ParameterStatus, must be UTC too;
// a client that trusted another zone would mislabel every time. SET TIME ZONE to another zone
// is refused; at startup (pgJDBC sends the JVM's zone) such a zone keeps UTC, which
// ParameterStatus then reports. Accepted: UTC's names (Etc/UTC, GMT, Z, Zulu, ...) and zero
// offsets with or without them (0, +00:00, 0.0, UTC+0, GMT-00:00).
func checkTimeZone(v string) (string, error) {
	z := strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(v)), "ETC/")
	switch z {
	case "UTC", "UCT", "GMT", "Z", "ZULU", "UNIVERSAL", "GREENWICH", "LOCAL":
		return "UTC", nil
	}
	for _, name := range []string{"UTC", "UCT", "GMT"} {
		if rest, ok := strings.CutPrefix(z, name); ok {
			z = rest
			break
		}
	}
	if zeroOffset.MatchString(z) {
		return "UTC", nil
	}
	if strings.TrimSpace(v) == "" {
		return "", fmt.Errorf("dpsql serves times in UTC only; SET TIME ZONE takes a zone name, such as 'UTC'")
	}
	return "", fmt.Errorf("dpsql serves times in UTC only, not in time zone %q; convert them in the client", v)
}

// zeroOffset matches a zero UTC offset as PostgreSQL reads one: 0, -0, +00, 00:00, +00:00:00,
// 0.0.
var zeroOffset = regexp.MustCompile(`^[+-]?0+(\.0+)?(:0+){0,2}$`)

func checkEncoding(v string) (string, error) {
	switch strings.ToUpper(strings.ReplaceAll(v, "-", "")) {
	case "UTF8", "UNICODE":
		return "UTF8", nil
	}
	return "", fmt.Errorf("dpsql supports only the client encoding UTF8, not %q", v)
}

func checkDateStyle(v string) (string, error) {
	style, order := "ISO", "MDY"
	for _, part := range strings.Split(v, ",") {
		switch p := strings.ToUpper(strings.TrimSpace(part)); p {
		case "ISO", "":
		case "MDY", "DMY", "YMD":
			order = p
		case "US", "NONEURO", "NONEUROPEAN":
			order = "MDY"
		case "EURO", "EUROPEAN":
			order = "DMY"
		default:
			return "", fmt.Errorf("dpsql supports only DateStyle ISO, not %q", v)
		}
	}
	return style + ", " + order, nil
}

func checkInt(lo, hi int) func(string) (string, error) {
	return func(v string) (string, error) {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < lo || n > hi {
			return "", fmt.Errorf("invalid value %q: an integer from %d to %d is expected", v, lo, hi)
		}
		return strconv.Itoa(n), nil
	}
}

// checkTimeout reads a statement_timeout: milliseconds or a number with a unit.
func checkTimeout(v string) (string, error) {
	d, err := parseTimeout(v)
	if err != nil {
		return "", err
	}
	if d == 0 {
		return "0", nil
	}
	return strings.TrimSpace(v), nil
}

func parseTimeout(v string) (time.Duration, error) {
	v = strings.TrimSpace(strings.ToLower(v))
	i := 0
	for i < len(v) && (v[i] >= '0' && v[i] <= '9' || v[i] == '.') {
		i++
	}
	n, err := strconv.ParseFloat(v[:i], 64)
	if err != nil || n < 0 || n > 1e12 {
		return 0, fmt.Errorf("invalid value for statement_timeout: %q", v)
	}
	unit := map[string]time.Duration{"": time.Millisecond, "ms": time.Millisecond, "s": time.Second,
		"min": time.Minute, "h": time.Hour, "d": 24 * time.Hour, "us": time.Microsecond}
	u, ok := unit[strings.TrimSpace(v[i:])]
	if !ok {
		return 0, fmt.Errorf("invalid value for statement_timeout: %q (units: us, ms, s, min, h, d)", v)
	}
	return time.Duration(n * float64(u)), nil
}

// statementTimeout is the session's statement_timeout (0: none besides the engine's own).
func (c *conn) statementTimeout() time.Duration {
	d, _ := parseTimeout(c.settings["statement_timeout"])
	return d
}
