package store

import (
	"encoding/json"
	"strings"
)

// repeatableOperators are the operators of DuckDB's logical plans that give the same rows
// at every read within one statement: scans (tables are read from the statement's snapshot),
// projections, filters, joins, UNNEST, and CTEs (whose definitions are walked as well).
// Aggregates (a DOUBLE sum's last bits follow the order of its terms; any_value, list),
// windows, LIMIT, samples and DISTINCT ON are not among them.
var repeatableOperators = map[string]bool{
	"LOGICAL_GET": true, "LOGICAL_PROJECTION": true, "LOGICAL_FILTER": true,
	"LOGICAL_COMPARISON_JOIN": true, "LOGICAL_ANY_JOIN": true, "LOGICAL_CROSS_PRODUCT": true,
	"LOGICAL_UNNEST": true, "LOGICAL_DUMMY_SCAN": true, "LOGICAL_EMPTY_RESULT": true,
	"LOGICAL_EXPRESSION_GET": true,
	// A CTE DuckDB materializes, and its reads.
	"LOGICAL_MATERIALIZED_CTE": true, "LOGICAL_CTE_REF": true,
}

// repeatableScans are the table functions a LOGICAL_GET of a repeatable plan may call.
var repeatableScans = map[string]bool{
	"seq_scan": true, "read_parquet": true, "parquet_scan": true, "range": true, "generate_series": true, "unnest": true,
}

// volatileFunctions are DuckDB's functions whose stability is VOLATILE (duckdb_functions(),
// DuckDB 1.5; TestVolatileFunctionsListed keeps the list complete): each call may give
// another value.
var volatileFunctions = map[string]bool{
	"current_connection_id": true, "current_query": true, "current_query_id": true,
	"current_transaction_id": true, "currval": true, "error": true, "gen_random_uuid": true,
	"nextval": true, "random": true, "setseed": true, "sleep_ms": true, "stats": true,
	"uuid": true, "uuidv4": true, "uuidv7": true, "write_log": true,
}

// RowReads is what a plan tells of reading its rows again.
type RowReads struct {
	// Repeatable: every read within a statement gives the same rows.
	Repeatable bool
	// TablesOnly: the rows come from DuckDB tables only (no file, no range), which are cheap
	// to read again.
	TablesOnly bool
}

// ReadsOf reads a plan serialized by DuckDB's json_serialize_plan of a query that groups
// rows (sqlgen.GroupingSQL) and tells whether the rows it groups are the same at every read
// within a statement: besides its own aggregate, only repeatableOperators, scans of tables,
// Parquet files and ranges, and no volatile function. A plan DuckDB could not serialize (a
// CSV or JSON reader) is not repeatable. DuckDB's prefilter may read such rows twice instead
// of ranking them in one read (plan.Plan.RereadRows); on other rows the two reads could differ (a
// view's USING SAMPLE), and although the prefilter's bound holds even then, its rows would
// differ from the other bounding form's, which the executor chooses from the data (outside
// review).
func ReadsOf(serialized string) RowReads {
	plan, err := servedPlan(serialized)
	if err != nil {
		return RowReads{}
	}
	var root any
	if err := json.Unmarshal(plan, &root); err != nil {
		return RowReads{}
	}
	// The grouping itself is the one aggregate allowed.
	w := planWalk{tablesOnly: true}
	if !w.repeatable(root) || w.aggregates != 1 {
		return RowReads{}
	}
	return RowReads{Repeatable: true, TablesOnly: w.tablesOnly}
}

// planWalk counts a plan's aggregates and whether it scans tables only.
type planWalk struct {
	aggregates int
	tablesOnly bool
}

// repeatable walks an operator of a serialized plan and everything below it.
func (w *planWalk) repeatable(v any) bool {
	switch n := v.(type) {
	case map[string]any:
		if t, ok := n["type"].(string); ok && strings.HasPrefix(t, "LOGICAL_") {
			if t == "LOGICAL_AGGREGATE_AND_GROUP_BY" {
				w.aggregates++
			} else if !repeatableOperators[t] {
				return false
			}
			if name, _ := n["name"].(string); t == "LOGICAL_GET" {
				if !repeatableScans[name] {
					return false
				}
				w.tablesOnly = w.tablesOnly && name == "seq_scan"
			}
		}
		if class, _ := n["expression_class"].(string); class == "BOUND_FUNCTION" || class == "BOUND_AGGREGATE" {
			if name, _ := n["name"].(string); volatileFunctions[name] {
				return false
			}
		}
		for _, c := range n {
			if !w.repeatable(c) {
				return false
			}
		}
	case []any:
		for _, c := range n {
			if !w.repeatable(c) {
				return false
			}
		}
	}
	return true
}
