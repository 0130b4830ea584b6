package engine

import (
	"context"
	"os"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/readpath"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
)

// tableCache keeps table readers open. With MaxOpenFiles 0 every table stays
// open until it is deleted; with a bound, the least recently used readers
// are closed and reopened on demand, and the reopen's reads carry the tag of
// the read that needed the table (as RocksDB's with max_open_files != -1).
//
// A reader is closed only when the cache has dropped it and every Acquire
// has been released. Safe for concurrent use.
type tableCache struct {
	fs       vfs.FS
	dirname  string
	fileOpts fileio.Options
	cache    *cache.Cache
	cacheID  uint64
	stats    *statistics.Statistics
	capacity int // 0 = unbounded
	// cacheIndexAndFilterBlocks is Options.CacheIndexAndFilterBlocks, for
	// the readers it opens; set before the first Acquire.
	cacheIndexAndFilterBlocks bool
	// secondary: the database is a secondary instance, whose tables the
	// primary may delete before they are opened (see errTableRemoved).
	secondary bool
	// comparer is Options.Comparer, the order the tables must have; set
	// before the first Acquire.
	comparer *base.Comparer

	mu      sync.RWMutex
	entries map[manifest.FileNum]*tableEntry
	// lru links the entries of a bounded cache, most recent first.
	lru tableEntry

	// users counts who may still read tables through
	// FileMetadata.TableCache, without a reference: the engine until
	// close, and every live readState. The last to go closes the readers,
	// so an iterator that outlives DB.Close keeps its tables open.
	users atomic.Int64
}

func newTableCache(fs vfs.FS, dirname string, fileOpts fileio.Options, c *cache.Cache, cacheID uint64,
	stats *statistics.Statistics, capacity int) *tableCache {
	tc := &tableCache{fs: fs, dirname: dirname, fileOpts: fileOpts, cache: c, cacheID: cacheID, stats: stats,
		capacity: capacity, entries: make(map[manifest.FileNum]*tableEntry)}
	tc.lru.prev, tc.lru.next = &tc.lru, &tc.lru
	tc.users.Store(1)
	return tc
}

// use and unuse count a user of the pinned tables (see users).
func (tc *tableCache) use() { tc.users.Add(1) }

func (tc *tableCache) unuse() {
	switch n := tc.users.Add(-1); {
	case n == 0:
		tc.closeReaders()
	case n < 0:
		panic(base.AssertionFailedf("engine: table cache released more often than used"))
	}
}

// tableEntry is one table's reader and its references: one held by the
// cache while the entry is in it, plus one per Acquire.
type tableEntry struct {
	tc      *tableCache
	fileNum manifest.FileNum
	refs    atomic.Int32
	ready   chan struct{} // closed once reader or err is set
	reader  *sstable.Reader
	err     error

	prev, next *tableEntry // lru links, guarded by tc.mu
}

var _ readpath.TableSource = (*tableCache)(nil)

// Acquire implements readpath.TableSource. Concurrent Acquires of a table
// that is not open share one open: the first opens it, the others wait for
// it and take its outcome, except a failure caused by the opener's own
// context (cancelled or past its deadline), which says nothing about the
// table: a waiter whose context is live then opens the table itself, as
// cache.GetOrLoad's waiters do.
//
// A cache without a bound keeps every table open until it is deleted, which
// happens only once no version lists it; so a table a caller's version lists
// is pinned in its FileMetadata once open, and later Acquires of it take
// neither a lock nor a reference: a Get saves four atomic operations on
// lines that every reader shares. The callers of Acquire all hold such a
// version (through a readState, or as the engine's own flush, compaction
// and open), and users keeps the readers open past close for them.
func (tc *tableCache) Acquire(ctx context.Context, env sstable.ReadEnv, meta *manifest.FileMetadata, level int) (readpath.TableRef, error) {
	if tc.capacity == 0 {
		// The entry must be this cache's: a FileMetadata may be shared
		// with another table cache over the same files (tests build one).
		if e, _ := meta.TableCache.Load().(*tableEntry); e != nil && e.tc == tc {
			return readpath.NewTableRef(e.reader, nil), nil
		}
	}
	for {
		e, opened := tc.lookup(meta.FileNum), false
		if e == nil {
			e, opened = tc.insert(ctx, env, meta, level)
		}
		select {
		case <-e.ready:
		default:
			select {
			case <-e.ready:
			case <-ctx.Done():
				e.Release()
				return readpath.TableRef{}, errors.Wrapf(ctx.Err(), "engine: waiting for table %s to open", meta.FileNum)
			}
		}
		if e.err == nil {
			if tc.capacity == 0 {
				meta.TableCache.Store(e)
			}
			return readpath.NewTableRef(e.reader, e), nil
		}
		err := e.err
		e.Release()
		if opened || !isContextError(err) {
			return readpath.TableRef{}, err
		}
		if ctx.Err() != nil {
			return readpath.TableRef{}, errors.Wrapf(ctx.Err(), "engine: waiting for table %s to open", meta.FileNum)
		}
		// The opener's context ended, not ours; insert has forgotten its
		// entry, so the next round opens the table again.
	}
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// lookup returns the referenced entry of fileNum, or nil.
func (tc *tableCache) lookup(fileNum manifest.FileNum) *tableEntry {
	if tc.capacity == 0 {
		tc.mu.RLock()
		e := tc.entries[fileNum]
		if e != nil {
			e.refs.Add(1)
		}
		tc.mu.RUnlock()
		return e
	}
	tc.mu.Lock()
	e := tc.entries[fileNum]
	if e != nil {
		e.refs.Add(1)
		tc.unlinkLocked(e)
		tc.linkFrontLocked(e)
	}
	tc.mu.Unlock()
	return e
}

// insert adds an entry for meta and opens its table, unless another
// goroutine got there first; it returns the referenced entry and whether
// this call opened it.
func (tc *tableCache) insert(ctx context.Context, env sstable.ReadEnv, meta *manifest.FileMetadata, level int) (*tableEntry, bool) {
	tc.mu.Lock()
	if e := tc.entries[meta.FileNum]; e != nil {
		e.refs.Add(1)
		tc.mu.Unlock()
		return e, false
	}
	e := &tableEntry{tc: tc, fileNum: meta.FileNum, ready: make(chan struct{})}
	e.refs.Store(2) // the cache's and ours
	tc.entries[meta.FileNum] = e
	var evicted []*tableEntry
	if tc.capacity > 0 {
		tc.linkFrontLocked(e)
		for len(tc.entries) > tc.capacity && tc.lru.prev != e {
			victim := tc.lru.prev
			tc.unlinkLocked(victim)
			delete(tc.entries, victim.fileNum)
			evicted = append(evicted, victim)
		}
	}
	tc.mu.Unlock()
	for _, v := range evicted {
		v.Release()
	}

	e.reader, e.err = tc.open(ctx, env, meta, level)
	if e.err == nil {
		close(e.ready)
		return e, true
	}
	// Forget the failure before waking the waiters, so that the next
	// Acquire, a waiter retrying after the opener's context ended included,
	// opens the table again instead of finding this entry.
	tc.mu.Lock()
	cached := tc.entries[meta.FileNum] == e
	if cached {
		delete(tc.entries, meta.FileNum)
		if tc.capacity > 0 {
			tc.unlinkLocked(e)
		}
	}
	tc.mu.Unlock()
	close(e.ready)
	if cached {
		e.Release()
	}
	return e, true
}

// open opens a table reader; its reads carry env. Its file reader counts
// bytes in the last-level read tickers when level is the last level, as
// RocksDB's TableCache decides when it opens a table; a table that a
// trivial move takes to another level keeps the reader's choice.
func (tc *tableCache) open(ctx context.Context, env sstable.ReadEnv, meta *manifest.FileMetadata, level int) (*sstable.Reader, error) {
	sw := tc.stats.StartStopWatch(statistics.TableOpenIOMicros, statistics.HistogramNone)
	name := manifest.TableFileName(tc.dirname, meta.FileNum)
	opts := tc.fileOpts
	opts.LastLevel = level == manifest.NumLevels-1
	f, err := fileio.Open(tc.fs, name, opts)
	if err == nil && uint64(f.Size()) != meta.Size {
		err = base.Mark(errors.Newf("engine: table %s is %d bytes, the MANIFEST says %d", name, f.Size(), meta.Size),
			ErrCorruption)
		_ = f.Close()
	}
	if err != nil {
		tc.stats.RecordTick(statistics.NoFileErrors, 1)
		if tc.secondary && errors.Is(err, os.ErrNotExist) {
			return nil, errTableRemoved(meta.FileNum, err)
		}
		return nil, errors.Wrapf(err, "engine: opening table %s", meta.FileNum)
	}
	r, err := sstable.Open(ctx, f, env, sstable.ReaderOptions{
		Cache: tc.cache, CacheID: tc.cacheID, FileNum: uint64(meta.FileNum), Stats: tc.stats,
		CacheIndexAndFilterBlocks: tc.cacheIndexAndFilterBlocks,
		GlobalSeqNum:              meta.GlobalSeqNum, Comparer: tc.comparer,
	})
	if err != nil {
		tc.stats.RecordTick(statistics.NoFileErrors, 1)
		return nil, errors.Wrapf(err, "engine: opening table %s", meta.FileNum)
	}
	tc.stats.RecordTick(statistics.NoFileOpens, 1)
	sw.Stop()
	return r, nil
}

// Release drops a reference; the last one closes the reader.
func (e *tableEntry) Release() {
	if e.refs.Add(-1) == 0 && e.reader != nil {
		_ = e.reader.Close()
	}
}

// evict drops a deleted table's reader and its cached blocks.
func (tc *tableCache) evict(fileNum manifest.FileNum) {
	tc.mu.Lock()
	e := tc.entries[fileNum]
	if e != nil {
		delete(tc.entries, fileNum)
		if tc.capacity > 0 {
			tc.unlinkLocked(e)
		}
	}
	tc.mu.Unlock()
	if tc.cache != nil {
		tc.cache.EvictFile(tc.cacheID, uint64(fileNum))
	}
	if e != nil {
		e.Release()
	}
}

// close ends the engine's use of the cache: the readers are closed once no
// readState is left either.
func (tc *tableCache) close() { tc.unuse() }

// closeReaders drops every reader. References acquired without the pinned
// path are released by their holders; the last release closes the reader.
func (tc *tableCache) closeReaders() {
	tc.mu.Lock()
	entries := tc.entries
	tc.entries = make(map[manifest.FileNum]*tableEntry)
	tc.lru.prev, tc.lru.next = &tc.lru, &tc.lru
	tc.mu.Unlock()
	for _, e := range entries {
		<-e.ready
		e.Release()
	}
}

func (tc *tableCache) linkFrontLocked(e *tableEntry) {
	e.prev, e.next = &tc.lru, tc.lru.next
	e.next.prev, tc.lru.next = e, e
}

func (tc *tableCache) unlinkLocked(e *tableEntry) {
	if e.prev != nil {
		e.prev.next, e.next.prev = e.next, e.prev
		e.prev, e.next = nil, nil
	}
}
