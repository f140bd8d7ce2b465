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
	"github.com/dpsql/dpsql/backend"
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
//     order; a column name met again gets a suffix (the second s is s_2, or s_3 if a column
//     is named s_2), so that keys are unique. Numbers are JSON numbers (*big.Int too), NULL is null, NaN and ±Inf are the
//     strings "NaN", "Infinity" and "-Infinity" (as PostgreSQL's to_json writes them), times
//     and byte strings are strings, lists are arrays. Statements without rows print nothing.
//   - unaligned: psql's unaligned format: the header and each row with cells separated by
//     '|', no padding, then the "(N rows)" footer.
//
// Noisy values (Result.Noise) print in table, unaligned and CSV with the digits their noise
// leaves meaningful and one notation per column (see noisyTexts), unless the display asks for
// full precision; JSON always has full precision.
const (
	FormatTable     Format = "table"
	FormatCSV       Format = "csv"
	FormatJSON      Format = "json"
	FormatUnaligned Format = "unaligned"
)

// parseFormat reads a format name; psql's "aligned" is the table format.
func parseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case FormatTable, FormatCSV, FormatJSON, FormatUnaligned:
		return f, nil
	case "aligned":
		return FormatTable, nil
	}
	return "", fmt.Errorf("unknown format %q (want table (aligned), unaligned, csv or json)", s)
}

// display holds the printing settings \pset and \x change.
type display struct {
	format Format
	// expanded is off, on or auto (expanded when the table is wider than the terminal).
	expanded string
	// null is how NULL prints in the table and unaligned formats.
	null string
	// full prints noisy values with every digit of their float64 (--full-precision).
	full bool
	// pager sends results taller than the terminal through the pager.
	pager bool
}

// plainDisplay is the default display in format f.
func plainDisplay(f Format) display {
	return display{format: f, null: "NULL", expanded: "off", pager: true}
}

// writeResult prints one statement's result in format f with the default settings.
func writeResult(w io.Writer, f Format, r *dpsql.Result) error {
	return plainDisplay(f).write(w, r, 0)
}

// write prints r; cols is the terminal's width (0 when unknown), for \x auto.
func (d display) write(w io.Writer, r *dpsql.Result, cols int) error {
	hasRows := len(r.Columns) > 0
	switch d.format {
	case FormatCSV:
		if !hasRows {
			return nil
		}
		return writeCSV(w, r, d)
	case FormatJSON:
		if !hasRows {
			return nil
		}
		return writeJSON(w, r)
	}
	if !hasRows {
		if r.Tag == "" {
			return nil
		}
		_, err := fmt.Fprintln(w, sanitize(r.Tag))
		return err
	}
	if d.format == FormatUnaligned {
		return writeUnaligned(w, r, d)
	}
	if d.expanded == "on" {
		return writeExpanded(w, r, d)
	}
	var b bytes.Buffer
	if err := writeTableDisplay(&b, r, d); err != nil {
		return err
	}
	if d.expanded == "auto" && cols > 0 && tableWidth(b.String()) > cols {
		return writeExpanded(w, r, d)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// tableWidth is the width of the widest line of a printed table.
func tableWidth(s string) int {
	w := 0
	for _, l := range strings.Split(s, "\n") {
		w = max(w, width(l))
	}
	return w
}

// cellTexts is the text of every cell of r as the table, unaligned and CSV formats show it
// (not yet sanitized); NULL is null.
func cellTexts(r *dpsql.Result, d display, null string) [][]string {
	out := make([][]string, len(r.Rows))
	for i, row := range r.Rows {
		out[i] = make([]string, len(r.Columns))
		for j := range r.Columns {
			out[i][j] = null
			if j < len(row) && row[j] != nil {
				out[i][j] = text(row[j], r.Columns[j].Type)
			}
		}
	}
	if d.full {
		return out
	}
	for j := range r.Columns {
		sd, noisy := columnNoise(r, j)
		if !noisy {
			continue
		}
		vals := make([]float64, 0, len(r.Rows))
		idx := make([]int, 0, len(r.Rows))
		for i, row := range r.Rows {
			if j < len(row) {
				switch v := row[j].(type) {
				case float64:
					vals, idx = append(vals, v), append(idx, i)
				case float32:
					vals, idx = append(vals, float64(v)), append(idx, i)
				}
			}
		}
		for k, t := range noisyTexts(vals, sd) {
			out[idx[k]][j] = t
		}
	}
	return out
}

// belowPrecision reports whether a rounding quantum of 10^exp is finer than the spacing of
// float64 values around v: its digits there would be made up.
func belowPrecision(v float64, exp int) bool {
	a := math.Abs(v)
	return math.Pow10(exp) < math.Nextafter(a, math.Inf(1))-a
}

// columnNoise reports whether column j of r holds noisy values and the standard deviation
// of their noise (NaN when unknown): Result.Noise says it for an anonymized query; a charged
// result without it (a query with anonymized parts) is noisy throughout.
func columnNoise(r *dpsql.Result, j int) (float64, bool) {
	if r.Noise != nil {
		if j < len(r.Noise) && r.Noise[j] != 0 {
			return r.Noise[j], true
		}
		return 0, false
	}
	if r.Charge != nil {
		return math.NaN(), true
	}
	return 0, false
}

// significantDigits is how many significant digits a noisy value prints with when its
// noise is not known in advance (averages, quantiles, expressions): the largest value of
// the column gets this many.
const significantDigits = 6

// noisyTexts prints the finite values of one noisy column: each rounded to a tenth of the
// noise's standard deviation sd (to the power of ten at or below sd/10), or, when sd is
// unknown (NaN), to significantDigits digits of the column's largest magnitude; all in
// plain notation (with the same number of decimals when sd is known, without trailing
// zeros otherwise), unless the magnitudes need e-notation
// (a largest magnitude of 10^15 or more, or below 10^-4), then all in e-notation. NaN and
// infinities print as formatFloat does. The rounding depends on released values and public
// parameters only.
func noisyTexts(vals []float64, sd float64) []string {
	maxAbs := 0.0
	for _, v := range vals {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			maxAbs = max(maxAbs, math.Abs(v))
		}
	}
	var exp int // the rounding quantum is 10^exp
	known := sd > 0 && !math.IsInf(sd, 0)
	switch {
	case known:
		exp = int(math.Floor(math.Log10(sd / 10)))
	case maxAbs > 0:
		exp = int(math.Floor(math.Log10(maxAbs))) - (significantDigits - 1)
	default:
		exp = 0
	}
	exp = max(exp, -300)
	eNotation := maxAbs >= 1e15 || (maxAbs > 0 && maxAbs < 1e-4 && exp < -6)
	out := make([]string, len(vals))
	for i, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			out[i] = formatFloat(v)
			continue
		}
		if eNotation {
			if v == 0 {
				out[i] = "0"
				continue
			}
			digits := int(math.Floor(math.Log10(math.Abs(v)))) - exp + 1
			out[i] = strconv.FormatFloat(v, 'e', max(digits, 1)-1, 64)
			if belowPrecision(v, exp) {
				out[i] = strconv.FormatFloat(v, 'e', -1, 64) // no digits beyond the float64's own
			}
			continue
		}
		x := v
		if exp > 0 {
			q := math.Pow10(exp)
			x = math.Round(v/q) * q
		}
		s := strconv.FormatFloat(x, 'f', max(-exp, 0), 64)
		if belowPrecision(x, exp) {
			s = strconv.FormatFloat(x, 'f', -1, 64) // noise below the float64's precision (a test epsilon)
		}
		if !known && strings.Contains(s, ".") {
			// Significant digits of an unknown noise: trailing zeros would claim more.
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		if strings.Trim(s, "-0.") == "" {
			s = strings.TrimPrefix(s, "-") // no "-0.00"
		}
		out[i] = s
	}
	return out
}

// ---- text of values (table and CSV) ----

// formatFloat prints f with the shortest digits that read back as the same float64, in plain
// notation (1234567.25, not 1.23456725e+06, as psql) for magnitudes from 1e-4 up to 1e21
// and zero, in e-notation beyond.
func formatFloat(f float64) string {
	switch a := math.Abs(f); {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case a == 0 || (a >= 1e-4 && a < 1e21):
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
	case backend.IsTimeTZ(typ):
		return backend.TimeTZText(t)
	case typ == "TIME" || strings.HasPrefix(typ, "TIME "):
		return t.Format("15:04:05.999999999")
	case typ == "TIMESTAMPTZ" || strings.Contains(typ, "WITH TIME ZONE"):
		return t.Format("2006-01-02 15:04:05.999999999-07:00")
	}
	return t.Format("2006-01-02 15:04:05.999999999")
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
	case dpsql.Decimal:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	case time.Time:
		return formatTime(v, sqlType)
	case []byte:
		return `\x` + hex.EncodeToString(v)
	case []any, map[string]any, dpsql.Map:
		return nestedText(v, sqlType)
	}
	return fmt.Sprint(v)
}

func isNumber(v any) bool {
	switch v.(type) {
	case int64, int, int32, uint64, float64, float32, *big.Int, dpsql.Decimal:
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
	return writeTableDisplay(w, r, plainDisplay(FormatTable))
}

// writeTableDisplay is writeTable with the display's settings (null, digits).
func writeTableDisplay(w io.Writer, r *dpsql.Result, d display) error {
	ncol := len(r.Columns)
	texts := cellTexts(r, d, d.null)
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
	for i := range r.Rows {
		cells[i] = make([][]string, ncol)
		for j := range ncol {
			lines := strings.Split(sanitize(texts[i][j]), "\n")
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
	b.WriteString(rowCount(len(r.Rows)) + "\n\n")
	_, err := w.Write(b.Bytes())
	return err
}

func rowCount(n int) string {
	if n == 1 {
		return "(1 row)"
	}
	return fmt.Sprintf("(%d rows)", n)
}

// writeUnaligned prints r as psql's unaligned format: cells separated by '|'.
func writeUnaligned(w io.Writer, r *dpsql.Result, d display) error {
	var b bytes.Buffer
	for j, c := range r.Columns {
		if j > 0 {
			b.WriteByte('|')
		}
		b.WriteString(sanitize(c.Name))
	}
	b.WriteByte('\n')
	for _, row := range cellTexts(r, d, d.null) {
		for j, t := range row {
			if j > 0 {
				b.WriteByte('|')
			}
			b.WriteString(sanitize(t))
		}
		b.WriteByte('\n')
	}
	b.WriteString(rowCount(len(r.Rows)) + "\n\n")
	_, err := w.Write(b.Bytes())
	return err
}

// writeExpanded prints r as psql's expanded display (\x): one block per row, a line per
// column.
//
//	-[ RECORD 1 ]-
//	item | pen
//	n    | 3
func writeExpanded(w io.Writer, r *dpsql.Result, d display) error {
	var b bytes.Buffer
	names := make([]string, len(r.Columns))
	nameW := 0
	for j, c := range r.Columns {
		names[j] = strings.ReplaceAll(sanitize(c.Name), "\n", " ")
		nameW = max(nameW, width(names[j]))
	}
	texts := cellTexts(r, d, d.null)
	valueW := 0
	for _, row := range texts {
		for _, t := range row {
			for _, l := range strings.Split(sanitize(t), "\n") {
				valueW = max(valueW, width(l))
			}
		}
	}
	if len(texts) == 0 {
		b.WriteString("(0 rows)\n")
	}
	for i, row := range texts {
		label := fmt.Sprintf("-[ RECORD %d ]", i+1)
		if width(label) <= nameW+1 {
			label += strings.Repeat("-", nameW+1-width(label)) + "+" + strings.Repeat("-", valueW+1)
		} else {
			label += strings.Repeat("-", max(nameW+3+valueW-width(label), 0))
		}
		b.WriteString(label + "\n")
		for j, t := range row {
			for k, l := range strings.Split(sanitize(t), "\n") {
				name := ""
				if k == 0 {
					name = names[j]
				}
				b.WriteString(strings.TrimRight(name+strings.Repeat(" ", nameW-width(name))+" | "+l, " ") + "\n")
			}
		}
	}
	b.WriteByte('\n')
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

func writeCSV(w io.Writer, r *dpsql.Result, d display) error {
	texts := cellTexts(r, d, "")
	cw := csv.NewWriter(w)
	record := make([]string, len(r.Columns))
	for j, c := range r.Columns {
		record[j] = c.Name
	}
	if err := cw.Write(record); err != nil {
		return err
	}
	for _, row := range texts {
		if err := cw.Write(row); err != nil {
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
	names := make([]string, len(r.Columns))
	for j, c := range r.Columns {
		names[j] = c.Name
	}
	keys := make([][]byte, len(r.Columns))
	for j, n := range uniqueKeys(names) {
		keys[j] = jsonString(n)
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

// uniqueKeys are the JSON keys of columns named names: each name as it is, except that a
// name met again becomes name_2 (name_3, ...), skipping names any column has or was given,
// since most JSON parsers keep only one value of a repeated key.
func uniqueKeys(names []string) []string {
	taken := make(map[string]bool, len(names))
	for _, n := range names {
		taken[n] = true
	}
	used := make(map[string]bool, len(names))
	out := make([]string, len(names))
	for j, n := range names {
		k := n
		if used[n] {
			for i := 2; ; i++ {
				k = n + "_" + strconv.Itoa(i)
				if !taken[k] && !used[k] {
					break
				}
			}
		}
		used[k] = true
		out[j] = k
	}
	return out
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
	case dpsql.Decimal:
		b.WriteString(v.String())
	case int64, int, int32, uint64, bool:
		b.WriteString(text(v, sqlType))
	case []any:
		et := backend.ElemType(sqlType)
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			appendJSON(b, e, et)
		}
		b.WriteByte(']')
	case map[string]any, dpsql.Map:
		appendJSONObject(b, v, sqlType)
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
