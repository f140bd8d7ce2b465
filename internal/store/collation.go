package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/sqlerr"
)

// RuleUnitCollation is the rule a query or a private relation breaks when DuckDB compares its
// privacy unit (or a group key) by a collation.
const RuleUnitCollation = "unit-and-keys-compared-exactly"

// InexactGroups reads a plan serialized by DuckDB's json_serialize_plan and returns the
// positions of the grouping expressions of its outermost aggregate (which must group by want
// expressions) that are not the grouped values themselves. DuckDB binds a collation (a column's COLLATE NOCASE or NOACCENT or NFC,
// an ICU locale, SET default_collation, JSON under a default collation) as a function around
// the value it groups by: such a group joins values whose bytes differ, which hash() and the
// stage's priorities tell apart (outside reviews of the bounding forms: one unit spelled 16
// ways kept 16 per-unit rows in one group). The plan, not a guess from sample texts, is what
// tells: every collation DuckDB knows shows there.
func InexactGroups(serialized string, want int) ([]int, error) {
	root, err := servedPlan(serialized)
	if err != nil {
		return nil, err
	}
	var walk func(raw json.RawMessage) ([]int, bool, error)
	walk = func(raw json.RawMessage) ([]int, bool, error) {
		var n struct {
			Type     string            `json:"type"`
			Children []json.RawMessage `json:"children"`
			Groups   *[]struct {
				Class string `json:"expression_class"`
				Name  string `json:"name"` // a function's
				Args  []struct {
					Class string `json:"expression_class"`
				} `json:"children"`
			} `json:"groups"`
		}
		if err := json.Unmarshal(raw, &n); err != nil {
			return nil, false, err
		}
		if n.Groups != nil {
			if len(*n.Groups) != want {
				return nil, false, fmt.Errorf("the outermost aggregate groups by %d expressions, not %d", len(*n.Groups), want)
			}
			var inexact []int
			for i, g := range *n.Groups {
				plain := g.Class == "BOUND_REF" || g.Class == "BOUND_COLUMN_REF"
				if !plain && !(g.Class == "BOUND_FUNCTION" && byteComparable[g.Name] && len(g.Args) == 1 &&
					(g.Args[0].Class == "BOUND_REF" || g.Args[0].Class == "BOUND_COLUMN_REF")) {
					inexact = append(inexact, i)
				}
			}
			return inexact, true, nil
		}
		children := n.Children
		if n.Type == "LOGICAL_MATERIALIZED_CTE" && len(children) > 0 {
			// A CTE DuckDB materializes (one that aggregates, an analyst's subquery that
			// groups by the unit): its definition comes first, the query that reads it last
			// (outside review: the walk stopped at the CTE's own GROUP BY).
			children = children[len(children)-1:]
		}
		for _, c := range children {
			if out, found, err := walk(c); found || err != nil {
				return out, found, err
			}
		}
		return nil, false, nil
	}
	out, found, err := walk(root)
	if err != nil {
		return nil, fmt.Errorf("store: read DuckDB's plan of the grouping: %w", err)
	}
	if !found {
		return nil, fmt.Errorf("store: DuckDB's plan of the grouping has no aggregate")
	}
	return out, nil
}

// byteComparable are the functions DuckDB itself puts around some types it groups by, which
// are not collations: they give equal values one encoding, and hash() agrees with them
// (an outside review checked INTERVAL '1 day' and '24 hours', and TIMETZ offsets; keys of
// those types are normalised by sqlgen.NormaliseKey besides).
var byteComparable = map[string]bool{
	"normalized_interval": true, "timetz_byte_comparable": true, "bitstring_byte_comparable": true,
}

// servedPlan is the first plan of a document json_serialize_plan returned; a
// *PlanNotShownError when DuckDB could not serialize it.
func servedPlan(serialized string) (json.RawMessage, error) {
	var doc struct {
		Error   bool              `json:"error"`
		Message string            `json:"error_message"`
		Plans   []json.RawMessage `json:"plans"`
	}
	if err := json.Unmarshal([]byte(serialized), &doc); err != nil {
		return nil, fmt.Errorf("store: read DuckDB's plan: %w", err)
	}
	if doc.Error || len(doc.Plans) == 0 {
		return nil, &PlanNotShownError{Message: doc.Message}
	}
	return doc.Plans[0], nil
}

// PlanNotShownError is InexactGroups' error when DuckDB cannot serialize the plan at all:
// its CSV and JSON readers cannot be serialized, so a query joining a public view over
// such files has no plan to show.
type PlanNotShownError struct{ Message string }

func (e *PlanNotShownError) Error() string {
	return "store: DuckDB could not show the plan of the grouping: " + e.Message
}

// checkUnitsExact refuses the first private relation (with its privacy unit column) whose unit DuckDB compares by a collation, from one statement that
// reads no row. A query's own check (exec) sees only the collation of the relation it reads
// the unit from, and a UNION ALL of two relations takes one collation for both branches: each
// relation's unit must compare by its bytes on its own.
func checkUnitsExact(ctx context.Context, q backend.Querier, relations []*table, units []string) error {
	if dialectOf(q) != backend.DuckDB {
		return nil
	}
	// Only text is compared by a collation: a unit of another type needs no plan (a database
	// of 200 private tables spent 39 ms of every session's start on these plans).
	var texts []*table
	var textUnits []string
	for i, r := range relations {
		if collatable(r, units[i]) {
			texts, textUnits = append(texts, r), append(textUnits, units[i])
		}
	}
	relations, units = texts, textUnits
	if len(relations) == 0 {
		return nil
	}
	queries := make([]string, len(relations))
	for i, r := range relations {
		u := quoteIdent(units[i])
		queries[i] = "SELECT " + u + " FROM " + r.ref + " GROUP BY " + u
	}
	plans, err := serializePlans(ctx, q, queries)
	if err != nil {
		return fmt.Errorf("store: read the plans of the privacy units: %w", err)
	}
	for i, r := range relations {
		inexact, err := InexactGroups(plans[i], 1)
		if err != nil {
			return err
		}
		if len(inexact) > 0 {
			return sqlerr.Privacy(sqlerr.Pos{}, RuleUnitCollation,
				fmt.Sprintf("the privacy unit %s.%s is compared by a collation (COLLATE NOCASE, NOACCENT, NFC, an ICU locale, or SET default_collation), which makes texts with different bytes equal: dpsql bounds each unit's groups by a hash of the bytes, which must agree with that equality", r.name, units[i]),
				`the data owner gives it a plain text type in a view: CAST(uid AS VARCHAR) COLLATE "binary", or lower(uid) COLLATE "binary" for one unit whatever the case (docs/privacy-rules.md)`)
		}
	}
	return nil
}

// collatable reports whether column unit of r may be compared by a collation: unless its type
// is one of DuckDB's scalar types that are not text (whose comparisons no collation changes),
// it may, as may a column r does not list.
func collatable(r *table, unit string) bool {
	for _, c := range r.columns {
		if c.Name != unit {
			continue
		}
		t := strings.ToUpper(strings.TrimSpace(c.Type))
		if i := strings.IndexByte(t, '('); i >= 0 {
			t = strings.TrimSpace(t[:i]) // DECIMAL(18,3)
		}
		switch t {
		case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
			"UBIGINT", "UHUGEINT", "DECIMAL", "FLOAT", "DOUBLE", "BOOLEAN", "DATE", "TIME", "TIMESTAMP",
			"TIMESTAMP WITH TIME ZONE", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS", "TIME WITH TIME ZONE",
			"INTERVAL", "UUID", "BLOB", "BIT":
			return false
		}
		return true
	}
	return true
}
