// Package pgcatalog answers PostgreSQL clients' catalog queries (psql's backslash commands,
// JDBC's DatabaseMetaData, BI tools' information_schema introspection) for dpsql serve.
//
// # Approach
//
// Query never reads the real database. For each distinct relation set (cached, at most
// modelCacheSize sets) it builds a private in-memory DuckDB holding a hand-made model of
// PostgreSQL 15's catalog: tables named like pg_catalog's (schema pgcat) and
// information_schema's (schema pginfo), filled only from the relations it is given (names,
// columns and their types mapped to PostgreSQL types, a description "private (privacy unit:
// uid)" or "public" per relation and "privacy unit" on that column) and PostgreSQL's standard
// types; catalog functions (format_type, pg_get_userbyid, obj_description, current_schemas,
// has_*_privilege, ...) are macros in schema pgfn. Relations are reported in schema "public"
// (or the schema of a "schema.table" name), owned by "dpsql", in database "dpsql"; Hidden
// relations and dpsql's own schema are not in the model. The model database is then locked
// down like an analyst's (backend/duckdb analyst mode: no external access, no extension
// loading, configuration locked, one SELECT per query in a read-only transaction).
//
// A client's text is rewritten token by token (rewrite.go): pg_catalog.x and
// information_schema.x name the model, OPERATOR(pg_catalog.~) and COLLATE clauses go,
// PostgreSQL casts (::oid, ::pg_catalog.text, ::int2[]) become DuckDB's, reg* casts become
// lookups in the model ('pg_class'::regclass, c.oid::regclass), ~ finds a match anywhere as in
// PostgreSQL, and generate_series/unnest aliases name their column. The result is parsed by
// DuckDB's own parser (json_serialize_sql) and refused (ErrRefused) unless it is one SELECT
// that reads only model tables (or its non-recursive CTEs) and calls only the model's
// functions and an allow list (allowedFuncs: what the captured psql, pgjdbc and
// information_schema queries of testdata call, listed by TestAllowedFuncsCoverTestdata, and
// plain helpers such as lower, coalesce, length, substring, count). Catalog queries cost no
// budget, so nothing that reads outside the model (settings, files, DuckDB's catalog) and
// nothing whose output size an argument sets (repeat, lpad, format widths, range,
// list_resize, WITH RECURSIVE) is allowed: generate_series only as a table function with
// bounds within ±5000 or array_upper(list, 1) of a model list, replace only with constant
// patterns and not nested. Result columns are named as PostgreSQL names them (aliases
// folded to lower case unless quoted, function names, "?column?").
//
// What the allow list still lets grow (cross joins, string_agg over them) is bounded while it
// runs: the model DuckDB's 128 MB memory limit and Timeout (5 s), at most MaxConcurrent (4)
// catalog queries at once server-wide (the others wait under their caller's context), and a
// result of at most MaxRows (10000) rows and MaxBytes (8 MiB) of text, counted while it is
// converted to Go values; a larger one is an error (ErrTooLarge), never a partial answer.
// (Review finding H3: one query of repeat('x', 1000000) over a cross join took the server to
// 2.4 GB, four at once killed it.)
//
// # Limits
//
//   - Parameters ($1) are not bound here: the caller substitutes them before Query.
//   - Every relation is a table ('r'), with nullable columns, no indexes, constraints,
//     defaults or policies; \dv lists nothing. Sizes are 0.
//   - Types PostgreSQL has no name for (STRUCT, MAP, ...) are shown as text.
//   - Only what psql 15, pgjdbc 42.x and information_schema tables/columns/schemata need is
//     modelled; a query that uses another catalog table or a PostgreSQL-only construct the
//     rewrite does not know fails with DuckDB's error.
//   - Unqualified catalog table names (FROM pg_class) resolve through the model DuckDB's
//     search_path.
package pgcatalog
