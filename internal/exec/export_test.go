package exec

import "github.com/dpsql/dpsql/internal/sqlgen"

// DecideBounding makes pr's stage bound contributions with the given form (prefilter, or
// aggregate first) without reading the sample, as a remembered decision would.
func DecideBounding(pr *Prepared, aggregateFirst bool) {
	if pr.Shapes == nil {
		pr.Shapes = NewShapeCache()
	}
	pr.Shapes.store(sqlgen.ShapeStats(pr.Plan, pr.dialect), Bounding{AggregateFirst: aggregateFirst})
}
