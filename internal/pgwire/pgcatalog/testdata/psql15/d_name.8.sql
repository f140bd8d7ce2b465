-- psql (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1), psql -E: \d professors (query 8 of 9)
SELECT c.oid::pg_catalog.regclass
FROM pg_catalog.pg_class c, pg_catalog.pg_inherits i
WHERE c.oid = i.inhparent AND i.inhrelid = '16384'
  AND c.relkind != 'p' AND c.relkind != 'I'
ORDER BY inhseqno;
