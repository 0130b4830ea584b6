package main

import (
	"os"
	"strconv"
	"testing"
)

// TestIngestBench runs the bulk-load comparison (ingest.go) when
// SHALE_INGEST_BENCH_ROUNDS is set, on the main run's 128 MiB workload:
//
//	SHALE_INGEST_BENCH_ROUNDS=5 go test -run TestIngestBench -v -timeout 30m
//
// Without it, it loads a small workload once, so that the three loads stay
// working.
func TestIngestBench(t *testing.T) {
	rounds, n := 1, 20000
	if s := os.Getenv("SHALE_INGEST_BENCH_ROUNDS"); s != "" {
		r, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("SHALE_INGEST_BENCH_ROUNDS=%q: %v", s, err)
		}
		rounds, n = r, 493447
	}
	dir := t.TempDir()
	if rounds > 1 {
		dir = defaultDir()
	}
	if err := runIngestBench(os.Stdout, dir, rounds, n, 256); err != nil {
		t.Fatal(err)
	}
}
