package exec

import (
	"context"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/sqlgen"
)

// DecideBounding makes pr's stage bound contributions with the given form (prefilter, or
// aggregate first) without reading the sample, as a remembered decision would.
func DecideBounding(pr *Prepared, aggregateFirst bool) {
	if pr.Shapes == nil {
		pr.Shapes = NewShapeCache()
	}
	pr.Shapes.store(sqlgen.ShapeStats(pr.Plan, pr.dialect), Bounding{AggregateFirst: aggregateFirst})
}

// ReleaseBothWays selects and noises st's groups once and post-processes the released table
// twice: as the engine does (picked in Go when the outputs are exactly keys and aggregates)
// and by the database's post-processing query, which the engine runs for any other query.
func ReleaseBothWays(ctx context.Context, pr *Prepared, b backend.Backend, st *StageRows) (engine, database *Result, err error) {
	res, table, err := pr.releasedTable(ctx, st)
	if err != nil {
		return nil, nil, err
	}
	again := *res
	if engine, err = pr.postProcess(ctx, b, res, table, pr.postProcessed()); err != nil {
		return nil, nil, err
	}
	database, err = pr.postProcess(ctx, b, &again, table, withIntervals(pr.Plan, pr.Plan.ConfidenceLevel))
	return engine, database, err
}
