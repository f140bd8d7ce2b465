package main

import (
	"bytes"
	"os"
	"testing"
)

// TestCommittedCSV checks that visits.csv is what this generator writes, so
// the file and its generator stay one.
func TestCommittedCSV(t *testing.T) {
	want, err := os.ReadFile("../visits.csv")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := Write(&got, 10000); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("examples/visits/visits.csv differs from the generator's output; regenerate it with: go run ./examples/visits/gen > examples/visits/visits.csv")
	}
}
