package main

// The zstd suite (-suite zstd): the bytes on disk and the speed of shale's
// compression=zstd against Pebble's zstd, with snappy on both as the
// reference, on values that compress to about half (db_bench's
// compression_ratio=0.5). See bench/README.md, "zstd".

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/engine"
)

// zstdLevel is both engines' zstd level: Pebble's zstd profile
// (sstable.ZstdCompression) is level 3, and its other levels are not
// offered outside its internal packages.
const zstdLevel = 3

func init() {
	benchSuites["zstd"] = &benchSuite{
		name:     "zstd",
		title:    "zstd against snappy, shale against Pebble",
		workload: zstdWorkload,
		jobs: func(*config) []suiteJob {
			return []suiteJob{
				{engine: "shale", config: "snappy", label: "shale, snappy", tags: "codec=snappy/engine=shale"},
				{engine: "pebble", config: "snappy", label: "Pebble, snappy", tags: "codec=snappy/engine=pebble", pair: "shale/snappy"},
				{engine: "shale", config: "zstd", label: "shale, zstd", tags: "codec=zstd/engine=shale"},
				{engine: "pebble", config: "zstd", label: "Pebble, zstd", tags: "codec=zstd/engine=pebble", pair: "shale/zstd"},
			}
		},
		figures: []suiteFigure{
			{key: "tables_mib", bench: "ZstdTables", label: "live tables after the full compaction (MiB)", scale: 1, bsScale: 1 << 20, bsUnit: "B"},
			{key: "tables_ratio", bench: "ZstdTablesRatio", label: "… / bytes written (keys + values)", scale: 1, bsScale: 1, bsUnit: "ratio"},
			{key: "fill_ns", bench: "ZstdFillRandom", label: "fill random, 1 key per write (µs/op)", scale: 1e-3, bsScale: 1, bsUnit: "ns/op"},
			{key: "fill_cpu_ns", bench: "ZstdFillRandomCPU", label: "… CPU µs/op", scale: 1e-3, bsScale: 1, bsUnit: "ns/op"},
			{key: "compact_s", bench: "ZstdFullCompaction", label: "full compaction after the fill (s)", scale: 1, bsScale: 1e9, bsUnit: "ns/op"},
			{key: "compact_cpu_s", bench: "ZstdFullCompactionCPU", label: "… CPU s", scale: 1, bsScale: 1e9, bsUnit: "ns/op"},
			{key: "get_hit_ns", bench: "ZstdGetHit", label: "Get hit (µs/op)", scale: 1e-3, bsScale: 1, bsUnit: "ns/op"},
			{key: "get_hit_cpu_ns", bench: "ZstdGetHitCPU", label: "… CPU µs/op", scale: 1e-3, bsScale: 1, bsUnit: "ns/op"},
			{key: "scan_ns", bench: "ZstdFullScan", label: "full scan, one iterator (µs/key)", scale: 1e-3, bsScale: 1, bsUnit: "ns/key"},
			{key: "scan_cpu_ns", bench: "ZstdFullScanCPU", label: "… CPU µs/key", scale: 1e-3, bsScale: 1, bsUnit: "ns/key"},
		},
		run: runZstdJob,
	}
}

func zstdWorkload(cfg *config) string {
	return fmt.Sprintf("%s of data: the main workload's %d keys of %d B with %d B values that compress to about half, "+
		"as db_bench's `compression_ratio=0.5` makes them: each value is %d random printable bytes (RocksDB's "+
		"`RandomString`, a different slice of one pool per key) written twice. A %s block cache and %s memtables, "+
		"bloom 10 bits/key, the codec at every level; zstd at level %d on both (shale `compression=zstd&zstd_level=%d`, "+
		"pure Go, klauspost/compress; Pebble `sstable.ZstdCompression`, level 3, through cgo and the C libzstd, "+
		"DataDog/zstd, as Pebble builds with cgo on). CPU rows: the process's CPU time (user + system, every thread, background work included) over the same span. "+
		"Fill: every key once in a random order, one per write; then a "+
		"full compaction, the live tables' bytes as the engine counts them (shale's `shale.live-sst-files-size`, "+
		"the sum of Pebble's per-level `TablesSize`), 10,000 sampled values checked, Get hit (random "+
		"written keys: about three in four miss the cache and read and decompress a block) and one scan of every key.",
		formatSize(cfg.maxData), cfg.numKeys(), keySize, cfg.valueSize, cfg.valueSize/2, formatSize(cfg.cacheSize),
		formatSize(cfg.memtableSize), zstdLevel, zstdLevel)
}

// halfValue writes key k's value into buf: half random printable bytes,
// repeated, as db_bench's CompressibleString at compression_ratio=0.5.
func halfValue(buf []byte, k, size int) []byte {
	buf = buf[:size]
	half := (size + 1) / 2
	copy(buf, makeValue(k, half))
	copy(buf[half:], buf[:size-half])
	return buf
}

func runZstdJob(cfg *config, j suiteJob, dir string) (*suiteResult, error) {
	scfg := storeConfig{cacheSize: cfg.cacheSize, memtableSize: cfg.memtableSize, bloomBits: 10, shaleStats: "default",
		pebbleCacheTotal: cfg.pebbleCache == "total"}
	var s store
	switch j.engine {
	case "shale":
		o, err := shaleOptions(scfg)
		if err != nil {
			return nil, err
		}
		if j.config == "zstd" {
			o.Compression, o.ZstdLevel = engine.CompressionZstd, zstdLevel
		}
		db := driver.OpenDB(engine.NewConnector(dir, o))
		if err := db.Ping(context.Background()); err != nil {
			_ = db.Close()
			return nil, err
		}
		s = &shaleStore{db: db, ctx: context.Background()}
	case "pebble":
		prof := sstable.SnappyCompression
		if j.config == "zstd" {
			prof = sstable.ZstdCompression
		}
		ps, err := openPebbleWith(dir, scfg, nil, prof)
		if err != nil {
			return nil, err
		}
		s = ps
	default:
		return nil, errors.Newf("zstd suite: no engine %q", j.engine)
	}
	defer func() {
		if s != nil {
			_ = s.close()
		}
	}()
	res := &suiteResult{Values: map[string]float64{}}
	n := cfg.numKeys()
	order := newKeyOrder(n, 1)
	var kbuf [keySize]byte
	vbuf := make([]byte, cfg.valueSize)
	fill, err := runCount(phaseFill, n, 1, func(i int) error {
		k := order.at(i)
		return s.put(makeKey(kbuf[:], k, 0), halfValue(vbuf, k, cfg.valueSize))
	})
	if err != nil {
		return nil, err
	}
	res.Values["fill_ns"], res.Values["fill_cpu_ns"] = fill.NsPerOp, fill.CPUNsPerOp
	t0, cpu0 := time.Now(), cpuTime()
	if err := s.compact(); err != nil {
		return nil, errors.Wrap(err, "full compaction")
	}
	res.Values["compact_s"], res.Values["compact_cpu_s"] = time.Since(t0).Seconds(), (cpuTime() - cpu0).Seconds()
	tables, err := liveTableBytes(s)
	if err != nil {
		return nil, err
	}
	alloc, files := diskUsage(dir)
	written := float64(n) * float64(keySize+cfg.valueSize)
	res.Values["tables_mib"] = float64(tables) / (1 << 20)
	res.Values["tables_ratio"] = float64(tables) / written
	note := fmt.Sprintf("live tables %.1f MiB (%.3f of the %.1f MiB written); in the directory: .sst files %.1f MiB "+
		"(with obsolete ones not yet deleted), %.1f MiB allocated in all (WAL and MANIFEST included)",
		float64(tables)/(1<<20), float64(tables)/written, written/(1<<20), float64(files)/(1<<20), float64(alloc)/(1<<20))
	logf(j.engine, "zstd suite, %s: fill %.2f µs/op, compaction %.2f s, %s", j.config, fill.NsPerOp/1e3, res.Values["compact_s"], note)
	res.Notes = append(res.Notes, note)

	rng := rand.New(rand.NewPCG(5, 6))
	want := make([]byte, cfg.valueSize)
	for range min(n, 10000) {
		k := rng.IntN(n)
		v, found, err := s.getCopy(makeKey(kbuf[:], k, 0))
		if err != nil {
			return nil, err
		}
		if !found || !bytes.Equal(v, halfValue(want, k, cfg.valueSize)) {
			return nil, errors.Newf("%s: key %d: found=%t, value %q", j.engine, k, found, v)
		}
	}

	get, err := runTimed(phaseGetHit, 1, 1, cfg.warmup, cfg.phaseDuration, func(t int) (func() error, func() error, error) {
		rng := rand.New(rand.NewPCG(1, uint64(t)+2))
		var kbuf [keySize]byte
		return func() error {
			key := makeKey(kbuf[:], rng.IntN(n), 0)
			vn, found, err := s.get(key)
			if err != nil {
				return err
			}
			if !found || vn != cfg.valueSize {
				return errNotFoundHit(j.engine, key, true)
			}
			return nil
		}, nil, nil
	})
	if err != nil {
		return nil, err
	}
	res.Values["get_hit_ns"], res.Values["get_hit_cpu_ns"] = get.NsPerOp, get.CPUNsPerOp
	logf(j.engine, "zstd suite, %s: Get hit %.2f µs/op, CPU %.2f", j.config, get.NsPerOp/1e3, get.CPUNsPerOp/1e3)

	c, err := s.newCursor()
	if err != nil {
		return nil, err
	}
	t0, cpu0 = time.Now(), cpuTime()
	count := 0
	for ok := c.first(); ok; ok = c.next() {
		if _, err := c.touch(); err != nil {
			_ = c.close()
			return nil, err
		}
		count++
	}
	scan, scanCPU := time.Since(t0), cpuTime()-cpu0
	if err := c.close(); err != nil {
		return nil, err
	}
	if count != n {
		return nil, errors.Newf("%s: scan saw %d keys, want %d", j.engine, count, n)
	}
	res.Values["scan_ns"] = float64(scan.Nanoseconds()) / float64(n)
	res.Values["scan_cpu_ns"] = float64(scanCPU.Nanoseconds()) / float64(n)
	logf(j.engine, "zstd suite, %s: full scan %.3f µs/key", j.config, res.Values["scan_ns"]/1e3)
	err = s.close()
	s = nil
	return res, err
}

// liveTableBytes is the bytes of the tables of s's current version, as the
// engine reports them: shale's shale.live-sst-files-size, the sum of
// Pebble's per-level TablesSize. (The .sst files in the directory also
// count the tables a compaction made obsolete, which Pebble deletes at a
// paced rate after it returns.)
func liveTableBytes(s store) (int64, error) {
	switch s := s.(type) {
	case *shaleStore:
		v, err := s.db.Property(s.ctx, engine.PropLiveSSTFilesSize)
		if err != nil {
			return 0, err
		}
		return strconv.ParseInt(v, 10, 64)
	case *pebbleStore:
		var n int64
		for _, l := range s.db.Metrics().Levels {
			n += l.TablesSize
		}
		return n, nil
	}
	return 0, errors.Newf("zstd suite: no table size for %T", s)
}
