-- psql (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1), psql -E: \dn (query 1 of 1)
SELECT n.nspname AS "Name",
  pg_catalog.pg_get_userbyid(n.nspowner) AS "Owner"
FROM pg_catalog.pg_namespace n
WHERE n.nspname !~ '^pg_' AND n.nspname <> 'information_schema'
ORDER BY 1;
