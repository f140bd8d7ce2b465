// Command dpsql-utility measures the utility of dpsql's releases on generated data with known
// exact answers: for each epsilon and each partition selection rule and noise kind, the share
// of groups released and the relative error of counts, sums and medians (docs/utility.md).
//
//	go run ./cmd/dpsql-utility -users 20000 -groups 200 -epsilons 0.1,0.5,1,2,5 -runs 20 -kappa 3
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/dpsql/dpsql/internal/utility"
)

func main() {
	d := utility.DefaultDataset()
	var (
		users     = flag.Int("users", d.Users, "users (privacy units)")
		groups    = flag.Int("groups", d.Groups, "group keys; sizes follow a Zipf law")
		zipf      = flag.Float64("zipf", d.Zipf, "Zipf exponent of the group sizes")
		maxGroups = flag.Int("maxgroups", d.MaxGroups, "each user is in 1..maxgroups groups (uniform count, Zipf-drawn groups)")
		epsilons  = flag.String("epsilons", "0.1,0.5,1,2,5", "comma-separated epsilons")
		delta     = flag.Float64("delta", 1e-5, "delta of each query")
		kappa     = flag.Int("kappa", 3, "kappa (max groups per user) of each query")
		runs      = flag.Int("runs", 20, "queries per epsilon and rule")
		seed      = flag.Int64("seed", d.Seed, "seed of the generated data (the noise always comes from crypto/rand)")
		rules     = flag.String("rules", "", "comma-separated rule numbers to run, 1-"+strconv.Itoa(len(utility.Rules))+" (default: all): "+ruleList())
		printSQL  = flag.Bool("sql", false, "print the generating SQL, the truth SQL and the queries, and exit")
	)
	flag.Parse()
	d.Users, d.Groups, d.Zipf, d.MaxGroups, d.Seed = *users, *groups, *zipf, *maxGroups, *seed
	cfg := utility.Config{Dataset: d, Delta: *delta, Kappa: *kappa, Runs: *runs, Progress: os.Stderr}
	for _, s := range strings.Split(*epsilons, ",") {
		e, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || !(e > 0) {
			fail(fmt.Errorf("bad epsilon %q", s))
		}
		cfg.Epsilons = append(cfg.Epsilons, e)
	}
	if *rules != "" {
		for _, s := range strings.Split(*rules, ",") {
			i, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || i < 1 || i > len(utility.Rules) {
				fail(fmt.Errorf("bad rule number %q: %s", s, ruleList()))
			}
			cfg.Rules = append(cfg.Rules, utility.Rules[i-1])
		}
	}
	if *runs < 1 || *kappa < 1 {
		fail(fmt.Errorf("runs and kappa must be at least 1"))
	}
	if *printSQL {
		fmt.Printf("-- data\n%s\n-- truth\n%s;\n", d.GenerateSQL(), d.TruthSQL())
		for _, r := range utility.Rules {
			fmt.Printf("\n-- %s\n%s;\n", r.Name, utility.Query(r, d, cfg.Epsilons[0], cfg.Delta, cfg.Kappa))
		}
		return
	}

	ctx := context.Background()
	t0 := time.Now()
	cfg.OnData = func(s utility.Summary) {
		fmt.Printf("data: %v (generated in %.1fs)\n", s, time.Since(t0).Seconds())
	}
	cells, _, err := utility.Run(ctx, cfg)
	if err != nil {
		fail(err)
	}
	fmt.Printf("machine: %s/%s, %d CPUs; %d runs per cell, kappa %d, delta %g; %.0fs in all\n\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), *runs, *kappa, *delta, time.Since(t0).Seconds())
	utility.Report(os.Stdout, cells)
}

func ruleList() string {
	var s []string
	for i, r := range utility.Rules {
		s = append(s, fmt.Sprintf("%d=%s", i+1, r.Name))
	}
	return strings.Join(s, ", ")
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "dpsql-utility:", err)
	os.Exit(1)
}
