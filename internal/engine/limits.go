package engine

import (
	"context"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/limits"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/sqlerr"
)

const limitsHint = "SET LIMITS OPTIONS(statement_timeout = '60s', memory_limit = '2GB'); NULL removes a limit"

// setLimits stores the owner's limits for analyst sessions:
//
//	SET LIMITS OPTIONS(statement_timeout = '60s' | NULL, memory_limit = '2GB' | NULL)
//
// Options not named keep their value. The limits bind analyst sessions that start afterwards,
// whatever the analyst's process sets (it can only tighten them); the owner's own sessions
// have none.
func (e *Engine) setLimits(ctx context.Context, s *ast.SetLimitsStmt) (*Result, error) {
	if err := e.needOwner(s, "SET LIMITS"); err != nil {
		return nil, err
	}
	if len(s.Options) == 0 {
		return nil, sqlerr.New(s.Span().Start, sqlerr.InvalidParameterValue, "SET LIMITS needs an option").WithHint(limitsHint)
	}
	l, err := store.ReadLimits(ctx, e.b)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, o := range s.Options {
		name := strings.ToLower(o.Name.Name)
		if seen[name] {
			return nil, sqlerr.New(o.Span().Start, sqlerr.InvalidParameterValue, "option %s is given twice", o.Name.Name).WithHint(limitsHint)
		}
		seen[name] = true
		text, null, ok := optionText(o.Value)
		switch {
		case name != "statement_timeout" && name != "memory_limit":
			return nil, sqlerr.New(o.Span().Start, sqlerr.InvalidParameterValue, "unknown limit %s", o.Name.Name).
				WithHint("the limits are statement_timeout and memory_limit: %s", limitsHint)
		case name == "memory_limit" && e.b.Dialect() == backend.Postgres && !null:
			return nil, sqlerr.New(o.Span().Start, sqlerr.FeatureNotSupported, "memory_limit applies to DuckDB only").
				WithHint("on PostgreSQL the server's own settings bound memory (work_mem, per sort or hash): set them there, for example ALTER ROLE dpsql_engine SET work_mem = '64MB'; statement_timeout applies on both")
		case !ok && name == "statement_timeout":
			return nil, sqlerr.New(o.Value.Span().Start, sqlerr.InvalidParameterValue, "statement_timeout must be a duration in quotes or NULL").
				WithHint("statement_timeout = '60s', '5m' or '1h30m' (between %v and %v); NULL removes the limit", limits.MinStatementTimeout, limits.MaxStatementTimeout)
		case !ok:
			return nil, sqlerr.New(o.Value.Span().Start, sqlerr.InvalidParameterValue, "memory_limit must be a size in quotes or NULL").
				WithHint("memory_limit = '2GB' or '512MiB' (between %s and %s); NULL removes the limit", limits.FormatSize(limits.MinMemoryLimit), limits.FormatSize(limits.MaxMemoryLimit))
		case null && name == "statement_timeout":
			l.StatementTimeout = 0
		case null:
			l.MemoryLimit = 0
		case name == "statement_timeout":
			if l.StatementTimeout, err = limits.ParseTimeout(text); err != nil {
				return nil, sqlerr.New(o.Value.Span().Start, sqlerr.InvalidParameterValue, "statement_timeout: %v", err).
					WithHint("give a duration in quotes between %v and %v, like statement_timeout = '60s', '5m' or '1h30m'; NULL removes the limit", limits.MinStatementTimeout, limits.MaxStatementTimeout)
			}
		default:
			if l.MemoryLimit, err = limits.ParseSize(text); err != nil {
				return nil, sqlerr.New(o.Value.Span().Start, sqlerr.InvalidParameterValue, "memory_limit: %v", err).
					WithHint("give a size in quotes between %s and %s, like memory_limit = '2GB' or '512MiB'; NULL removes the limit", limits.FormatSize(limits.MinMemoryLimit), limits.FormatSize(limits.MaxMemoryLimit))
			}
		}
	}
	if err := e.b.Tx(ctx, func(q backend.Querier) error { return store.SetLimits(ctx, q, l) }); err != nil {
		return nil, err
	}
	return &Result{Tag: "SET LIMITS", Notices: []string{
		"the limits bind analyst sessions that start from now on; an analyst's own settings can only make them stricter"}}, nil
}

// optionText reads an option's value: a string literal (text), or NULL (null).
func optionText(x ast.Expr) (text string, null, ok bool) {
	l, isLit := x.(*ast.Literal)
	switch {
	case !isLit:
		return "", false, false
	case l.Kind == ast.NullLit:
		return "", true, true
	case l.Kind == ast.StringLit:
		return l.Text, false, true
	}
	return "", false, false
}

// showLimits is SHOW LIMITS, for anyone: each limit as the owner stored it and as it binds
// this session (NULL: none).
func (e *Engine) showLimits(ctx context.Context) (*Result, error) {
	l, err := store.ReadLimits(ctx, e.b)
	if err != nil {
		return nil, err
	}
	orNull := func(set bool, v string) any {
		if !set {
			return nil
		}
		return v
	}
	t := e.timeout()
	r := &Result{Tag: "SHOW", Columns: []Column{{"limit", "VARCHAR"}, {"owner", "VARCHAR"}, {"session", "VARCHAR"}}}
	r.Rows = append(r.Rows, []any{"statement_timeout",
		orNull(l.StatementTimeout > 0, limits.FormatTimeout(l.StatementTimeout)), orNull(t > 0, limits.FormatTimeout(t))})
	var session any
	if e.b.Dialect() == backend.DuckDB {
		rows, err := e.b.Query(ctx, "SELECT current_setting('memory_limit')")
		if err != nil {
			return nil, err
		}
		session = rows.Values[0][0]
	} else {
		r.Notices = append(r.Notices, "memory_limit applies to DuckDB only: on PostgreSQL the server's settings (work_mem) bound memory")
	}
	r.Rows = append(r.Rows, []any{"memory_limit", orNull(l.MemoryLimit > 0, limits.FormatSize(l.MemoryLimit)), session})
	if e.o.Owner {
		r.Notices = append(r.Notices, "this is an owner session: the limits bind analyst sessions only")
	} else if l != e.owners {
		r.Notices = append(r.Notices, "the owner changed the limits after this session started: they bind sessions that start from now on")
	}
	return r, nil
}
