package leaks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/cli"
	"github.com/dpsql/dpsql/sqlerr"
)

// The child protocol: the parent sets childEnv to the DuckDB file and childQueryEnv to the
// query; the child runs the query as an analyst through the command's code with the real
// entry point (dpsql.Open) and prints one JSON childReport on stdout.
const (
	childEnv      = "DPSQL_LEAKS_CHILD_DB"
	childQueryEnv = "DPSQL_LEAKS_CHILD_QUERY"
)

// Limits of a child: address space (KiB, ulimit -v) and wall-clock time. DuckDB and the Go
// runtime start within 2 GiB; a 4 GB value cannot be built within 3 GiB.
const (
	childAddressSpaceKiB = 3 << 20
	childWallClock       = 60 * time.Second
)

type childReport struct {
	Stderr string     `json:"stderr"`
	Stdout string     `json:"stdout"`
	Code   string     `json:"code"`
	Msg    string     `json:"msg"`
	Exit   int        `json:"exit"`
	Spent  [2]float64 `json:"spent"`
}

func childMain() int {
	ctx := context.Background()
	path, q := os.Getenv(childEnv), os.Getenv(childQueryEnv)
	spent := func() ([2]float64, error) {
		db, err := dpsql.Open(ctx, dpsql.Config{Database: path})
		if err != nil {
			return [2]float64{}, err
		}
		defer db.Close()
		res, err := db.Exec(ctx, "SHOW BUDGET")
		if err != nil {
			return [2]float64{}, err
		}
		row := res[0].Rows[1]
		return [2]float64{row[1].(float64), row[2].(float64)}, nil
	}
	before, err := spent()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	box := &cliEngine{}
	var stdout, stderr bytes.Buffer
	runErr := cli.Run(ctx, []string{path, "--format", "json", "-c", q}, cli.Options{
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Complete: dpsql.Complete,
		Open: func(ctx context.Context, cfg dpsql.Config) (cli.Engine, error) {
			db, err := dpsql.Open(ctx, cfg)
			if err != nil {
				return nil, err
			}
			box.exec, box.close = db.Exec, db.Close
			return box, nil
		}})
	r := childReport{Stdout: stdout.String(), Stderr: normalize(withoutNotices(stderr.String())), Exit: exitCode(runErr)}
	if box.panicked != "" {
		r.Code, r.Msg, r.Exit = "(panic)", box.panicked, 2
	} else if se, ok := sqlerr.As(box.err); ok {
		r.Code, r.Msg = se.Code, se.Msg
	} else if box.err != nil {
		r.Code, r.Msg = "(not an sqlerr.Error)", box.err.Error()
	}
	after, err := spent()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	r.Spent = [2]float64{after[0] - before[0], after[1] - before[1]}
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		return 3
	}
	return 0
}

// runChild runs q on a copy of one DuckDB database in a child process under the address-space
// and time limits, and returns its report and how long it took.
func runChild(t *testing.T, s *side, q string) (r childReport, elapsed time.Duration, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), childWallClock)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", fmt.Sprintf(`ulimit -v %d && exec "$0" -test.run='^$'`, childAddressSpaceKiB), os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+s.childCopy, childQueryEnv+"="+q)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	runErr := cmd.Run()
	elapsed = time.Since(start)
	if ctx.Err() != nil {
		return r, elapsed, fmt.Errorf("killed after %v (no limit ended the statement)", childWallClock)
	}
	if runErr != nil {
		return r, elapsed, fmt.Errorf("the process failed (%v), so no limit ended the statement cleanly: %s", runErr, tailOf(stderr.String()))
	}
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		return r, elapsed, fmt.Errorf("bad report %q: %v; stderr %s", stdout.String(), err, tailOf(stderr.String()))
	}
	return r, elapsed, nil
}

func tailOf(s string) string {
	if len(s) > 600 {
		return "..." + s[len(s)-600:]
	}
	return s
}
