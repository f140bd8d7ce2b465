package exec_test

// The second outside review of the bounding forms (of 319e045, which hashed collated text
// units through folds inferred from sample texts): each of its findings is now refused
// before any data is read, from DuckDB's own plan of the grouping (exec's exactGroups, the
// rule unit-and-keys-compared-exactly).

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/exec"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/internal/testmode"
)

// TestReviewJSONUnitDefaultCollation (review of 319e045): JSON is a VARCHAR to DuckDB's
// collations (SET default_collation = 'nocase' makes '"abcd"' and '"ABCD"' one value to GROUP
// BY), but exec.unitCollation probes only units whose type prints "VARCHAR": a JSON unit gets
// no fold, hash() tells its spellings apart, and one unit spelled 16 ways keeps 16 per-unit
// rows in one group (the finding of TestReviewCollatedUnitOneRowPerGroup, through a JSON unit).
func TestReviewJSONUnitDefaultCollation(t *testing.T) {
	db := ownerDB(t, `SET default_collation = 'nocase';
		CREATE TABLE t (uid JSON, k VARCHAR, v DOUBLE);
		INSERT INTO t SELECT '"u' || i || '"', 'k1', 100 FROM range(200) r(i);
		INSERT INTO t SELECT '"' || CASE WHEN i & 1 = 1 THEN 'A' ELSE 'a' END || CASE WHEN i & 2 = 2 THEN 'B' ELSE 'b' END ||
			CASE WHEN i & 4 = 4 THEN 'C' ELSE 'c' END || CASE WHEN i & 8 = 8 THEN 'D' ELSE 'd' END || '"', 'k1', 100 FROM range(16) r(i)`)
	refusedSpellings(t, db, "uid", 201)
}

// TestReviewJSONKeyDefaultCollation (review of 319e045): the same for a group key. NormaliseKey
// puts COLLATE "binary" on keys whose type prints "VARCHAR" only; a JSON key under SET
// default_collation = 'nocase' stays collated, so '"k1"' and '"K1"' are one group to the final
// GROUP BY but two priorities h to the (unit, h) grouping: a unit with rows under 16 spellings
// of the key keeps 16 per-unit rows in the one released group.
func TestReviewJSONKeyDefaultCollation(t *testing.T) {
	db := ownerDB(t, `SET default_collation = 'nocase';
		CREATE TABLE t (uid BIGINT, k JSON, v DOUBLE);
		INSERT INTO t SELECT i, '"k1"', 100 FROM range(200) r(i);
		INSERT INTO t SELECT 1000, '"' || CASE WHEN i & 1 = 1 THEN 'K' ELSE 'k' END || '1' ||
			CASE WHEN i & 2 = 2 THEN 'X' ELSE 'x' END || CASE WHEN i & 4 = 4 THEN 'Y' ELSE 'y' END || CASE WHEN i & 8 = 8 THEN 'Z' ELSE 'z' END || '"', 100, FROM range(16) r(i);
		UPDATE t SET k = '"k1xyz"' WHERE uid < 1000`)
	refusedSpellings(t, db, "k", 1)
}

// TestReviewNFCNocaseFoldOrder (review of 319e045): under COLLATE "NFC.NOCASE" (or
// "NOCASE.NFC") DuckDB's equality is nfc_normalize(lower(x)), but the folds
// of 319e045 hashed lower(nfc_normalize(x)). 'H' || U+0331 has no precomposed upper
// case, so NFC leaves it and lower gives 'h' || U+0331, not NFC; U+1E96 (ẖ) folds to itself:
// one unit to GROUP BY, two hashes. A unit written with 4 such letters, each either way, has
// 16 spellings and keeps 16 per-unit rows in one group. (A brute force over code points and
// letter+mark pairs finds 42 such classes; nfc_normalize(lower(x)) matches the collation
// exactly on them.)
func TestReviewNFCNocaseFoldOrder(t *testing.T) {
	for _, coll := range []string{`"NFC.NOCASE"`, `"NOCASE.NFC"`} {
		t.Run(coll, func(t *testing.T) {
			letter := func(bit int) string {
				return fmt.Sprintf("CASE WHEN i & %d = %d THEN 'H' || chr(817) ELSE chr(7830) END", bit, bit)
			}
			db := ownerDB(t, `CREATE TABLE t (uid VARCHAR COLLATE `+coll+`, k VARCHAR, v DOUBLE);
				INSERT INTO t SELECT 'u' || i, 'k1', 100 FROM range(200) r(i);
				INSERT INTO t SELECT `+letter(1)+` || `+letter(2)+` || `+letter(4)+` || `+letter(8)+`, 'k1', 100 FROM range(16) r(i)`)
			refusedSpellings(t, db, "uid", 201)
		})
	}
}

// TestReviewICUCollationPassesProbe (review of 319e045): the probe (sqlgen.UnitCollation)
// recognises ICU collations by their ignoring U+200D (pair 4), but DuckDB's fa_af and ps
// collations do not ignore it, while they still ignore control characters (and more: many
// combining marks, digits of other scripts). Such a unit passes the probe with the NFC fold
// only, and 'abcd' with one control character inserted (16 ways) is one unit to GROUP BY and
// 16 hashes: 16 per-unit rows in one group.
func TestReviewICUCollationPassesProbe(t *testing.T) {
	for _, coll := range []string{"fa_af", "ps"} {
		t.Run(coll, func(t *testing.T) {
			db := ownerDB(t, `CREATE TABLE t (uid VARCHAR COLLATE `+coll+`, k VARCHAR, v DOUBLE);
				INSERT INTO t SELECT 'u' || i, 'k1', 100 FROM range(200) r(i);
				INSERT INTO t SELECT 'a' || chr(CAST(CASE WHEN i < 8 THEN i + 1 ELSE i + 6 END AS INTEGER)) || 'bcd', 'k1', 100 FROM range(16) r(i)`)
			refusedSpellings(t, db, "uid", 201)
		})
	}
}

// TestReviewUnionSplitsCollatedUnit (review of 319e045): a UNION ALL of two private relations
// whose units have different collations gets one collation for the unit (DuckDB's union type),
// so the analyst's choice of branch order decides the unit's equality. Relation b's units are
// NOACCENT ('jose' and 'josé' are one person in b); b UNION ALL a compares units the other
// way and splits that person in two, each with its own kappa groups: group k1 gets two
// per-unit rows of one person of b (released sum 202 units' worth where 201 are the owner's).
func TestReviewUnionSplitsCollatedUnit(t *testing.T) {
	ctx := context.Background()
	db := ownerDB(t, `CREATE TABLE a (uid VARCHAR COLLATE NOCASE, k VARCHAR, v DOUBLE);
		INSERT INTO a SELECT 'u' || i, 'k1', 100 FROM range(200) r(i);
		CREATE TABLE b (uid VARCHAR COLLATE NOACCENT, k VARCHAR, v DOUBLE);
		INSERT INTO b VALUES ('jose', 'k1', 100), ('jos' || chr(233), 'k1', 100)`)
	if r, err := db.Query(ctx, "SELECT COUNT(*) FROM (SELECT uid FROM b GROUP BY uid)"); err != nil || fmt.Sprint(r.Values[0][0]) != "1" {
		t.Fatalf("b should hold one unit: %v %v", r, err)
	}
	cols := []catalog.Column{{Name: "uid"}, {Name: "k"}, {Name: "v"}}
	ra := &catalog.Relation{Name: "a", Kind: catalog.Private, PrivacyUnit: "uid", Columns: cols}
	rb := &catalog.Relation{Name: "b", Kind: catalog.Private, PrivacyUnit: "uid", Columns: cols}
	for _, order := range []string{"a UNION ALL SELECT uid, k, v FROM b", "b UNION ALL SELECT uid, k, v FROM a"} {
		query := `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e6, delta=1e-5, kappa=1) k, ANON_SUM(v CLAMPED BETWEEN 0 AND 100) AS s FROM (SELECT uid, k, v FROM ` + order + `) s GROUP BY k`
		for _, first := range []bool{false, true} {
			p := planFor(t, query, ra, rb)
			p.Seed = 1
			pr, err := exec.Prepare(p, testmode.Noiseless{}, backend.DuckDB)
			if err != nil {
				t.Fatal(err)
			}
			if err := pr.Check(ctx, db); err != nil {
				if !strings.Contains(err.Error(), store.RuleUnitCollation) {
					t.Fatalf("%s: %v, want the rule %s", order, err, store.RuleUnitCollation)
				}
				continue // refused before any data is read: the fix
			}
			exec.DecideBounding(pr, first)
			res, err := pr.Run(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Rows) != 1 || fmt.Sprint(res.Rows[0]...) != "k120100" {
				t.Errorf("%s, aggregate first %v: released %v, want k1 20100 (201 units of the owner's, 100 each)", order, first, res.Rows)
			}
		}
	}
}
