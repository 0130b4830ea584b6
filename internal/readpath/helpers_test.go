package readpath

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/memtable"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

const testDir = "db"

// testEntry is one write of the model: a version of a key.
type testEntry struct {
	seq   base.SeqNum
	kind  base.Kind
	value []byte
}

// model is the reference: every version of every key, newest first.
type model map[string][]testEntry

func (m model) add(key string, e testEntry) {
	m[key] = append([]testEntry{e}, m[key]...)
}

// get returns the newest entry of key visible at seq.
func (m model) get(key string, seq base.SeqNum) (testEntry, bool) {
	for _, e := range m[key] {
		if e.seq <= seq {
			return e, true
		}
	}
	return testEntry{}, false
}

// value returns key's value at seq, if it has one.
func (m model) value(key string, seq base.SeqNum) ([]byte, bool) {
	e, ok := m.get(key, seq)
	if !ok || e.kind != base.KindSet {
		return nil, false
	}
	return e.value, true
}

// visible returns the keys with a value at seq within [lower, upper),
// sorted, and their values.
func (m model) visible(seq base.SeqNum, lower, upper []byte) (keys []string, values [][]byte) {
	for k := range m {
		if lower != nil && k < string(lower) || upper != nil && k >= string(upper) {
			continue
		}
		if _, ok := m.value(k, seq); ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		v, _ := m.value(k, seq)
		values = append(values, v)
	}
	return keys, values
}

// tableKV is an entry to write into a table.
type tableKV struct {
	k base.InternalKey
	v []byte
}

// testSource is the test's TableSource: it opens each table on its first
// Acquire, through fileio and sstable with the Acquire's ReadEnv (as the
// engine's table cache does), keeps it open, and counts Acquires and the
// references not yet released.
type testSource struct {
	t       testing.TB
	fs      vfs.FS
	cache   *cache.Cache
	cacheID uint64
	stats   *statistics.Statistics
	fileOps fileio.Options

	mu       sync.Mutex
	readers  map[manifest.FileNum]*sstable.Reader
	acquires map[manifest.FileNum]int
	// levels holds each file's level, from expectLevels or its first
	// Acquire; an Acquire with another level is a test failure.
	levels map[manifest.FileNum]int
	// failOpen makes Acquire of these files fail.
	failOpen map[manifest.FileNum]error

	outstanding atomic.Int64
}

func newTestSource(t testing.TB, fs vfs.FS, c *cache.Cache, stats *statistics.Statistics) *testSource {
	s := &testSource{t: t, fs: fs, cache: c, stats: stats,
		fileOps:  fileio.Options{Stats: stats},
		readers:  map[manifest.FileNum]*sstable.Reader{},
		levels:   map[manifest.FileNum]int{},
		acquires: map[manifest.FileNum]int{},
		failOpen: map[manifest.FileNum]error{},
	}
	if c != nil {
		s.cacheID = c.NewID()
	}
	t.Cleanup(func() {
		require.Zero(t, s.outstanding.Load(), "table references not released")
		s.closeAll()
	})
	return s
}

// expectLevels makes Acquire check that every file of vers is acquired
// with the level it is in.
func (s *testSource) expectLevels(vers *manifest.Version) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for level, files := range vers.Levels {
		for _, f := range files {
			s.levels[f.FileNum] = level
		}
	}
}

func (s *testSource) Acquire(ctx context.Context, env sstable.ReadEnv, meta *manifest.FileMetadata, level int) (TableRef, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.acquires[meta.FileNum]++
	if l, ok := s.levels[meta.FileNum]; ok && l != level {
		s.t.Errorf("table %s acquired as L%d and as L%d", meta.FileNum, l, level)
	}
	s.levels[meta.FileNum] = level
	if err := s.failOpen[meta.FileNum]; err != nil {
		return TableRef{}, err
	}
	r := s.readers[meta.FileNum]
	if r == nil {
		f, err := fileio.Open(s.fs, manifest.TableFileName(testDir, meta.FileNum), s.fileOps)
		if err != nil {
			return TableRef{}, err
		}
		r, err = sstable.Open(ctx, f, env, sstable.ReaderOptions{
			Cache: s.cache, CacheID: s.cacheID, FileNum: uint64(meta.FileNum), Stats: s.stats})
		if err != nil {
			return TableRef{}, err
		}
		s.readers[meta.FileNum] = r
	}
	s.outstanding.Add(1)
	return NewTableRef(r, (*sourceRef)(s)), nil
}

type sourceRef testSource

func (r *sourceRef) Release() {
	if (*testSource)(r).outstanding.Add(-1) < 0 {
		panic("testSource: more releases than acquires")
	}
}

func (s *testSource) acquired(n manifest.FileNum) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acquires[n]
}

func (s *testSource) resetAcquires() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.acquires)
}

func (s *testSource) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for n, r := range s.readers {
		require.NoError(s.t, r.Close())
		delete(s.readers, n)
	}
}

// writeTable writes kvs (sorted) as table n into fs and returns its
// metadata, with the file's CRC-32C recorded as the engine records it.
func writeTable(t testing.TB, fs vfs.FS, n manifest.FileNum, opts sstable.WriterOptions, kvs []tableKV) *manifest.FileMetadata {
	return writeTableDels(t, fs, n, opts, kvs, nil)
}

// takeFragments splits frags at limit: those (and the parts of those) below
// it, and the rest; a nil limit takes them all.
func takeFragments(frags []rangedel.Fragment, limit []byte) (below, rest []rangedel.Fragment) {
	if limit == nil {
		return frags, nil
	}
	for _, f := range frags {
		switch {
		case bytes.Compare(f.End, limit) <= 0:
			below = append(below, f)
		case bytes.Compare(f.Start, limit) >= 0:
			rest = append(rest, f)
		default:
			below = append(below, rangedel.Fragment{Start: f.Start, End: limit, Seqs: f.Seqs})
			rest = append(rest, rangedel.Fragment{Start: limit, End: f.End, Seqs: f.Seqs})
		}
	}
	return below, rest
}

// writeTableDels is writeTable with range deletion fragments too.
func writeTableDels(t testing.TB, fs vfs.FS, n manifest.FileNum, opts sstable.WriterOptions, kvs []tableKV,
	frags []rangedel.Fragment) *manifest.FileMetadata {
	t.Helper()
	require.NoError(t, fs.MkdirAll(testDir, 0o755))
	f, err := fs.Create(manifest.TableFileName(testDir, n))
	require.NoError(t, err)
	w := sstable.NewWriter(f, opts)
	for _, f := range frags {
		require.NoError(t, w.AddRangeDeletion(f))
	}
	for _, kv := range kvs {
		require.NoError(t, w.Add(kv.k, kv.v))
	}
	md, err := w.Close()
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	sum := binary.BigEndian.AppendUint32(nil, md.FileChecksum)
	return &manifest.FileMetadata{
		FileNum: n, Size: md.Size,
		Smallest: md.Smallest, Largest: md.Largest,
		SmallestSeqNum: md.SmallestSeqNum, LargestSeqNum: md.LargestSeqNum,
		FileChecksum: sum, FileChecksumFunc: manifest.ChecksumFuncCRC32C,
		HasRangeDels: md.NumRangeDeletions > 0,
	}
}

// lsm is a hand-built database: a View over a MemFS, and the model of what
// it holds.
type lsm struct {
	fs     *vfs.MemFS
	view   *View
	src    *testSource
	model  model
	maxSeq base.SeqNum
	keys   []string // every key ever written, sorted
	stats  *statistics.Statistics
	// rangeDels are the range tombstones written (lsmConfig.rangeDelRatio).
	rangeDels []rangedel.Tombstone
}

// lsmConfig shapes a random lsm.
type lsmConfig struct {
	keySpace    int
	opsPerPart  int
	mems, l0    int
	levels      int // number of levels >= 1 with data (L1..)
	cacheSize   int64
	writerOpts  sstable.WriterOptions
	randomOpts  bool // pick writer options per table
	deleteRatio float64
	// oneFilePerLevel writes each level >= 1 as a single table.
	oneFilePerLevel bool
	// emptyMem adds an empty memtable, the newest, as the engine's mutable
	// memtable is after a flush.
	emptyMem bool
	// rangeDelRatio is the share of operations that are range deletions
	// (of a few keys); 0 writes none.
	rangeDelRatio float64
	// unboundedRatio is the share of range deletions that are unbounded
	// (every key from the start on). A table gets them clamped above every
	// key, as the engine's flush clamps them.
	unboundedRatio float64
}

func defaultLSMConfig() lsmConfig {
	return lsmConfig{keySpace: 200, opsPerPart: 120, mems: 2, l0: 3, levels: 3, cacheSize: 8 << 20,
		writerOpts:  sstable.WriterOptions{BlockSize: 256, BloomBitsPerKey: 10, Compression: compress.Snappy, Checksum: checksum.CRC32C},
		deleteRatio: 0.25, randomOpts: true}
}

func testKey(i int) string { return fmt.Sprintf("k%05d", i) }

// buildLSM writes a random history: the oldest part into the deepest level,
// then the shallower levels, the L0 tables and the memtables, so that newer
// versions of a key are always in newer sources, as in a real LSM.
func buildLSM(t testing.TB, rng *rand.Rand, cfg lsmConfig) *lsm {
	fs := vfs.NewMem()
	stats := statistics.New(statistics.LevelAll)
	var c *cache.Cache
	if cfg.cacheSize > 0 {
		c = cache.New(cfg.cacheSize)
	}
	db := &lsm{fs: fs, model: model{}, stats: stats}
	db.src = newTestSource(t, fs, c, stats)
	vers := &manifest.Version{}
	db.view = &View{Version: vers, Tables: db.src, Stats: stats}
	seen := map[string]bool{}
	var seq base.SeqNum
	nextFile := manifest.FileNum(1)

	var partDels []rangedel.Tombstone // the range deletions of the last part
	part := func() []tableKV {
		var kvs []tableKV
		partDels = nil
		for range cfg.opsPerPart {
			seq++
			if rng.Float64() < cfg.rangeDelRatio {
				i := rng.IntN(cfg.keySpace)
				t := rangedel.Tombstone{Start: []byte(testKey(i)), End: []byte(testKey(i + 1 + rng.IntN(8))), Seq: seq}
				if rng.Float64() < cfg.unboundedRatio {
					t.End = nil
				}
				partDels = append(partDels, t)
				db.rangeDels = append(db.rangeDels, t)
				continue
			}
			key := testKey(rng.IntN(cfg.keySpace))
			e := testEntry{seq: seq, kind: base.KindSet}
			if rng.Float64() < cfg.deleteRatio {
				e.kind = base.KindDelete
			} else {
				e.value = make([]byte, rng.IntN(24))
				for i := range e.value {
					e.value[i] = byte('a' + rng.IntN(26))
				}
			}
			db.model.add(key, e)
			seen[key] = true
			kvs = append(kvs, tableKV{k: base.MakeInternalKey([]byte(key), seq, e.kind), v: e.value})
		}
		slices.SortFunc(kvs, func(a, b tableKV) int { return base.CompareInternal(a.k, b.k) })
		return kvs
	}
	opts := func() sstable.WriterOptions {
		o := cfg.writerOpts
		if cfg.randomOpts {
			o.Compression = []compress.Type{compress.None, compress.Snappy, compress.Zstd}[rng.IntN(2)]
			o.Checksum = []checksum.Type{checksum.CRC32C, checksum.XXHash64}[rng.IntN(2)]
			o.BloomBitsPerKey = []int{0, 10}[rng.IntN(2)]
			o.BlockSize = []int{64, 256, 4096}[rng.IntN(3)]
		}
		return o
	}

	// Every key written is below clampEnd: a table holds unbounded
	// tombstones clamped there.
	clampEnd := []byte(testKey(cfg.keySpace))
	for level := cfg.levels; level >= 1; level-- {
		kvs := part()
		dels := rangedel.New(partDels).ClampEnd(clampEnd).Fragments()
		// Split the level into files at user-key boundaries.
		for len(kvs) > 0 {
			n := min(len(kvs), 1+rng.IntN(cfg.opsPerPart/2+1))
			if cfg.oneFilePerLevel {
				n = len(kvs)
			}
			for n < len(kvs) && bytes.Equal(kvs[n].k.UserKey, kvs[n-1].k.UserKey) {
				n++
			}
			// The file takes the tombstones below the next file's first
			// key (all that remain, for the last file), as a compaction's
			// output does.
			var limit []byte
			if n < len(kvs) {
				limit = kvs[n].k.UserKey
			}
			var frags []rangedel.Fragment
			frags, dels = takeFragments(dels, limit)
			vers.Levels[level] = append(vers.Levels[level], writeTableDels(t, fs, nextFile, opts(), kvs[:n], frags))
			nextFile++
			kvs = kvs[n:]
		}
	}
	for range cfg.l0 {
		kvs := part()
		f := writeTableDels(t, fs, nextFile, opts(), kvs, rangedel.New(partDels).ClampEnd(clampEnd).Fragments())
		nextFile++
		vers.Levels[0] = append([]*manifest.FileMetadata{f}, vers.Levels[0]...)
	}
	for range cfg.mems {
		m := memtable.New(1 << 20)
		for _, kv := range part() {
			require.NoError(t, m.Add(kv.k.SeqNum(), kv.k.Kind(), kv.k.UserKey, kv.v))
		}
		for _, d := range partDels {
			require.NoError(t, m.AddRangeDelete(d.Seq, d.Start, d.End))
		}
		db.view.Mems = append([]*memtable.MemTable{m}, db.view.Mems...)
	}
	if cfg.emptyMem {
		db.view.Mems = append([]*memtable.MemTable{memtable.New(1 << 20)}, db.view.Mems...)
	}
	require.NoError(t, vers.CheckConsistency())
	db.src.expectLevels(vers)
	db.maxSeq = seq
	for k := range seen {
		db.keys = append(db.keys, k)
	}
	slices.Sort(db.keys)
	return db
}

// randomSeq returns a snapshot: mostly the latest, sometimes in the past,
// sometimes above every sequence number.
func (db *lsm) randomSeq(rng *rand.Rand) base.SeqNum {
	switch rng.IntN(4) {
	case 0:
		return base.SeqNum(rng.IntN(int(db.maxSeq) + 1))
	case 1:
		return ^base.SeqNum(0)
	}
	return db.maxSeq
}

// randomKey returns a key that was written, or one that was not.
func (db *lsm) randomKey(rng *rand.Rand, keySpace int) []byte {
	if rng.IntN(5) == 0 {
		return []byte(fmt.Sprintf("k%05d~", rng.IntN(keySpace+2)))
	}
	return []byte(testKey(rng.IntN(keySpace + 2)))
}

// seeds returns how many random histories a model test runs: fewer under
// the race detector, which slows the sequential model tests tenfold without
// checking anything more (the concurrent tests run in full).
func seeds(n uint64) uint64 {
	if invariants.RaceEnabled || testing.Short() {
		return max(1, n/4)
	}
	return n
}

// readEnv is the ReadEnv of the tests: verifying, filling the cache.
func readEnv() sstable.ReadEnv {
	return sstable.ReadEnv{VerifyChecksums: true, FillCache: true}
}

func errorf(format string, args ...any) error { return errors.Newf(format, args...) }
