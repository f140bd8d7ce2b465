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

// TestNoBeamDependency checks that the root module, and so the dpsql command,
// does not depend on Apache Beam: Privacy on Beam is the separate module in
// beam/, so building dpsql stays as small and fast as without it.
func TestNoBeamDependency(t *testing.T) {
	for _, pkg := range []string{".", "./cmd/dpsql"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "github.com/apache/beam") || strings.HasPrefix(dep, "github.com/dpsql/dpsql/beam") {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
	out, err := exec.Command("go", "list", "-m", "all").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -m all: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "github.com/apache/beam") {
		t.Errorf("the root module's build list holds Apache Beam:\n%s", out)
	}
}
