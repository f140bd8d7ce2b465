package cli

import (
	"errors"
	"regexp"
	"strings"
	"unicode"
)

// metaArgs splits the arguments of a meta-command line as psql does: at white space outside
// double quotes, which stay in the argument (\d "my table" is one argument, a pattern).
func metaArgs(s string) []string {
	var out []string
	var cur strings.Builder
	inQuote, started := false, false
	for _, r := range s {
		switch {
		case r == '"':
			inQuote = !inQuote
			started = true
			cur.WriteRune(r)
		case unicode.IsSpace(r) && !inQuote:
			if started {
				out = append(out, cur.String())
				cur.Reset()
				started = false
			}
		default:
			started = true
			cur.WriteRune(r)
		}
	}
	if started {
		out = append(out, cur.String())
	}
	return out
}

// defaultSchemas are the schemas a relation named without one (as SHOW TABLES prints the
// relations of the session's current schema) is taken to be in when a \d pattern names a
// schema: DuckDB's and PostgreSQL's defaults. The command does not know the session's
// current schema; on PostgreSQL with another search_path, name the relation without it.
var defaultSchemas = []string{"main", "public"}

// namePattern is a psql name pattern (\d and \dt): [SCHEMA.]NAME, where * matches any
// characters and ? one, outside double quotes; a quoted part is taken literally, case and
// dots included ("" is a quote). As in psql unquoted letters fold to lower case; since
// dpsql's SQL finds relations whatever the case of an unquoted name, an unquoted part
// matches in any case, and a quoted one only in its own.
type namePattern struct {
	schema *regexp.Regexp // nil: the pattern has no schema
	name   *regexp.Regexp
}

func parsePattern(p string) (*namePattern, error) {
	var parts []string
	var re strings.Builder
	inQuote := false
	rs := []rune(p)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '"' && inQuote && i+1 < len(rs) && rs[i+1] == '"':
			re.WriteString(regexp.QuoteMeta(`"`))
			i++
		case r == '"':
			inQuote = !inQuote
		case inQuote:
			re.WriteString(regexp.QuoteMeta(string(r)))
		case r == '.':
			parts = append(parts, re.String())
			re.Reset()
		case r == '*':
			re.WriteString(".*")
		case r == '?':
			re.WriteString(".")
		default:
			re.WriteString("(?i:" + regexp.QuoteMeta(string(unicode.ToLower(r))) + ")")
		}
	}
	if inQuote {
		return nil, errors.New("unterminated quoted name")
	}
	parts = append(parts, re.String())
	compile := func(s string) *regexp.Regexp { return regexp.MustCompile("^(?s:" + s + ")$") }
	switch len(parts) {
	case 1:
		return &namePattern{name: compile(parts[0])}, nil
	case 2:
		return &namePattern{schema: compile(parts[0]), name: compile(parts[1])}, nil
	}
	return nil, errors.New("improper qualified name (too many dotted names)")
}

// match reports whether the pattern matches a relation named name as the catalog (and SHOW
// TABLES) names it: NAME for one in the current schema, SCHEMA.NAME for one elsewhere. A
// pattern without a schema is matched against that whole name, so * matches every
// relation; one with a schema against the schema and the name apart.
func (p *namePattern) match(name string) bool {
	if p.schema == nil {
		return p.name.MatchString(name)
	}
	dot := strings.LastIndex(name, ".")
	if dot < 0 {
		if !p.name.MatchString(name) {
			return false
		}
		for _, s := range defaultSchemas {
			if p.schema.MatchString(s) {
				return true
			}
		}
		return false
	}
	return p.schema.MatchString(name[:dot]) && p.name.MatchString(name[dot+1:])
}
