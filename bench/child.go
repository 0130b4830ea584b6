package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/statistics"
)

// Phase names, the keys of the JSON results.
const (
	phaseFill       = "fill"
	phaseFillBatch  = "fill_batch100"
	phaseGetHit     = "get_hit"
	phaseGetHitCopy = "get_hit_copy"
	phaseGetMiss    = "get_miss"
	phaseMultiGet   = "multiget16"
	phaseNext       = "next"
	phaseSeek       = "seek"

	fillBatch     = 100
	multiGetBatch = 16
)

// engineResult is what one child process reports.
type engineResult struct {
	Engine          string        `json:"engine"`
	Variant         string        `json:"variant"`
	NumKeys         int           `json:"num_keys"`
	Fill            phaseResult   `json:"fill"`
	FillBatch       phaseResult   `json:"fill_batch100"`
	CompactSeconds  float64       `json:"compact_seconds"`
	DiskMiB         float64       `json:"disk_allocated_mib"`
	TablesMiB       float64       `json:"tables_mib"`
	Reads           []phaseResult `json:"reads"`
	RSSAfterLoadMiB float64       `json:"rss_peak_after_load_mib"`
	PeakRSSMiB      float64       `json:"rss_peak_mib"`
	StatsCost       *statsCost    `json:"stats_cost,omitempty"`
	// BigBatch is issue 12's one-batch write (shale and Pebble).
	BigBatch []bigBatchResult `json:"big_batch,omitempty"`
	// RSSTimeline is the main child's RSS over time (-rss-interval).
	RSSTimeline []rssSample `json:"rss_timeline,omitempty"`
	// DBBenchRaw is RocksDB's db_bench report lines, as printed.
	DBBenchRaw []string `json:"db_bench_raw,omitempty"`
}

func (r *engineResult) read(name string, threads int) (phaseResult, bool) {
	for _, p := range r.Reads {
		if p.Name == name && p.Threads == threads {
			return p, true
		}
	}
	return phaseResult{}, false
}

// statsCost holds shale's interleaved comparisons: each candidate is
// measured once per round, in a new random order each round, so that drift on a
// shared machine hits all alike.
//
// Statistics levels are switched with SetLevel on one database, so the
// levels share the same files, cache and heap: separate copies of one
// database differ by several percent among themselves (see the A/A
// candidates), more than the 2% the issue asks about. (The façade's own
// cost, driver.DB.Get against the engine's Get, is no longer measured here:
// the engine's DB is not public, so only a benchmark inside the engine
// package can call it; see BenchmarkFacadeCost there.)
type statsCost struct {
	Rounds     int                  `json:"rounds"`
	Seconds    float64              `json:"seconds_per_round"`
	NsPerOp    map[string][]float64 `json:"ns_per_op"` // candidate → one figure per round
	Median     map[string]float64   `json:"median_ns_per_op"`
	CPUNsPerOp map[string][]float64 `json:"cpu_ns_per_op"`
	CPUMedian  map[string]float64   `json:"median_cpu_ns_per_op"`
	StatsLevel string               `json:"stats_level"` // the -stats level (of the former façade comparison)
}

// Candidates of the interleaved comparisons.
const (
	costHitOff      = "Get hit, level disable_all"
	costHitOffAA    = "Get hit, level disable_all (A/A)"
	costHitDefault  = "Get hit, level default"
	costHitAll      = "Get hit, level all"
	costMissOff     = "Get miss, level disable_all"
	costMissOffAA   = "Get miss, level disable_all (A/A)"
	costMissDefault = "Get miss, level default"
	costMissAll     = "Get miss, level all"
	// Cached Get: keys drawn from a hot range a quarter of the cache's
	// size, so (after the warm-up) every block is in the block cache.
	costCachedOff     = "cached Get hit, level disable_all"
	costCachedOffAA   = "cached Get hit, level disable_all (A/A)"
	costCachedDefault = "cached Get hit, level default"
)

func logf(engine, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", engine, fmt.Sprintf(format, args...))
}

// Child variants: what one child process measures.
const (
	// variantMain is the whole workload at the configured sizes.
	variantMain = "main"
	// variantRSSEqual measures peak RSS with 4 MiB memtables and the
	// configured cache for every engine: fill, compaction, Get hit.
	variantRSSEqual = "rss-equal"
	// variantRSSDefaults measures peak RSS with each engine's defaults.
	variantRSSDefaults = "rss-defaults"
	// variantDBGet is the seed's DBGet shape (shale and RocksDB only):
	// fill, compaction, Get hit with mmap reads, no cache, no compression.
	variantDBGet = "dbget"

	rssEqualMemtable = 4 << 20
)

var variants = []string{variantMain, variantRSSEqual, variantRSSDefaults, variantDBGet}

// variantEngines says which engines a variant runs on.
func variantRuns(variant, engine string) bool {
	if variant == variantDBGet {
		return engine == "shale" || engine == engineRocksDB
	}
	return true
}

// storeConfigFor is the configuration of variant.
func storeConfigFor(cfg *config, variant string) storeConfig {
	scfg := storeConfig{cacheSize: cfg.cacheSize, memtableSize: cfg.memtableSize, bloomBits: 10, shaleStats: cfg.stats,
		pebbleCacheTotal: cfg.pebbleCache == "total", shaleTables: cfg.shaleTables}
	switch variant {
	case variantRSSEqual:
		scfg.memtableSize = rssEqualMemtable
	case variantRSSDefaults:
		scfg.defaults = true
		scfg.shaleStats = "default"
	case variantDBGet:
		scfg.dbgetShape = true
	}
	return scfg
}

// runChild runs cfg.variant's workload on one engine and writes its result
// as JSON to out.
func runChild(cfg *config, name string, out *os.File) error {
	variant := cfg.variant
	base := filepath.Join(cfg.dir, name+"-"+variant)
	reuse := cfg.reuse != ""
	if !reuse {
		if err := os.RemoveAll(base); err != nil {
			return err
		}
	}
	if !cfg.keep {
		defer func() { _ = os.RemoveAll(base) }()
	}
	n := cfg.numKeys()
	res := &engineResult{Engine: name, Variant: variant, NumKeys: n}
	scfg := storeConfigFor(cfg, variant)
	main := variant == variantMain
	var timeline *rssTimeline
	if main {
		timeline = startRSSTimeline(cfg.rssInterval)
		if timeline != nil {
			timeline.logf = func(format string, args ...any) { logf(name, format, args...) }
		}
		defer func() {
			if timeline != nil {
				timeline.stop()
			}
		}()
	}

	// The fill order: a fixed random permutation of all keys, computed
	// per key (about 16 ns) rather than held in memory (see keyOrder).
	order := newKeyOrder(n, 1)

	// Batched fill into a scratch database, removed before the real one.
	var err error
	if main && !reuse && cfg.fillBatch {
		timeline.setPhase(phaseFillBatch)
		if res.FillBatch, err = fillBatched(name, filepath.Join(base, "batch"), scfg, cfg, &order); err != nil {
			return err
		}
		logf(name, "fill, batches of %d: %.3f µs/key", fillBatch, res.FillBatch.NsPerOp/1e3)
	}

	dir := filepath.Join(base, "db")
	if reuse {
		if _, err := os.Stat(dir); err != nil {
			return errors.Wrapf(err, "-reuse: no %s database of a kept run", name)
		}
	}
	timeline.setPhase("open")
	s, err := openStore(name, dir, scfg)
	if err != nil {
		return err
	}
	defer func() {
		if s != nil {
			_ = s.close()
		}
	}()
	if !reuse {
		timeline.setPhase(phaseFill)
		if err := fillAndCompact(name, dir, s, res, cfg, &order, timeline); err != nil {
			return err
		}
	} else if ps, ok := s.(*pebbleStore); ok {
		// What compact does after a fill: Pebble's blocks get the others' cache.
		ps.settleCache()
	}
	timeline.setPhase("verify")
	var stopHeap func() (uint64, error)
	if main && cfg.heapProfileDir != "" {
		stopHeap = watchHeap(filepath.Join(cfg.heapProfileDir, name+"-reads-heap.pprof"))
	}
	if err := verify(name, s, n, cfg.valueSize); err != nil {
		return err
	}
	res.RSSAfterLoadMiB = float64(procStatusKiB("VmHWM")) / 1024

	threads := cfg.threads
	if !main {
		threads = threads[:1]
	}
	for _, threads := range threads {
		for _, ph := range readPhases(name, s, n, cfg.valueSize) {
			if !main && ph.name != phaseGetHit {
				continue
			}
			if threads > 1 {
				timeline.setPhase(fmt.Sprintf("%s, %d threads", ph.name, threads))
			} else {
				timeline.setPhase(ph.name)
			}
			var stopProfile func()
			if main && cfg.cpuProfileDir != "" && profiledPhase(ph.name) && threads == cfg.threads[0] {
				if stopProfile, err = startProfile(cfg.cpuProfileDir, name, ph.name); err != nil {
					return err
				}
			}
			r, err := runTimed(ph.name, threads, ph.keysPerOp, cfg.warmup, cfg.phaseDuration, ph.mk)
			if stopProfile != nil {
				stopProfile()
			}
			if err != nil {
				return err
			}
			res.Reads = append(res.Reads, r)
			logf(name, "%s: %s, %d thread(s): %.3f µs/key, CPU %.3f µs/key (p50 %.2f, p99 %.2f µs per call; %d calls)",
				variant, r.Name, threads, r.NsPerOp/1e3, r.CPUNsPerOp/1e3, r.P50Ns/1e3, r.P99Ns/1e3, r.Ops)
		}
	}
	res.PeakRSSMiB = float64(procStatusKiB("VmHWM")) / 1024
	logf(name, "%s: peak RSS %.0f MiB", variant, res.PeakRSSMiB)
	if stopHeap != nil {
		peak, err := stopHeap()
		if err != nil {
			return errors.Wrap(err, "heap profile")
		}
		logf(name, "%s: verification and reads: peak live Go heap %.1f MiB (profile in %s)", variant, float64(peak)/(1<<20), cfg.heapProfileDir)
	}

	timeline.setPhase("close")
	err = s.close()
	s = nil
	if err != nil {
		return err
	}
	if main && cfg.batchKeys > 0 && bigBatchEngine(name) {
		if res.BigBatch, err = runBigBatches(name, filepath.Join(base, "bigbatch"), scfg, cfg.batchKeys); err != nil {
			return errors.Wrap(err, "large batch")
		}
	}
	if main && name == "shale" && cfg.statsRounds > 0 {
		if res.StatsCost, err = measureStatsCost(cfg, scfg, base, dir, n); err != nil {
			return errors.Wrap(err, "statistics cost")
		}
	}
	if timeline != nil {
		res.RSSTimeline, timeline = timeline.stop(), nil
	}
	enc := json.NewEncoder(out)
	return enc.Encode(res)
}

func fillBatched(name, dir string, scfg storeConfig, cfg *config, order *keyOrder) (phaseResult, error) {
	s, err := openStore(name, dir, scfg)
	if err != nil {
		return phaseResult{}, err
	}
	keys := make([][]byte, fillBatch)
	vals := make([][]byte, fillBatch)
	for i := range keys {
		keys[i] = make([]byte, keySize)
	}
	n := int(order.n)
	batches := (n + fillBatch - 1) / fillBatch
	r, err := runCount(phaseFillBatch, batches, fillBatch, func(b int) error {
		lo, hi := b*fillBatch, min((b+1)*fillBatch, n)
		for i := lo; i < hi; i++ {
			k := order.at(i)
			makeKey(keys[i-lo], k, 0)
			vals[i-lo] = makeValue(k, cfg.valueSize)
		}
		return s.putBatch(keys[:hi-lo], vals[:hi-lo])
	})
	// The last batch may be short; count keys exactly.
	r.CPUNsPerOp *= float64(r.Keys)
	r.Keys = int64(n)
	r.NsPerOp = r.Seconds * 1e9 / float64(r.Keys)
	r.CPUNsPerOp /= float64(r.Keys)
	if cerr := s.close(); err == nil {
		err = cerr
	}
	if rerr := os.RemoveAll(dir); err == nil {
		err = rerr
	}
	return r, err
}

// verify checks the loaded store before anything is measured on it: a full
// scan sees every key once, in order, and sampled values are right.
func verify(name string, s store, n, valueSize int) error {
	c, err := s.newCursor()
	if err != nil {
		return err
	}
	count := 0
	for ok := c.first(); ok; ok = c.next() {
		if _, err := c.touch(); err != nil {
			_ = c.close()
			return err
		}
		count++
	}
	if err := c.close(); err != nil {
		return err
	}
	if count != n {
		return errors.Newf("%s: scan after compaction saw %d keys, want %d", name, count, n)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	var kbuf [keySize]byte
	for range min(n, 10000) {
		k := rng.IntN(n)
		v, found, err := s.getCopy(makeKey(kbuf[:], k, 0))
		if err != nil {
			return err
		}
		if !found || !bytes.Equal(v, makeValue(k, valueSize)) {
			return errors.Newf("%s: key %d: found=%t, value %q", name, k, found, v)
		}
		if _, found, err := s.get(makeKey(kbuf[:], k, 1)); err != nil || found {
			return errors.Newf("%s: absent key %d: found=%t err=%v", name, k, found, err)
		}
	}
	return nil
}

type readPhase struct {
	name      string
	keysPerOp int
	mk        opFactory
}

// readPhases are the measured read operations over s. Thread t's random
// keys come from PCG(1, t+2), the same sequence for every engine.
func readPhases(name string, s store, n, valueSize int) []readPhase {
	rngFor := func(t int) *rand.Rand { return rand.New(rand.NewPCG(1, uint64(t)+2)) }
	get := func(offset int) opFactory {
		return func(t int) (func() error, func() error, error) {
			rng := rngFor(t)
			var kbuf [keySize]byte
			return func() error {
				key := makeKey(kbuf[:], rng.IntN(n), offset)
				vn, found, err := s.get(key)
				if err != nil {
					return err
				}
				if found != (offset == 0) || found && vn != valueSize {
					return errNotFoundHit(name, key, offset == 0)
				}
				return nil
			}, nil, nil
		}
	}
	return []readPhase{
		{phaseGetHit, 1, get(0)},
		{phaseGetHitCopy, 1, func(t int) (func() error, func() error, error) {
			rng := rngFor(t)
			var kbuf [keySize]byte
			return func() error {
				key := makeKey(kbuf[:], rng.IntN(n), 0)
				v, found, err := s.getCopy(key)
				if err != nil {
					return err
				}
				if !found || len(v) != valueSize {
					return errNotFoundHit(name, key, true)
				}
				return nil
			}, nil, nil
		}},
		{phaseGetMiss, 1, get(1)},
		{phaseMultiGet, multiGetBatch, func(t int) (func() error, func() error, error) {
			rng := rngFor(t)
			keys := make([][]byte, multiGetBatch)
			vals := make([][]byte, multiGetBatch)
			for i := range keys {
				keys[i] = make([]byte, keySize)
			}
			return func() error {
				for i := range keys {
					makeKey(keys[i], rng.IntN(n), 0)
				}
				found, err := s.multiGet(keys, vals)
				if err != nil {
					return err
				}
				if found != len(keys) {
					return errors.Newf("%s: MultiGet found %d of %d", name, found, len(keys))
				}
				return nil
			}, nil, nil
		}},
		{phaseNext, 1, func(t int) (func() error, func() error, error) {
			c, err := s.newCursor()
			if err != nil {
				return nil, nil, err
			}
			var kbuf [keySize]byte
			if !c.seekGE(makeKey(kbuf[:], rngFor(t).IntN(n), 0)) {
				_ = c.close()
				return nil, nil, errors.Newf("%s: SeekGE found nothing", name)
			}
			return func() error {
				if !c.next() && !c.first() {
					return errors.Newf("%s: iterator empty", name)
				}
				_, err := c.touch()
				return err
			}, c.close, nil
		}},
		{phaseSeek, 1, func(t int) (func() error, func() error, error) {
			c, err := s.newCursor()
			if err != nil {
				return nil, nil, err
			}
			rng := rngFor(t)
			var kbuf [keySize]byte
			return func() error {
				key := makeKey(kbuf[:], rng.IntN(n), 0)
				if !c.seekGE(key) {
					return errNotFoundHit(name, key, true)
				}
				_, err := c.touch()
				return err
			}, c.close, nil
		}},
	}
}

// profiledPhase reports whether -cpuprofile covers the phase: Get hit,
// MultiGet and SeekGE, whose ratios are among the targets.
func profiledPhase(phase string) bool {
	return phase == phaseGetHit || phase == phaseMultiGet || phase == phaseSeek
}

// startProfile starts a CPU profile of one engine's phase, written to
// dir/engine-phase.pprof.
func startProfile(dir, name, phase string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(dir, name+"-"+phase+".pprof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

// candidate is one figure of an interleaved comparison: get reads a key
// that must exist (offset 0) or must not (offset 1); before, if set, runs
// before each measurement.
type candidate struct {
	name   string
	offset int
	get    func(key []byte) (int, bool, error)
	before func()
	keys   int // keys are drawn from [0, keys); 0 means every key
}

// hotKeys is how many keys fit in a quarter of the block cache: a range
// of them read over and over stays cached.
func hotKeys(cfg *config, n int) int {
	return max(1, min(n, int(cfg.cacheSize/4)/(keySize+cfg.valueSize)))
}

// measureStatsCost runs shale's interleaved comparisons on copies of the
// compacted database: statistics levels, switched on one copy.
func measureStatsCost(cfg *config, scfg storeConfig, base, dir string, n int) (*statsCost, error) {
	var closers []func() error
	defer func() {
		for _, c := range closers {
			_ = c()
		}
	}()
	open := func(i int, level string) (*shaleStore, error) {
		d := filepath.Join(base, fmt.Sprintf("copy-%d", i))
		if err := copyDir(dir, d); err != nil {
			return nil, err
		}
		c := scfg
		c.shaleStats = level
		s, err := openShale(d, c)
		if err != nil {
			return nil, err
		}
		closers = append(closers, s.close)
		return s, nil
	}
	levels, err := open(0, "default")
	if err != nil {
		return nil, err
	}
	stats := levels.db.Statistics()
	setLevel := func(l statistics.Level) func() { return func() { stats.SetLevel(l) } }
	off, def, all := setLevel(statistics.LevelDisableAll), setLevel(statistics.LevelExceptDetailedTimers), setLevel(statistics.LevelAll)

	sc := &statsCost{Rounds: cfg.statsRounds, Seconds: cfg.statsDuration.Seconds(),
		NsPerOp: map[string][]float64{}, Median: map[string]float64{},
		CPUNsPerOp: map[string][]float64{}, CPUMedian: map[string]float64{}, StatsLevel: cfg.stats}
	// Hits and misses are separate groups: a hit measured right after a
	// run of misses starts with a colder block cache and buffer pools, and
	// sharing a group would bias whichever candidate tends to follow them.
	groups := [][]candidate{{
		{costHitOff, 0, levels.get, off, 0},
		{costHitDefault, 0, levels.get, def, 0},
		{costHitAll, 0, levels.get, all, 0},
		{costHitOffAA, 0, levels.get, off, 0},
	}, {
		{costMissOff, 1, levels.get, off, 0},
		{costMissDefault, 1, levels.get, def, 0},
		{costMissAll, 1, levels.get, all, 0},
		{costMissOffAA, 1, levels.get, off, 0},
	}, {
		{name: costCachedOff, get: levels.get, before: off, keys: hotKeys(cfg, n)},
		{name: costCachedDefault, get: levels.get, before: def, keys: hotKeys(cfg, n)},
		{name: costCachedOffAA, get: levels.get, before: off, keys: hotKeys(cfg, n)},
	}}
	for _, cands := range groups {
		if err := interleave(cfg, sc, cands, n); err != nil {
			return nil, err
		}
	}
	def()
	for k, v := range sc.NsPerOp {
		sc.Median[k] = median(v)
		sc.CPUMedian[k] = median(sc.CPUNsPerOp[k])
	}
	return sc, nil
}

// interleave measures every candidate once per round, in a fresh random
// order each round (the same orders in every run), so that no candidate
// always follows the same one.
func interleave(cfg *config, sc *statsCost, cands []candidate, n int) error {
	for round := range cfg.statsRounds {
		for _, i := range rand.New(rand.NewPCG(uint64(round), 99)).Perm(len(cands)) {
			c := cands[i]
			if c.before != nil {
				c.before()
			}
			r, err := runTimed(c.name, 1, 1, cfg.warmup, cfg.statsDuration, func(t int) (func() error, func() error, error) {
				rng := rand.New(rand.NewPCG(1, uint64(t)+2))
				var kbuf [keySize]byte
				kn := n
				if c.keys > 0 {
					kn = c.keys
				}
				return func() error {
					key := makeKey(kbuf[:], rng.IntN(kn), c.offset)
					vn, found, err := c.get(key)
					if err != nil {
						return err
					}
					if found != (c.offset == 0) || found && vn != cfg.valueSize {
						return errNotFoundHit("shale "+c.name, key, c.offset == 0)
					}
					return nil
				}, nil, nil
			})
			if err != nil {
				return err
			}
			sc.NsPerOp[c.name] = append(sc.NsPerOp[c.name], r.NsPerOp)
			sc.CPUNsPerOp[c.name] = append(sc.CPUNsPerOp[c.name], r.CPUNsPerOp)
			logf("shale", "round %d: %s: %.3f µs/op, CPU %.3f µs/op", round+1, c.name, r.NsPerOp/1e3, r.CPUNsPerOp/1e3)
		}
	}
	return nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// fillAndCompact fills s with one put per write in order's order and
// compacts it fully, recording both in res.
func fillAndCompact(name, dir string, s store, res *engineResult, cfg *config, order *keyOrder, timeline *rssTimeline) error {
	variant, main := cfg.variant, cfg.variant == variantMain
	var kbuf [keySize]byte
	var err error
	res.Fill, err = runCount(phaseFill, res.NumKeys, 1, func(i int) error {
		k := order.at(i)
		return s.put(makeKey(kbuf[:], k, 0), makeValue(k, cfg.valueSize))
	})
	if err != nil {
		return err
	}
	logf(name, "%s: fill, one put per write: %.3f µs/op, CPU %.3f µs/op (p50 %.2f, p99 %.2f)",
		variant, res.Fill.NsPerOp/1e3, res.Fill.CPUNsPerOp/1e3, res.Fill.P50Ns/1e3, res.Fill.P99Ns/1e3)

	timeline.setPhase("compaction")
	var stopHeap func() (uint64, error)
	if main && cfg.heapProfileDir != "" {
		stopHeap = watchHeap(filepath.Join(cfg.heapProfileDir, name+"-compaction-heap.pprof"))
	}
	start := time.Now()
	if err := s.compact(); err != nil {
		return errors.Wrap(err, "full compaction")
	}
	res.CompactSeconds = time.Since(start).Seconds()
	if stopHeap != nil {
		peak, err := stopHeap()
		if err != nil {
			return errors.Wrap(err, "heap profile")
		}
		logf(name, "%s: full compaction: peak live Go heap %.1f MiB (profile in %s)", variant, float64(peak)/(1<<20), cfg.heapProfileDir)
	}
	alloc, tables := diskUsage(dir)
	res.DiskMiB, res.TablesMiB = float64(alloc)/(1<<20), float64(tables)/(1<<20)
	logf(name, "%s: full compaction: %.2f s; tables %.1f MiB, directory %.1f MiB allocated",
		variant, res.CompactSeconds, res.TablesMiB, res.DiskMiB)
	return nil
}
