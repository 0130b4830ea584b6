package engine

// Go equivalents of RocksDB's microbench/db_basic_bench.cc (DBGet,
// IteratorSeek, IteratorNext, IteratorPrev, DBPut) plus MultiGet and
// GetPinned, named so that benchstat can group them by any key=value part:
//
//	BenchmarkDBGet/max_data=128MiB/per_key_size=256/stats=default/negative_query=false/filter=true/mmap=false
//
// The full cross product (2 sizes × 2 value sizes × 3 stats levels × 2 × 2 × 2
// = 96 databases of 128 MiB) would take far too long, so each benchmark
// varies one dimension at a time around a base configuration:
//
//	base: per_key_size=256, stats=default, negative_query=false, filter=true, mmap=false
//
// and every variant is run for each max_data size. As in db_basic_bench,
// key_num = max_data / per_key_size; keys are 16 bytes, the big-endian
// uint32 k*3+offset followed by zeros (offset 0 exists, offset 1 never does);
// values are random printable strings. A database is loaded in key order
// and compacted into one sorted run (CompactRange, as in RocksDB #11498)
// before it is read. mmap=true follows RocksDB's setup: allow_mmap_reads, no
// compression, no block cache, block_restart_interval=1, checksums not
// verified on reads. Every other configuration has a 32 MiB block cache,
// snappy and (filter=true) a 10 bits/key bloom filter, like bench/.
//
// Sizes: max_data is 128MiB by default and 8MiB with -short; the
// SHALE_BENCH_MAX_DATA environment variable overrides both with a comma list
// (e.g. SHALE_BENCH_MAX_DATA=8MiB,128MiB,512MiB). Databases live under
// SHALE_BENCH_DIR, else /dev/shm when it exists (tmpfs, as the RocksDB PRs
// used), else the temporary directory. One loaded database is cached and
// shared by consecutive sub-benchmarks with the same configuration (and by
// -count repetitions); it is closed and removed when the configuration
// changes and when the top-level benchmark ends.
//
// These benchmarks are not run in CI; a quick run is
//
//	go test ./engine -run '^$' -bench . -short -benchtime 2000x

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

const (
	benchKeySize    = 16
	benchMultiplier = 3 // RocksDB's KeyGenerator MULTIPLIER
	benchCacheSize  = 32 << 20
)

// benchConfig is what a loaded database depends on. negative_query is not
// part of it: positive and negative queries read the same database.
type benchConfig struct {
	maxData   int64
	valueSize int
	stats     string // off, default, all
	filter    bool
	mmap      bool
}

func (c benchConfig) name() string {
	return fmt.Sprintf("max_data=%s/per_key_size=%d/stats=%s", benchFormatSize(c.maxData), c.valueSize, c.stats)
}

func (c benchConfig) numKeys() int { return int(c.maxData / int64(c.valueSize)) }

// benchVariants returns the configurations the read benchmarks run: the
// base for each max_data, then one dimension changed at a time, one per
// letter of dims: k per_key_size=1024, s stats=off and stats=all, f
// filter=false, m mmap=true. Variants that share a database are adjacent
// so the one-slot cache serves them.
func benchVariants(tb testing.TB, dims string) []benchConfig {
	var out []benchConfig
	for _, md := range benchMaxData(tb) {
		base := benchConfig{maxData: md, valueSize: 256, stats: "default", filter: true}
		out = append(out, base)
		for _, d := range dims {
			c := base
			switch d {
			case 'k':
				c.valueSize = 1024
			case 's':
				c.stats = "off"
				out = append(out, c)
				c.stats = "all"
			case 'f':
				c.filter = false
			case 'm':
				c.mmap = true
			}
			out = append(out, c)
		}
	}
	return out
}

func benchMaxData(tb testing.TB) []int64 {
	spec := os.Getenv("SHALE_BENCH_MAX_DATA")
	if spec == "" {
		if testing.Short() {
			return []int64{8 << 20}
		}
		return []int64{128 << 20}
	}
	var out []int64
	for _, s := range strings.Split(spec, ",") {
		n, err := benchParseSize(strings.TrimSpace(s))
		if err != nil {
			tb.Fatalf("SHALE_BENCH_MAX_DATA: %v", err)
		}
		out = append(out, n)
	}
	return out
}

func benchParseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, errors.Newf("bad size %q", s)
	}
	return n * mult, nil
}

func benchFormatSize(n int64) string {
	switch {
	case n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return strconv.FormatInt(n, 10)
}

// benchKey writes RocksDB's KeyGenerator key for k*3+offset into buf.
func benchKey(buf []byte, k int, offset int) []byte {
	buf = buf[:benchKeySize]
	clear(buf)
	v := uint32(k*benchMultiplier + offset)
	buf[0], buf[1], buf[2], buf[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
	return buf
}

// benchValues is a pool of random printable bytes (RocksDB's RandomString)
// that values are sliced from, so loading does not spend its time in the
// random number generator.
var benchValues = sync.OnceValue(func() []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = ' ' + byte(rng.IntN(95))
	}
	return buf
})

func benchValue(k, size int) []byte {
	pool := benchValues()
	off := (k * 7919) % (len(pool) - size)
	return pool[off : off+size]
}

func benchBaseDir() string {
	if d := os.Getenv("SHALE_BENCH_DIR"); d != "" {
		return d
	}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}

func benchOptions(c benchConfig) *Options {
	o := &Options{BlockCacheSize: benchCacheSize, BloomBitsPerKey: 10, Compression: CompressionSnappy}
	switch c.stats {
	case "off":
		o.DisableStatistics = true
	case "default":
		o.Statistics = statistics.New(statistics.LevelExceptDetailedTimers)
	case "all":
		o.Statistics = statistics.New(statistics.LevelAll)
	default:
		panic("unknown stats " + c.stats)
	}
	if !c.filter {
		o.BloomBitsPerKey = -1
	}
	if c.mmap {
		o.MmapReads = true
		o.Compression = CompressionNone
		o.BlockCacheSize = -1
		o.BlockRestartInterval = 1
	}
	return o
}

// benchReadContext is the context reads use: mmap=true does not verify
// checksums (RocksDB's ro.verify_checksums=false in that setup).
func benchReadContext(c benchConfig) context.Context {
	ctx := context.Background()
	if c.mmap {
		ctx = ioctx.WithReadOptions(ctx, ioctx.ReadOptions{DontVerifyChecksums: true})
	}
	return ctx
}

type benchDB struct {
	cfg  benchConfig
	dir  string
	db   *database
	keys int
}

// benchCached is the one loaded database kept between sub-benchmarks.
var benchCached struct {
	sync.Mutex
	cur *benchDB
}

// benchCloseCached closes and removes the cached database. Top-level
// benchmarks register it with b.Cleanup.
func benchCloseCached() {
	benchCached.Lock()
	defer benchCached.Unlock()
	if c := benchCached.cur; c != nil {
		_ = c.db.Close()
		_ = os.RemoveAll(c.dir)
		benchCached.cur = nil
	}
}

// benchOpen returns the loaded, compacted database for c, loading it on
// first use.
func benchOpen(b *testing.B, c benchConfig) *benchDB {
	b.Helper()
	benchCached.Lock()
	cur := benchCached.cur
	benchCached.Unlock()
	if cur != nil && cur.cfg == c {
		return cur
	}
	benchCloseCached()
	dir, err := os.MkdirTemp(benchBaseDir(), "shale-bench-")
	if err != nil {
		b.Fatal(err)
	}
	db, err := openDatabase(dir, benchOptions(c))
	if err != nil {
		_ = os.RemoveAll(dir)
		b.Fatal(err)
	}
	bdb := &benchDB{cfg: c, dir: dir, db: db, keys: c.numKeys()}
	benchCached.Lock()
	benchCached.cur = bdb
	benchCached.Unlock()

	ctx := context.Background()
	batch := newWriteBatch()
	var key [benchKeySize]byte
	for k := range bdb.keys {
		batch.Put(benchKey(key[:], k, 0), benchValue(k, c.valueSize))
		if batch.Count() == 1000 || k == bdb.keys-1 {
			if err := db.Write(ctx, batch, nil); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
		}
	}
	if err := db.Compact(ctx, nil, nil); err != nil {
		b.Fatal(err)
	}
	// Warm the block cache and the table readers.
	rctx := benchReadContext(c)
	rng := rand.New(rand.NewPCG(3, 4))
	for range min(bdb.keys, 50000) {
		v, err := db.GetPinned(rctx, benchKey(key[:], rng.IntN(bdb.keys), 0))
		if err != nil {
			b.Fatal(err)
		}
		v.Release()
	}
	return bdb
}

func benchNegName(neg bool) string { return "negative_query=" + strconv.FormatBool(neg) }

// benchReadName is the name of a read sub-benchmark. Every dimension is in
// every name, so benchstat can group by any of them.
func benchReadName(c benchConfig, neg bool) string {
	return fmt.Sprintf("%s/%s/filter=%t/mmap=%t", c.name(), benchNegName(neg), c.filter, c.mmap)
}

// benchReadCase is one read sub-benchmark's database and query kind.
type benchReadCase struct {
	cfg    benchConfig
	neg    bool
	isBase bool // the base configuration of its max_data
}

// benchReadCases expands configurations into (config, negative_query)
// pairs: the base also runs negatively.
func benchReadCases(cfgs []benchConfig, withNeg bool) []benchReadCase {
	var out []benchReadCase
	for i, c := range cfgs {
		isBase := i == 0 || cfgs[i-1].maxData != c.maxData
		out = append(out, benchReadCase{c, false, isBase})
		if withNeg && isBase {
			out = append(out, benchReadCase{c, true, isBase})
		}
	}
	return out
}

// benchReportStats reports RocksDB's get_mean/get_p99 counters from the DB
// Get histogram (microseconds), when statistics record it.
func benchReportStats(b *testing.B, db *database, h statistics.Histogram, prefix string) {
	s := db.Statistics()
	if s == nil || !s.HistogramEnabled(h) {
		return
	}
	d := s.HistogramData(h)
	if d.Count == 0 {
		return
	}
	b.ReportMetric(d.Average, prefix+"_mean-us")
	b.ReportMetric(d.P99, prefix+"_p99-us")
}

func benchResetStats(db *database) {
	if s := db.Statistics(); s != nil {
		s.Reset()
	}
}

// BenchmarkDBGet is db_basic_bench's DBGet: a copying Get of a random key
// (negative_query=true: a key between two existing ones). threads=8 runs
// eight goroutines on the base configuration.
func BenchmarkDBGet(b *testing.B) {
	b.Cleanup(benchCloseCached)
	for _, rc := range benchReadCases(benchVariants(b, "ksfm"), true) {
		b.Run(benchReadName(rc.cfg, rc.neg)+"/threads=1", func(b *testing.B) {
			bdb := benchOpen(b, rc.cfg)
			benchGet(b, bdb, rc.neg, false)
		})
		if rc.isBase && !rc.neg {
			b.Run(benchReadName(rc.cfg, rc.neg)+"/threads=8", func(b *testing.B) {
				bdb := benchOpen(b, rc.cfg)
				benchGetParallel(b, bdb)
			})
		}
	}
}

// BenchmarkGetPinned is DBGet's positive base case without the copy: the
// value stays pinned in the block cache (or memory map) until Release.
func BenchmarkGetPinned(b *testing.B) {
	b.Cleanup(benchCloseCached)
	for _, rc := range benchReadCases(benchVariants(b, "m"), false) {
		b.Run(benchReadName(rc.cfg, false), func(b *testing.B) {
			bdb := benchOpen(b, rc.cfg)
			benchGet(b, bdb, false, true)
		})
	}
}

func benchGet(b *testing.B, bdb *benchDB, negative, pinned bool) {
	ctx := benchReadContext(bdb.cfg)
	rng := rand.New(rand.NewPCG(1, 2))
	offset := 0
	if negative {
		offset = 1
	}
	var key [benchKeySize]byte
	var hits, misses int
	benchResetStats(bdb.db)
	b.ReportAllocs()
	for b.Loop() {
		k := benchKey(key[:], rng.IntN(bdb.keys), offset)
		var err error
		if pinned {
			var v pinnedValue
			if v, err = bdb.db.GetPinned(ctx, k); err == nil {
				v.Release()
			}
		} else {
			_, err = bdb.db.Get(ctx, k)
		}
		// An if, not a switch: a switch with a case calling errors.Is in a
		// b.Loop body crashes the Go 1.26.8 compiler (escape analysis).
		if err != nil {
			if !errors.Is(err, ErrNotFound) {
				b.Fatal(err)
			}
			misses++
		} else {
			hits++
		}
	}
	if negative && hits != 0 || !negative && misses != 0 {
		b.Fatalf("negative_query=%t: %d found, %d not found", negative, hits, misses)
	}
	b.ReportMetric(100*float64(misses)/float64(hits+misses), "neg_qu_pct")
	benchReportStats(b, bdb.db, statistics.DBGet, "get")
}

func benchGetParallel(b *testing.B, bdb *benchDB) {
	ctx := benchReadContext(bdb.cfg)
	var seed sync.Mutex
	next := uint64(2)
	// RunParallel starts parallelism × GOMAXPROCS goroutines.
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((8 + procs - 1) / procs)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		seed.Lock()
		s := next
		next++
		seed.Unlock()
		rng := rand.New(rand.NewPCG(1, s))
		var key [benchKeySize]byte
		for pb.Next() {
			if _, err := bdb.db.Get(ctx, benchKey(key[:], rng.IntN(bdb.keys), 0)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkMultiGet reads batches of 16 random keys; ns/key is the time per
// key, to compare with DBGet.
func BenchmarkMultiGet(b *testing.B) {
	b.Cleanup(benchCloseCached)
	const batch = 16
	for _, rc := range benchReadCases(benchVariants(b, "sf"), true) {
		b.Run(fmt.Sprintf("batch=%d/%s", batch, benchReadName(rc.cfg, rc.neg)), func(b *testing.B) {
			bdb := benchOpen(b, rc.cfg)
			ctx := benchReadContext(bdb.cfg)
			rng := rand.New(rand.NewPCG(1, 2))
			offset := 0
			if rc.neg {
				offset = 1
			}
			keys := make([][]byte, batch)
			for i := range keys {
				keys[i] = make([]byte, benchKeySize)
			}
			var found, total int
			benchResetStats(bdb.db)
			b.ReportAllocs()
			for b.Loop() {
				for i := range keys {
					benchKey(keys[i], rng.IntN(bdb.keys), offset)
				}
				vals, err := bdb.db.MultiGet(ctx, keys)
				if err != nil {
					b.Fatal(err)
				}
				for _, v := range vals {
					if v != nil {
						found++
					}
				}
				total += batch
			}
			if rc.neg && found != 0 || !rc.neg && found != total {
				b.Fatalf("negative_query=%t: %d of %d found", rc.neg, found, total)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(total), "ns/key")
			benchReportStats(b, bdb.db, statistics.DBMultiGet, "multiget")
		})
	}
}

// BenchmarkIteratorSeek times SeekGE to a random key (negative_query=true:
// a key that does not exist, landing on its successor). Unlike RocksDB,
// which creates an iterator per seek with the timer paused, one iterator is
// reused: pausing the timer per operation costs more than a seek.
func BenchmarkIteratorSeek(b *testing.B) {
	b.Cleanup(benchCloseCached)
	for _, rc := range benchReadCases(benchVariants(b, "ksf"), true) {
		b.Run(benchReadName(rc.cfg, rc.neg), func(b *testing.B) {
			bdb := benchOpen(b, rc.cfg)
			it, err := bdb.db.NewIterator(benchReadContext(bdb.cfg), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = it.Close() }()
			rng := rand.New(rand.NewPCG(1, 2))
			offset := 0
			if rc.neg {
				offset = 1
			}
			var key [benchKeySize]byte
			b.ReportAllocs()
			for b.Loop() {
				k := rng.IntN(bdb.keys)
				if !it.SeekGE(benchKey(key[:], k, offset)) && k != bdb.keys-1 {
					b.Fatalf("SeekGE(%x) found nothing: %v", key, it.Error())
				}
			}
		})
	}
}

// BenchmarkIteratorNext times Next over the whole database, starting at a
// random key and wrapping around to First at the end.
func BenchmarkIteratorNext(b *testing.B) {
	benchIterStep(b, true)
}

// BenchmarkIteratorPrev times Prev, wrapping around to Last at the start.
func BenchmarkIteratorPrev(b *testing.B) {
	benchIterStep(b, false)
}

func benchIterStep(b *testing.B, forward bool) {
	b.Cleanup(benchCloseCached)
	for _, c := range benchVariants(b, "ks") {
		b.Run(fmt.Sprintf("%s/filter=%t/mmap=%t", c.name(), c.filter, c.mmap), func(b *testing.B) {
			bdb := benchOpen(b, c)
			it, err := bdb.db.NewIterator(benchReadContext(bdb.cfg), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = it.Close() }()
			var key [benchKeySize]byte
			rng := rand.New(rand.NewPCG(1, 2))
			if !it.SeekGE(benchKey(key[:], rng.IntN(bdb.keys), 0)) {
				b.Fatal("SeekGE found nothing")
			}
			var n int
			b.ReportAllocs()
			for b.Loop() {
				var ok bool
				if forward {
					if ok = it.Next(); !ok {
						ok = it.First()
					}
				} else {
					if ok = it.Prev(); !ok {
						ok = it.Last()
					}
				}
				if !ok {
					b.Fatalf("iterator exhausted: %v", it.Error())
				}
				n += len(it.Value())
			}
			if n == 0 {
				b.Fatal("no values read")
			}
		})
	}
}

// BenchmarkDBPut is db_basic_bench's DBPut: one Put of a random key per
// operation into a fresh database (WAL on, no sync: shale always writes its
// WAL). Flushes and compactions run in the background as they come.
func BenchmarkDBPut(b *testing.B) {
	for _, size := range []int{256, 1024} {
		for _, stats := range []string{"off", "default", "all"} {
			c := benchConfig{maxData: 100 << 30, valueSize: size, stats: stats, filter: true}
			b.Run(fmt.Sprintf("per_key_size=%d/stats=%s/wal=true", size, stats), func(b *testing.B) {
				dir, err := os.MkdirTemp(benchBaseDir(), "shale-bench-put-")
				if err != nil {
					b.Fatal(err)
				}
				defer func() { _ = os.RemoveAll(dir) }()
				db, err := openDatabase(dir, benchOptions(c))
				if err != nil {
					b.Fatal(err)
				}
				defer func() {
					if err := db.Close(); err != nil {
						b.Error(err)
					}
				}()
				ctx := context.Background()
				rng := rand.New(rand.NewPCG(1, 2))
				var key [benchKeySize]byte
				b.ReportAllocs()
				for b.Loop() {
					k := rng.IntN(1 << 30)
					if err := db.Put(ctx, benchKey(key[:], k, 0), benchValue(k, size)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
