package sqlgen

import (
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/plan"
)

// GroupingSQL prints, for DuckDB, a query that groups the stage's rows by the privacy unit
// and the keys (in that order), for DuckDB's plan of it (json_serialize_plan binds it and
// reads no row): store.InexactGroups then tells whether DuckDB compares them exactly.
func GroupingSQL(p *plan.Plan) string {
	var b strings.Builder
	keys := writeRows(&b, p, backend.DuckDB, nil)
	cols := strings.Join(append([]string{"_dp_uid"}, keys...), ", ")
	return strings.TrimSuffix(b.String(), ",\n") + fmt.Sprintf("\nSELECT %s FROM _dp_rows GROUP BY %s", cols, cols)
}
