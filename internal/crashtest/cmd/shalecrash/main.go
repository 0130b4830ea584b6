// Command shalecrash is shale's crash test at scale, after RocksDB's
// db_stress and db_crashtest.py: it runs a random concurrent workload in a
// child process (itself, with the child's configuration in the
// environment), kills it with SIGKILL after a random number of operations
// or while it opens the database, reopens the database, verifies every key
// against the expected-state file, and repeats.
//
//	go run ./internal/crashtest/cmd/shalecrash -duration 10m -keys 10000 -faults
//	go run ./internal/crashtest/cmd/shalecrash -rounds 500 -seed 7 -sync
//
// It prints a line per round and, at the end, the operations, crashes,
// faults injected, keys verified and the writes lost, which must be 0; it
// exits with status 1 when a round fails.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"time"

	"github.com/shaledb/shale/internal/crashtest"
)

func main() {
	if cfg, ok, err := crashtest.ChildConfigFromEnv(); ok {
		if err == nil {
			err = crashtest.RunChild(cfg, os.Stdout)
		}
		fmt.Fprintln(os.Stderr, "shalecrash child:", err)
		os.Exit(3)
	}
	var (
		dir      = flag.String("dir", "", "directory for the database and the expected state (default: a new temporary one)")
		keep     = flag.Bool("keep", false, "keep the directory afterwards")
		rounds   = flag.Int("rounds", 0, "crash rounds (0: until -duration)")
		duration = flag.Duration("duration", time.Minute, "stop starting rounds after this long (0: no limit)")
		keys     = flag.Int("keys", 10000, "keyspace size")
		seed     = flag.Uint64("seed", 0, "seed (0: from the clock)")
		writers  = flag.Int("writers", 4, "writer goroutines in the child (half as many readers)")
		faults   = flag.Bool("faults", true, "inject filesystem faults (short writes, ENOSPC, failed syncs, creates and renames) in every other round")
		sync     = flag.Bool("sync", false, "open the database with sync=true (every write synced)")
		large    = flag.Bool("large", true, "add values of kilobytes and batches of hundreds of writes")
		minOps   = flag.Int("min-ops", 500, "kill a child after at least this many operations")
		maxOps   = flag.Int("max-ops", 50000, "and at most this many")
		verbose  = flag.Bool("v", false, "print a line per round")
	)
	flag.Parse()
	if *rounds <= 0 && *duration <= 0 {
		fmt.Fprintln(os.Stderr, "shalecrash: set -rounds or -duration")
		os.Exit(2)
	}
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	if *dir == "" {
		d, err := crashtest.DefaultDir()
		if err != nil {
			fmt.Fprintln(os.Stderr, "shalecrash:", err)
			os.Exit(1)
		}
		*dir = d
	} else if err := os.MkdirAll(*dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "shalecrash:", err)
		os.Exit(1)
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "shalecrash:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fmt.Printf("shalecrash: seed %d, %d keys, dir %s\n", *seed, *keys, *dir)
	start := time.Now()
	logf := func(string, ...any) {}
	if *verbose {
		logf = func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	}
	st, err := crashtest.Run(ctx, crashtest.Config{
		Dir:      *dir,
		Keys:     *keys,
		Seed:     *seed,
		Rounds:   *rounds,
		Duration: *duration,
		Writers:  *writers,
		Faults:   *faults,
		Sync:     *sync,
		Large:    *large,
		MinOps:   *minOps,
		MaxOps:   *maxOps,
		Command: func(env string) *exec.Cmd {
			cmd := exec.Command(exe)
			cmd.Env = append(os.Environ(), env)
			return cmd
		},
		Logf: logf,
	})
	fmt.Printf("shalecrash: %s in %v\n", st, time.Since(start).Round(time.Second))
	if err != nil {
		fmt.Fprintf(os.Stderr, "shalecrash: FAILED (seed %d, dir %s kept): %+v\n", *seed, *dir, err)
		os.Exit(1)
	}
	if !*keep {
		_ = os.RemoveAll(*dir)
	}
	fmt.Println("shalecrash: PASS: no acknowledged synced write lost, no value that was never written")
}
