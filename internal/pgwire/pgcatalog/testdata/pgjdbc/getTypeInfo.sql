-- pgjdbc 42.x (PgDatabaseMetaData.java, github.com/pgjdbc/pgjdbc), getTypeInfo(); ? parameters bound as literals
SELECT t.typname,t.oid FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON (t.typnamespace = n.oid)  WHERE n.nspname  != 'pg_toast' AND  (t.typrelid = 0 OR (SELECT c.relkind = 'c' FROM pg_catalog.pg_class c WHERE c.oid = t.typrelid))
