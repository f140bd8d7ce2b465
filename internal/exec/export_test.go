package exec

import "github.com/dpsql/dpsql/internal/sqlgen"

// DecideBounding makes pr's stage bound contributions with the given form (prefilter, or
// aggregate first) without reading the sample, as a remembered decision would.
func DecideBounding(pr *Prepared, aggregateFirst bool) {
	Decide(pr, Bounding{AggregateFirst: aggregateFirst})
}

// Decide is DecideBounding with the whole decision (Bounding).
func Decide(pr *Prepared, d Bounding) {
	if pr.Shapes == nil {
		pr.Shapes = NewShapeCache()
	}
	pr.Shapes.store(sqlgen.ShapeStats(pr.Plan, pr.dialect), d)
}

// SetReread makes pr's stage read its rows twice (on) or rank them in one read (off)
// whatever DuckDB's plan of them shows: read twice, as if store.ReadsOf had been wrong about
// them (a Parquet file replaced between reads).
func SetReread(pr *Prepared, on bool) error {
	pr.Plan.RereadRows = on
	return pr.reprint()
}
