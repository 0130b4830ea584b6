package engine

import (
	"io"
	"sync"
	"sync/atomic"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
)

// The engine's error names, from when it had an API of its own. Its errors
// reach programs through the driver façade, and match the driver package's
// sentinels with errors.Is.
var (
	// Deprecated: use driver.ErrNotFound, the same value.
	ErrNotFound = driver.ErrNotFound
	// Deprecated: use driver.ErrCorruption, the same value.
	ErrCorruption = driver.ErrCorruption
	// Deprecated: use driver.ErrInvalidArgument, the same value.
	ErrInvalidArgument = driver.ErrInvalidArgument
	// Deprecated: use driver.ErrClosed, the same value.
	ErrClosed = driver.ErrClosed
	// Deprecated: use driver.ErrConflict, the same value.
	ErrConflict = driver.ErrConflict
)

// database is an open database. It is safe for concurrent use by many goroutines.
//
// Writes go to the WAL and then to the mutable memtable; a full memtable
// becomes immutable and a background goroutine flushes it to an L0 table;
// another compacts levels. Reads run over a referenced readState (memtables
// plus a version) without taking the database mutex.
type database struct {
	dirname string
	opts    Options // resolved
	fs      vfs.FS
	stats   *statistics.Statistics
	// mergeRecorded says MERGE_OPERATOR names the merge operator;
	// mergeFileMu serializes its writing (see recordMergeOperator).
	mergeRecorded atomic.Bool
	mergeFileMu   sync.Mutex
	// ownedLimiter is the rate limiter the database created from
	// Options.RateLimit (also opts.RateLimiter), closed with the database.
	ownedLimiter *ratelimit.Generic
	cache        *cache.Cache
	// pinnedBufs recycles GetPinned's copies of off-heap values (see
	// pinnedBuf); the DB's own, so that a caller who keeps Data past
	// Release never sees another database's value in it.
	pinnedBufs sync.Pool
	cacheID    uint64
	tables     *tableCache
	vs         *manifest.VersionSet
	dirLock    io.Closer
	// sec is the state of a secondary instance (secondary.go), nil for
	// any other database.
	sec *secondary

	// readState is the installed read state. It changes only under mu
	// (updateReadStateLocked, Close); readers load it without a lock
	// (loadReadState).
	readState atomic.Pointer[readState]

	// closedFlag is set by Close; reads check it without taking mu.
	closedFlag atomic.Bool
	// unlogged is set once a DisableWAL write has been applied: Close then
	// flushes, since such writes exist only in memtables.
	unlogged atomic.Bool

	// visibleSeq is the sequence number of the last write that is fully
	// applied to the memtable. Reads without a snapshot read at it.
	visibleSeq atomic.Uint64

	// manifestMu serializes the version edits of flushes and compactions.
	// It comes before mu: code holding it may take mu briefly, and it is
	// never acquired with mu held.
	manifestMu sync.Mutex
	// cleanMu runs the cleanups (deleteObsoleteFiles) one at a time.
	cleanMu sync.Mutex

	// commit is owned by the write leader (the writer at the head of the
	// queue): only it touches the WAL and the group batch.
	commit struct {
		log      *wal.Writer
		logFile  *walFile
		logNum   manifest.FileNum
		group    groupBatch
		logBytes int64
		// prevSync, when not nil, delivers the result of the background
		// sync of the previous WAL (syncPrevWAL), which must come before
		// anything reaches the current one.
		prevSync chan error
	}

	mu struct {
		sync.Mutex
		// mem is the mutable memtable; imm the immutable ones waiting to be
		// flushed, oldest first.
		mem *memTable
		imm []*memTable
		// memSize is the size the next mutable memtable is filled to
		// (nextMemTableSizeLocked); 0 before the first.
		memSize int
		// lastSeq is the last sequence number assigned to a write.
		lastSeq base.SeqNum
		// writers is the queue of pending writes; the head is the leader.
		writers []*writer
		// flushApplying is the table of the flush of d.mu.imm[0] while
		// installEdit logs and applies it without d.mu: once the current
		// version holds it, read states leave imm[0] out (see
		// updateReadStateLocked).
		flushApplying *manifest.FileMetadata
		// groupedWrites is high while commit groups gather several
		// writers, and 0 while writes come one at a time: +1 (up to 8) for
		// each group of several writers, -1 for each lone one. A writer
		// queued behind a lone leader spins only at 0 (see writerSpin).
		groupedWrites int
		// snapshots are the open snapshots, oldest first.
		snapshots snapshotList
		// bgErr is the background error, nil when there is none: a failed
		// WAL write, memtable insert, flush or compaction, classified by
		// severity (see bgerror.go). A soft one pauses compactions, a hard
		// one stops writes until a retry succeeds, a fatal one stops them
		// until the database is reopened.
		bgErr *bgError
		// changed is closed and replaced whenever background work finishes,
		// so waiters (write stalls, Flush, Compact) can also watch a context.
		changed chan struct{}
		// pendingOutputs are the file numbers of the tables being written
		// and not yet installed or abandoned, which deleteObsoleteFiles
		// keeps; each tableWriter adds and removes its own.
		pendingOutputs map[manifest.FileNum]struct{}
		// obsoleteTables are the tables known to be obsolete and not yet
		// deleted: deleted by an installed edit, found so by Open, or
		// abandoned outputs whose deletion failed (see obsolete.go).
		obsoleteTables  map[manifest.FileNum]struct{}
		closing, closed bool
		// manifestFailed is set when a MANIFEST edit failed: the edit may
		// or may not be durable, so no file may be deleted until a reopen
		// recovers one state or the other.
		manifestFailed bool
		flushesDone    uint64
		// compactions are the running compactions (from pickAndMarkLocked
		// to unmarkLocked), whose output ranges an ingest keeps its tables
		// out of; ingesting stops the picking of new ones while an
		// ingest's edit is logged (see ingest.go).
		compactions map[*compact.Compaction]struct{}
		ingesting   bool
	}

	// arenas keeps the arenas of released memtables for reuse.
	arenas arenaPool

	// flushWork and compactWork wake the background goroutines; Close closes
	// them. bgDone waits for the goroutines.
	flushWork, compactWork chan struct{}
	bgDone                 sync.WaitGroup
}

// notifyLocked wakes everyone waiting for background progress.
func (d *database) notifyLocked() {
	close(d.mu.changed)
	d.mu.changed = make(chan struct{})
}

// maybeScheduleLocked wakes the background goroutines.
func (d *database) maybeScheduleLocked() {
	if d.mu.closing || d.opts.ReadOnly {
		return
	}
	for _, ch := range [2]chan struct{}{d.flushWork, d.compactWork} {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
