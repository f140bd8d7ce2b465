package pbeamledger_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/beam/pbeam"
	"github.com/dpsql/dpsql/beam/pbeam/pbeamledger"
	"github.com/dpsql/dpsql/internal/pgtest"
	"github.com/dpsql/dpsql/sqlerr"
)

type visit struct {
	User, Day int
}

func visitDay(v visit) int { return v.Day }

func init() {
	register.Function1x1(visitDay)
	beam.RegisterType(reflectTypeOf[visit]())
}

// ownerSetup creates a private relation and sets the budget, as the data
// owner does with dpsql --owner.
func ownerSetup(t *testing.T, database string, epsilon float64) {
	t.Helper()
	ctx := context.Background()
	db, err := dpsql.Open(ctx, dpsql.Config{Database: database, Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(ctx, `CREATE TABLE visits OPTIONS(anonymization_userid_column='uid') AS
		SELECT g AS uid, g % 7 AS day FROM generate_series(1, 700) AS t(g);
		SET BUDGET OPTIONS(epsilon=`+fmt.Sprint(epsilon)+`, delta=1e-5)`); err != nil {
		t.Fatal(err)
	}
}

// sqlSpend runs an analyst's SQL query of the given epsilon.
func sqlSpend(database string, epsilon float64) error {
	ctx := context.Background()
	db, err := dpsql.Open(ctx, dpsql.Config{Database: database})
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec(ctx, fmt.Sprintf(`SELECT WITH ANONYMIZATION OPTIONS(epsilon=%v, delta=1e-6, max_groups_contributed=1)
		day, ANON_COUNT(*) AS n FROM visits GROUP BY day`, epsilon))
	return err
}

// spent reads the spent epsilon with SHOW BUDGET.
func spent(t *testing.T, database string) float64 {
	t.Helper()
	ctx := context.Background()
	db, err := dpsql.Open(ctx, dpsql.Config{Database: database})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(ctx, "SHOW BUDGET")
	if err != nil {
		t.Fatal(err)
	}
	return res[0].Rows[1][1].(float64)
}

// countPipeline constructs a pipeline with one Count on a fresh spec and
// returns the spec and a function that constructs one more Count on it.
func countPipeline(t *testing.T, params pbeam.PrivacySpecParams) (*pbeam.PrivacySpec, func() error) {
	t.Helper()
	spec, err := pbeam.NewPrivacySpec(params)
	if err != nil {
		t.Fatal(err)
	}
	p, s := beam.NewPipelineWithRoot()
	col := beam.CreateList(s, []visit{{1, 1}, {2, 1}})
	pcol := pbeam.MakePrivateFromStruct(s, col, spec, "User")
	days := pbeam.ParDo(s, visitDay, pcol)
	more := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%v", r)
			}
		}()
		pbeam.Count(s, days, pbeam.CountParams{MaxPartitionsContributed: 1, MaxValue: 1, AggregationEpsilon: 0.01,
			PartitionSelectionParams: pbeam.PartitionSelectionParams{Epsilon: 0.01, Delta: 1e-7}})
		return nil
	}
	pbeam.Count(s, days, pbeam.CountParams{MaxPartitionsContributed: 1, MaxValue: 1, AggregationEpsilon: params.AggregationEpsilon / 2,
		PartitionSelectionParams: pbeam.PartitionSelectionParams{Epsilon: params.PartitionSelectionEpsilon / 2, Delta: params.PartitionSelectionDelta / 2}})
	_ = p
	return spec, more
}

func code(err error) string {
	if e, ok := sqlerr.As(err); ok {
		return e.Code
	}
	return ""
}

// TestSharedBudgetDuckDB: a pipeline and SQL analysts spend one budget of a
// DuckDB file, and together never more than it.
func TestSharedBudgetDuckDB(t *testing.T) {
	database := filepath.Join(t.TempDir(), "shop.duckdb")
	ownerSetup(t, database, 1)
	testSharedBudget(t, database)
	// The owner's audit trail names the pipeline and its aggregations.
	ctx := context.Background()
	db, err := dpsql.Open(ctx, dpsql.Config{Database: database, Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(ctx, "SELECT query FROM dpsql.charges ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	if got := res[0].Rows[0][0].(string); !strings.HasPrefix(got, "pbeam pipeline: visits per day [pbeam.Count aggregation epsilon=0.25, delta=0; pbeam.Count partition selection epsilon=0.1, delta=5e-07;") {
		t.Errorf("the pipeline's charge is recorded as %q", got)
	}
}

// TestSharedBudgetPostgres is the same on PostgreSQL, the pipeline
// charging as the engine role of docs/postgres.md (no write right on the
// ledger's tables: only dpsql.spend).
func TestSharedBudgetPostgres(t *testing.T) {
	c := pgtest.New(t, pgtest.Options{})
	url := c.NewDatabase(t)
	ownerSetup(t, url, 1)
	ctx := context.Background()
	db, err := dpsql.Open(ctx, dpsql.Config{Database: url, Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(ctx, `CREATE ROLE dpsql_engine LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;
		GRANT USAGE ON SCHEMA dpsql TO dpsql_engine;
		GRANT SELECT ON dpsql.relations, dpsql.domains, dpsql.budget, dpsql.limits TO dpsql_engine;
		GRANT EXECUTE ON FUNCTION dpsql.spend(DOUBLE PRECISION, DOUBLE PRECISION, TEXT) TO dpsql_engine;
		GRANT SELECT ON visits TO dpsql_engine`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	engine, err := pgtest.AsRole(url, "dpsql_engine")
	if err != nil {
		t.Fatal(err)
	}
	testSharedBudget(t, engine)
}

func testSharedBudget(t *testing.T, database string) {
	ctx := context.Background()
	// The pipeline: aggregation 0.5 (two Counts of 0.25), selection 0.2.
	spec, more := countPipeline(t, pbeam.PrivacySpecParams{AggregationEpsilon: 0.5, PartitionSelectionEpsilon: 0.2, PartitionSelectionDelta: 1e-6})
	if eps, delta := spec.Consumed(); !near(eps, 0.35) || !near(delta, 5e-7) {
		t.Fatalf("Consumed() = %v, %v; want 0.35, 5e-7 (0.25 + 0.1: the second Count is constructed below)", eps, delta)
	}
	if err := more(); err != nil {
		t.Fatalf("a second aggregation before the charge: %v", err)
	}
	if err := pbeamledger.Charge(ctx, spec, database, "visits per day"); err != nil {
		t.Fatalf("Charge: %v", err)
	}
	if eps, delta := spec.Consumed(); !near(eps, 0.37) || !near(delta, 6e-7) {
		t.Errorf("Consumed() = %v, %v; want 0.37, 6e-7", eps, delta)
	}
	if got := spent(t, database); !near(got, 0.37) {
		t.Errorf("spent after the pipeline's charge = %v, want 0.37", got)
	}
	// The spec is sealed and charged once.
	if err := more(); err == nil || !strings.Contains(err.Error(), "ChargeLedger") {
		t.Errorf("an aggregation after the charge: %v; want a construction error naming ChargeLedger", err)
	}
	if err := pbeamledger.Charge(ctx, spec, database, "again"); err == nil || !strings.Contains(err.Error(), "already charged") {
		t.Errorf("a second charge: %v; want a refusal", err)
	}
	// SQL analysts share what remains (0.63).
	if err := sqlSpend(database, 0.7); code(err) != sqlerr.BudgetExhausted {
		t.Errorf("an SQL query of epsilon 0.7 with 0.63 left: %v; want %s", err, sqlerr.BudgetExhausted)
	}
	if err := sqlSpend(database, 0.6); err != nil {
		t.Errorf("an SQL query of epsilon 0.6 with 0.63 left: %v", err)
	}
	// 0.03 left: a pipeline of 0.06 is refused and charges nothing; the
	// spec stays sealed.
	spec2, more2 := countPipeline(t, pbeam.PrivacySpecParams{AggregationEpsilon: 0.1, PartitionSelectionEpsilon: 0.02, PartitionSelectionDelta: 1e-6})
	err := pbeamledger.Charge(ctx, spec2, database, "over budget")
	if code(err) != sqlerr.BudgetExhausted {
		t.Errorf("a pipeline of epsilon 0.06 with 0.03 left: %v; want %s", err, sqlerr.BudgetExhausted)
	}
	if err := more2(); err == nil {
		t.Error("an aggregation after a refused charge was constructed; the spec must stay sealed")
	}
	if got := spent(t, database); !near(got, 0.97) {
		t.Errorf("spent = %v after a refused charge, want 0.97", got)
	}
	// Test-mode specs are never charged.
	spec3, _ := countPipeline(t, pbeam.PrivacySpecParams{AggregationEpsilon: 0.01, PartitionSelectionEpsilon: 0.01, PartitionSelectionDelta: 1e-6, TestMode: pbeam.TestModeWithContributionBounding})
	if err := pbeamledger.Charge(ctx, spec3, database, "test mode"); err == nil || !strings.Contains(err.Error(), "test mode") {
		t.Errorf("charging a test-mode spec: %v; want a refusal", err)
	}
}

func TestChargeErrors(t *testing.T) {
	ctx := context.Background()
	spec, _ := countPipeline(t, pbeam.PrivacySpecParams{AggregationEpsilon: 0.1, PartitionSelectionEpsilon: 0.1, PartitionSelectionDelta: 1e-6})
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.duckdb")
	if err := pbeamledger.Charge(ctx, spec, missing, ""); err == nil {
		t.Error("charging a missing DuckDB file succeeded")
	}
	if _, err := filepath.Glob(missing); err != nil {
		t.Fatal(err)
	}
	if err := pbeamledger.Charge(ctx, spec, ":memory:", ""); err == nil {
		t.Error("charging an in-memory database succeeded")
	}
	// A DuckDB file whose owner set no budget: refused, nothing charged.
	plain := filepath.Join(dir, "plain.duckdb")
	db, err := dpsql.Open(ctx, dpsql.Config{Database: plain, Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	err = pbeamledger.Charge(ctx, spec, plain, "")
	if code(err) != sqlerr.ObjectNotInPrerequisite {
		t.Errorf("charging a database without a budget: %v; want %s", err, sqlerr.ObjectNotInPrerequisite)
	}
	// Nothing consumed: nothing to charge.
	empty, err := pbeam.NewPrivacySpec(pbeam.PrivacySpecParams{AggregationEpsilon: 1})
	if err != nil {
		t.Fatal(err)
	}
	ownerSetup(t, plain, 1)
	if err := pbeamledger.Charge(ctx, empty, plain, ""); err == nil || !strings.Contains(err.Error(), "no aggregation consumed") {
		t.Errorf("charging a spec without aggregations: %v", err)
	}
}

func reflectTypeOf[T any]() reflect.Type { return reflect.TypeOf((*T)(nil)).Elem() }

func near(x, want float64) bool { return math.Abs(x-want) <= 1e-12*math.Max(1, math.Abs(want)) }
