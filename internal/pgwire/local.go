package pgwire

import (
	"strings"

	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/sqlerr"
	"github.com/jackc/pgx/v5/pgproto3"
)

// A local statement is one pgwire answers without the engine: session settings,
// transactions (no-ops: dpsql's statements are not transactional), and the functions
// clients call on connect.
type local struct {
	tag     string          // the command word, for the log and CommandComplete
	columns []engine.Column // nil: no rows
	// inFailed: allowed in a failed transaction (COMMIT, ROLLBACK).
	inFailed bool
	run      func(c *conn) (*engine.Result, error)
}

func isTxnWord(w string) bool { return w == "WORK" || w == "TRANSACTION" }

// classifyLocal returns the local statement text is, or nil if it is not one.
func classifyLocal(text string) *local {
	toks, ok := tokens(text)
	if !ok || len(toks) == 0 {
		return nil
	}
	w := func(i int) string {
		if i < len(toks) && !toks[i].quoted {
			return toks[i].val
		}
		return ""
	}
	switch w(0) {
	case "BEGIN", "START":
		if w(0) == "START" && w(1) != "TRANSACTION" {
			return nil
		}
		return &local{tag: "BEGIN", run: func(c *conn) (*engine.Result, error) {
			if c.txn == readyInTxn {
				c.notice("WARNING", "25001", "there is already a transaction in progress")
			}
			c.txn = readyInTxn
			return tagOnly("BEGIN"), nil
		}}
	case "COMMIT", "END":
		return &local{tag: "COMMIT", inFailed: true, run: func(c *conn) (*engine.Result, error) {
			tag := "COMMIT"
			switch c.txn {
			case readyIdle:
				c.notice("WARNING", "25P01", "there is no transaction in progress")
			case readyFailTxn:
				tag = "ROLLBACK"
			}
			c.txn = readyIdle
			return tagOnly(tag), nil
		}}
	case "ROLLBACK", "ABORT":
		i := 1
		if isTxnWord(w(i)) {
			i++
		}
		if w(i) == "TO" {
			return &local{tag: "ROLLBACK", inFailed: true, run: func(c *conn) (*engine.Result, error) {
				if c.txn == readyIdle {
					return nil, sqlerr.New(sqlerr.Pos{}, "25P01", "ROLLBACK TO SAVEPOINT can only be used in transaction blocks")
				}
				c.txn = readyInTxn
				return tagOnly("ROLLBACK"), nil
			}}
		}
		return &local{tag: "ROLLBACK", inFailed: true, run: func(c *conn) (*engine.Result, error) {
			if c.txn == readyIdle {
				c.notice("WARNING", "25P01", "there is no transaction in progress")
			}
			c.txn = readyIdle
			return tagOnly("ROLLBACK"), nil
		}}
	case "SAVEPOINT", "RELEASE":
		tag := w(0)
		return &local{tag: tag, run: func(c *conn) (*engine.Result, error) {
			if c.txn == readyIdle {
				return nil, sqlerr.New(sqlerr.Pos{}, "25P01", "%s can only be used in transaction blocks", tag)
			}
			return tagOnly(tag), nil
		}}
	case "DISCARD":
		return &local{tag: "DISCARD", run: func(c *conn) (*engine.Result, error) {
			if w(1) == "ALL" {
				if c.txn != readyIdle {
					return nil, sqlerr.New(sqlerr.Pos{}, "25001", "DISCARD ALL cannot run inside a transaction block")
				}
				c.resetAll()
				c.dropStmts()
				c.dropPortals()
			}
			return tagOnly("DISCARD " + w(1)), nil
		}}
	case "DEALLOCATE":
		i := 1
		if w(i) == "PREPARE" {
			i++
		}
		if i >= len(toks) {
			return nil
		}
		name, all := toks[i].val, w(i) == "ALL"
		if !toks[i].quoted {
			name = strings.ToLower(name)
		}
		return &local{tag: "DEALLOCATE", run: func(c *conn) (*engine.Result, error) {
			if all {
				c.dropStmts()
				return tagOnly("DEALLOCATE ALL"), nil
			}
			if _, ok := c.stmts[name]; !ok {
				return nil, sqlerr.New(sqlerr.Pos{}, "26000", "prepared statement %q does not exist", name)
			}
			c.dropStmt(name)
			return tagOnly("DEALLOCATE"), nil
		}}
	case "SET":
		return classifySet(toks)
	case "RESET":
		if w(1) == "ALL" && len(toks) == 2 {
			return &local{tag: "RESET", run: func(c *conn) (*engine.Result, error) {
				c.resetAll()
				return tagOnly("RESET"), nil
			}}
		}
		if len(toks) == 2 {
			if s, ok := lookupSetting(toks[1].val); ok {
				return setLocal(s, nil)
			}
		}
		return nil
	case "SHOW":
		return classifyShow(toks)
	case "SELECT":
		return classifySelect(toks[1:])
	}
	return nil
}

func tagOnly(tag string) *engine.Result { return &engine.Result{Tag: tag} }

func textColumns(names ...string) []engine.Column {
	cols := make([]engine.Column, len(names))
	for i, n := range names {
		cols[i] = engine.Column{Name: n, Type: "TEXT"}
	}
	return cols
}

// classifySet reads SET [SESSION|LOCAL] name {TO|=} value, SET TIME ZONE value, and SET
// [SESSION CHARACTERISTICS AS] TRANSACTION ...; dpsql's own SET statements (SET BUDGET, SET
// LIMITS, any name that is not a PostgreSQL setting) go to the session.
func classifySet(toks []token) *local {
	i := 1
	if i < len(toks) && !toks[i].quoted && (toks[i].val == "SESSION" || toks[i].val == "LOCAL") {
		i++
	}
	if i >= len(toks) || toks[i].quoted {
		return nil
	}
	switch toks[i].val {
	case "TRANSACTION", "CHARACTERISTICS":
		return &local{tag: "SET", run: func(c *conn) (*engine.Result, error) { return tagOnly("SET"), nil }}
	case "TIME":
		if i+1 < len(toks) && toks[i+1].val == "ZONE" {
			s, _ := lookupSetting("timezone")
			return setLocal(s, values(toks[i+2:]))
		}
		return nil
	case "NAMES":
		s, _ := lookupSetting("client_encoding")
		return setLocal(s, values(toks[i+1:]))
	}
	name := toks[i].val
	s, known := lookupSetting(name)
	if !known {
		if !strings.Contains(name, ".") {
			return nil // dpsql's statement, or an unknown setting: the session decides
		}
		// A custom setting (PostgreSQL's "prefix.name"): kept for the session.
		s = &setting{name: strings.ToLower(name), key: strings.ToLower(name), def: fixed(""),
			check: func(v string) (string, error) { return v, nil }}
	}
	i++
	if i >= len(toks) || (toks[i].val != "TO" && toks[i].val != "=") || toks[i].quoted {
		return nil
	}
	vals := values(toks[i+1:])
	if vals != nil && len(*vals) == 0 {
		return nil
	}
	return setLocal(s, vals)
}

// values reads a SET's value list; nil means DEFAULT.
func values(toks []token) *[]string {
	if len(toks) == 1 && !toks[0].quoted && toks[0].val == "DEFAULT" {
		return nil
	}
	var out []string
	for j, t := range toks {
		if j%2 == 1 {
			if t.quoted || t.val != "," {
				return &[]string{}
			}
			continue
		}
		v := t.val
		if !t.quoted {
			v = strings.ToLower(v)
		}
		out = append(out, v)
	}
	return &out
}

// setLocal sets s to vals (nil: its default).
func setLocal(s *setting, vals *[]string) *local {
	return &local{tag: "SET", run: func(c *conn) (*engine.Result, error) {
		if s.readOnly {
			return nil, sqlerr.New(sqlerr.Pos{}, "55P02", "parameter %q cannot be changed", s.name)
		}
		v := ""
		if vals == nil {
			if s.def != nil {
				v = s.def(c)
			}
		} else {
			norm, err := s.check(strings.Join(*vals, ", "))
			if err != nil {
				return nil, &sqlerr.Error{Code: sqlerr.InvalidParameterValue, Msg: err.Error()}
			}
			v = norm
		}
		c.set(s, v)
		return tagOnly("SET"), nil
	}}
}

func (c *conn) set(s *setting, v string) {
	if c.settings[s.key] == v {
		return
	}
	c.settings[s.key] = v
	if s.report {
		c.send(&pgproto3.ParameterStatus{Name: s.name, Value: v})
	}
}

func (c *conn) resetAll() {
	for _, s := range settingList {
		if !s.readOnly {
			c.set(s, s.def(c))
		}
	}
}

func classifyShow(toks []token) *local {
	if len(toks) < 2 || toks[1].quoted {
		return nil
	}
	switch name := toks[1].val; {
	case name == "ALL" && len(toks) == 2:
		return &local{tag: "SHOW", columns: textColumns("name", "setting", "description"),
			run: func(c *conn) (*engine.Result, error) {
				res := &engine.Result{Columns: textColumns("name", "setting", "description"), Tag: "SHOW"}
				for _, s := range settingList {
					res.Rows = append(res.Rows, []any{s.name, c.settings[s.key], ""})
				}
				return res, nil
			}}
	case name == "TRANSACTION" && len(toks) == 4 && toks[2].val == "ISOLATION" && toks[3].val == "LEVEL":
		return showSetting("transaction_isolation")
	case name == "TIME" && len(toks) == 3 && toks[2].val == "ZONE":
		return showSetting("timezone")
	case len(toks) == 2:
		if _, ok := lookupSetting(name); ok {
			return showSetting(name)
		}
	}
	return nil
}

func showSetting(name string) *local {
	s, _ := lookupSetting(name)
	return &local{tag: "SHOW", columns: textColumns(s.key), run: func(c *conn) (*engine.Result, error) {
		return &engine.Result{Columns: textColumns(s.key), Rows: [][]any{{c.settings[s.key]}}, Tag: "SHOW"}, nil
	}}
}

// classifySelect reads SELECT f() [AS alias], ... where every item is one of the functions
// clients call on connect: version(), current_setting('x'[, missing_ok]), current_schema(),
// current_database(), current_user and the like.
func classifySelect(toks []token) *local {
	type item struct {
		name string
		val  func(c *conn) (any, error)
	}
	var items []item
	for len(toks) > 0 {
		t := toks[0]
		if t.quoted {
			return nil
		}
		fn := strings.TrimPrefix(t.val, "PG_CATALOG.")
		var it item
		n := 1
		call := len(toks) >= 3 && toks[1].val == "(" && toks[2].val == ")"
		switch {
		case fn == "VERSION" && call:
			it, n = item{"version", func(c *conn) (any, error) {
				return "PostgreSQL " + serverVersion + " (dpsql " + c.s.version() + ")", nil
			}}, 3
		case (fn == "CURRENT_SCHEMA") && call, fn == "CURRENT_SCHEMA" && t.val == "CURRENT_SCHEMA":
			if call {
				n = 3
			}
			it = item{"current_schema", func(c *conn) (any, error) { return "public", nil }}
		case (fn == "CURRENT_DATABASE" && call) || fn == "CURRENT_CATALOG":
			if call {
				n = 3
			}
			it = item{strings.ToLower(fn), func(c *conn) (any, error) { return c.database, nil }}
		case fn == "CURRENT_USER" || fn == "SESSION_USER" || fn == "USER" || fn == "CURRENT_ROLE":
			it = item{strings.ToLower(fn), func(c *conn) (any, error) { return c.user, nil }}
		case fn == "CURRENT_SETTING" && len(toks) >= 4 && toks[1].val == "(" && toks[2].quoted:
			name := toks[2].val
			missingOK := false
			switch {
			case toks[3].val == ")":
				n = 4
			case len(toks) >= 6 && toks[3].val == "," && toks[5].val == ")" && (toks[4].val == "TRUE" || toks[4].val == "FALSE"):
				missingOK, n = toks[4].val == "TRUE", 6
			default:
				return nil
			}
			it = item{"current_setting", func(c *conn) (any, error) {
				if v, ok := c.settings[strings.ToLower(name)]; ok {
					return v, nil
				}
				if missingOK {
					return nil, nil
				}
				return nil, sqlerr.New(sqlerr.Pos{}, "42704", "unrecognized configuration parameter %q", name)
			}}
		default:
			return nil
		}
		toks = toks[n:]
		if len(toks) >= 2 && toks[0].val == "AS" && !toks[0].quoted {
			it.name = aliasOf(toks[1])
			toks = toks[2:]
		} else if len(toks) >= 1 && toks[0].val != "," {
			it.name = aliasOf(toks[0])
			toks = toks[1:]
		}
		items = append(items, it)
		if len(toks) > 0 {
			if toks[0].val != "," || toks[0].quoted || len(toks) == 1 {
				return nil
			}
			toks = toks[1:]
		}
	}
	if len(items) == 0 {
		return nil
	}
	names := make([]string, len(items))
	for i, it := range items {
		names[i] = it.name
	}
	return &local{tag: "SELECT", columns: textColumns(names...), run: func(c *conn) (*engine.Result, error) {
		row := make([]any, len(items))
		for i, it := range items {
			v, err := it.val(c)
			if err != nil {
				return nil, err
			}
			row[i] = v
		}
		return &engine.Result{Columns: textColumns(names...), Rows: [][]any{row}, Tag: "SELECT 1"}, nil
	}}
}

func aliasOf(t token) string {
	if t.quoted {
		return t.val
	}
	return strings.ToLower(t.val)
}
