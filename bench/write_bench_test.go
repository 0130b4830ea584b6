package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/shaledb/shale/driver"
)

// writeShapes are the write workloads of issue 29's write targets, each a
// fill of a fresh database: one random key per write and batches of 100
// mixed operations as go-ethereum's ethdb/dbtest writes them (32-byte keys
// and values), and a YCSB-style load (1000-byte values) by one and by four
// goroutines.
var writeShapes = []struct {
	name            string
	keys            int // writes per fill
	keySize, valLen int
	batch           int // operations per batch; 1: Put/Set
	threads         int
}{
	{"put", 300_000, 32, 32, 1, 1},
	{"batch100", 500_000, 32, 32, 100, 1},
	{"load1", 100_000, 24, 1000, 1, 1},
	{"load4", 100_000, 24, 1000, 1, 4},
}

// writeTarget is the write side of one engine.
type writeTarget interface {
	put(key, value []byte) error
	// batch writes sets (keys[i]=vals[i]) and, where del[i], deletions.
	batch(keys, vals [][]byte, del []bool) error
	close() error
}

type shaleWrites struct{ db *driver.DB }

func (s shaleWrites) put(k, v []byte) error { return s.db.Put(context.Background(), k, v) }
func (s shaleWrites) batch(keys, vals [][]byte, del []bool) error {
	var b driver.Batch
	for i := range keys {
		if del[i] {
			b.Delete(keys[i])
		} else {
			b.Put(keys[i], vals[i])
		}
	}
	return s.db.Write(context.Background(), &b)
}
func (s shaleWrites) close() error { return s.db.Close() }

type pebbleWrites struct{ db *pebble.DB }

func (p pebbleWrites) put(k, v []byte) error { return p.db.Set(k, v, pebble.NoSync) }
func (p pebbleWrites) batch(keys, vals [][]byte, del []bool) error {
	b := p.db.NewBatch()
	for i := range keys {
		if del[i] {
			_ = b.Delete(keys[i], nil)
		} else {
			_ = b.Set(keys[i], vals[i], nil)
		}
	}
	return b.Commit(pebble.NoSync)
}
func (p pebbleWrites) close() error { return p.db.Close() }

// writeConfigs are the engine settings BenchmarkWritePeers runs: each
// engine's defaults, and equal memtables of 64 MiB (the bench module's) and
// 4 MiB (Pebble's default). Both engines' memtables grow from 256 KiB to
// the size set.
var writeConfigs = []struct {
	name     string
	defaults bool
	memtable int64
}{
	{"defaults", true, 0},
	{"mem64", false, 64 << 20},
	{"mem4", false, 4 << 20},
}

func openWriteTarget(engine, dir string, defaults bool, memtable int64) (writeTarget, error) {
	cfg := storeConfig{cacheSize: 32 << 20, memtableSize: memtable, bloomBits: 10, shaleStats: "default", defaults: defaults}
	switch engine {
	case "shale":
		s, err := openShale(dir, cfg)
		if err != nil {
			return nil, err
		}
		return shaleWrites{s.db}, nil
	case "pebble":
		p, err := openPebble(dir, cfg)
		if err != nil {
			return nil, err
		}
		return pebbleWrites{p.db}, nil
	}
	return nil, fmt.Errorf("unknown engine %q", engine)
}

// BenchmarkWritePeers runs each write shape on shale and Pebble, at each
// engine's defaults and with equal memtables (writeConfigs); one operation is a
// whole fill of a fresh database on tmpfs, and ns/write the figure to
// compare, with cpu-ns/write beside it. Run the engines alternately in separate invocations
// (-bench 'WritePeers/engine=shale/' then pebble, several rounds) to get
// interleaved medians.
func BenchmarkWritePeers(b *testing.B) {
	for _, engine := range []string{"shale", "pebble"} {
		for _, cfg := range writeConfigs {
			for _, sh := range writeShapes {
				b.Run(fmt.Sprintf("engine=%s/cfg=%s/op=%s", engine, cfg.name, sh.name), func(b *testing.B) {
					rng := rand.New(rand.NewPCG(7, 9))
					keys := make([][]byte, sh.keys)
					vals := make([][]byte, sh.keys)
					del := make([]bool, sh.keys)
					for i := range keys {
						keys[i] = make([]byte, sh.keySize)
						binary.BigEndian.PutUint64(keys[i], rng.Uint64())
						binary.BigEndian.PutUint64(keys[i][8:], rng.Uint64())
						vals[i] = make([]byte, sh.valLen)
						binary.BigEndian.PutUint64(vals[i], rng.Uint64())
						// A quarter of a mixed batch deletes a key written earlier.
						if sh.batch > 1 && i > 0 && rng.IntN(4) == 0 {
							keys[i] = keys[rng.IntN(i)]
							del[i] = true
						}
					}
					var elapsed, cpu time.Duration
					for b.Loop() {
						b.StopTimer()
						dir, err := os.MkdirTemp(defaultDir(), "shale-writepeers-")
						if err != nil {
							b.Fatal(err)
						}
						t, err := openWriteTarget(engine, dir, cfg.defaults, cfg.memtable)
						if err != nil {
							b.Fatal(err)
						}
						start, cpu0 := time.Now(), cpuTime()
						b.StartTimer()
						var wg sync.WaitGroup
						for w := range sh.threads {
							wg.Go(func() {
								for i := w * sh.batch; i < sh.keys; i += sh.threads * sh.batch {
									var err error
									if sh.batch == 1 {
										err = t.put(keys[i], vals[i])
									} else {
										end := min(i+sh.batch, sh.keys)
										err = t.batch(keys[i:end], vals[i:end], del[i:end])
									}
									if err != nil {
										b.Error(err)
										return
									}
								}
							})
						}
						wg.Wait()
						b.StopTimer()
						elapsed += time.Since(start)
						cpu += cpuTime() - cpu0
						if err := t.close(); err != nil {
							b.Error(err)
						}
						_ = os.RemoveAll(dir)
						b.StartTimer()
					}
					b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N*sh.keys), "ns/write")
					// The process's CPU time (all threads, background work
					// included) is less disturbed than wall time by other
					// processes on a shared machine.
					b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*sh.keys), "cpu-ns/write")
				})
			}
		}
	}
}
