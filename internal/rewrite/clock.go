package rewrite

import (
	"strings"
	"time"

	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/plan"
)

// now is the clock the clock pass reads (a variable for tests).
var now = time.Now

// clock fixes the instant that the query's calls of now(), current_date(),
// current_timestamp() and age(x) read (ast.FuncCall.Clock). The databases read the clock once
// per transaction, and dpsql sends a query's statements in several: the public parts are
// computed whole before the charge (sqlgen.WholeChecks), the stage after it. A public part
// whose failure depends on the clock (the parity of the current second) passed the check and
// then failed in the stage, where the database computed it only as far as the private rows
// asked, so only when the target's row joined the failing row (an outside review, on
// PostgreSQL). One instant for every statement makes the check's verdict the stage's.
func clock(p *plan.Plan) error {
	at := now().UTC().Format("2006-01-02 15:04:05.999999+00")
	// The data, and the SELECT itself, so that its outputs over the released rows read the
	// same instant.
	for _, n := range append(p.Query.Data(), p.Query.Node) {
		ast.Walk(n, func(m ast.Node) bool {
			if f, ok := m.(*ast.FuncCall); ok && len(f.Name) == 1 && readsClock(strings.ToLower(f.Name[0].Name), len(f.Args)) {
				f.Clock = at
			}
			return true
		})
	}
	return nil
}

// readsClock reports whether a call of the function name with args arguments reads the clock.
func readsClock(name string, args int) bool {
	switch name {
	case "now", "current_date", "current_timestamp":
		return args == 0
	case "age":
		return args == 1
	}
	return false
}
