package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/dgraph-io/badger/v4"
	badgeroptions "github.com/dgraph-io/badger/v4/options"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/iterator"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// ---- Pebble v2 ----

type pebbleStore struct {
	db *pebble.DB
	// With -pebble-cache=blocks, cache has room for blockBudget bytes of
	// blocks beside the largest memtable reservation Pebble can hold;
	// settleCache reserves what its memtables leave over, and release
	// gives it back at close.
	cache       *pebble.Cache
	blockBudget int64
	release     func()
}

func openPebble(dir string, cfg storeConfig) (*pebbleStore, error) {
	if cfg.defaults {
		db, err := pebble.Open(dir, &pebble.Options{Logger: quietPebbleLogger{}})
		if err != nil {
			return nil, err
		}
		return &pebbleStore{db: db}, nil
	}
	return openPebbleWith(dir, cfg, nil, sstable.SnappyCompression)
}

// openPebbleWith opens Pebble with cfg's cache, memtable and bloom filters
// at every level, the comparer cmp (nil: the default) and compression at
// every level; openPebble is it with the default comparer and Snappy.
func openPebbleWith(dir string, cfg storeConfig, cmp *pebble.Comparer, compression *sstable.CompressionProfile) (*pebbleStore, error) {
	cache := pebble.NewCache(cfg.pebbleCacheSize())
	defer cache.Unref()
	opts := &pebble.Options{
		Cache:              cache,
		Comparer:           cmp,
		MemTableSize:       uint64(cfg.memtableSize),
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             quietPebbleLogger{},
	}
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(cfg.bloomBits)
		opts.Levels[i].Compression = func() *sstable.CompressionProfile { return compression }
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, err
	}
	s := &pebbleStore{db: db}
	if !cfg.pebbleCacheTotal {
		cache.Ref()
		s.cache, s.blockBudget = cache, cfg.cacheSize
	}
	return s, nil
}

// settleCache leaves Pebble's blocks exactly blockBudget bytes of cache
// from now on, by reserving the surplus its memtables do not hold. Pebble
// reserves its memtables' arenas in its block cache; the memtable grows
// from 256 KiB to MemTableSize as the fill goes on, and a flushed one may
// be kept for recycling, so what it holds after a fill varies (32 MiB plus
// 32 MiB kept, after 32 MiB of data with 64 MiB memtables). Sizing the
// cache for the worst case alone gave its blocks three times the others'
// cache, enough to hold all the data where the others missed.
func (s *pebbleStore) settleCache() {
	if s.cache == nil || s.release != nil {
		return
	}
	m := s.db.Metrics()
	held := int64(m.MemTable.Size + m.MemTable.ZombieSize)
	if surplus := s.cache.MaxSize() - held - s.blockBudget; surplus > 0 {
		s.release = s.cache.Reserve(int(surplus))
	}
}

func (s *pebbleStore) put(key, value []byte) error { return s.db.Set(key, value, pebble.NoSync) }

func (s *pebbleStore) putBatch(keys, values [][]byte) error {
	b := s.db.NewBatch()
	for i := range keys {
		if err := b.Set(keys[i], values[i], nil); err != nil {
			return err
		}
	}
	return b.Commit(pebble.NoSync)
}

// compact flushes, compacts the whole key space with parallelize=true and
// waits for the background compactions it may have triggered.
func (s *pebbleStore) compact() error {
	if err := s.db.Flush(); err != nil {
		return err
	}
	if err := s.db.Compact(context.Background(), []byte{}, bytes.Repeat([]byte{0xff}, 64), true); err != nil {
		return err
	}
	for s.db.Metrics().Compact.NumInProgress > 0 {
		time.Sleep(10 * time.Millisecond)
	}
	s.settleCache()
	return nil
}

func (s *pebbleStore) get(key []byte) (int, bool, error) {
	v, closer, err := s.db.Get(key)
	if err != nil {
		if errors.Is(err, pebble.ErrNotFound) {
			return 0, false, nil
		}
		return 0, false, err
	}
	n := len(v)
	return n, true, closer.Close()
}

func (s *pebbleStore) getCopy(key []byte) ([]byte, bool, error) {
	v, closer, err := s.db.Get(key)
	if err != nil {
		if errors.Is(err, pebble.ErrNotFound) {
			return nil, false, nil
		}
		return nil, false, err
	}
	out := append([]byte(nil), v...)
	return out, true, closer.Close()
}

func (s *pebbleStore) multiGet(keys, vals [][]byte) (int, error) { return loopMultiGet(s, keys, vals) }

func (s *pebbleStore) newCursor() (cursor, error) {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return nil, err
	}
	return pebbleCursor{it}, nil
}

func (s *pebbleStore) close() error {
	err := s.db.Close()
	if s.release != nil {
		s.release()
	}
	if s.cache != nil {
		s.cache.Unref()
	}
	return err
}

type pebbleCursor struct{ it *pebble.Iterator }

func (c pebbleCursor) first() bool            { return c.it.First() }
func (c pebbleCursor) seekGE(key []byte) bool { return c.it.SeekGE(key) }
func (c pebbleCursor) next() bool             { return c.it.Next() }
func (c pebbleCursor) touch() (int, error) {
	v, err := c.it.ValueAndErr()
	return len(c.it.Key()) + len(v), err
}
func (c pebbleCursor) close() error { return c.it.Close() }

// quietPebbleLogger drops Pebble's informational lines (flush and compaction
// events) and keeps errors on stderr.
type quietPebbleLogger struct{}

func (quietPebbleLogger) Infof(string, ...any) {}
func (quietPebbleLogger) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
}
func (quietPebbleLogger) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
	os.Exit(1)
}

// ---- goleveldb ----

type goleveldbStore struct{ db *leveldb.DB }

func openGoleveldb(dir string, cfg storeConfig) (*goleveldbStore, error) {
	o := &opt.Options{
		BlockCacheCapacity: int(cfg.cacheSize),
		WriteBuffer:        int(cfg.memtableSize),
		Filter:             filter.NewBloomFilter(cfg.bloomBits),
		Compression:        opt.SnappyCompression,
	}
	if cfg.defaults {
		o = nil
	}
	db, err := leveldb.OpenFile(dir, o)
	if err != nil {
		return nil, err
	}
	return &goleveldbStore{db: db}, nil
}

var noSync = &opt.WriteOptions{Sync: false}

func (s *goleveldbStore) put(key, value []byte) error { return s.db.Put(key, value, noSync) }

func (s *goleveldbStore) putBatch(keys, values [][]byte) error {
	var b leveldb.Batch
	for i := range keys {
		b.Put(keys[i], values[i])
	}
	return s.db.Write(&b, noSync)
}

// compact runs CompactRange over everything, which compacts the memtable
// and then every level.
func (s *goleveldbStore) compact() error { return s.db.CompactRange(util.Range{}) }

// get is goleveldb's Get, which always copies (it has no zero-copy read).
func (s *goleveldbStore) get(key []byte) (int, bool, error) {
	v, found, err := s.getCopy(key)
	return len(v), found, err
}

func (s *goleveldbStore) getCopy(key []byte) ([]byte, bool, error) {
	v, err := s.db.Get(key, nil)
	if err != nil {
		if errors.Is(err, leveldb.ErrNotFound) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return v, true, nil
}

func (s *goleveldbStore) multiGet(keys, vals [][]byte) (int, error) {
	return loopMultiGet(s, keys, vals)
}

func (s *goleveldbStore) newCursor() (cursor, error) {
	return goleveldbCursor{s.db.NewIterator(nil, nil)}, nil
}

func (s *goleveldbStore) close() error { return s.db.Close() }

type goleveldbCursor struct{ it iterator.Iterator }

func (c goleveldbCursor) first() bool            { return c.it.First() }
func (c goleveldbCursor) seekGE(key []byte) bool { return c.it.Seek(key) }
func (c goleveldbCursor) next() bool             { return c.it.Next() }
func (c goleveldbCursor) touch() (int, error)    { return len(c.it.Key()) + len(c.it.Value()), nil }
func (c goleveldbCursor) close() error {
	c.it.Release()
	return c.it.Error()
}

// ---- Badger v4 ----

type badgerStore struct {
	db   *badger.DB
	dir  string
	opts badger.Options
}

func openBadger(dir string, cfg storeConfig) (*badgerStore, error) {
	opts := badger.DefaultOptions(dir).
		WithBlockCacheSize(cfg.cacheSize).
		WithMemTableSize(cfg.memtableSize).
		WithBloomFalsePositive(0.01). // ≈ 10 bits per key
		WithCompression(badgeroptions.Snappy).
		WithSyncWrites(false).
		WithDetectConflicts(false). // the others' Put checks no conflicts either
		WithLogger(quietBadgerLogger{})
	// Badger refuses a value threshold (1 MiB by default) above its largest
	// batch, 15% of the memtable: with 4 MiB memtables, lower it to that.
	// The values here (256 B) stay in the LSM tree either way.
	if limit := cfg.memtableSize * 15 / 100; opts.ValueThreshold > limit {
		opts = opts.WithValueThreshold(limit)
	}
	if cfg.defaults {
		opts = badger.DefaultOptions(dir).WithLogger(quietBadgerLogger{})
	}
	db, err := badger.Open(opts)
	if err != nil {
		return nil, err
	}
	return &badgerStore{db: db, dir: dir, opts: opts}, nil
}

func (s *badgerStore) put(key, value []byte) error {
	return s.db.Update(func(txn *badger.Txn) error { return txn.Set(key, value) })
}

func (s *badgerStore) putBatch(keys, values [][]byte) error {
	return s.db.Update(func(txn *badger.Txn) error {
		for i := range keys {
			if err := txn.Set(keys[i], values[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// compact closes and reopens the database (Badger has no flush call; Close
// writes the memtables out as L0 tables), then Flatten moves every table
// into one level, returning when only one level has tables and no level
// needs compacting.
func (s *badgerStore) compact() error {
	if err := s.db.Close(); err != nil {
		return err
	}
	db, err := badger.Open(s.opts)
	if err != nil {
		return err
	}
	s.db = db
	return s.db.Flatten(2)
}

// get reads inside a read-only transaction per operation (View), as
// Badger's documentation recommends, and reads the value in place with
// item.Value.
func (s *badgerStore) get(key []byte) (int, bool, error) {
	var n int
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error { n = len(v); return nil })
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, false, nil
	}
	return n, err == nil, err
}

func (s *badgerStore) getCopy(key []byte) ([]byte, bool, error) {
	var out []byte
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if err != nil {
			return err
		}
		out, err = item.ValueCopy(nil)
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	return out, err == nil, err
}

// multiGet runs the batch's Gets in one read-only transaction.
func (s *badgerStore) multiGet(keys, vals [][]byte) (int, error) {
	found := 0
	err := s.db.View(func(txn *badger.Txn) error {
		for i, k := range keys {
			vals[i] = nil
			item, err := txn.Get(k)
			if errors.Is(err, badger.ErrKeyNotFound) {
				continue
			} else if err != nil {
				return err
			}
			if vals[i], err = item.ValueCopy(nil); err != nil {
				return err
			}
			found++
		}
		return nil
	})
	return found, err
}

// newCursor opens a read-only transaction for the iterator's life. Values
// are not prefetched: touch reads each one in place with item.Value.
func (s *badgerStore) newCursor() (cursor, error) {
	txn := s.db.NewTransaction(false)
	o := badger.DefaultIteratorOptions
	o.PrefetchValues = false
	return &badgerCursor{txn: txn, it: txn.NewIterator(o)}, nil
}

func (s *badgerStore) close() error { return s.db.Close() }

type badgerCursor struct {
	txn *badger.Txn
	it  *badger.Iterator
	n   int
}

func (c *badgerCursor) first() bool {
	c.it.Rewind()
	return c.it.Valid()
}

func (c *badgerCursor) seekGE(key []byte) bool {
	c.it.Seek(key)
	return c.it.Valid()
}

func (c *badgerCursor) next() bool {
	c.it.Next()
	return c.it.Valid()
}

func (c *badgerCursor) touch() (int, error) {
	item := c.it.Item()
	c.n = len(item.Key())
	err := item.Value(c.addLen)
	return c.n, err
}

func (c *badgerCursor) addLen(v []byte) error {
	c.n += len(v)
	return nil
}

func (c *badgerCursor) close() error {
	c.it.Close()
	c.txn.Discard()
	return nil
}

// quietBadgerLogger keeps Badger's warnings and errors on stderr and drops
// its informational lines.
type quietBadgerLogger struct{}

func (quietBadgerLogger) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "badger: "+format, args...)
}
func (quietBadgerLogger) Warningf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "badger: "+format, args...)
}
func (quietBadgerLogger) Infof(string, ...any)  {}
func (quietBadgerLogger) Debugf(string, ...any) {}

// loopMultiGet is MultiGet for the engines that have none: a loop of
// copying Gets, as the values shale's MultiGet returns are copies too.
func loopMultiGet(s store, keys, vals [][]byte) (int, error) {
	found := 0
	for i, k := range keys {
		v, ok, err := s.getCopy(k)
		if err != nil {
			return found, err
		}
		vals[i] = v
		if ok {
			found++
		}
	}
	return found, nil
}
