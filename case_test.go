package dpsql_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
)

// TestCaseCollisionsOnPostgres: in PostgreSQL, "Pages" and pages are different relations,
// and "UID" and uid different columns. dpsql matches names case-insensitively, so such pairs
// must never let an analyst read one while the policy of the other was checked.
func TestCaseCollisionsOnPostgres(t *testing.T) {
	url := pg.Cluster(t).NewDatabase(t)
	ctx := context.Background()
	owner, err := dpsql.Open(ctx, dpsql.Config{Database: url, Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = owner.Exec(ctx, `CREATE TABLE "Pages" (uid INT, secret TEXT);
		INSERT INTO "Pages" VALUES (1, 'private-marker');
		CREATE TABLE visits (uid INT, "UID" INT, page TEXT);
		INSERT INTO visits VALUES (1, 2, 'home'), (2, 1, 'home');
		CREATE TABLE pages OPTIONS(public=true) AS SELECT 'home' AS page`)
	owner.Close()
	// Declaring the public pages while a hidden "Pages" exists is refused: the names collide.
	if err == nil || !strings.Contains(err.Error(), "cannot tell them apart") {
		t.Fatalf("a policy on colliding relation names was accepted: %v", err)
	}
	owner, err = dpsql.Open(ctx, dpsql.Config{Database: url, Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	if _, err := owner.Exec(ctx, `ALTER TABLE "Pages" RENAME TO hidden_pages;
		CREATE TABLE pages OPTIONS(public=true) AS SELECT 'home' AS page;
		ALTER TABLE visits SET OPTIONS(anonymization_userid_column='uid');
		SET BUDGET UNLIMITED`); err != nil {
		t.Fatal(err)
	}
	analyst, err := dpsql.Open(ctx, dpsql.Config{Database: url})
	if err != nil {
		t.Fatal(err)
	}
	defer analyst.Close()
	// A join "on the unit" through the column that only differs in case is refused.
	_, err = analyst.Exec(ctx, `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) a.page, ANON_COUNT(*)
		FROM visits a JOIN visits b ON a."UID" = b.uid GROUP BY a.page`)
	if err == nil || !strings.Contains(err.Error(), "up to case") {
		t.Errorf("a join through a column differing from the unit only in case: %v", err)
	}
}
