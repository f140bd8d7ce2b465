// Package sqlerr is the one error type every stage of dpsql returns to users: a message with
// its position in the SQL text, a SQLSTATE code, the privacy rule it enforces (if any) and a
// hint that says how to fix the query.
//
// It is a leaf: it imports nothing of dpsql, so the parser, the analyzer, the engine and the
// command can all attach and render positioned errors without depending on each other.
package sqlerr

import (
	"errors"
	"fmt"
	"strings"
)

// Pos is a place in the SQL text. Offset is a byte offset; Line and Col are 1-based (Col
// counts runes). The zero Pos means "no position".
type Pos struct {
	Offset int
	Line   int
	Col    int
}

// IsValid reports whether p points somewhere.
func (p Pos) IsValid() bool { return p.Line > 0 }

func (p Pos) String() string {
	if !p.IsValid() {
		return "-"
	}
	return fmt.Sprintf("%d:%d", p.Line, p.Col)
}

// SQLSTATE codes used by dpsql (a subset of PostgreSQL's list).
const (
	SyntaxError             = "42601" // the text does not parse
	FeatureNotSupported     = "0A000" // valid SQL that dpsql does not accept
	UndefinedTable          = "42P01"
	UndefinedColumn         = "42703"
	UndefinedFunction       = "42883"
	AmbiguousColumn         = "42702"
	InvalidName             = "42602" // e.g. a relation whose name holds a dot
	DatatypeMismatch        = "42804"
	GroupingError           = "42803"
	InvalidParameterValue   = "22023" // a bad option value (epsilon, delta, kappa, bounds)
	InsufficientPrivilege   = "42501" // an analyst statement that needs the owner
	PrivacyViolation        = "2P000" // dpsql: the query would weaken the privacy guarantee
	BudgetExhausted         = "2P001" // dpsql: the ledger refuses the charge
	InsufficientData        = "2P002" // dpsql: too few data for a DP estimate (e.g. bounds)
	FailedAfterData         = "2P003" // dpsql: a charged query failed after it read private data; cause withheld
	InternalError           = "XX000"
	QueryCanceled           = "57014"
	DataException           = "22000"
	InvalidTextRepresent    = "22P02"
	UndefinedParameter      = "42P02" // a @name or $n query parameter without a value
	UndefinedObject         = "42704" // e.g. an analyst account that does not exist
	DuplicateObject         = "42710" // e.g. an analyst account that exists already
	ObjectNotInPrerequisite = "55000" // e.g. no budget has been set
	ObjectInUse             = "55006" // e.g. a DuckDB file another process holds
	UndefinedFile           = "58P01" // a file a relation reads does not exist
)

// Error is a user-facing error. Rule names the privacy rule a refused query breaks (for
// example "join-on-privacy-unit"); it is empty for plain SQL errors.
type Error struct {
	Code string
	Rule string
	Pos  Pos
	Msg  string
	Hint string
	// Cause is an underlying error (for example from the database), kept for errors.Is/As.
	Cause error
}

// Error renders "line:col: message (rule) " in one line, without the source text.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Pos.IsValid() {
		fmt.Fprintf(&b, "%s: ", e.Pos)
	}
	b.WriteString(e.Msg)
	if e.Rule != "" {
		fmt.Fprintf(&b, " [rule %s]", e.Rule)
	}
	if e.Hint != "" {
		fmt.Fprintf(&b, "; hint: %s", e.Hint)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Cause }

// New returns an error with a code and message at pos.
func New(pos Pos, code, format string, args ...any) *Error {
	return &Error{Code: code, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// Privacy returns the refusal of a query that would weaken the guarantee: it names the rule
// and says how to fix the query.
func Privacy(pos Pos, rule, msg, hint string) *Error {
	return &Error{Code: PrivacyViolation, Rule: rule, Pos: pos, Msg: msg, Hint: hint}
}

// WithHint returns e with its hint set, for chaining.
func (e *Error) WithHint(format string, args ...any) *Error {
	e.Hint = fmt.Sprintf(format, args...)
	return e
}

// As returns the *Error inside err, if any.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// PosAt computes the Pos of a byte offset in src.
func PosAt(src string, offset int) Pos {
	if offset < 0 {
		return Pos{}
	}
	if offset > len(src) {
		offset = len(src)
	}
	line, col := 1, 1
	for _, r := range src[:offset] {
		if r == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return Pos{Offset: offset, Line: line, Col: col}
}

// Render formats err for a terminal: "ERROR: msg", the source line with a caret under the
// position, the rule and the hint. src is the statement text the positions refer to; errors
// that are not *Error are rendered as "ERROR: " + err.Error().
func Render(err error, src string) string {
	e, ok := As(err)
	if !ok {
		return "ERROR: " + err.Error()
	}
	var b strings.Builder
	b.WriteString("ERROR: ")
	if e.Pos.IsValid() {
		fmt.Fprintf(&b, "%s: ", e.Pos)
	}
	b.WriteString(e.Msg)
	if e.Code != "" {
		fmt.Fprintf(&b, " (SQLSTATE %s)", e.Code)
	}
	b.WriteString("\n")
	if e.Pos.IsValid() && src != "" {
		lines := strings.Split(src, "\n")
		if e.Pos.Line <= len(lines) {
			text := strings.ReplaceAll(lines[e.Pos.Line-1], "\t", " ")
			prefix := fmt.Sprintf("LINE %d: ", e.Pos.Line)
			b.WriteString(prefix + text + "\n")
			b.WriteString(strings.Repeat(" ", len(prefix)+e.Pos.Col-1) + "^\n")
		}
	}
	if e.Rule != "" {
		fmt.Fprintf(&b, "RULE: %s\n", e.Rule)
	}
	if e.Hint != "" {
		fmt.Fprintf(&b, "HINT: %s\n", e.Hint)
	}
	return strings.TrimRight(b.String(), "\n")
}
