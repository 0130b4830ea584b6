package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"
)

// Issue 12's large batch: bigBatchKeys random keys of bigBatchKeySize bytes
// with bigBatchValueSize-byte values written as ONE batch, in random and in
// sorted order.
const (
	bigBatchKeySize   = 32
	bigBatchValueSize = 32
)

// bigBatchResult is one large-batch write.
type bigBatchResult struct {
	Order string `json:"order"` // random or sorted
	Keys  int    `json:"keys"`
	// Seconds covers building the batch and committing it (what a client
	// pays); the keys and values exist before the clock starts.
	Seconds float64 `json:"seconds"`
	// AllocBytes is runtime.MemStats.TotalAlloc's growth over the same
	// span: Go heap bytes allocated, whether freed since or not. Memory
	// taken outside the Go heap (shale's memtable arenas are anonymous
	// mappings; Pebble's come from C malloc when cgo is on) is not in it.
	AllocBytes uint64 `json:"alloc_bytes"`
	Mallocs    uint64 `json:"mallocs"`
}

const (
	orderRandom = "random"
	orderSorted = "sorted"
)

// bigBatchEngine says which engines run the large batch: the issue's
// target compares shale with Pebble. (Badger's transactions cannot hold a
// million writes.)
func bigBatchEngine(name string) bool { return name == "shale" || name == "pebble" }

// bigBatchData makes n distinct random keys (sorted if asked) and their
// values, sliced from two flat buffers so that making them costs the
// measured span nothing.
func bigBatchData(n int, sorted bool) (keys, vals [][]byte) {
	rng := rand.New(rand.NewPCG(12, 12))
	kbuf := make([]byte, n*bigBatchKeySize)
	for i := 0; i < len(kbuf); i += 8 {
		v := rng.Uint64()
		for j := range 8 {
			kbuf[i+j] = byte(v >> (8 * j))
		}
	}
	keys = make([][]byte, n)
	vals = make([][]byte, n)
	for i := range keys {
		keys[i] = kbuf[i*bigBatchKeySize : (i+1)*bigBatchKeySize : (i+1)*bigBatchKeySize]
		vals[i] = makeValue(i, bigBatchValueSize)
	}
	if sorted {
		slices.SortFunc(keys, bytes.Compare)
	}
	return keys, vals
}

// runBigBatches writes the large batch in random, then sorted key order,
// each into a new database under dir.
func runBigBatches(name, dir string, scfg storeConfig, n int) ([]bigBatchResult, error) {
	var out []bigBatchResult
	for _, order := range []string{orderRandom, orderSorted} {
		keys, vals := bigBatchData(n, order == orderSorted)
		r, err := bigBatchOnce(name, filepath.Join(dir, order), scfg, keys, vals)
		if err != nil {
			return nil, err
		}
		r.Order = order
		out = append(out, r)
		logf(name, "one batch of %d %s keys: %.3f s, %.1f MiB allocated (%d allocations)",
			n, order, r.Seconds, float64(r.AllocBytes)/(1<<20), r.Mallocs)
	}
	return out, nil
}

func bigBatchOnce(name, dir string, scfg storeConfig, keys, vals [][]byte) (bigBatchResult, error) {
	s, err := openStore(name, dir, scfg)
	if err != nil {
		return bigBatchResult{}, err
	}
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := time.Now()
	err = s.putBatch(keys, vals)
	elapsed := time.Since(start)
	runtime.ReadMemStats(&m1)
	if cerr := s.close(); err == nil {
		err = cerr
	}
	if rerr := os.RemoveAll(dir); err == nil {
		err = rerr
	}
	return bigBatchResult{Keys: len(keys), Seconds: elapsed.Seconds(),
		AllocBytes: m1.TotalAlloc - m0.TotalAlloc, Mallocs: m1.Mallocs - m0.Mallocs}, err
}
