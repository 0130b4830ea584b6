package main

import (
	"context"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/engine"
	"github.com/shaledb/shale/statistics"
)

// store is one engine behind the operations the workload measures. Each
// method is the engine's idiomatic fastest way to do it; bench/README.md
// lists which call each uses. A store is safe for concurrent use (every
// engine here is); a cursor belongs to one goroutine.
type store interface {
	// put writes one key in its own write (a batch of one), without sync.
	put(key, value []byte) error
	// putBatch writes keys[i]=values[i] in one atomic batch, without sync.
	putBatch(keys, values [][]byte) error
	// compact flushes the memtables and compacts everything into one sorted
	// run (as far as the engine allows), waiting until done.
	compact() error
	// get reads key without copying where the engine offers that, touches
	// the value and returns its length.
	get(key []byte) (n int, found bool, err error)
	// getCopy returns a copy of key's value that the caller owns.
	getCopy(key []byte) (v []byte, found bool, err error)
	// multiGet reads len(keys) keys and stores copies in vals (nil: not
	// found); it returns how many were found.
	multiGet(keys, vals [][]byte) (found int, err error)
	// newCursor returns an iterator over the whole store.
	newCursor() (cursor, error)
	close() error
}

// cursor is an iterator. Key and value stay valid until the next move.
type cursor interface {
	first() bool
	seekGE(key []byte) bool
	next() bool
	// touch reads the current key and value and returns their total length.
	touch() (int, error)
	close() error
}

// storeConfig is what every engine is configured with.
type storeConfig struct {
	cacheSize    int64 // block cache
	memtableSize int64
	bloomBits    int
	shaleStats   string // off, default, all
	// defaults opens each engine with its own defaults (only what the
	// harness needs, such as a quiet logger): the other fields but
	// shaleStats and shaleTables are ignored.
	defaults bool
	// dbgetShape is the seed's DBGet setup (RocksDB's db_basic_bench
	// mmap case): mmap reads, no block cache, no compression, restart
	// interval 1, checksums verified. Only shale and RocksDB offer it.
	dbgetShape bool
	// pebbleCacheTotal gives Pebble a cache of exactly cacheSize. Pebble
	// charges its memtables to its block cache (Cache.Reserve of each
	// memtable's size, the mutable one and one kept for recycling), so
	// with 64 MiB memtables and a 32 MiB cache it caches no blocks at all.
	// By default Pebble's cache is cacheSize + 2 × memtableSize, and
	// after the load (pebbleStore.settleCache) whatever its memtables do
	// not hold is reserved, so that its blocks get exactly as much cache
	// as the other engines' do.
	pebbleCacheTotal bool
	// shaleTables applies to shale whatever the other fields say.
	shaleTables shaleTables
}

// shaleTables are the shale options, set by flags, that every variant
// applies, defaults included: how tables keep their index and filters.
type shaleTables struct {
	// cacheIndexAndFilter sets CacheIndexAndFilterBlocks.
	cacheIndexAndFilter bool
	// partitionIndexAndFilters sets PartitionIndexAndFilters.
	partitionIndexAndFilters bool
	// optimizeFiltersForHits sets OptimizeFiltersForHits.
	optimizeFiltersForHits bool
}

// apply sets t's options in o.
func (t shaleTables) apply(o *engine.Options) {
	o.CacheIndexAndFilterBlocks = t.cacheIndexAndFilter
	o.PartitionIndexAndFilters = t.partitionIndexAndFilters
	o.OptimizeFiltersForHits = t.optimizeFiltersForHits
}

// pebbleCacheSize is the capacity of Pebble's cache for cfg.
func (cfg storeConfig) pebbleCacheSize() int64 {
	if cfg.pebbleCacheTotal {
		return cfg.cacheSize
	}
	return cfg.cacheSize + 2*cfg.memtableSize
}

var engineNames = []string{"shale", "pebble", "goleveldb", "badger"}

func openStore(name, dir string, cfg storeConfig) (store, error) {
	switch name {
	case "shale":
		return openShale(dir, cfg)
	case "pebble":
		return openPebble(dir, cfg)
	case "goleveldb":
		return openGoleveldb(dir, cfg)
	case "badger":
		return openBadger(dir, cfg)
	}
	return nil, errors.Newf("unknown engine %q (want one of %v)", name, engineNames)
}

// shaleStatistics returns the Options fields for a -stats value.
func shaleStatistics(level string) (s *statistics.Statistics, disable bool, err error) {
	switch level {
	case "off":
		return nil, true, nil
	case "default":
		return statistics.New(statistics.LevelExceptDetailedTimers), false, nil
	case "all":
		return statistics.New(statistics.LevelAll), false, nil
	}
	return nil, false, errors.Newf("-stats=%q: want off, default or all", level)
}

// shaleStore measures shale through its one API, the façade, opened with
// the engine's typed options (driver.OpenDB(engine.NewConnector(...))).
type shaleStore struct {
	db  *driver.DB
	ctx context.Context
}

// shaleOptions are shale's options for cfg. The statistics,
// CacheIndexAndFilterBlocks and PartitionIndexAndFilters apply to every
// variant, defaults included.
func shaleOptions(cfg storeConfig) (*engine.Options, error) {
	stats, disable, err := shaleStatistics(cfg.shaleStats)
	if err != nil {
		return nil, err
	}
	var o *engine.Options
	switch {
	case cfg.defaults:
		o = &engine.Options{}
	case cfg.dbgetShape:
		o = &engine.Options{
			MmapReads:            true,
			BlockCacheSize:       -1,
			Compression:          engine.CompressionNone,
			BlockRestartInterval: 1,
			WriteBufferSize:      cfg.memtableSize,
			BloomBitsPerKey:      cfg.bloomBits,
		}
	default:
		o = &engine.Options{
			BlockCacheSize:  cfg.cacheSize,
			WriteBufferSize: cfg.memtableSize,
			BloomBitsPerKey: cfg.bloomBits,
			Compression:     engine.CompressionSnappy,
		}
	}
	o.Statistics, o.DisableStatistics = stats, disable
	cfg.shaleTables.apply(o)
	return o, nil
}

func openShale(dir string, cfg storeConfig) (*shaleStore, error) {
	opts, err := shaleOptions(cfg)
	if err != nil {
		return nil, err
	}
	db := driver.OpenDB(engine.NewConnector(dir, opts))
	ctx := context.Background()
	if err := db.Ping(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return &shaleStore{db: db, ctx: ctx}, nil
}

func (s *shaleStore) put(key, value []byte) error { return s.db.Put(s.ctx, key, value) }

func (s *shaleStore) putBatch(keys, values [][]byte) error {
	var b driver.Batch
	for i := range keys {
		b.Put(keys[i], values[i])
	}
	return s.db.Write(s.ctx, &b)
}

func (s *shaleStore) compact() error { return s.db.Compact(s.ctx, nil, nil) }

func (s *shaleStore) get(key []byte) (int, bool, error) {
	v, closer, err := s.db.GetPinned(s.ctx, key)
	if err != nil {
		if errors.Is(err, driver.ErrNotFound) {
			return 0, false, nil
		}
		return 0, false, err
	}
	n := len(v)
	return n, true, closer.Close()
}

func (s *shaleStore) getCopy(key []byte) ([]byte, bool, error) {
	v, err := s.db.Get(s.ctx, key)
	if err != nil {
		if errors.Is(err, driver.ErrNotFound) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return v, true, nil
}

func (s *shaleStore) multiGet(keys, vals [][]byte) (int, error) {
	out, err := s.db.MultiGet(s.ctx, keys)
	if err != nil {
		return 0, err
	}
	found := 0
	for i, v := range out {
		vals[i] = v
		if v != nil {
			found++
		}
	}
	return found, nil
}

func (s *shaleStore) newCursor() (cursor, error) {
	it, err := s.db.NewIterator(s.ctx, nil)
	if err != nil {
		return nil, err
	}
	return shaleCursor{it}, nil
}

func (s *shaleStore) close() error { return s.db.Close() }

type shaleCursor struct{ it *driver.Iterator }

func (c shaleCursor) first() bool            { return c.it.First() }
func (c shaleCursor) seekGE(key []byte) bool { return c.it.SeekGE(key) }
func (c shaleCursor) next() bool             { return c.it.Next() }
func (c shaleCursor) touch() (int, error)    { return len(c.it.Key()) + len(c.it.Value()), nil }
func (c shaleCursor) close() error           { return c.it.Close() }

// errNotFoundHit is returned by the phases when a key that must exist is
// missing (or one that must not exist is found): the store is wrong, and a
// figure measured over it would be meaningless.
func errNotFoundHit(engine string, key []byte, want bool) error {
	if want {
		return errors.Newf("%s: key %x not found", engine, key)
	}
	return errors.Newf("%s: key %x found but never written", engine, key)
}
