package cli

import (
	"bytes"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"

	"github.com/dpsql/dpsql"
)

// Format is how results are printed.
type Format string

// The output formats.
//
//   - table: aligned columns with a header and a "(N rows)" footer, like psql; NULL is shown
//     as NULL; statements without rows print their tag ("CREATE VIEW").
//   - csv: RFC 4180 through encoding/csv, a header line then one line per row (LF line
//     ends). NULL and the empty string both print as an empty field. Statements without rows
//     print nothing; the results of several statements follow each other.
//   - json: each statement's rows as one JSON array of objects on one line, keys in column
//     order. Numbers are JSON numbers (*big.Int too), NULL is null, NaN and ±Inf are the
//     strings "NaN", "Infinity" and "-Infinity" (as PostgreSQL's to_json writes them), times
//     and byte strings are strings, lists are arrays. Statements without rows print nothing.
const (
	FormatTable Format = "table"
	FormatCSV   Format = "csv"
	FormatJSON  Format = "json"
)

func parseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case FormatTable, FormatCSV, FormatJSON:
		return f, nil
	}
	return "", fmt.Errorf("unknown format %q (want table, csv or json)", s)
}

// writeResult prints one statement's result in format f.
func writeResult(w io.Writer, f Format, r *dpsql.Result) error {
	hasRows := len(r.Columns) > 0
	switch f {
	case FormatCSV:
		if !hasRows {
			return nil
		}
		return writeCSV(w, r)
	case FormatJSON:
		if !hasRows {
			return nil
		}
		return writeJSON(w, r)
	default:
		if !hasRows {
			if r.Tag == "" {
				return nil
			}
			_, err := fmt.Fprintln(w, sanitize(r.Tag))
			return err
		}
		return writeTable(w, r)
	}
}

// ---- text of values (table and CSV) ----

// formatFloat prints f in the shortest form that reads back as the same float64 ('g', -1),
// except that integral values below 1e21 print without an exponent (1234567, not
// 1.234567e+06), so a float that holds an integer looks like one.
func formatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == math.Trunc(f) && math.Abs(f) < 1e21:
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// formatTime prints t by its SQL type: DATE as 2006-01-02, TIME as 15:04:05, TIMESTAMP WITH
// TIME ZONE with its offset, anything else as a timestamp. Fractional seconds appear only
// when present.
func formatTime(t time.Time, sqlType string) string {
	typ := strings.ToUpper(sqlType)
	switch {
	case typ == "DATE":
		return t.Format(time.DateOnly)
	case typ == "TIME" || strings.HasPrefix(typ, "TIME "):
		return t.Format("15:04:05.999999")
	case typ == "TIMESTAMPTZ" || strings.Contains(typ, "WITH TIME ZONE"):
		return t.Format("2006-01-02 15:04:05.999999-07:00")
	}
	return t.Format("2006-01-02 15:04:05.999999")
}

// text is the plain text of a non-NULL value, as the table and CSV formats show it.
func text(v any, sqlType string) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case int:
		return strconv.Itoa(v)
	case int32:
		return strconv.FormatInt(int64(v), 10)
	case uint64:
		return strconv.FormatUint(v, 10)
	case float64:
		return formatFloat(v)
	case float32:
		return formatFloat(float64(v))
	case *big.Int:
		if v == nil {
			return "NULL"
		}
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	case time.Time:
		return formatTime(v, sqlType)
	case []byte:
		return `\x` + hex.EncodeToString(v)
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = text(e, "")
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(v)
}

func isNumber(v any) bool {
	switch v.(type) {
	case int64, int, int32, uint64, float64, float32, *big.Int:
		return true
	}
	return false
}

// ---- table ----

// width measures terminal columns. The condition is fixed rather than read from the locale
// (runewidth's default), so output does not depend on LANG: East Asian ambiguous characters
// count as narrow, as most terminals draw them.
func width(s string) int {
	cond := runewidth.Condition{EastAsianWidth: false, StrictEmojiNeutral: true}
	return cond.StringWidth(s)
}

// sanitize makes s safe to print on a terminal: invalid UTF-8 becomes U+FFFD, and control
// and bidirectional-override characters (which would move the cursor, recolour the terminal
// or reorder the line) are shown as Go escapes. Newlines are kept; the table splits on them.
func sanitize(s string) string {
	if !strings.ContainsFunc(s, needsEscape) && utf8.ValidString(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	for _, r := range s {
		if !needsEscape(r) {
			b.WriteRune(r)
			continue
		}
		switch r {
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x100 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		}
	}
	return b.String()
}

func needsEscape(r rune) bool {
	return r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r))
}

// writeTable prints r psql-style:
//
//	 item | n
//	------+----
//	 pen  |  3
//	 ink  | 12
//	(2 rows)
//
// Headers are centred, numeric columns right-aligned, others left-aligned. A value with
// newlines takes several lines, each but the last marked with "+" after it, as psql does.
func writeTable(w io.Writer, r *dpsql.Result) error {
	ncol := len(r.Columns)
	header := make([][]string, ncol)
	widths := make([]int, ncol)
	numeric := make([]bool, ncol)
	for j, c := range r.Columns {
		header[j] = strings.Split(sanitize(c.Name), "\n")
		for _, l := range header[j] {
			widths[j] = max(widths[j], width(l))
		}
		numeric[j] = true
		seen := false
		for _, row := range r.Rows {
			if j < len(row) && row[j] != nil {
				seen = true
				numeric[j] = numeric[j] && isNumber(row[j])
			}
		}
		numeric[j] = numeric[j] && seen
	}
	cells := make([][][]string, len(r.Rows))
	for i, row := range r.Rows {
		cells[i] = make([][]string, ncol)
		for j := range ncol {
			var v any
			if j < len(row) {
				v = row[j]
			}
			lines := strings.Split(sanitize(text(v, r.Columns[j].Type)), "\n")
			for _, l := range lines {
				widths[j] = max(widths[j], width(l))
			}
			cells[i][j] = lines
		}
	}

	var b bytes.Buffer
	writeLines(&b, header, widths, func(j int, s string) string { return center(s, widths[j]) })
	for j := range ncol {
		if j > 0 {
			b.WriteByte('+')
		}
		b.WriteString(strings.Repeat("-", widths[j]+2))
	}
	b.WriteByte('\n')
	for _, row := range cells {
		writeLines(&b, row, widths, func(j int, s string) string {
			pad := strings.Repeat(" ", widths[j]-width(s))
			if numeric[j] {
				return pad + s
			}
			return s + pad
		})
	}
	if len(r.Rows) == 1 {
		b.WriteString("(1 row)\n\n")
	} else {
		fmt.Fprintf(&b, "(%d rows)\n\n", len(r.Rows))
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeLines prints one table row whose cells may span several lines.
func writeLines(b *bytes.Buffer, row [][]string, widths []int, align func(j int, s string) string) {
	height := 1
	for _, lines := range row {
		height = max(height, len(lines))
	}
	for k := range height {
		var line strings.Builder
		for j, lines := range row {
			if j > 0 {
				line.WriteByte('|')
			}
			s, mark := "", " "
			if k < len(lines) {
				s = lines[k]
				if k < len(lines)-1 {
					mark = "+"
				}
			}
			if k < len(lines) {
				s = align(j, s)
			} else {
				s = strings.Repeat(" ", widths[j])
			}
			line.WriteString(" " + s + mark)
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
}

func center(s string, w int) string {
	gap := w - width(s)
	left := gap / 2
	return strings.Repeat(" ", left) + s + strings.Repeat(" ", gap-left)
}

// ---- CSV ----

func writeCSV(w io.Writer, r *dpsql.Result) error {
	cw := csv.NewWriter(w)
	record := make([]string, len(r.Columns))
	for j, c := range r.Columns {
		record[j] = c.Name
	}
	if err := cw.Write(record); err != nil {
		return err
	}
	for _, row := range r.Rows {
		for j := range record {
			record[j] = ""
			if j < len(row) && row[j] != nil {
				record[j] = text(row[j], r.Columns[j].Type)
			}
		}
		if err := cw.Write(record); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ---- JSON ----

// writeJSON prints r as one line: [{"col":value,...},...]. The objects are written by hand
// because encoding/json sorts map keys, and the columns' order matters.
func writeJSON(w io.Writer, r *dpsql.Result) error {
	var b bytes.Buffer
	keys := make([][]byte, len(r.Columns))
	for j, c := range r.Columns {
		keys[j] = jsonString(c.Name)
	}
	b.WriteByte('[')
	for i, row := range r.Rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('{')
		for j := range r.Columns {
			if j > 0 {
				b.WriteByte(',')
			}
			b.Write(keys[j])
			b.WriteByte(':')
			var v any
			if j < len(row) {
				v = row[j]
			}
			appendJSON(&b, v, r.Columns[j].Type)
		}
		b.WriteByte('}')
	}
	b.WriteString("]\n")
	_, err := w.Write(b.Bytes())
	return err
}

func appendJSON(b *bytes.Buffer, v any, sqlType string) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case float64:
		appendJSONFloat(b, v)
	case float32:
		appendJSONFloat(b, float64(v))
	case *big.Int:
		if v == nil {
			b.WriteString("null")
			return
		}
		b.WriteString(v.String())
	case int64, int, int32, uint64, bool:
		b.WriteString(text(v, sqlType))
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			appendJSON(b, e, "")
		}
		b.WriteByte(']')
	default:
		b.Write(jsonString(text(v, sqlType)))
	}
}

func appendJSONFloat(b *bytes.Buffer, f float64) {
	s := formatFloat(f)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		b.Write(jsonString(s))
		return
	}
	b.WriteString(s)
}

// jsonString quotes s as a JSON string, without encoding/json's HTML escaping of <, > and &.
func jsonString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // encoding a string cannot fail
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
