package main

import (
	"os"
	"path/filepath"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// watchHeap writes a heap profile of the process to path each time the
// live heap (as of the last collection) reaches a new peak, sampling every
// 50 ms until the returned function is called; that function returns the
// peak in bytes. The profile on disk is then the one taken at the peak, for
// `go tool pprof -inuse_space`. It serves -heapprofile, which asks where the
// memory of a phase (the full compaction) goes.
func watchHeap(path string) (stop func() (uint64, error)) {
	done := make(chan struct{})
	result := make(chan error, 1)
	var peak uint64
	go func() {
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		var err error
		for {
			select {
			case <-done:
				result <- err
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if live := sample[0].Value.Uint64(); live > peak && err == nil {
				peak = live
				err = writeHeapProfile(path)
			}
		}
	}()
	return func() (uint64, error) {
		close(done)
		err := <-result
		return peak, err
	}
}

func writeHeapProfile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
