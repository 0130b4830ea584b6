package main

// The prefix suite (-suite prefix): a scan over one prefix, with prefix
// bloom filters (shale's prefix_extractor=fixed:8 and IterOptions.Prefix;
// Pebble's Comparer.Split at 8 bytes and SeekPrefixGE) and without them
// (an iterator bounded to the prefix's range, on the same database), for
// prefixes present and absent. See bench/README.md, "Prefix scans".

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/engine"
	"github.com/shaledb/shale/statistics"
)

// prefixLen is the tenant prefix of the prefix suite's keys: 8 bytes, the
// big-endian tenant number, followed by an 8-byte big-endian key number.
// Tenant 2t holds keys, tenant 2t+1 none: an absent prefix falls between
// two present ones, inside the tables' key ranges, where only a filter
// can rule it out without reading a block.
const prefixLen = 8

func init() {
	benchSuites["prefix"] = &benchSuite{
		name:     "prefix",
		title:    "Prefix scans: shale's prefix_extractor against Pebble's Comparer.Split",
		workload: prefixWorkload,
		jobs: func(*config) []suiteJob {
			return []suiteJob{
				{engine: "shale", config: "fixed8", label: "shale, `prefix_extractor=fixed:8`", tags: "engine=shale"},
				{engine: "pebble", config: "split8", label: "Pebble, `Comparer.Split` at 8 bytes", tags: "engine=pebble",
					pair: "shale/fixed8"},
			}
		},
		figures: prefixFigures(),
		run:     runPrefixJob,
	}
}

func prefixWorkload(cfg *config) string {
	n := cfg.numKeys() / cfg.prefixKeys * cfg.prefixKeys
	return fmt.Sprintf("%s of data: %d keys of %d B (an 8-byte tenant prefix and an 8-byte key number) with %d B values, "+
		"%d tenants of %d keys each, written in a random order in batches of 1000, with tenants holding no key between them; "+
		"a %s block cache and %s memtables, bloom 10 bits/key, snappy. "+
		"A scan is one new iterator over one tenant's keys, read to its end (key and value), and closed: "+
		"with the prefix filter (shale: `IterOptions.Prefix` of the 8 bytes, then `First`/`Next`; Pebble: `SeekPrefixGE` "+
		"with `UseL6Filters`, within bounds set to the prefix's range, then `Next`) and without it (an iterator bounded "+
		"to the prefix's range: `First`/`Next` on each engine, on the same database). "+
		"Each figure is the wall time per scan of one goroutine, and below it the process's CPU time (user + system, "+
		"every thread) per scan, the tenant drawn at random; a present tenant's scan "+
		"reads %d keys, an absent one's none. \"After the fill\": the memtable flushed and the background compactions "+
		"done, the tree as each engine left it; \"compacted\": after a full compaction (every table in the last level).",
		formatSize(cfg.maxData), n, keySize, cfg.valueSize, n/cfg.prefixKeys, cfg.prefixKeys,
		formatSize(cfg.cacheSize), formatSize(cfg.memtableSize), cfg.prefixKeys)
}

// Phases of a prefix child, measured in each state of the tree.
var prefixPhases = []struct{ key, bench, label string }{
	{"prefix_present", "PrefixScanPresent", "prefix scan, tenant present (µs/scan)"},
	{"prefix_present_key", "PrefixScanPresentPerKey", "… per key (µs)"},
	{"prefix_absent", "PrefixScanAbsent", "prefix scan, tenant absent (µs/scan)"},
	{"bounds_present", "BoundedScanPresent", "bounded scan, no prefix filter, tenant present (µs/scan)"},
	{"bounds_absent", "BoundedScanAbsent", "bounded scan, no prefix filter, tenant absent (µs/scan)"},
}

var prefixStates = []struct{ key, label, bench string }{
	{"fill", "after the fill", "tree=filled"},
	{"compacted", "compacted", "tree=compacted"},
}

func prefixFigures() []suiteFigure {
	var fs []suiteFigure
	for _, st := range prefixStates {
		for _, ph := range prefixPhases {
			unit := "ns/op"
			if strings.HasSuffix(ph.key, "_key") {
				unit = "ns/key"
			}
			fs = append(fs, suiteFigure{key: st.key + "/" + ph.key, bench: ph.bench + "/" + st.bench,
				label: ph.label + ", " + st.label, scale: 1e-3, bsScale: 1, bsUnit: unit})
			if !strings.HasSuffix(ph.key, "_key") {
				fs = append(fs, suiteFigure{key: st.key + "/" + ph.key + "_cpu", bench: ph.bench + "CPU/" + st.bench,
					label: "… CPU µs/scan", scale: 1e-3, bsScale: 1, bsUnit: unit})
			}
		}
	}
	return fs
}

// prefixStore is an engine as the prefix suite uses it.
type prefixStore interface {
	putBatch(keys, values [][]byte) error
	// settle flushes the memtables and waits for the background work to end.
	settle() error
	compact() error
	// scan reads every key of the tenant prefix through a new iterator,
	// with the prefix filter when filtered, by bounds alone otherwise, and
	// returns how many it read.
	scan(prefix []byte, filtered bool) (int, error)
	// notes describes the tree and the filters' work since the last call.
	notes() string
	close() error
}

func prefixKey(buf []byte, tenant uint64, j int) []byte {
	buf = buf[:keySize]
	binary.BigEndian.PutUint64(buf, tenant)
	binary.BigEndian.PutUint64(buf[prefixLen:], uint64(j))
	return buf
}

func runPrefixJob(cfg *config, j suiteJob, dir string) (*suiteResult, error) {
	scfg := storeConfig{cacheSize: cfg.cacheSize, memtableSize: cfg.memtableSize, bloomBits: 10, shaleStats: "default",
		pebbleCacheTotal: cfg.pebbleCache == "total"}
	var s prefixStore
	var err error
	switch j.engine {
	case "shale":
		s, err = openShalePrefix(dir, scfg)
	case "pebble":
		s, err = openPebblePrefix(dir, scfg)
	default:
		err = errors.Newf("prefix suite: no engine %q", j.engine)
	}
	if err != nil {
		return nil, err
	}
	defer func() {
		if s != nil {
			_ = s.close()
		}
	}()
	k := cfg.prefixKeys
	tenants := cfg.numKeys() / k
	n := tenants * k
	order := newKeyOrder(n, 1)
	const batch = 1000
	keys := make([][]byte, batch)
	vals := make([][]byte, batch)
	for i := range keys {
		keys[i] = make([]byte, keySize)
	}
	start := time.Now()
	for lo := 0; lo < n; lo += batch {
		hi := min(lo+batch, n)
		for i := lo; i < hi; i++ {
			x := order.at(i)
			prefixKey(keys[i-lo], 2*uint64(x/k), x%k)
			vals[i-lo] = makeValue(x, cfg.valueSize)
		}
		if err := s.putBatch(keys[:hi-lo], vals[:hi-lo]); err != nil {
			return nil, err
		}
	}
	if err := s.settle(); err != nil {
		return nil, err
	}
	logf(j.engine, "prefix: loaded %d keys in %d tenants in %.1f s", n, tenants, time.Since(start).Seconds())
	res := &suiteResult{Values: map[string]float64{}}
	for _, st := range prefixStates {
		if st.key == "compacted" {
			t0 := time.Now()
			if err := s.compact(); err != nil {
				return nil, errors.Wrap(err, "full compaction")
			}
			logf(j.engine, "prefix: full compaction %.2f s", time.Since(t0).Seconds())
		}
		_ = s.notes() // start the filter counts here
		for _, ph := range prefixPhases {
			if strings.HasSuffix(ph.key, "_key") {
				continue
			}
			present := strings.HasSuffix(ph.key, "_present")
			filtered := strings.HasPrefix(ph.key, "prefix_")
			want := 0
			if present {
				want = k
			}
			var stopProfile func()
			if cfg.cpuProfileDir != "" {
				if stopProfile, err = startProfile(cfg.cpuProfileDir, j.engine, "prefix-"+st.key+"-"+ph.key); err != nil {
					return nil, err
				}
			}
			r, err := runTimed(ph.key, 1, 1, cfg.warmup, cfg.phaseDuration, func(t int) (func() error, func() error, error) {
				rng := rand.New(rand.NewPCG(1, uint64(t)+2))
				var p [prefixLen]byte
				return func() error {
					tenant := 2 * uint64(rng.IntN(tenants))
					if !present {
						tenant++
					}
					binary.BigEndian.PutUint64(p[:], tenant)
					got, err := s.scan(p[:], filtered)
					if err != nil {
						return err
					}
					if got != want {
						return errors.Newf("%s: tenant %d: scan read %d keys, want %d", j.engine, tenant, got, want)
					}
					return nil
				}, nil, nil
			})
			if stopProfile != nil {
				stopProfile()
			}
			if err != nil {
				return nil, err
			}
			res.Values[st.key+"/"+ph.key] = r.NsPerOp
			res.Values[st.key+"/"+ph.key+"_cpu"] = r.CPUNsPerOp
			if present && filtered {
				res.Values[st.key+"/"+ph.key+"_key"] = r.NsPerOp / float64(k)
			}
			logf(j.engine, "prefix: %s, %s: %.3f µs/scan, CPU %.3f (p50 %.2f, p99 %.2f µs; %d scans)",
				st.label, ph.key, r.NsPerOp/1e3, r.CPUNsPerOp/1e3, r.P50Ns/1e3, r.P99Ns/1e3, r.Ops)
		}
		note := st.label + ": " + s.notes()
		logf(j.engine, "prefix: %s", note)
		res.Notes = append(res.Notes, note)
	}
	err = s.close()
	s = nil
	return res, err
}

// ---- shale ----

type shalePrefixStore struct {
	*shaleStore
	stats                  *statistics.Statistics
	lastChecked, lastUsefl uint64
	lastHits, lastMisses   uint64
}

func openShalePrefix(dir string, scfg storeConfig) (*shalePrefixStore, error) {
	o, err := shaleOptions(scfg)
	if err != nil {
		return nil, err
	}
	o.PrefixExtractor = engine.PrefixExtractor{Kind: engine.PrefixFixed, Len: prefixLen}
	db := driver.OpenDB(engine.NewConnector(dir, o))
	ctx := context.Background()
	if err := db.Ping(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return &shalePrefixStore{shaleStore: &shaleStore{db: db, ctx: ctx}, stats: db.Statistics()}, nil
}

func (s *shalePrefixStore) settle() error {
	if err := s.db.Flush(s.ctx); err != nil {
		return err
	}
	// Two idle readings in a row: a flush can start a compaction right
	// after the first.
	for idle := 0; idle < 2; {
		busy := false
		for _, p := range []string{engine.PropNumRunningCompactions, engine.PropNumRunningFlushes} {
			v, err := s.db.Property(s.ctx, p)
			if err != nil {
				return err
			}
			busy = busy || v != "0"
		}
		if busy {
			idle = 0
		} else {
			idle++
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

func (s *shalePrefixStore) scan(prefix []byte, filtered bool) (int, error) {
	var o driver.IterOptions
	var upper [prefixLen]byte
	if filtered {
		o.Prefix = prefix
	} else {
		o.LowerBound, o.UpperBound = prefix, prefixUpper(upper[:], prefix)
	}
	it, err := s.db.NewIterator(s.ctx, &o)
	if err != nil {
		return 0, err
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if len(it.Key())+len(it.Value()) == 0 {
			return n, errors.New("empty entry")
		}
		n++
	}
	return n, it.Close()
}

func (s *shalePrefixStore) notes() string {
	levels, _ := s.db.Property(s.ctx, engine.PropNumFilesAtLevelPrefix+"0")
	shape := "tables per level " + levels
	for l := 1; l < 7; l++ {
		v, _ := s.db.Property(s.ctx, fmt.Sprintf("%s%d", engine.PropNumFilesAtLevelPrefix, l))
		shape += "/" + v
	}
	checked, useful := s.stats.TickerCount(statistics.BloomFilterPrefixChecked), s.stats.TickerCount(statistics.BloomFilterPrefixUseful)
	hits, misses := s.stats.TickerCount(statistics.BlockCacheHit), s.stats.TickerCount(statistics.BlockCacheMiss)
	out := fmt.Sprintf("%s; prefix filter checks %d, useful %d; block cache hits %d, misses %d (counts since the previous note)",
		shape, checked-s.lastChecked, useful-s.lastUsefl, hits-s.lastHits, misses-s.lastMisses)
	s.lastChecked, s.lastUsefl, s.lastHits, s.lastMisses = checked, useful, hits, misses
	return out
}

// prefixUpper is the least key above every key with prefix (which has a
// byte below 0xff here: tenant numbers are small).
func prefixUpper(dst, prefix []byte) []byte {
	dst = append(dst[:0], prefix...)
	for i := len(dst) - 1; i >= 0; i-- {
		if dst[i] != 0xff {
			dst[i]++
			return dst[:i+1]
		}
	}
	return nil
}

// ---- Pebble ----

// pebbleFixed8 is Pebble's bytewise comparer with Split at 8 bytes: Pebble
// builds its bloom filters over the Split prefixes of the keys, and
// SeekPrefixGE consults them. The key order stays bytewise (every key is
// 16 bytes, the prefix fixed-width), so Split's ordering rules hold.
var pebbleFixed8 = func() *pebble.Comparer {
	c := *pebble.DefaultComparer
	c.Split = func(k []byte) int { return min(len(k), prefixLen) }
	c.Name = "shale-bench.fixed8"
	return &c
}()

type pebblePrefixStore struct {
	*pebbleStore
	lastHits, lastMisses           int64
	lastCacheHits, lastCacheMisses int64
}

func openPebblePrefix(dir string, cfg storeConfig) (*pebblePrefixStore, error) {
	s, err := openPebbleWith(dir, cfg, pebbleFixed8, sstable.SnappyCompression)
	if err != nil {
		return nil, err
	}
	return &pebblePrefixStore{pebbleStore: s}, nil
}

func (s *pebblePrefixStore) settle() error {
	if err := s.db.Flush(); err != nil {
		return err
	}
	for idle := 0; idle < 2; {
		if s.db.Metrics().Compact.NumInProgress > 0 {
			idle = 0
		} else {
			idle++
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.settleCache()
	return nil
}

func (s *pebblePrefixStore) scan(prefix []byte, filtered bool) (int, error) {
	var upper [prefixLen]byte
	o := pebble.IterOptions{LowerBound: prefix, UpperBound: prefixUpper(upper[:], prefix), UseL6Filters: filtered}
	it, err := s.db.NewIter(&o)
	if err != nil {
		return 0, err
	}
	n := 0
	ok := false
	if filtered {
		ok = it.SeekPrefixGE(prefix)
	} else {
		ok = it.First()
	}
	for ; ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return n, err
		}
		if !bytes.HasPrefix(it.Key(), prefix) || len(v) == 0 {
			_ = it.Close()
			return n, errors.Newf("key %x outside prefix %x", it.Key(), prefix)
		}
		n++
	}
	return n, it.Close()
}

func (s *pebblePrefixStore) notes() string {
	m := s.db.Metrics()
	shape := "tables per level "
	for l := range m.Levels {
		if l > 0 {
			shape += "/"
		}
		shape += fmt.Sprint(m.Levels[l].TablesCount)
	}
	out := fmt.Sprintf("%s; filter hits %d, misses %d; block cache hits %d, misses %d, %.0f MiB in use of its %.0f "+
		"(its memtables' reservations and the harness's included) (counts since the previous note)", shape,
		m.Filter.Hits-s.lastHits, m.Filter.Misses-s.lastMisses,
		m.BlockCache.Hits-s.lastCacheHits, m.BlockCache.Misses-s.lastCacheMisses,
		float64(m.BlockCache.Size)/(1<<20), float64(s.cache.MaxSize())/(1<<20))
	s.lastHits, s.lastMisses = m.Filter.Hits, m.Filter.Misses
	s.lastCacheHits, s.lastCacheMisses = m.BlockCache.Hits, m.BlockCache.Misses
	return out
}
