package cli

import (
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/limits"
	"github.com/dpsql/dpsql/internal/parser"
)

// UsageError is a mistake on the command line (an unknown option, a missing or bad value).
// The command exits with status 2 for it, like other Unix tools.
type UsageError struct {
	Msg string
}

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) *UsageError {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// sourceKind says where a -c or -f input comes from.
type sourceKind int

const (
	fromCommand sourceKind = iota // -c: the text is the argument
	fromFile                      // -f: the argument is a path, "-" is standard input
)

// source is one -c or -f argument; they run in the order given, like psql.
type source struct {
	kind sourceKind
	arg  string
}

// flags is the parsed command line.
type flags struct {
	database    string
	sources     []source
	init        []string
	owner       bool
	format      Format
	confidence  float64
	timeout     time.Duration // 0: the default; negative: no limit (--timeout 0)
	memoryLimit string
	quiet       bool
	// onErrorStop is -v ON_ERROR_STOP=on; fullPrecision is --full-precision.
	onErrorStop   bool
	fullPrecision bool
	params        []any // --parameter values, as sql.NamedArg
	help          bool
	version       bool
}

// option describes one flag: its long name, its one-letter short name (0 for none) and
// whether it takes a value.
type option struct {
	long     string
	short    byte
	hasValue bool
	set      func(f *flags, value string) error
}

// options is a function rather than a package variable so there is no global state.
func options() []option {
	return []option{
		{long: "command", short: 'c', hasValue: true, set: func(f *flags, v string) error {
			f.sources = append(f.sources, source{fromCommand, v})
			return nil
		}},
		{long: "file", short: 'f', hasValue: true, set: func(f *flags, v string) error {
			f.sources = append(f.sources, source{fromFile, v})
			return nil
		}},
		{long: "init", hasValue: true, set: func(f *flags, v string) error {
			f.init = append(f.init, v)
			return nil
		}},
		{long: "owner", set: func(f *flags, _ string) error { f.owner = true; return nil }},
		{long: "format", hasValue: true, set: func(f *flags, v string) error {
			format, err := parseFormat(v)
			if err != nil {
				return usagef("--format: %v", err)
			}
			f.format = format
			return nil
		}},
		{long: "confidence", hasValue: true, set: func(f *flags, v string) error {
			level, err := strconv.ParseFloat(v, 64)
			if err != nil || !(level > 0 && level < 1) {
				return usagef("--confidence %q: want a level strictly between 0 and 1, like 0.95", v)
			}
			f.confidence = level
			return nil
		}},
		{long: "timeout", hasValue: true, set: func(f *flags, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return usagef("--timeout %q: want a duration like 30s, 2m or 1h30m (0 for no limit)", v)
			}
			if d == 0 {
				d = -1 // dpsql.Config: negative is no limit, 0 the default
			}
			f.timeout = d
			return nil
		}},
		{long: "memory-limit", hasValue: true, set: func(f *flags, v string) error {
			if _, err := limits.ParseSize(v); err != nil {
				return usagef("--memory-limit: %v", err)
			}
			f.memoryLimit = v
			return nil
		}},
		{long: "parameter", short: 'p', hasValue: true, set: func(f *flags, v string) error {
			p, err := parseParameter(v)
			if err != nil {
				return usagef("--parameter %q: %v", v, err)
			}
			for _, q := range f.params {
				if strings.EqualFold(q.(sql.NamedArg).Name, p.Name) {
					return usagef("--parameter %q: @%s is given twice", v, p.Name)
				}
			}
			f.params = append(f.params, p)
			return nil
		}},
		{long: "set", short: 'v', hasValue: true, set: setFlag},
		{long: "variable", hasValue: true, set: setFlag},
		{long: "full-precision", set: func(f *flags, _ string) error { f.fullPrecision = true; return nil }},
		{long: "quiet", short: 'q', set: func(f *flags, _ string) error { f.quiet = true; return nil }},
		{long: "help", short: 'h', set: func(f *flags, _ string) error { f.help = true; return nil }},
		{long: "version", set: func(f *flags, _ string) error { f.version = true; return nil }},
	}
}

// setFlag is -v NAME=VALUE (also --set and --variable, as psql): the variables \set sets.
func setFlag(f *flags, v string) error {
	name, value, _ := strings.Cut(v, "=")
	on, err := setVariable(name, value)
	if err != nil {
		return usagef("-v %s: %v", v, err)
	}
	f.onErrorStop = on
	return nil
}

// setVariable checks a psql variable assignment and returns its value. dpsql knows one
// variable, ON_ERROR_STOP (psql's boolean: on, off, true, false, yes, no, 1, 0, and the
// empty value for on); others are refused rather than ignored, since dpsql does not
// substitute :variables into statements.
func setVariable(name, value string) (bool, error) {
	if name != "ON_ERROR_STOP" {
		return false, fmt.Errorf("unknown variable %q: dpsql knows ON_ERROR_STOP only (query parameters are -p NAME:TYPE:VALUE)", name)
	}
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "", "on", "true", "yes", "1":
		return true, nil
	case "off", "false", "no", "0":
		return false, nil
	}
	return false, fmt.Errorf("unrecognized value %q for ON_ERROR_STOP: want on or off", value)
}

// parseParameter reads --parameter's NAME:TYPE:VALUE (BigQuery's bq query --parameter): the
// type may be empty (NAME::VALUE is a STRING), the value may contain colons.
func parseParameter(v string) (sql.NamedArg, error) {
	name, rest, ok := strings.Cut(v, ":")
	typ, value, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 {
		return sql.NamedArg{}, errors.New("want NAME:TYPE:VALUE, like lower:INT64:0 (NAME::VALUE for a string)")
	}
	name = strings.TrimPrefix(name, "@")
	if name == "" || !ast.IsBareIdent(name) {
		return sql.NamedArg{}, fmt.Errorf("%q is not a parameter name (letters, digits and _, not starting with a digit)", name)
	}
	p, err := parser.ParseParam(typ, value)
	if err != nil {
		return sql.NamedArg{}, err
	}
	return sql.Named(name, p), nil
}

// parseFlags reads GNU-style arguments: --name value, --name=value, -x value, -xvalue,
// grouped short switches (-qh), options after the DATABASE argument, and "--" to end the
// options.
func parseFlags(args []string) (*flags, error) {
	f := &flags{format: FormatTable}
	opts := options()
	byLong := make(map[string]*option, len(opts))
	byShort := make(map[byte]*option, len(opts))
	for i := range opts {
		byLong[opts[i].long] = &opts[i]
		if opts[i].short != 0 {
			byShort[opts[i].short] = &opts[i]
		}
	}
	var positional []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "--":
			positional = append(positional, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(arg, "--"):
			name, value, hasEq := strings.Cut(arg[2:], "=")
			o := byLong[name]
			if o == nil {
				return nil, usagef("unknown option --%s", name)
			}
			switch {
			case !o.hasValue && hasEq:
				return nil, usagef("option --%s does not take a value", name)
			case o.hasValue && !hasEq:
				if i+1 >= len(args) {
					return nil, usagef("option --%s needs a value", name)
				}
				i++
				value = args[i]
			}
			if err := o.set(f, value); err != nil {
				return nil, err
			}
		case len(arg) > 1 && arg[0] == '-':
			// One or more short options: switches may be grouped, and the first option that
			// takes a value consumes the rest of the argument or the next argument.
			for j := 1; j < len(arg); j++ {
				o := byShort[arg[j]]
				if o == nil {
					return nil, usagef("unknown option -%c", arg[j])
				}
				if !o.hasValue {
					if err := o.set(f, ""); err != nil {
						return nil, err
					}
					continue
				}
				value := arg[j+1:]
				if value == "" {
					if i+1 >= len(args) {
						return nil, usagef("option -%c needs a value", arg[j])
					}
					i++
					value = args[i]
				}
				if err := o.set(f, value); err != nil {
					return nil, err
				}
				break
			}
		default:
			positional = append(positional, arg)
		}
	}
	switch len(positional) {
	case 0:
	case 1:
		f.database = positional[0]
	default:
		return nil, usagef("too many arguments: %q (give at most one DATABASE)", positional[1:])
	}
	return f, nil
}

// usage is the --help text.
const usage = `dpsql: a differentially private SQL shell

Usage:
  dpsql [OPTIONS] [DATABASE]
  dpsql serve DATABASE [OPTIONS]   serve DATABASE to many analysts over the PostgreSQL
                                   protocol (psql, JDBC, ...): dpsql serve --help

DATABASE is a DuckDB file (created if missing), a postgres:// URL, or absent for an
in-memory DuckDB database.

Options:
  -c, --command SQL       run SQL; repeatable, runs in order with -f
  -f, --file FILE         run the statements in FILE; repeatable, "-" reads standard input
      --owner             open as the data owner (raw SQL, privacy policies, SET BUDGET)
      --init FILE         run FILE as the owner first, then continue as an analyst;
                          repeatable (with --owner, stay the owner)
      --format FORMAT     table (default; also aligned), unaligned, csv, or json (one
                          array of rows per line; a repeated column name gets a suffix
                          in JSON keys: s, s_2)
      --confidence LEVEL  add confidence interval bounds to noisy columns, e.g. 0.95
      --timeout DURATION  cancel any statement that runs longer, e.g. 30s; 0 for no
                          limit (default: 5m for analysts, none for the owner); an
                          anonymized query cancelled after it started reading data is
                          charged; the owner's SET LIMITS statement_timeout applies
                          to analysts when stricter
      --memory-limit SIZE DuckDB's memory limit, e.g. 8GB (default: 4GB for analysts;
                          the owner's SET LIMITS memory_limit applies when stricter)
  -p, --parameter NAME:TYPE:VALUE
                          the value of the query parameter @NAME in every statement
                          (after --init); repeatable. TYPE is INT64, FLOAT64, NUMERIC,
                          BOOL, STRING, DATE or TIMESTAMP; NAME::VALUE is a STRING;
                          VALUE NULL is a NULL of the type. As bq query --parameter.
  -v, --set ON_ERROR_STOP=on
                          stop a script at its first failed statement and exit
                          with status 3 (as psql; also \set ON_ERROR_STOP on)
      --full-precision    print noisy values with every digit of their float64
                          (default: the digits their noise leaves meaningful)
  -q, --quiet             do not print notices (budget charged and left, ...) or the
                          prompt's welcome line
  -h, --help              show this help
      --version           print the version

Without -c or -f, dpsql prompts for statements on a terminal (type \? for help) and
runs standard input as a script otherwise. Scripts (-c, -f, standard input) may hold
backslash commands (\d, \dt, \x, \pset, ...). A failed statement prints its error
and the script goes on; the command then exits with status 1 (with ON_ERROR_STOP it
stops there and exits with status 3). A bad command line exits with status 2.
Scripts run a statement at a time as they are read; a statement may hold 64 MiB.

Examples (from the repository's root; SHOW TABLES, \dt and the queries read the
bundled example shop):
  dpsql --owner shop.duckdb -f examples/shop/setup.sql
  dpsql shop.duckdb -c "SHOW BUDGET;"
  dpsql shop.duckdb -c '\d purchases'
  dpsql shop.duckdb --format json -c "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1)
      item, ANON_COUNT(*) AS n FROM purchases GROUP BY item;"
  dpsql --init examples/shop/setup.sql -c "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1)
      ANON_AVG(quantity CLAMPED BETWEEN 0 AND 10) AS avg_q FROM purchases;"   # in-memory
  dpsql shop.duckdb -p lo:INT64:0 -p hi:INT64:100 -c "SELECT WITH ANONYMIZATION
      OPTIONS(epsilon=1, delta=1e-5, kappa=1) ANON_SUM(quantity CLAMPED BETWEEN @lo AND @hi) AS total FROM purchases;"
  echo '\dt' | dpsql -v ON_ERROR_STOP=1 shop.duckdb
  dpsql postgres://analyst@db.example.com/shop   # a PostgreSQL database (docs/postgres.md)
`
