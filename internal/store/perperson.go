package store

import (
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/sqlerr"
)

// RulePerPerson is the rule a private view breaks when which rows it returns for one person
// depends on other people's rows.
const RulePerPerson = "private-views-per-person"

// Contribution bounding counts on each row of a private relation being one person's, there
// whatever the others' rows are: a neighbouring database then differs in that person's rows
// only. A view with LIMIT or OFFSET (with or without ORDER BY) keeps a person's rows or not
// depending on how many rows others have, and so does a sample of a fixed number of rows
// (reservoir) or of whole vectors (system): adding one person can push another's rows out, a
// difference of two people that the noise was not calibrated for. A Bernoulli sample keeps
// each row on its own draw and is allowed. Windows and aggregates over several people (a
// max(salary) OVER ()) mix people too; they are not checked here (docs/security.md).

// planMixesPeople refuses private view view when its bound plan (root, decoded) limits, offsets
// or samples its rows other than row by row.
func planMixesPeople(view string, root any) error {
	var what string
	eachNode(root, func(x map[string]any) {
		if what != "" {
			return
		}
		switch t, _ := x["type"].(string); t {
		case "LOGICAL_LIMIT", "LOGICAL_TOP_N":
			what = "keeps a number of rows (LIMIT, OFFSET)"
			return
		}
		if s, ok := x["sample_options"].(map[string]any); ok {
			if m, _ := s["method"].(string); !strings.EqualFold(m, "bernoulli") {
				what = fmt.Sprintf("samples its rows by the %s method", strings.ToLower(m))
			}
		}
	})
	if what == "" {
		return nil
	}
	return sqlerr.Privacy(sqlerr.Pos{}, RulePerPerson,
		fmt.Sprintf("private view %s %s, so whether one person's rows are in it depends on other people's rows: one person added could push another's rows out, and each query's noise covers one person's difference only", view, what),
		"declare the rows by their own values instead (WHERE d >= DATE '2024-01-01'), or sample them with USING SAMPLE 10 PERCENT (bernoulli), which keeps each row on its own draw (docs/privacy-rules.md)")
}
