package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/dpsql/dpsql/internal/cli"
)

func TestExitCode(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{&cli.UsageError{Msg: "unknown option --x"}, 2},
		{fmt.Errorf("%w: boom", cli.ErrFailed), 1},
		{errors.New("writing output: broken pipe"), 1},
	} {
		if got := cli.ExitCode(c.err); got != c.want {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
