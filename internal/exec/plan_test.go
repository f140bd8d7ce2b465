package exec_test

import (
	"testing"

	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/parser"
	"github.com/dpsql/dpsql/internal/plan"
	"github.com/dpsql/dpsql/internal/rewrite"
)

// planFor parses, analyzes and rewrites query over the relations rels: the plan the engine
// would hand to exec.Prepare.
func planFor(t testing.TB, query string, rels ...*catalog.Relation) *plan.Plan {
	t.Helper()
	q, err := parser.ParseQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	an, err := analyzer.Analyze(q, catalog.New(rels...))
	if err != nil {
		t.Fatal(err)
	}
	p, err := rewrite.Rewrite(an.(*analyzer.Query))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
