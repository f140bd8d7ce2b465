package duckfn

// AnalystDisabledOptimizers are the DuckDB optimizers analysts' sessions run without
// (disabled_optimizers, set and locked by backend/duckdb). Statistics propagation evaluates
// functions over each column's stored minimum and maximum while planning, where they can fail
// whatever the WHERE; a join's dynamic filter, pushed into a Parquet scan, makes the reader
// read bloom filters for the row groups the join's values fall in. The check of the filters
// a private view pushes into its Parquet scans (internal/store) plans with the same
// optimizers off, so that it sees the plan an analyst's query gets.
const AnalystDisabledOptimizers = "statistics_propagation,join_filter_pushdown"
