-- pgjdbc 42.x (TypeInfoCache.java, github.com/pgjdbc/pgjdbc), getPGType(oid); ? parameters bound as literals
SELECT n.nspname = ANY(current_schemas(true)), n.nspname, t.typname FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON t.typnamespace = n.oid WHERE t.oid = 1043
