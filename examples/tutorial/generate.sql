-- Generates visits.csv, the tutorial's data (docs/tutorial.md): visits of 600 members to the
-- five branches of an invented sports centre in 2026. Every value is computed from hashes of
-- row numbers: no real person is in it. Run from the repository root, as the owner of an
-- in-memory database:
--   dpsql --owner -f examples/tutorial/generate.sql
CREATE TABLE members AS
  SELECT m AS member_id,
         CASE WHEN hash(m, 'home') % 1000 < 440 THEN 'Central'
              WHEN hash(m, 'home') % 1000 < 740 THEN 'Riverside'
              WHEN hash(m, 'home') % 1000 < 960 THEN 'North'
              WHEN hash(m, 'home') % 1000 < 990 THEN 'Harbour'
              ELSE 'Airport' END AS home,
         -- most members come 1 to 20 times a year; one in fifty comes almost daily
         CASE WHEN m % 50 = 0 THEN 150 + hash(m, 'many') % 100 ELSE 1 + hash(m, 'n') % 20 END::BIGINT AS n
  FROM range(1, 601) AS r(m);
COPY (
  SELECT member_id,
         DATE '2026-01-01' + CAST(hash(member_id, v, 'day') % 365 AS INTEGER) AS visit_date,
         -- four visits in five at the home branch, the others at one of the three large ones
         CASE WHEN hash(member_id, v, 'away') % 5 < 4 THEN home
              ELSE ['Central', 'Riverside', 'North'][CAST(1 + hash(member_id, v, 'where') % 3 AS BIGINT)] END AS branch,
         ['gym', 'swim', 'yoga', 'climbing'][CAST(1 + hash(member_id, v, 'what') % 4 AS BIGINT)] AS activity,
         -- 20 to 119 minutes, except one visit in 200: a forgotten check-out, 5 to 10 hours
         CASE WHEN hash(member_id, v, 'late') % 200 = 0 THEN 300 + hash(member_id, v, 'm') % 300
              ELSE 20 + hash(member_id, v, 'm') % 100 END AS minutes
  FROM members, range(0, n) AS r(v)
  ORDER BY member_id, visit_date, branch, activity
) TO 'examples/tutorial/visits.csv' (HEADER);
