package dpsql_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoiselessModeUnreachable checks that the noiseless test mechanisms cannot be reached
// from production code: neither the public package nor the dpsql command depends on
// internal/testmode.
func TestNoiselessModeUnreachable(t *testing.T) {
	for _, pkg := range []string{".", "./cmd/dpsql"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		if strings.Contains(string(out), "github.com/dpsql/dpsql/internal/testmode") {
			t.Errorf("%s depends on internal/testmode", pkg)
		}
	}
}
