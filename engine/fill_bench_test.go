package engine

import (
	"context"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/cpubench"
	"github.com/shaledb/shale/statistics"
)

// fillKeys is the bench module's 32 MiB fill: 32 MiB of 256-byte values.
const fillKeys = 32 << 20 / 256

// BenchmarkFillRandom is the bench module's "random fill, 1 put/write"
// phase (issue 15) inside one process: every key of a fixed random
// permutation written once, one Put each, into a database with a 64 MiB
// memtable (so nothing is flushed), the WAL on tmpfs where there is one, no
// sync, default statistics. A fresh database is opened, untimed, every
// fillKeys writes. Besides ns/op it reports cpu-ns/op, the process's CPU
// time (all threads) per write: above ns/op, something besides the writer
// works during the fill.
func BenchmarkFillRandom(b *testing.B) {
	for _, stats := range []string{"off", "default"} {
		b.Run("stats="+stats, func(b *testing.B) {
			benchFill(b, stats)
		})
	}
}

func benchFill(b *testing.B, stats string) {
	perm := rand.New(rand.NewPCG(1, 2)).Perm(fillKeys)
	opts := func() *Options {
		o := &Options{BlockCacheSize: 32 << 20, BloomBitsPerKey: 10, Compression: CompressionSnappy,
			WriteBufferSize: 64 << 20}
		if stats == "off" {
			o.DisableStatistics = true
		} else {
			o.Statistics = statistics.New(statistics.LevelExceptDetailedTimers)
		}
		return o
	}
	var db *database
	var dir string
	closeDB := func() {
		if db == nil {
			return
		}
		if err := db.Close(); err != nil {
			b.Error(err)
		}
		_ = os.RemoveAll(dir)
		db = nil
	}
	defer closeDB()
	open := func() {
		closeDB()
		var err error
		if dir, err = os.MkdirTemp(benchBaseDir(), "shale-bench-fill-"); err != nil {
			b.Fatal(err)
		}
		if db, err = openDatabase(dir, opts()); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	var key [benchKeySize]byte
	i := fillKeys
	var cpu time.Duration
	b.ReportAllocs()
	cpu0, cpuOK := cpubench.ProcessCPU()
	for b.Loop() {
		if i == fillKeys {
			b.StopTimer()
			cpu += cpuSince(cpu0)
			open()
			i = 0
			cpu0, _ = cpubench.ProcessCPU()
			b.StartTimer()
		}
		k := perm[i]
		if err := db.Put(ctx, benchKey(key[:], k, 0), benchValue(k, 256)); err != nil {
			b.Fatal(err)
		}
		i++
	}
	cpu += cpuSince(cpu0)
	// Where the system does not give the process's CPU time, no figure
	// rather than a zero one.
	if cpuOK {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// cpuSince is the process CPU time used since cpubench.ProcessCPU said cpu0.
func cpuSince(cpu0 time.Duration) time.Duration {
	now, _ := cpubench.ProcessCPU()
	return now - cpu0
}
