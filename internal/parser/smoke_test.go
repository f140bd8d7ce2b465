package parser

import (
	"testing"

	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/sqlerr"
)

func TestSmoke(t *testing.T) {
	for _, src := range []string{
		`SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=2) item, ANON_AVG(quantity CLAMPED BETWEEN 0 AND 100) AS avg_q FROM view_on_professors GROUP BY item;`,
		`SELECT WITH ANONYMIZATION T1.partition_key, ANON_SUM(T2.val, 0, 1) FROM Table1 T1 JOIN Table2 T2 USING (uid) GROUP BY T1.partition_key`,
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-5, max_groups_contributed=2, privacy_unit_column=id) item, AVG(quantity, contribution_bounds_per_group => (0, 100)) AS avg_q FROM professors GROUP BY item`,
		`CREATE OR REPLACE VIEW view_on_professors OPTIONS(anonymization_userid_column='id') AS (SELECT * FROM professors)`,
		`select a, -1::int, x not between 1 and 2, count(*) filter (where y) over (partition by z order by w rows between unbounded preceding and current row) from t left join (u cross join v) on true where not exists (select 1) and a in (1,2) and b like 'x%' escape '!'`,
		`SELECT * FROM (SELECT 1) x, LATERAL (SELECT 2) y, read_csv('f.csv', header => true) z`,
		`WITH a AS (SELECT 1) SELECT * EXCLUDE (x) FROM a UNION ALL (SELECT 2) ORDER BY 1 DESC NULLS LAST LIMIT 3 OFFSET 1`,
		`SELECT CASE WHEN a THEN 'it''s' ELSE "Q""x" END, DATE '2020-01-01', INTERVAL '1' DAY, INTERVAL 3 MONTH, EXTRACT(year FROM d), CAST(x AS DECIMAL(10,2)), SAFE_CAST(y AS DOUBLE PRECISION)`,
	} {
		stmts, err := Parse(src)
		if err != nil {
			t.Errorf("%s\n%s", src, sqlerr.Render(err, src))
			continue
		}
		for _, s := range stmts {
			out := ast.Format(s)
			t.Log(out)
			s2, err := Parse(out)
			if err != nil {
				t.Errorf("reparse %s: %v", out, err)
				continue
			}
			if out2 := ast.Format(s2[0]); out2 != out {
				t.Errorf("round trip:\n%s\n%s", out, out2)
			}
		}
	}
}
