package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/catalog"
)

// relationLister is the optional capability behind \dt, \d and tab completion: the relations
// the session may name, with their columns (what SHOW TABLES shows). *dpsql.DB has it.
type relationLister interface {
	Relations(ctx context.Context) ([]dpsql.Relation, error)
}

const metaHelp = `Meta-commands (at the prompt, in -c and in scripts):
  \q                   quit (also Ctrl-D, exit, quit)
  \?                   show this help
  \dt [PATTERN]        list the relations you may query, with their privacy unit
  \d [PATTERN]         \dt without PATTERN; the columns of the relations PATTERN
                       names, their types and which one is the privacy unit.
                       PATTERN as in psql: NAME or SCHEMA.NAME, * and ? wildcards,
                       "Quoted" parts taken literally (unquoted ones in any case)
  \budget              show the privacy budget (SHOW BUDGET)
  \i FILE              run the statements and commands of FILE
  \echo TEXT           print TEXT
  \timing [on|off]     show how long each statement takes (no argument: toggle)
  \x [on|off|auto]     expanded display: one line per column (auto: when the table
                       is wider than the terminal; no argument: toggle)
  \pset [NAME [VALUE]] show or set a display option:
                         format        aligned (table), unaligned, csv or json
                         null          how NULL prints (default NULL)
                         numericdigits noise (default: noisy values with the digits
                                       their noise leaves) or full (every digit)
                         pager         on or off (results taller than the terminal)
                         expanded      like \x
  \format [FORMAT]     the same as \pset format
  \set [NAME [VALUE]]  set ON_ERROR_STOP on or off (scripts stop at the first error
                       and exit with status 3); \unset NAME turns it off

End each SQL statement with ';'; a statement may span lines. Ctrl-C drops the
statement being typed or cancels the one running.
`

// meta runs one backslash command. A failing statement returns an error wrapping ErrFailed
// (already printed); a misused command returns a plain error for the caller to print.
func (s *session) meta(ctx context.Context, line string) error {
	fields := strings.Fields(strings.TrimSuffix(strings.TrimSpace(line), ";"))
	if len(fields) == 0 {
		return nil
	}
	cmd, args := fields[0], fields[1:]
	switch cmd {
	case `\q`, `\quit`:
		return errQuit
	case `\?`, `\h`, `\help`:
		_, err := io.WriteString(s.out, metaHelp)
		return err
	case `\dt`, `\dt+`, `\d`, `\d+`:
		// A pattern may hold quoted white space: split the line again, as psql does.
		args = metaArgs(strings.TrimPrefix(strings.TrimSuffix(strings.TrimSpace(line), ";"), cmd))
		if len(args) > 1 {
			return fmt.Errorf(`%s: want at most one pattern, like purchases, "Sales".orders or p*`, cmd)
		}
		var pat *namePattern
		if len(args) == 1 {
			var err error
			if pat, err = parsePattern(args[0]); err != nil {
				return fmt.Errorf(`%s: %s: %w`, cmd, sanitize(args[0]), err)
			}
		}
		if strings.HasPrefix(cmd, `\dt`) || pat == nil {
			return s.listRelations(ctx, pat)
		}
		return s.describe(ctx, args[0], pat)
	case `\echo`:
		_, err := fmt.Fprintln(s.out, sanitize(strings.Join(args, " ")))
		return err
	case `\i`, `\include`:
		if len(args) != 1 {
			return fmt.Errorf(`%s: want one file name`, cmd)
		}
		return s.include(ctx, args[0])
	case `\budget`:
		return s.statement(ctx, "", item{text: "SHOW BUDGET;", line: 1, col: 1})
	case `\format`:
		if len(args) > 1 {
			return errors.New(`\format: want one argument: aligned (table), unaligned, csv or json`)
		}
		return s.pset(append([]string{"format"}, args...))
	case `\pset`:
		return s.pset(args)
	case `\x`:
		return s.pset(append([]string{"expanded"}, args...))
	case `\timing`:
		on, err := toggle(`\timing`, s.timing, args)
		if err != nil {
			return err
		}
		s.timing = on
		fmt.Fprintf(s.out, "Timing is %s.\n", onOff(s.timing))
		return nil
	case `\set`:
		switch len(args) {
		case 0:
			fmt.Fprintf(s.out, "ON_ERROR_STOP = '%s'\n", onOff(s.onErrorStop))
			return nil
		case 1, 2:
			on, err := setVariable(args[0], strings.Join(args[1:], ""))
			if err != nil {
				return fmt.Errorf(`\set: %w`, err)
			}
			s.onErrorStop = on
			return nil
		}
		return errors.New(`\set: want NAME and VALUE, like \set ON_ERROR_STOP on`)
	case `\unset`:
		if len(args) != 1 {
			return errors.New(`\unset: want one variable name`)
		}
		if _, err := setVariable(args[0], "off"); err != nil {
			return fmt.Errorf(`\unset: %w`, err)
		}
		s.onErrorStop = false
		return nil
	}
	return fmt.Errorf(`invalid command %s; try \? for the list of commands`, sanitize(cmd))
}

// maxIncludeDepth bounds \i inside \i, so a file that includes itself fails instead of
// recursing forever.
const maxIncludeDepth = 16

// include is \i FILE: the file's statements and commands run as a script (its failures are
// the including input's; \q in it ends the command, as in psql).
func (s *session) include(ctx context.Context, path string) error {
	if s.depth >= maxIncludeDepth {
		return fmt.Errorf(`\i %s: files include each other more than %d deep`, sanitize(path), maxIncludeDepth)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf(`\i: %w`, err)
	}
	defer f.Close()
	s.depth++
	defer func() { s.depth-- }()
	failed := s.failed
	s.failed = false
	err = s.runScript(ctx, path, f)
	if s.failed && err == nil {
		err = fmt.Errorf("%w: in %s", ErrFailed, path) // reported already
	}
	s.failed = s.failed || failed
	return err
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// toggle reads the argument of a boolean meta-command: none toggles cur.
func toggle(cmd string, cur bool, args []string) (bool, error) {
	if len(args) == 0 {
		return !cur, nil
	}
	if len(args) == 1 {
		switch strings.ToLower(args[0]) {
		case "on", "true", "yes", "1":
			return true, nil
		case "off", "false", "no", "0":
			return false, nil
		}
	}
	return false, fmt.Errorf("%s: want on or off", cmd)
}

// pset shows or sets a display option, as psql's \pset.
func (s *session) pset(args []string) error {
	if len(args) == 0 {
		digits := "noise"
		if s.disp.full {
			digits = "full"
		}
		fmt.Fprintf(s.out, "expanded      %s\nformat        %s\nnull          '%s'\nnumericdigits %s\npager         %s\n",
			s.disp.expanded, s.disp.format, sanitize(s.disp.null), digits, onOff(s.disp.pager))
		return nil
	}
	name, value := strings.ToLower(args[0]), args[1:]
	if len(value) > 1 {
		return fmt.Errorf(`\pset %s: want one value`, name)
	}
	switch name {
	case "format":
		if len(value) == 1 {
			f, err := parseFormat(value[0])
			if err != nil {
				return fmt.Errorf(`\pset format: %w`, err)
			}
			s.disp.format = f
		}
		fmt.Fprintf(s.out, "Output format is %s.\n", s.disp.format)
	case "null":
		if len(value) == 1 {
			s.disp.null = strings.Trim(value[0], "'")
		}
		fmt.Fprintf(s.out, "Null display is \"%s\".\n", sanitize(s.disp.null))
	case "numericdigits":
		switch {
		case len(value) == 0:
		case strings.EqualFold(value[0], "full"):
			s.disp.full = true
		case strings.EqualFold(value[0], "noise"):
			s.disp.full = false
		default:
			return fmt.Errorf(`\pset numericdigits: want noise or full, not %q`, value[0])
		}
		if s.disp.full {
			fmt.Fprintln(s.out, "Noisy values print with full precision.")
		} else {
			fmt.Fprintln(s.out, "Noisy values print with the digits their noise leaves meaningful.")
		}
	case "pager":
		on, err := toggle(`\pset pager`, s.disp.pager, value)
		if err != nil {
			return err
		}
		s.disp.pager = on
		fmt.Fprintf(s.out, "Pager usage is %s.\n", onOff(on))
	case "expanded", "x":
		switch {
		case len(value) == 0 && s.disp.expanded == "off":
			s.disp.expanded = "on"
		case len(value) == 0:
			s.disp.expanded = "off"
		case strings.EqualFold(value[0], "auto"):
			s.disp.expanded = "auto"
		default:
			on, err := toggle(`\x`, false, value)
			if err != nil {
				return errors.New(`\x: want on, off or auto`)
			}
			s.disp.expanded = onOff(on)
		}
		if s.disp.expanded == "auto" {
			fmt.Fprintln(s.out, "Expanded display is used automatically.")
		} else {
			fmt.Fprintf(s.out, "Expanded display is %s.\n", s.disp.expanded)
		}
	default:
		return fmt.Errorf(`\pset: unknown option %q (format, null, numericdigits, pager or expanded)`, sanitize(name))
	}
	return nil
}

// relations lists the relations the session may name, cached until the next statement.
func (s *session) relations(ctx context.Context) ([]dpsql.Relation, error) {
	if s.rels != nil {
		return s.rels, nil
	}
	l, ok := s.eng.(relationLister)
	if !ok {
		return nil, errors.New("this database cannot list its relations; use SHOW TABLES")
	}
	rels, err := l.Relations(ctx)
	if err != nil {
		return nil, err
	}
	sort.Slice(rels, func(i, j int) bool { return rels[i].Name < rels[j].Name })
	if rels == nil {
		rels = []dpsql.Relation{}
	}
	s.rels = rels
	return rels, nil
}

// listRelations is \dt [PATTERN]: each relation the session may name (that pat matches,
// unless nil), its kind and privacy unit.
func (s *session) listRelations(ctx context.Context, pat *namePattern) error {
	if _, ok := s.eng.(relationLister); !ok {
		if pat != nil {
			return errors.New("this database cannot list its relations by pattern; use SHOW TABLES")
		}
		return s.statement(ctx, "", item{text: "SHOW TABLES;", line: 1, col: 1})
	}
	rels, err := s.relations(ctx)
	if err != nil {
		return s.metaFailed(err)
	}
	r := &dpsql.Result{Columns: []dpsql.Column{{Name: "name", Type: "VARCHAR"}, {Name: "kind", Type: "VARCHAR"},
		{Name: "privacy_unit", Type: "VARCHAR"}, {Name: "columns", Type: "BIGINT"}}}
	for _, rel := range rels {
		if pat != nil && !pat.match(rel.Name) {
			continue
		}
		var unit any
		if rel.PrivacyUnit != "" {
			unit = rel.PrivacyUnit
		}
		r.Rows = append(r.Rows, []any{rel.Name, rel.Kind, unit, int64(len(rel.Columns))})
	}
	return s.printOne(r)
}

// describe is \d PATTERN: the columns of each relation pat matches, their types and which
// is the privacy unit.
func (s *session) describe(ctx context.Context, pattern string, pat *namePattern) error {
	rels, err := s.relations(ctx)
	if err != nil {
		return s.metaFailed(err)
	}
	found := false
	for _, rel := range rels {
		if !pat.match(rel.Name) {
			continue
		}
		found = true
		r := &dpsql.Result{Columns: []dpsql.Column{{Name: "column", Type: "VARCHAR"}, {Name: "type", Type: "VARCHAR"},
			{Name: "privacy_unit", Type: "VARCHAR"}}}
		for _, c := range rel.Columns {
			unit := ""
			if rel.PrivacyUnit != "" && catalog.SameName(c.Name, rel.PrivacyUnit) {
				unit = "yes"
			}
			r.Rows = append(r.Rows, []any{c.Name, c.Type, unit})
		}
		if s.disp.format == FormatTable || s.disp.format == FormatUnaligned {
			title := fmt.Sprintf("Public relation %q", rel.Name)
			if rel.Kind == "private" {
				title = fmt.Sprintf("Private relation %q (privacy unit %s)", rel.Name, rel.PrivacyUnit)
			}
			fmt.Fprintln(s.out, sanitize(title))
		}
		if err := s.printOne(r); err != nil {
			return err
		}
	}
	if !found {
		return fmt.Errorf(`\d: relation %s does not exist or is not one you may query; \dt lists them`, sanitize(quoteArg(pattern)))
	}
	return nil
}

// quoteArg shows a meta-command's argument in a message: in double quotes, unless it is
// quoted already.
func quoteArg(a string) string {
	if strings.Contains(a, `"`) {
		return a
	}
	return `"` + a + `"`
}

// metaFailed prints the error of a meta-command that asked the database.
func (s *session) metaFailed(err error) error {
	_ = s.flush()
	fmt.Fprintln(s.errw, renderError("", "", err))
	return fmt.Errorf("%w: %w", ErrFailed, err)
}

// printOne prints a result the command made itself.
func (s *session) printOne(r *dpsql.Result) error {
	if err := s.show(r); err != nil {
		return s.outputError(err)
	}
	return s.flush()
}

// show prints one result with the session's display settings, through the pager when it
// is taller than the terminal.
func (s *session) show(r *dpsql.Result) error {
	cols, _, _ := s.term.dims()
	if s.disp.format == FormatCSV || s.disp.format == FormatJSON || s.term == nil || !s.disp.pager {
		return s.disp.write(s.out, s.showTables(r), cols)
	}
	var b bytes.Buffer
	if err := s.disp.write(&b, s.showTables(r), cols); err != nil {
		return err
	}
	if err := s.out.Flush(); err != nil {
		return err
	}
	paged, err := s.term.page(b.String(), true)
	if paged || err != nil {
		return err
	}
	_, err = s.out.Write(b.Bytes())
	return err
}

// showTables prints SHOW TABLES (and SHOW POLICY) in the table formats as a proper table, a
// row per column, from the same catalog: the engine's result puts every column of a
// relation in one cell. Other results, and SHOW TABLES in CSV and JSON, are unchanged.
func (s *session) showTables(r *dpsql.Result) *dpsql.Result {
	if s.disp.format == FormatCSV || s.disp.format == FormatJSON || r.Tag != "SHOW" || len(r.Columns) != 4 ||
		r.Columns[0].Name != "name" || r.Columns[1].Name != "kind" || r.Columns[2].Name != "privacy_unit" || r.Columns[3].Name != "columns" {
		return r
	}
	s.rels = nil
	rels, err := s.relations(context.Background())
	if err != nil || len(rels) != len(r.Rows) {
		return r
	}
	names := map[string]bool{}
	for _, rel := range rels {
		names[rel.Name] = true
	}
	for _, row := range r.Rows {
		if name, ok := row[0].(string); !ok || !names[name] {
			return r // the catalog changed since the statement ran
		}
	}
	out := &dpsql.Result{Tag: r.Tag, Columns: []dpsql.Column{{Name: "name", Type: "VARCHAR"}, {Name: "kind", Type: "VARCHAR"},
		{Name: "privacy_unit", Type: "VARCHAR"}, {Name: "column", Type: "VARCHAR"}, {Name: "type", Type: "VARCHAR"}}}
	for _, rel := range rels {
		var unit any
		if rel.PrivacyUnit != "" {
			unit = rel.PrivacyUnit
		}
		if len(rel.Columns) == 0 {
			out.Rows = append(out.Rows, []any{rel.Name, rel.Kind, unit, nil, nil})
		}
		for k, c := range rel.Columns {
			if k == 0 {
				out.Rows = append(out.Rows, []any{rel.Name, rel.Kind, unit, c.Name, c.Type})
			} else {
				out.Rows = append(out.Rows, []any{"", "", "", c.Name, c.Type})
			}
		}
	}
	return out
}
