package main

// Interleaved shale/Pebble benchmarks of the iterator's seek paths (issue
// 29): the main workload's SeekGE on one long-lived iterator, YCSB E's
// short scans (a new iterator, a zipfian SeekGE, 1–100 Nexts, Close) and
// the fixed cost of an iterator over an absent prefix with prefix filters.
// Each benchmark runs the engines one after the other, so `-count N`
// interleaves them N times; the databases are built once per process.
//
//	go test -run '^$' -bench 'Seek|YCSBE|PrefixAbsent' -count 5 -benchtime 2s
//
// SEEKBENCH_KEYS sets the number of keys (default: 128 MiB of data, 493447
// keys of 16 B with 256 B values as bench/'s main run), SEEKBENCH_VALUE the
// value size (default 256) and SEEKBENCH_DIR the parent directory (default
// /dev/shm).

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/shaledb/shale/statistics"
)

// seekBenchValueSize is SEEKBENCH_VALUE, 256 by default.
var seekBenchValueSize = func() int {
	if n, err := strconv.Atoi(os.Getenv("SEEKBENCH_VALUE")); err == nil && n > 0 {
		return n
	}
	return 256
}()

func seekBenchKeys(b *testing.B) int {
	if s := os.Getenv("SEEKBENCH_KEYS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 100 {
			b.Fatalf("SEEKBENCH_KEYS=%q: want a number >= 100", s)
		}
		return n
	}
	return int(128<<20) / (keySize + seekBenchValueSize)
}

func seekBenchDir(b *testing.B) string {
	parent := os.Getenv("SEEKBENCH_DIR")
	if parent == "" {
		if _, err := os.Stat("/dev/shm"); err == nil {
			parent = "/dev/shm"
		}
	}
	dir, err := os.MkdirTemp(parent, "shale-seekbench-")
	if err != nil {
		b.Fatal(err)
	}
	return dir
}

var seekBenchEngines = []string{"shale", "pebble"}

var seekBenchStores struct {
	sync.Mutex
	main   map[string]store
	prefix map[string]prefixStore
	n      int
	dirs   []string
}

// TestMain removes the benchmark databases.
func TestMain(m *testing.M) {
	code := m.Run()
	s := &seekBenchStores
	for _, st := range s.main {
		_ = st.close()
	}
	for _, st := range s.prefix {
		_ = st.close()
	}
	for _, d := range s.dirs {
		_ = os.RemoveAll(d)
	}
	os.Exit(code)
}

func seekBenchConfig() storeConfig {
	return storeConfig{cacheSize: 32 << 20, memtableSize: 64 << 20, bloomBits: 10, shaleStats: "default"}
}

// seekBenchMain returns engine's database of the main workload, loaded in
// a random order in batches of 1000 and compacted.
func seekBenchMain(b *testing.B, engine string) (store, int) {
	s := &seekBenchStores
	s.Lock()
	defer s.Unlock()
	if st, ok := s.main[engine]; ok {
		return st, s.n
	}
	n := seekBenchKeys(b)
	dir := seekBenchDir(b)
	s.dirs = append(s.dirs, dir)
	st, err := openStore(engine, dir, seekBenchConfig())
	if err != nil {
		b.Fatal(err)
	}
	order := newKeyOrder(n, 1)
	const batch = 1000
	keys := make([][]byte, batch)
	vals := make([][]byte, batch)
	for i := range keys {
		keys[i] = make([]byte, keySize)
	}
	for lo := 0; lo < n; lo += batch {
		hi := min(lo+batch, n)
		for i := lo; i < hi; i++ {
			k := order.at(i)
			makeKey(keys[i-lo], k, 0)
			vals[i-lo] = makeValue(k, seekBenchValueSize)
		}
		if err := st.putBatch(keys[:hi-lo], vals[:hi-lo]); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.compact(); err != nil {
		b.Fatal(err)
	}
	if p, ok := st.(*pebbleStore); ok {
		p.settleCache()
	}
	// Warm the block cache with the YCSB E shape's zipfian scans, so
	// that the first benchmark to run does not pay for the cold cache.
	if err := seekBenchScans(st, n, 50000); err != nil {
		b.Fatal(err)
	}
	if s.main == nil {
		s.main = map[string]store{}
	}
	s.main[engine], s.n = st, n
	return st, n
}

// BenchmarkSeekGE is bench/'s seek phase: one iterator, a SeekGE to a
// random present key and a read of its key and value.
func BenchmarkSeekGE(b *testing.B) {
	for _, engine := range seekBenchEngines {
		b.Run("engine="+engine, func(b *testing.B) {
			st, n := seekBenchMain(b, engine)
			c, err := st.newCursor()
			if err != nil {
				b.Fatal(err)
			}
			defer c.close()
			rng := rand.New(rand.NewPCG(1, 2))
			var kbuf [keySize]byte
			m0 := seekBenchMisses(st)
			defer seekBenchCPU(b)()
			b.ResetTimer()
			defer func() { b.ReportMetric(float64(seekBenchMisses(st)-m0)/float64(b.N), "misses/op") }()
			for range b.N {
				if !c.seekGE(makeKey(kbuf[:], rng.IntN(n), 0)) {
					b.Fatal("SeekGE found nothing")
				}
				if _, err := c.touch(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkYCSBE is YCSB's workload E read side: a new iterator, a SeekGE
// to a zipfian-chosen key (scrambled, as YCSB's scrambled zipfian), and 1
// to 100 Nexts (uniform), each entry's key and value read, then Close.
func BenchmarkYCSBE(b *testing.B) {
	for _, engine := range seekBenchEngines {
		b.Run("engine="+engine, func(b *testing.B) {
			st, n := seekBenchMain(b, engine)
			rng := rand.New(rand.NewPCG(3, 4))
			m0 := seekBenchMisses(st)
			defer seekBenchCPU(b)()
			b.ResetTimer()
			rows, err := seekBenchScanLoop(st, n, b.N, rng)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(rows)/float64(b.N), "rows/op")
			b.ReportMetric(float64(seekBenchMisses(st)-m0)/float64(b.N), "misses/op")
		})
	}
}

// seekBenchPrefix returns engine's prefix-suite database (tenants of 16
// keys, absent tenants between them), compacted.
func seekBenchPrefix(b *testing.B, engine string) (prefixStore, int) {
	const perTenant = 16
	s := &seekBenchStores
	s.Lock()
	defer s.Unlock()
	n := seekBenchKeys(b) / perTenant * perTenant
	tenants := n / perTenant
	if st, ok := s.prefix[engine]; ok {
		return st, tenants
	}
	dir := seekBenchDir(b)
	s.dirs = append(s.dirs, dir)
	var st prefixStore
	var err error
	if engine == "shale" {
		st, err = openShalePrefix(dir, seekBenchConfig())
	} else {
		st, err = openPebblePrefix(dir, seekBenchConfig())
	}
	if err != nil {
		b.Fatal(err)
	}
	order := newKeyOrder(n, 1)
	const batch = 1000
	keys := make([][]byte, batch)
	vals := make([][]byte, batch)
	for i := range keys {
		keys[i] = make([]byte, keySize)
	}
	for lo := 0; lo < n; lo += batch {
		hi := min(lo+batch, n)
		for i := lo; i < hi; i++ {
			x := order.at(i)
			prefixKey(keys[i-lo], 2*uint64(x/perTenant), x%perTenant)
			vals[i-lo] = makeValue(x, seekBenchValueSize)
		}
		if err := st.putBatch(keys[:hi-lo], vals[:hi-lo]); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.settle(); err != nil {
		b.Fatal(err)
	}
	if err := st.compact(); err != nil {
		b.Fatal(err)
	}
	if s.prefix == nil {
		s.prefix = map[string]prefixStore{}
	}
	s.prefix[engine] = st
	return st, tenants
}

// BenchmarkPrefixAbsent is the prefix suite's absent-prefix scan with
// prefix filters after a full compaction: an iterator's fixed cost.
func BenchmarkPrefixAbsent(b *testing.B) {
	for _, engine := range seekBenchEngines {
		b.Run("engine="+engine, func(b *testing.B) {
			st, tenants := seekBenchPrefix(b, engine)
			rng := rand.New(rand.NewPCG(5, 6))
			var p [prefixLen]byte
			defer seekBenchCPU(b)()
			b.ResetTimer()
			for range b.N {
				binary.BigEndian.PutUint64(p[:], 2*uint64(rng.IntN(tenants))+1)
				got, err := st.scan(p[:], true)
				if err != nil || got != 0 {
					b.Fatalf("absent prefix: %d keys, %v", got, err)
				}
			}
		})
	}
}

// seekBenchMisses is the engine's count of data block cache misses.
func seekBenchMisses(st any) int64 {
	switch s := st.(type) {
	case *shalePrefixStore:
		return seekBenchMisses(s.shaleStore)
	case *pebblePrefixStore:
		return seekBenchMisses(s.pebbleStore)
	case *shaleStore:
		return int64(s.db.Statistics().TickerCount(statistics.BlockCacheDataMiss))
	case *pebbleStore:
		return s.db.Metrics().BlockCache.Misses
	}
	return 0
}

// seekBenchCPU returns a function that reports the process's CPU time per
// operation (user and system, every thread) since the call as cpu-ns/op:
// on a shared machine the wall time includes the time the benchmark waited
// for a core.
func seekBenchCPU(b *testing.B) func() {
	start := cpuTime()
	return func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op") }
}

// seekBenchScans runs count YCSB E scans (see BenchmarkYCSBE) and returns
// how many rows they read.
func seekBenchScans(st store, n, count int) error {
	_, err := seekBenchScanLoop(st, n, count, rand.New(rand.NewPCG(9, 10)))
	return err
}

func seekBenchScanLoop(st store, n, count int, rng *rand.Rand) (int, error) {
	zipf := rand.NewZipf(rng, 1.01, 1, uint64(n-1))
	order := newKeyOrder(n, 7)
	var kbuf [keySize]byte
	rows := 0
	for range count {
		k := order.at(int(zipf.Uint64()))
		length := 1 + rng.IntN(100)
		c, err := st.newCursor()
		if err != nil {
			return rows, err
		}
		for ok, i := c.seekGE(makeKey(kbuf[:], k, 0)), 0; ok && i < length; ok, i = c.next(), i+1 {
			if _, err := c.touch(); err != nil {
				return rows, err
			}
			rows++
		}
		if err := c.close(); err != nil {
			return rows, err
		}
	}
	return rows, nil
}

// BenchmarkBoundsAbsent is the prefix suite's bounded scan of an absent
// tenant without the prefix filter, after a full compaction.
func BenchmarkBoundsAbsent(b *testing.B) {
	for _, engine := range seekBenchEngines {
		b.Run("engine="+engine, func(b *testing.B) {
			st, tenants := seekBenchPrefix(b, engine)
			rng := rand.New(rand.NewPCG(5, 6))
			var p [prefixLen]byte
			m0 := seekBenchMisses(st)
			defer func() { b.ReportMetric(float64(seekBenchMisses(st)-m0)/float64(b.N), "misses/op") }()
			defer seekBenchCPU(b)()
			b.ResetTimer()
			for range b.N {
				binary.BigEndian.PutUint64(p[:], 2*uint64(rng.IntN(tenants))+1)
				got, err := st.scan(p[:], false)
				if err != nil || got != 0 {
					b.Fatalf("absent prefix: %d keys, %v", got, err)
				}
			}
		})
	}
}
