package exec

import "github.com/dpsql/dpsql/internal/sqlgen"

// DecideBounding makes pr's stage bound contributions with the given form (prefilter, or
// aggregate first) without reading the sample, as a remembered decision would.
func DecideBounding(pr *Prepared, aggregateFirst bool) {
	DecideBuckets(pr, Bounding{AggregateFirst: aggregateFirst})
}

// DecideBuckets is DecideBounding with the whole decision, buckets of units included.
func DecideBuckets(pr *Prepared, d Bounding) {
	if pr.Shapes == nil {
		pr.Shapes = NewShapeCache()
	}
	pr.Shapes.store(sqlgen.ShapeStats(pr.Plan, pr.dialect), d)
}

// ForceReread makes pr's stage read its rows twice whatever DuckDB's plan of them shows, as
// if store.ReadsOf had been wrong about them (a Parquet file replaced between reads).
func ForceReread(pr *Prepared) error {
	pr.Plan.RereadRows = true
	return pr.reprint()
}
