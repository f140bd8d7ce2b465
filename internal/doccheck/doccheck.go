// Package doccheck reads the repository's Markdown documentation for the tests that keep it
// true: the fenced shell blocks whose dpsql commands a test runs (cmd/dpsql's
// TestDocCommands), and the links, anchors and cited sections a test resolves
// (TestDocLinks in this package). It knows Markdown only as far as those documents use it:
// fenced blocks opened by ``` at the start of a line, ATX headings, inline links.
package doccheck

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Block is one fenced code block of a Markdown document.
type Block struct {
	Lang      string    // the word after the opening fence: "sh", "sql", "text", ...
	Line      int       // the line of the opening fence, from 1
	Text      string    // the lines between the fences, each ending in "\n"
	Directive Directive // from a <!-- doctest: ... --> comment on the line before the fence
}

// Directive tells the test that runs a shell block what to expect of it, written as an HTML
// comment on the line right before the block's opening fence, invisible when rendered:
//
//	<!-- doctest: exit=1 contains="SQLSTATE 2P001" matches="spent\s*\|\s*1" -->
//	<!-- doctest: skip="needs a PostgreSQL server" -->
//
// Without one, every command of the block must exit with status 0.
type Directive struct {
	Exit     int      // the exit status every dpsql command of the block must have
	Contains []string // strings the block's output (stdout and stderr of all its commands) must hold
	Matches  []string // regular expressions the block's output must match
	Skip     string   // when set, the block is not run, for this reason
}

var (
	directiveRE = regexp.MustCompile(`^<!--\s*doctest:(.*)-->\s*$`)
	attrRE      = regexp.MustCompile(`^\s*(\w+)=(?:"((?:[^"\\]|\\.)*)"|([^"\s]\S*))`)
)

// parseDirective reads the attributes of a doctest comment; an unknown attribute, a bad exit
// status or a regular expression that does not compile is an error, so that a typo in a
// document cannot switch a check off.
func parseDirective(s string) (Directive, error) {
	var d Directive
	rest := s
	for strings.TrimSpace(rest) != "" {
		m := attrRE.FindStringSubmatch(rest)
		if m == nil {
			return d, fmt.Errorf("cannot read %q", strings.TrimSpace(rest))
		}
		rest = rest[len(m[0]):]
		val := m[3]
		if m[3] == "" {
			v, err := strconv.Unquote(`"` + m[2] + `"`)
			if err != nil {
				return d, fmt.Errorf("%s: %v", m[1], err)
			}
			val = v
		}
		switch m[1] {
		case "exit":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return d, fmt.Errorf("exit=%s is not an exit status", val)
			}
			d.Exit = n
		case "contains":
			d.Contains = append(d.Contains, val)
		case "matches":
			if _, err := regexp.Compile(val); err != nil {
				return d, fmt.Errorf("matches: %v", err)
			}
			d.Matches = append(d.Matches, val)
		case "skip":
			if val == "" {
				return d, fmt.Errorf("skip needs a reason")
			}
			d.Skip = val
		default:
			return d, fmt.Errorf("unknown attribute %q (exit, contains, matches, skip)", m[1])
		}
	}
	return d, nil
}

// Blocks returns the fenced code blocks of a Markdown document, in order, with their
// directives. A fence left open, or a doctest comment that cannot be read or is not followed
// by a fence, is an error.
func Blocks(md string) ([]Block, error) {
	lines := strings.Split(md, "\n")
	var blocks []Block
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := directiveRE.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
				return nil, fmt.Errorf("line %d: a doctest comment must be right before a fenced block", i+1)
			}
			continue
		}
		if !strings.HasPrefix(line, "```") {
			continue
		}
		b := Block{Lang: strings.TrimSpace(strings.TrimPrefix(line, "```")), Line: i + 1}
		if i > 0 {
			if m := directiveRE.FindStringSubmatch(strings.TrimSpace(lines[i-1])); m != nil {
				d, err := parseDirective(m[1])
				if err != nil {
					return nil, fmt.Errorf("line %d: doctest comment: %v", i, err)
				}
				b.Directive = d
			}
		}
		var text strings.Builder
		j := i + 1
		for ; j < len(lines) && !strings.HasPrefix(lines[j], "```"); j++ {
			text.WriteString(lines[j])
			text.WriteByte('\n')
		}
		if j == len(lines) {
			return nil, fmt.Errorf("line %d: fenced block is never closed", i+1)
		}
		b.Text = text.String()
		blocks = append(blocks, b)
		i = j
	}
	return blocks, nil
}

// Command is one shell command of a block, possibly over several lines (an open quote or a
// trailing backslash continues it).
type Command struct {
	Line int    // its first line in the document, from 1
	Text string // as written, lines joined by "\n"
}

// Commands splits a shell block into its commands. Blank lines and comment lines between
// commands are dropped; a comment after a command stays in its text (the shell ignores it).
// firstLine is the document line of the block's first line. A quote still open at the end of
// the block is an error.
func Commands(text string, firstLine int) ([]Command, error) {
	var cmds []Command
	var cur []string
	start := 0
	var q quoteState
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if len(cur) == 0 {
			t := strings.TrimSpace(line)
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			start = firstLine + i
		}
		cur = append(cur, line)
		if q.feed(line + "\n") {
			continue
		}
		cmds = append(cmds, Command{Line: start, Text: strings.Join(cur, "\n")})
		cur = nil
	}
	if len(cur) > 0 {
		return nil, fmt.Errorf("line %d: command never ends (an open quote or a trailing backslash)", start)
	}
	return cmds, nil
}

// quoteState follows POSIX shell quoting across lines, as far as telling where a command
// ends needs: single and double quotes, backslash escapes, comments.
type quoteState struct {
	single, double bool
}

// feed reads one line (with its newline) and reports whether the command continues on the
// next line.
func (q *quoteState) feed(line string) (continues bool) {
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case q.single:
			if c == '\'' {
				q.single = false
			}
		case c == '\\':
			if i+1 < len(line) && line[i+1] == '\n' {
				return true // a line continuation, inside double quotes or not
			}
			i++ // the escaped character
		case q.double:
			if c == '"' {
				q.double = false
			}
		case c == '\'':
			q.single = true
		case c == '"':
			q.double = true
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return false // a comment runs to the end of the line
		}
	}
	return q.single || q.double
}

// Heading is an ATX heading of a Markdown document.
type Heading struct {
	Text   string // without the #s, trimmed
	Anchor string // its anchor as GitHub makes it, with -1, -2... for repeats
}

var headingRE = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)

// Headings returns the headings of a Markdown document outside fenced blocks, in order.
func Headings(md string) []Heading {
	var hs []Heading
	seen := map[string]int{}
	for _, pl := range prose(md) {
		m := headingRE.FindStringSubmatch(pl.text)
		if m == nil {
			continue
		}
		a := Slug(m[2])
		if n := seen[a]; n > 0 {
			seen[a] = n + 1
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		hs = append(hs, Heading{Text: m[2], Anchor: a})
	}
	return hs
}

// Slug is GitHub's anchor for a heading's text: lower case, inline code marks and
// punctuation other than '-' and '_' removed, spaces made '-'.
func Slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Link is an inline Markdown link, [text](target), outside code.
type Link struct {
	Line   int
	Target string
}

var (
	linkRE       = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	inlineCodeRE = regexp.MustCompile("`[^`]*`")
)

// Links returns the inline links of a Markdown document outside fenced blocks and inline code.
func Links(md string) []Link {
	var ls []Link
	for _, pl := range prose(md) {
		for _, m := range linkRE.FindAllStringSubmatch(inlineCodeRE.ReplaceAllString(pl.text, ""), -1) {
			ls = append(ls, Link{Line: pl.line, Target: m[1]})
		}
	}
	return ls
}

// proseLine is a line of a Markdown document outside its fenced blocks.
type proseLine struct {
	line int // from 1
	text string
}

// prose returns the lines of a Markdown document that are not fences or inside fenced blocks.
func prose(md string) []proseLine {
	var ls []proseLine
	fenced := false
	for i, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			ls = append(ls, proseLine{i + 1, line})
		}
	}
	return ls
}
