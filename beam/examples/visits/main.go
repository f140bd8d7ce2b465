// Command visits is the restaurant visits example of Privacy on Beam for
// dpsql: from a CSV of visits (one line per visit, with the visitor's id) it
// releases, with differential privacy, the spend per weekday, the visits per
// hour and the mean time spent per hour, writes them to CSV files and prints
// them.
//
//	cd beam && go run ./examples/visits --input examples/visits/visits.csv
//
// It runs on Beam's Prism runner unless --runner says otherwise (direct,
// flink, spark, dataflow, universal; see docs/beam.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
)

var (
	input  = flag.String("input", "examples/visits/visits.csv", "the visits CSV (a local path, or any path Beam's file systems read, e.g. gs://...)")
	output = flag.String("output", "", "the directory for the result files (made if missing; any Beam file system); empty: a temporary directory, removed after printing")
)

func main() {
	flag.Parse()
	beam.Init()
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "visits:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	dir := *output
	if dir == "" {
		tmp, err := os.MkdirTemp("", "visits")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	} else if !strings.Contains(dir, "://") {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	spec, err := newSpec(0)
	if err != nil {
		return err
	}

	p, s := beam.NewPipelineWithRoot()
	lines := textio.Read(s, *input)
	visits := beam.ParDo(s, parseVisit, lines)
	results := privateStatistics(s, visits, spec)
	for _, r := range results {
		textio.Write(s, path.Join(dir, r.name+".csv"), r.lines)
	}
	if err := beamx.Run(ctx, p); err != nil {
		return err
	}

	for _, r := range results {
		file := path.Join(dir, r.name+".csv")
		text, err := readAll(ctx, file)
		if errors.Is(err, iofs.ErrNotExist) {
			// textio writes no file for an empty PCollection.
			fmt.Printf("%s: no partition released\n\n", strings.ReplaceAll(r.name, "_", " "))
			continue
		}
		if err != nil {
			return err
		}
		rows := strings.Split(strings.TrimSpace(text), "\n")
		slices.SortFunc(rows, func(a, b string) int { return rowOrder(a) - rowOrder(b) })
		fmt.Printf("%s (%s)\n%s\n%s\n\n", strings.ReplaceAll(r.name, "_", " "), file, r.header, strings.Join(rows, "\n"))
	}
	if *output == "" {
		fmt.Println("(pass --output DIR to keep the files)")
	}
	return nil
}

// readAll reads a file through Beam's file systems (local, gs://, ...).
func readAll(ctx context.Context, file string) (string, error) {
	fs, err := filesystem.New(ctx, file)
	if err != nil {
		return "", err
	}
	defer fs.Close()
	rc, err := fs.OpenRead(ctx, file)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	return string(b), err
}

// rowOrder orders result rows by their key: weekdays Monday first, hours by
// number.
func rowOrder(row string) int {
	key, _, _ := strings.Cut(row, ",")
	if i := slices.Index(weekdays, key); i >= 0 {
		return i
	}
	n, _ := strconv.Atoi(key)
	return n
}
