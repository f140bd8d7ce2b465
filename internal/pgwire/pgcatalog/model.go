package pgcatalog

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/internal/catalog"
)

// The model's schemas in its private DuckDB: pg_catalog.X is rewritten to catSchema.X and
// information_schema.X to infoSchema.X (DuckDB's own pg_catalog is a system schema that
// cannot hold tables).
const (
	catSchema  = "pgcat"
	infoSchema = "pginfo"
	// funcSchema holds the model's catalog functions; it is not on the search path, so that
	// DuckDB's own statements (the lockdown reads current_setting) are not affected.
	funcSchema = "pgfn"
)

// Fixed oids, PostgreSQL's where it has them.
const (
	oidPgCatalog  = 11
	oidPublic     = 2200
	oidInfoSchema = 13000
	oidOwner      = 10
	oidDatabase   = 16383
	oidHeap       = 2
	oidBtree      = 403
	oidPgClassRel = 1259
	firstRelOid   = 16384
	// ownerName is the owner every object is reported with.
	ownerName = "dpsql"
	// databaseName is current_database() and the one row of pg_database.
	databaseName = "dpsql"
)

// catTables are the pg_catalog tables of the model, with their columns (PostgreSQL 15's, as
// far as clients read them). The tables not filled by build stay empty.
var catTables = []struct{ name, cols string }{
	{"pg_namespace", "oid BIGINT, nspname VARCHAR, nspowner BIGINT, nspacl VARCHAR[]"},
	{"pg_class", `oid BIGINT, relname VARCHAR, relnamespace BIGINT, reltype BIGINT, reloftype BIGINT,
		relowner BIGINT, relam BIGINT, relfilenode BIGINT, reltablespace BIGINT, relpages INTEGER,
		reltuples REAL, relallvisible INTEGER, reltoastrelid BIGINT, relhasindex BOOLEAN,
		relisshared BOOLEAN, relpersistence VARCHAR, relkind VARCHAR, relnatts SMALLINT,
		relchecks SMALLINT, relhasrules BOOLEAN, relhastriggers BOOLEAN, relhassubclass BOOLEAN,
		relrowsecurity BOOLEAN, relforcerowsecurity BOOLEAN, relispopulated BOOLEAN,
		relreplident VARCHAR, relispartition BOOLEAN, relrewrite BIGINT, relfrozenxid BIGINT,
		relminmxid BIGINT, relacl VARCHAR[], reloptions VARCHAR[], relpartbound VARCHAR`},
	{"pg_attribute", `attrelid BIGINT, attname VARCHAR, atttypid BIGINT, attstattarget INTEGER,
		attlen SMALLINT, attnum SMALLINT, attndims INTEGER, attcacheoff INTEGER, atttypmod INTEGER,
		attbyval BOOLEAN, attalign VARCHAR, attstorage VARCHAR, attcompression VARCHAR,
		attnotnull BOOLEAN, atthasdef BOOLEAN, atthasmissing BOOLEAN, attidentity VARCHAR,
		attgenerated VARCHAR, attisdropped BOOLEAN, attislocal BOOLEAN, attinhcount INTEGER,
		attcollation BIGINT, attacl VARCHAR[], attoptions VARCHAR[], attfdwoptions VARCHAR[]`},
	{"pg_type", `oid BIGINT, typname VARCHAR, typnamespace BIGINT, typowner BIGINT, typlen SMALLINT,
		typbyval BOOLEAN, typtype VARCHAR, typcategory VARCHAR, typispreferred BOOLEAN,
		typisdefined BOOLEAN, typdelim VARCHAR, typrelid BIGINT, typsubscript VARCHAR, typelem BIGINT,
		typarray BIGINT, typinput VARCHAR, typoutput VARCHAR, typreceive VARCHAR, typsend VARCHAR,
		typmodin VARCHAR, typmodout VARCHAR, typanalyze VARCHAR, typalign VARCHAR, typstorage VARCHAR,
		typnotnull BOOLEAN, typbasetype BIGINT, typtypmod INTEGER, typndims INTEGER,
		typcollation BIGINT, typdefaultbin VARCHAR, typdefault VARCHAR, typacl VARCHAR[]`},
	{"pg_description", "objoid BIGINT, classoid BIGINT, objsubid INTEGER, description VARCHAR"},
	{"pg_am", "oid BIGINT, amname VARCHAR, amhandler VARCHAR, amtype VARCHAR"},
	{"pg_attrdef", "oid BIGINT, adrelid BIGINT, adnum SMALLINT, adbin VARCHAR"},
	{"pg_collation", `oid BIGINT, collname VARCHAR, collnamespace BIGINT, collowner BIGINT,
		collprovider VARCHAR, collisdeterministic BOOLEAN, collencoding INTEGER, collcollate VARCHAR,
		collctype VARCHAR, colliculocale VARCHAR, collversion VARCHAR`},
	{"pg_index", `indexrelid BIGINT, indrelid BIGINT, indnatts SMALLINT, indnkeyatts SMALLINT,
		indisunique BOOLEAN, indisprimary BOOLEAN, indisexclusion BOOLEAN, indimmediate BOOLEAN,
		indisclustered BOOLEAN, indisvalid BOOLEAN, indcheckxmin BOOLEAN, indisready BOOLEAN,
		indislive BOOLEAN, indisreplident BOOLEAN, indkey SMALLINT[], indcollation BIGINT[],
		indclass BIGINT[], indoption SMALLINT[], indexprs VARCHAR, indpred VARCHAR`},
	{"pg_constraint", `oid BIGINT, conname VARCHAR, connamespace BIGINT, contype VARCHAR,
		condeferrable BOOLEAN, condeferred BOOLEAN, convalidated BOOLEAN, conrelid BIGINT,
		contypid BIGINT, conindid BIGINT, conparentid BIGINT, confrelid BIGINT, confupdtype VARCHAR,
		confdeltype VARCHAR, confmatchtype VARCHAR, conislocal BOOLEAN, coninhcount INTEGER,
		connoinherit BOOLEAN, conkey SMALLINT[], confkey SMALLINT[], conbin VARCHAR`},
	{"pg_policy", `oid BIGINT, polname VARCHAR, polrelid BIGINT, polcmd VARCHAR, polpermissive BOOLEAN,
		polroles BIGINT[], polqual VARCHAR, polwithcheck VARCHAR`},
	{"pg_statistic_ext", `oid BIGINT, stxrelid BIGINT, stxname VARCHAR, stxnamespace BIGINT,
		stxowner BIGINT, stxstattarget INTEGER, stxkeys SMALLINT[], stxkind VARCHAR[], stxexprs VARCHAR`},
	{"pg_publication", `oid BIGINT, pubname VARCHAR, pubowner BIGINT, puballtables BOOLEAN,
		pubinsert BOOLEAN, pubupdate BOOLEAN, pubdelete BOOLEAN, pubtruncate BOOLEAN, pubviaroot BOOLEAN`},
	{"pg_publication_namespace", "oid BIGINT, pnpubid BIGINT, pnnspid BIGINT"},
	{"pg_publication_rel", "oid BIGINT, prpubid BIGINT, prrelid BIGINT, prqual VARCHAR, prattrs SMALLINT[]"},
	{"pg_inherits", "inhrelid BIGINT, inhparent BIGINT, inhseqno INTEGER, inhdetachpending BOOLEAN"},
	{"pg_database", `oid BIGINT, datname VARCHAR, datdba BIGINT, encoding INTEGER, datlocprovider VARCHAR,
		datistemplate BOOLEAN, datallowconn BOOLEAN, datconnlimit INTEGER, datfrozenxid BIGINT,
		datminmxid BIGINT, dattablespace BIGINT, datcollate VARCHAR, datctype VARCHAR,
		daticulocale VARCHAR, datcollversion VARCHAR, datacl VARCHAR[]`},
	{"pg_roles", `oid BIGINT, rolname VARCHAR, rolsuper BOOLEAN, rolinherit BOOLEAN, rolcreaterole BOOLEAN,
		rolcreatedb BOOLEAN, rolcanlogin BOOLEAN, rolreplication BOOLEAN, rolconnlimit INTEGER,
		rolpassword VARCHAR, rolvaliduntil TIMESTAMPTZ, rolbypassrls BOOLEAN, rolconfig VARCHAR[]`},
	{"pg_user", `usename VARCHAR, usesysid BIGINT, usecreatedb BOOLEAN, usesuper BOOLEAN, userepl BOOLEAN,
		usebypassrls BOOLEAN, passwd VARCHAR, valuntil TIMESTAMPTZ, useconfig VARCHAR[]`},
	{"pg_proc", `oid BIGINT, proname VARCHAR, pronamespace BIGINT, proowner BIGINT, prolang BIGINT,
		prokind VARCHAR, proretset BOOLEAN, prorettype BIGINT, pronargs SMALLINT, proargtypes BIGINT[],
		proargnames VARCHAR[], prosrc VARCHAR`},
	{"pg_tables", `schemaname VARCHAR, tablename VARCHAR, tableowner VARCHAR, tablespace VARCHAR,
		hasindexes BOOLEAN, hasrules BOOLEAN, hastriggers BOOLEAN, rowsecurity BOOLEAN`},
	{"pg_views", "schemaname VARCHAR, viewname VARCHAR, viewowner VARCHAR, definition VARCHAR"},
	{"pg_matviews", `schemaname VARCHAR, matviewname VARCHAR, matviewowner VARCHAR, tablespace VARCHAR,
		hasindexes BOOLEAN, ispopulated BOOLEAN, definition VARCHAR`},
	{"pg_indexes", "schemaname VARCHAR, tablename VARCHAR, indexname VARCHAR, tablespace VARCHAR, indexdef VARCHAR"},
	{"pg_tablespace", "oid BIGINT, spcname VARCHAR, spcowner BIGINT, spcacl VARCHAR[], spcoptions VARCHAR[]"},
	{"pg_trigger", `oid BIGINT, tgrelid BIGINT, tgparentid BIGINT, tgname VARCHAR, tgfoid BIGINT,
		tgtype SMALLINT, tgenabled VARCHAR, tgisinternal BOOLEAN, tgconstrrelid BIGINT,
		tgconstrindid BIGINT, tgconstraint BIGINT, tgdeferrable BOOLEAN, tginitdeferred BOOLEAN,
		tgnargs SMALLINT, tgattr SMALLINT[], tgqual VARCHAR`},
	{"pg_rewrite", "oid BIGINT, rulename VARCHAR, ev_class BIGINT, ev_type VARCHAR, ev_enabled VARCHAR, is_instead BOOLEAN"},
	{"pg_enum", "oid BIGINT, enumtypid BIGINT, enumsortorder REAL, enumlabel VARCHAR"},
	{"pg_range", "rngtypid BIGINT, rngsubtype BIGINT, rngmultitypid BIGINT, rngcollation BIGINT"},
	{"pg_extension", `oid BIGINT, extname VARCHAR, extowner BIGINT, extnamespace BIGINT,
		extrelocatable BOOLEAN, extversion VARCHAR`},
	{"pg_sequence", `seqrelid BIGINT, seqtypid BIGINT, seqstart BIGINT, seqincrement BIGINT, seqmax BIGINT,
		seqmin BIGINT, seqcache BIGINT, seqcycle BOOLEAN`},
	{"pg_depend", `classid BIGINT, objid BIGINT, objsubid INTEGER, refclassid BIGINT, refobjid BIGINT,
		refobjsubid INTEGER, deptype VARCHAR`},
	{"pg_foreign_table", "ftrelid BIGINT, ftserver BIGINT, ftoptions VARCHAR[]"},
	{"pg_settings", "name VARCHAR, setting VARCHAR, unit VARCHAR, category VARCHAR, short_desc VARCHAR, vartype VARCHAR"},
	{"pg_event_trigger", "oid BIGINT, evtname VARCHAR, evtevent VARCHAR, evtowner BIGINT, evtfoid BIGINT, evtenabled VARCHAR, evttags VARCHAR[]"},
	{"pg_language", "oid BIGINT, lanname VARCHAR, lanowner BIGINT, lanispl BOOLEAN, lanpltrusted BOOLEAN"},
	{"pg_operator", "oid BIGINT, oprname VARCHAR, oprnamespace BIGINT, oprowner BIGINT, oprkind VARCHAR, oprleft BIGINT, oprright BIGINT, oprresult BIGINT"},
	{"pg_cast", "oid BIGINT, castsource BIGINT, casttarget BIGINT, castfunc BIGINT, castcontext VARCHAR, castmethod VARCHAR"},
	{"pg_auth_members", "oid BIGINT, roleid BIGINT, member BIGINT, grantor BIGINT, admin_option BOOLEAN"},
}

// infoTables are the information_schema views of the model.
var infoTables = []struct{ name, cols string }{
	{"schemata", `catalog_name VARCHAR, schema_name VARCHAR, schema_owner VARCHAR,
		default_character_set_catalog VARCHAR, default_character_set_schema VARCHAR,
		default_character_set_name VARCHAR, sql_path VARCHAR`},
	{"tables", `table_catalog VARCHAR, table_schema VARCHAR, table_name VARCHAR, table_type VARCHAR,
		self_referencing_column_name VARCHAR, reference_generation VARCHAR,
		user_defined_type_catalog VARCHAR, user_defined_type_schema VARCHAR,
		user_defined_type_name VARCHAR, is_insertable_into VARCHAR, is_typed VARCHAR, commit_action VARCHAR`},
	{"columns", `table_catalog VARCHAR, table_schema VARCHAR, table_name VARCHAR, column_name VARCHAR,
		ordinal_position INTEGER, column_default VARCHAR, is_nullable VARCHAR, data_type VARCHAR,
		character_maximum_length INTEGER, character_octet_length INTEGER, numeric_precision INTEGER,
		numeric_precision_radix INTEGER, numeric_scale INTEGER, datetime_precision INTEGER,
		interval_type VARCHAR, interval_precision INTEGER, character_set_catalog VARCHAR,
		character_set_schema VARCHAR, character_set_name VARCHAR, collation_catalog VARCHAR,
		collation_schema VARCHAR, collation_name VARCHAR, domain_catalog VARCHAR, domain_schema VARCHAR,
		domain_name VARCHAR, udt_catalog VARCHAR, udt_schema VARCHAR, udt_name VARCHAR,
		scope_catalog VARCHAR, scope_schema VARCHAR, scope_name VARCHAR, maximum_cardinality INTEGER,
		dtd_identifier VARCHAR, is_self_referencing VARCHAR, is_identity VARCHAR,
		identity_generation VARCHAR, identity_start VARCHAR, identity_increment VARCHAR,
		identity_maximum VARCHAR, identity_minimum VARCHAR, identity_cycle VARCHAR,
		is_generated VARCHAR, generation_expression VARCHAR, is_updatable VARCHAR`},
	{"views", `table_catalog VARCHAR, table_schema VARCHAR, table_name VARCHAR, view_definition VARCHAR,
		check_option VARCHAR, is_updatable VARCHAR, is_insertable_into VARCHAR,
		is_trigger_updatable VARCHAR, is_trigger_deletable VARCHAR, is_trigger_insertable_into VARCHAR`},
	{"table_constraints", `constraint_catalog VARCHAR, constraint_schema VARCHAR, constraint_name VARCHAR,
		table_catalog VARCHAR, table_schema VARCHAR, table_name VARCHAR, constraint_type VARCHAR,
		is_deferrable VARCHAR, initially_deferred VARCHAR, enforced VARCHAR, nulls_distinct VARCHAR`},
	{"key_column_usage", `constraint_catalog VARCHAR, constraint_schema VARCHAR, constraint_name VARCHAR,
		table_catalog VARCHAR, table_schema VARCHAR, table_name VARCHAR, column_name VARCHAR,
		ordinal_position INTEGER, position_in_unique_constraint INTEGER`},
	{"referential_constraints", `constraint_catalog VARCHAR, constraint_schema VARCHAR, constraint_name VARCHAR,
		unique_constraint_catalog VARCHAR, unique_constraint_schema VARCHAR, unique_constraint_name VARCHAR,
		match_option VARCHAR, update_rule VARCHAR, delete_rule VARCHAR`},
	{"constraint_column_usage", `table_catalog VARCHAR, table_schema VARCHAR, table_name VARCHAR,
		column_name VARCHAR, constraint_catalog VARCHAR, constraint_schema VARCHAR, constraint_name VARCHAR`},
	{"check_constraints", "constraint_catalog VARCHAR, constraint_schema VARCHAR, constraint_name VARCHAR, check_clause VARCHAR"},
	{"routines", `specific_catalog VARCHAR, specific_schema VARCHAR, specific_name VARCHAR, routine_catalog VARCHAR,
		routine_schema VARCHAR, routine_name VARCHAR, routine_type VARCHAR, data_type VARCHAR`},
	{"parameters", `specific_catalog VARCHAR, specific_schema VARCHAR, specific_name VARCHAR,
		ordinal_position INTEGER, parameter_mode VARCHAR, parameter_name VARCHAR, data_type VARCHAR`},
	{"sequences", `sequence_catalog VARCHAR, sequence_schema VARCHAR, sequence_name VARCHAR, data_type VARCHAR`},
	{"triggers", `trigger_catalog VARCHAR, trigger_schema VARCHAR, trigger_name VARCHAR, event_manipulation VARCHAR,
		event_object_catalog VARCHAR, event_object_schema VARCHAR, event_object_table VARCHAR, action_statement VARCHAR`},
	{"enabled_roles", "role_name VARCHAR"},
}

// macros are the catalog functions of the model, in funcSchema (DuckDB macros; overloads are
// separated by commas). Privileges are all granted: the model holds only what the analyst may
// name.
var macros = []struct{ name, body string }{
	{"pg_get_userbyid", "(r) AS '" + ownerName + "'"},
	{"pg_table_is_visible", "(r) AS true"},
	{"pg_type_is_visible", "(t) AS true"},
	{"pg_function_is_visible", "(f) AS true"},
	{"format_type", `(t, m) AS coalesce(
		(SELECT f.display FROM ` + catSchema + `.dpsql_format f WHERE f.oid = t AND f.typmod = coalesce(m, -1)),
		(SELECT f.display FROM ` + catSchema + `.dpsql_format f WHERE f.oid = t AND f.typmod = -1),
		CASE WHEN t IS NOT NULL THEN '???' END)`},
	{"obj_description", `(o) AS (SELECT min(d.description) FROM ` + catSchema + `.pg_description d WHERE d.objoid = o AND d.objsubid = 0),
		(o, c) AS (SELECT min(d.description) FROM ` + catSchema + `.pg_description d WHERE d.objoid = o AND d.objsubid = 0)`},
	{"col_description", `(o, n) AS (SELECT min(d.description) FROM ` + catSchema + `.pg_description d WHERE d.objoid = o AND d.objsubid = n)`},
	{"shobj_description", "(o, c) AS NULL::VARCHAR"},
	{"pg_get_expr", "(e, r) AS NULL::VARCHAR, (e, r, p) AS NULL::VARCHAR"},
	{"pg_get_indexdef", "(i) AS NULL::VARCHAR, (i, c, p) AS NULL::VARCHAR"},
	{"pg_get_constraintdef", "(c) AS NULL::VARCHAR, (c, p) AS NULL::VARCHAR"},
	{"pg_get_viewdef", "(v) AS NULL::VARCHAR, (v, p) AS NULL::VARCHAR"},
	{"pg_get_triggerdef", "(t) AS NULL::VARCHAR, (t, p) AS NULL::VARCHAR"},
	{"pg_get_ruledef", "(t) AS NULL::VARCHAR, (t, p) AS NULL::VARCHAR"},
	{"pg_get_functiondef", "(f) AS NULL::VARCHAR"},
	{"pg_get_function_arguments", "(f) AS NULL::VARCHAR"},
	{"pg_get_function_identity_arguments", "(f) AS NULL::VARCHAR"},
	{"pg_get_function_result", "(f) AS NULL::VARCHAR"},
	{"pg_get_statisticsobjdef_columns", "(s) AS NULL::VARCHAR"},
	{"pg_get_partkeydef", "(r) AS NULL::VARCHAR"},
	{"pg_get_serial_sequence", "(t, c) AS NULL::VARCHAR"},
	{"pg_relation_is_publishable", "(r) AS false"},
	{"pg_table_size", "(r) AS 0::BIGINT"},
	{"pg_relation_size", "(r) AS 0::BIGINT, (r, f) AS 0::BIGINT"},
	{"pg_total_relation_size", "(r) AS 0::BIGINT"},
	{"pg_indexes_size", "(r) AS 0::BIGINT"},
	{"pg_database_size", "(d) AS 0::BIGINT"},
	{"pg_size_pretty", "(s) AS CAST(s AS VARCHAR) || ' bytes'"},
	{"pg_encoding_to_char", "(e) AS 'UTF8'"},
	{"pg_is_in_recovery", "() AS false"},
	{"pg_backend_pid", "() AS 0"},
	{"pg_has_role", "(r, p) AS false, (u, r, p) AS false"},
	{"has_table_privilege", "(t, p) AS true, (u, t, p) AS true"},
	{"has_schema_privilege", "(s, p) AS true, (u, s, p) AS true"},
	{"has_database_privilege", "(d, p) AS true, (u, d, p) AS true"},
	{"has_type_privilege", "(t, p) AS true, (u, t, p) AS true"},
	{"has_column_privilege", "(t, c, p) AS true, (u, t, c, p) AS true"},
	{"has_function_privilege", "(f, p) AS true, (u, f, p) AS true"},
	{"has_sequence_privilege", "(s, p) AS true, (u, s, p) AS true"},
	{"array_upper", "(a, d) AS CASE WHEN len(a) > 0 THEN len(a) END"},
	{"array_lower", "(a, d) AS CASE WHEN len(a) > 0 THEN 1 END"},
	{"current_schemas", "(i) AS CASE WHEN i THEN ['pg_catalog', 'public'] ELSE ['public'] END"},
	{"current_schema", "() AS 'public'"},
	{"current_database", "() AS '" + databaseName + "'"},
	{"version", "() AS 'PostgreSQL 15.0 (dpsql catalog model)'"},
	{"current_setting", `(n) AS ` + settingCase + `, (n, m) AS ` + settingCase},
	{"regclass_out", "(o) AS coalesce((SELECT min(c.relname) FROM " + catSchema + ".pg_class c WHERE c.oid = o), CAST(o AS VARCHAR))"},
	{"regnamespace_out", "(o) AS coalesce((SELECT min(n.nspname) FROM " + catSchema + ".pg_namespace n WHERE n.oid = o), CAST(o AS VARCHAR))"},
	{"regclass_in", "(s) AS (SELECT min(c.oid) FROM " + catSchema + ".pg_class c WHERE c.relname = s)"},
	{"regtype_in", "(s) AS (SELECT min(t.oid) FROM " + catSchema + ".pg_type t WHERE t.typname = s OR " + funcSchema + ".format_type(t.oid, NULL) = s)"},
	{"regnamespace_in", "(s) AS (SELECT min(n.oid) FROM " + catSchema + ".pg_namespace n WHERE n.nspname = s)"},
}

// settingCase answers current_setting for the settings clients ask about; NULL otherwise
// (never DuckDB's settings).
const settingCase = `CASE lower(n) WHEN 'server_version' THEN '15.0' WHEN 'server_version_num' THEN '150000'
	WHEN 'search_path' THEN '"$user", public' WHEN 'standard_conforming_strings' THEN 'on'
	WHEN 'server_encoding' THEN 'UTF8' WHEN 'client_encoding' THEN 'UTF8' WHEN 'datestyle' THEN 'ISO, MDY'
	WHEN 'integer_datetimes' THEN 'on' WHEN 'max_identifier_length' THEN '63'
	WHEN 'default_transaction_read_only' THEN 'on' WHEN 'transaction_read_only' THEN 'on'
	WHEN 'is_superuser' THEN 'off' WHEN 'timezone' THEN 'UTC' END`

// infoMacros are information_schema's functions.
var infoMacros = []struct{ name, body string }{
	{"_pg_expandarray", "(a) AS {'x': NULL::SMALLINT, 'n': NULL::INTEGER}"},
}

// catNames and infoNames are the model's table names, funcNames its catalog function names.
var catNames, infoNames, funcNames, infoFuncNames = map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}

func init() {
	for _, t := range catTables {
		catNames[t.name] = true
	}
	catNames["dpsql_format"] = true
	for _, t := range infoTables {
		infoNames[t.name] = true
	}
	for _, m := range macros {
		funcNames[m.name] = true
	}
	for _, m := range infoMacros {
		infoFuncNames[m.name] = true
	}
}

// lit renders a SQL literal of a Go value (string, int64, int, bool or nil).
func lit(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case int64:
		return strconv.FormatInt(v, 10)
	case int:
		return strconv.Itoa(v)
	case bool:
		if v {
			return "true"
		}
		return "false"
	}
	panic(fmt.Sprintf("pgcatalog: no literal for %T", v))
}

// insert renders INSERT INTO schema.table BY NAME with the given named values per row; the
// columns not named are NULL.
type inserts struct{ stmts []string }

func (ins *inserts) add(table string, cols []string, rows ...[]any) {
	if len(rows) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO %s (%s) VALUES ", table, strings.Join(cols, ", "))
	for i, r := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(")
		for j, v := range r {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(lit(v))
		}
		b.WriteString(")")
	}
	ins.stmts = append(ins.stmts, b.String())
}

// relName splits a catalog relation name into the schema clients see and the table name:
// dpsql's unqualified names are in "public"; "schema.table" names keep their schema.
func relName(name string) (schema, table string) {
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		return name[:i], name[i+1:]
	}
	return "public", name
}

// description is what clients show as a relation's comment: its policy.
func description(r *catalog.Relation) string {
	if r.Kind == catalog.Private {
		return "private (privacy unit: " + r.PrivacyUnit + ")"
	}
	return "public"
}

// modelSQL returns the statements that create the model of rels: schemas, tables, macros and
// rows. Only Private and Public relations are modelled, sorted by name; nothing of dpsql's own
// "dpsql" schema is.
func modelSQL(rels []*catalog.Relation) []string {
	rels = catalog.New(rels...).Relations()
	var stmts []string
	stmts = append(stmts, "CREATE SCHEMA "+catSchema, "CREATE SCHEMA "+infoSchema, "CREATE SCHEMA "+funcSchema,
		"CREATE TABLE "+catSchema+".dpsql_format (oid BIGINT, typmod INTEGER, display VARCHAR)")
	for _, t := range catTables {
		stmts = append(stmts, fmt.Sprintf("CREATE TABLE %s.%s (%s)", catSchema, t.name, t.cols))
	}
	for _, t := range infoTables {
		stmts = append(stmts, fmt.Sprintf("CREATE TABLE %s.%s (%s)", infoSchema, t.name, t.cols))
	}
	for _, m := range macros {
		stmts = append(stmts, fmt.Sprintf("CREATE MACRO %s.%s%s", funcSchema, m.name, m.body))
	}
	for _, m := range infoMacros {
		stmts = append(stmts, fmt.Sprintf("CREATE MACRO %s.%s%s", infoSchema, m.name, m.body))
	}

	ins := &inserts{}
	q := func(t string) string { return catSchema + "." + t }
	qi := func(t string) string { return infoSchema + "." + t }

	// Schemas: pg_catalog, information_schema, public and those of qualified relation names.
	nsOid := map[string]int64{"pg_catalog": oidPgCatalog, "public": oidPublic, "information_schema": oidInfoSchema}
	nsNames := []string{"pg_catalog", "public", "information_schema"}
	next := int64(firstRelOid)
	for _, r := range rels {
		if s, _ := relName(r.Name); nsOid[s] == 0 {
			nsOid[s] = next
			nsNames = append(nsNames, s)
			next++
		}
	}
	var nsRows, schemata [][]any
	for _, n := range nsNames {
		nsRows = append(nsRows, []any{nsOid[n], n, int64(oidOwner)})
		schemata = append(schemata, []any{databaseName, n, ownerName})
	}
	ins.add(q("pg_namespace"), []string{"oid", "nspname", "nspowner"}, nsRows...)
	ins.add(qi("schemata"), []string{"catalog_name", "schema_name", "schema_owner"}, schemata...)

	ins.add(q("pg_am"), []string{"oid", "amname", "amhandler", "amtype"},
		[]any{int64(oidHeap), "heap", "heap_tableam_handler", "t"}, []any{int64(oidBtree), "btree", "bthandler", "i"})
	ins.add(q("pg_database"), []string{"oid", "datname", "datdba", "encoding", "datlocprovider", "datistemplate",
		"datallowconn", "datconnlimit", "dattablespace", "datcollate", "datctype"},
		[]any{int64(oidDatabase), databaseName, int64(oidOwner), int64(6), "c", false, true, int64(-1), int64(1663), "C.UTF-8", "C.UTF-8"})
	ins.add(q("pg_roles"), []string{"oid", "rolname", "rolsuper", "rolinherit", "rolcreaterole", "rolcreatedb",
		"rolcanlogin", "rolreplication", "rolconnlimit", "rolbypassrls"},
		[]any{int64(oidOwner), ownerName, false, true, false, false, true, false, int64(-1), false})
	ins.add(q("pg_tablespace"), []string{"oid", "spcname", "spcowner"},
		[]any{int64(1663), "pg_default", int64(oidOwner)})
	ins.add(q("pg_class"), []string{"oid", "relname", "relnamespace", "relowner", "relam", "relkind", "relpersistence",
		"relnatts", "relchecks", "relhasindex", "relisshared", "relhasrules", "relhastriggers", "relhassubclass",
		"relrowsecurity", "relforcerowsecurity", "relispopulated", "relreplident", "relispartition",
		"reltablespace", "reloftype", "reltoastrelid", "reltype"},
		[]any{int64(oidPgClassRel), "pg_class", int64(oidPgCatalog), int64(oidOwner), int64(oidHeap), "r", "p", int64(33),
			int64(0), false, false, false, false, false, false, false, true, "n", false, int64(0), int64(0), int64(0), int64(0)})

	// Types and their arrays.
	var typeRows, formats [][]any
	typeCols := []string{"oid", "typname", "typnamespace", "typowner", "typlen", "typbyval", "typtype", "typcategory",
		"typispreferred", "typisdefined", "typdelim", "typrelid", "typelem", "typarray", "typinput", "typoutput",
		"typalign", "typstorage", "typnotnull", "typbasetype", "typtypmod", "typndims", "typcollation"}
	for _, t := range standardTypes {
		var coll int64
		if t.category == "S" {
			coll = 100
		}
		byval := t.length > 0 && t.length <= 8
		typeRows = append(typeRows,
			[]any{t.oid, t.name, int64(oidPgCatalog), int64(oidOwner), t.length, byval, "b", t.category, false, true, ",",
				int64(0), int64(0), t.array, t.input, strings.TrimSuffix(strings.TrimSuffix(t.input, "in"), "_") + "out",
				"i", "p", false, int64(0), int64(-1), int64(0), coll},
			[]any{t.array, "_" + t.name, int64(oidPgCatalog), int64(oidOwner), int64(-1), false, "b", "A", false, true, ",",
				int64(0), t.oid, int64(0), "array_in", "array_out", "i", "x", false, int64(0), int64(-1), int64(0), coll})
		formats = append(formats, []any{t.oid, int64(-1), t.display}, []any{t.array, int64(-1), t.display + "[]"})
	}
	ins.add(q("pg_type"), typeCols, typeRows...)

	// Relations, their columns and descriptions.
	var classRows, attRows, descRows, tableRows, colRows, pgTables [][]any
	seenFmt := map[[2]int64]bool{}
	for _, r := range rels {
		schema, table := relName(r.Name)
		oid := next
		next++
		classRows = append(classRows, []any{oid, table, nsOid[schema], int64(oidOwner), int64(oidHeap), "r", "p",
			int64(len(r.Columns)), int64(0), false, false, false, false, false, false, false, true, "d", false,
			int64(0), int64(0), int64(0), int64(0)})
		descRows = append(descRows, []any{oid, int64(oidPgClassRel), int64(0), description(r)})
		tableRows = append(tableRows, []any{databaseName, schema, table, "BASE TABLE", "NO", "NO"})
		pgTables = append(pgTables, []any{schema, table, ownerName, false, false, false, false})
		for i, c := range r.Columns {
			ct := columnType(c.Type)
			num := int64(i + 1)
			storage := "p"
			if ct.length < 0 {
				storage = "x"
			}
			attRows = append(attRows, []any{oid, c.Name, ct.oid, int64(-1), ct.length, num, ct.ndims, ct.typmod,
				ct.length > 0 && ct.length <= 8, "i", storage, "", false, false, false, "", "", false, true, int64(0), int64(0)})
			if k := [2]int64{ct.oid, ct.typmod}; !seenFmt[k] && ct.typmod != -1 {
				seenFmt[k] = true
				formats = append(formats, []any{ct.oid, ct.typmod, ct.display})
			}
			if r.Kind == catalog.Private && catalog.SameName(c.Name, r.PrivacyUnit) {
				descRows = append(descRows, []any{oid, int64(oidPgClassRel), num, "privacy unit"})
			}
			var numPrec, numRadix, numScale, charLen, dtPrec any
			switch {
			case ct.udt == "int2":
				numPrec, numRadix, numScale = int64(16), int64(2), int64(0)
			case ct.udt == "int4":
				numPrec, numRadix, numScale = int64(32), int64(2), int64(0)
			case ct.udt == "int8":
				numPrec, numRadix, numScale = int64(64), int64(2), int64(0)
			case ct.udt == "float4":
				numPrec, numRadix = int64(24), int64(2)
			case ct.udt == "float8":
				numPrec, numRadix = int64(53), int64(2)
			case ct.udt == "numeric":
				numRadix = int64(10)
				if ct.precision >= 0 {
					numPrec, numScale = ct.precision, ct.scale
				}
			case ct.charLength >= 0:
				charLen = ct.charLength
			case ct.udt == "date":
				dtPrec = int64(0)
			case ct.udt == "time" || ct.udt == "timetz" || ct.udt == "timestamp" || ct.udt == "timestamptz" || ct.udt == "interval":
				dtPrec = int64(6)
			}
			colRows = append(colRows, []any{databaseName, schema, table, c.Name, num, "YES", ct.info, charLen,
				numPrec, numRadix, numScale, dtPrec, databaseName, "pg_catalog", ct.udt, strconv.FormatInt(num, 10),
				"NO", "NO", "NEVER", "YES"})
		}
	}
	ins.add(q("pg_class"), []string{"oid", "relname", "relnamespace", "relowner", "relam", "relkind", "relpersistence",
		"relnatts", "relchecks", "relhasindex", "relisshared", "relhasrules", "relhastriggers", "relhassubclass",
		"relrowsecurity", "relforcerowsecurity", "relispopulated", "relreplident", "relispartition",
		"reltablespace", "reloftype", "reltoastrelid", "reltype"}, classRows...)
	ins.add(q("pg_attribute"), []string{"attrelid", "attname", "atttypid", "attstattarget", "attlen", "attnum",
		"attndims", "atttypmod", "attbyval", "attalign", "attstorage", "attcompression", "attnotnull", "atthasdef",
		"atthasmissing", "attidentity", "attgenerated", "attisdropped", "attislocal", "attinhcount", "attcollation"},
		attRows...)
	ins.add(q("pg_description"), []string{"objoid", "classoid", "objsubid", "description"}, descRows...)
	ins.add(q("dpsql_format"), []string{"oid", "typmod", "display"}, formats...)
	ins.add(q("pg_tables"), []string{"schemaname", "tablename", "tableowner", "hasindexes", "hasrules",
		"hastriggers", "rowsecurity"}, pgTables...)
	ins.add(qi("tables"), []string{"table_catalog", "table_schema", "table_name", "table_type", "is_insertable_into",
		"is_typed"}, tableRows...)
	ins.add(qi("columns"), []string{"table_catalog", "table_schema", "table_name", "column_name", "ordinal_position",
		"is_nullable", "data_type", "character_maximum_length", "numeric_precision", "numeric_precision_radix",
		"numeric_scale", "datetime_precision", "udt_catalog", "udt_schema", "udt_name", "dtd_identifier",
		"is_self_referencing", "is_identity", "is_generated", "is_updatable"}, colRows...)
	ins.add(qi("enabled_roles"), []string{"role_name"}, []any{ownerName})
	return append(stmts, ins.stmts...)
}
