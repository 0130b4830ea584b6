package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
)

// Config adjusts a run of the suite. The zero Config runs every case.
type Config struct {
	// Skip names cases not to run (the names are listed in the package doc
	// and by CaseNames). Each is still reported, as a skipped subtest. A
	// name that is no case is an error, so a renamed case cannot be
	// skipped silently.
	Skip []string
	// Capabilities is how the driver's test harness tells the suite how to
	// open a database with a Capability: the DSN parameters to add to
	// newDSN's DSN (nil when every database has it), or an error saying
	// why the driver cannot provide it, which skips the case (or the check)
	// that needs it with a message naming the capability and quoting the
	// error. Nil means DSNCapabilities, the DSN keys of shale's engine.
	Capabilities func(Capability) ([]driver.Param, error)
	// WriteTable writes the key/values (in increasing key order) to a new
	// table file at path with the driver's own table writer, for the
	// Ingest case, which DB.Ingest then adds to databases newDSN names.
	// Nil runs only the Ingest checks that need no table.
	WriteTable func(path string, kvs []KV) error
}

// Run runs every case of the suite against the driver registered as
// driverName, each as a subtest of t named after the case. newDSN is called
// with the subtest's T whenever a case needs a fresh database, and must
// return the data source name of a new, empty one each time (a t.TempDir()
// path, with parameters if the driver needs them).
//
// A case whose capability the driver lacks (an optional interface, a
// [Capability] its harness cannot provide, a directory to corrupt) is
// skipped with a message naming it; a case
// whose behaviour is wrong fails with a message saying what was observed and
// what the contract requires.
func Run(t *testing.T, driverName string, newDSN func(t *testing.T) string) {
	t.Helper()
	RunWith(t, driverName, newDSN, Config{})
}

// RunWith is Run with a Config.
func RunWith(t *testing.T, driverName string, newDSN func(t *testing.T) string, cfg Config) {
	t.Helper()
	if !slices.Contains(driver.Drivers(), driverName) {
		t.Fatalf("conformance: no driver is registered as %q (registered: %q); import the package that registers it",
			driverName, driver.Drivers())
	}
	for _, name := range cfg.Skip {
		if !slices.Contains(CaseNames(), name) {
			t.Errorf("conformance: Config.Skip names %q, which is not a case (cases: %s)",
				name, strings.Join(CaseNames(), ", "))
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if slices.Contains(cfg.Skip, c.name) {
				t.Skip("skipped by Config.Skip")
			}
			runCase(t, c, &suite{driverName: driverName, newDSN: func() string { return newDSN(t) }, caps: cfg.Capabilities,
				writeTable: cfg.WriteTable})
		})
	}
}

// CaseNames returns the names of the suite's cases in the order Run runs
// them. The caller owns the slice.
func CaseNames() []string {
	names := make([]string, len(cases))
	for i, c := range cases {
		names[i] = c.name
	}
	return names
}

// testCase is one case of the suite: what it is called, what it checks (in
// a sentence a driver author can act on) and the check itself.
type testCase struct {
	name        string
	explanation string
	run         func(t testing.TB, s *suite)
}

// cases are the suite's cases, in the order of the package doc.
var cases = []testCase{
	{"CRUD", "Put, Get and Delete behave like a map: overwrites win, deletes remove, absent keys are " +
		"ErrNotFound, empty values are non-nil empty slices, keys and values are arbitrary bytes (zero " +
		"bytes included, values up to 1 MiB), and the slices going in and out are copies", testCRUD},
	{"Batch", "a Batch is applied as a unit and in order: within a batch the last write of a key wins, " +
		"and an empty batch is a no-op", testBatch},
	{"BatchAtomicity", "a concurrent reader (MultiGet or an iterator) never sees part of a batch: " +
		"it sees all of a batch's writes or none of them", testBatchAtomicity},
	{"MultiGet", "MultiGet returns one entry per key, in the caller's order (duplicates included): " +
		"nil for an absent key, a non-nil empty slice for an empty value, copies the caller may modify",
		testMultiGet},
	{"IteratorModel", "an iterator agrees with a sorted map after random puts, deletes, batches and " +
		"flushes: forward and backward scans, SeekGE/SeekLT to present, absent and out-of-range keys, " +
		"and every interleaving of Next and Prev", testIteratorModel},
	{"IteratorBounds", "an iterator yields exactly the keys k with LowerBound <= k < UpperBound, in " +
		"both directions and after seeks outside the bounds", testIteratorBounds},
	{"IteratorPrefix", "an iterator with IterOptions.Prefix yields exactly the keys with that prefix " +
		"within its bounds, in both directions and after seeks outside the prefix, an all-0xff prefix included",
		testIteratorPrefix},
	{"IteratorPrefixFilters", "with prefix filters consulted (capability PrefixFilters, fixed and capped), an " +
		"iterator with IterOptions.Prefix still yields exactly the keys with that prefix: prefixes shorter than, as " +
		"long as and longer than the extractor, absent ones between present ones, a prefix deleted whole, all-0xff " +
		"prefixes, with bounds, across flushed tables and the memtable, after Compact and after a reopen with " +
		"another extractor; with statistics, the filters rule some tables out", testIteratorPrefixFilters},
	{"IteratorSnapshot", "an iterator reads the database as it was when NewIterator returned: later " +
		"writes (and flushes) are invisible to it, and its Key and Value stay valid until its next move",
		testIteratorSnapshot},
	{"IteratorClose", "an exhausted iterator reports no error; after Close its moves return false, " +
		"Error matches ErrClosed and a second Close matches ErrClosed", testIteratorClose},
	{"FlushCompact", "data survives Flush and Compact (whole range and sub-ranges) unchanged, for Get " +
		"and iterators, including 1 MiB values and keys shadowed across table files", testFlushCompact},
	{"Reopen", "closing the database and opening the same DSN again keeps every write, flushed or not",
		testReopen},
	{"TxSnapshot", "a transaction reads the snapshot taken at BeginTx merged with its own writes: " +
		"later writes by others are invisible, its own puts and deletes are visible to Get, MultiGet and " +
		"its iterators, and invisible to everyone else until Commit", testTxSnapshot},
	{"TxCommitAtomicity", "Commit makes all of a transaction's writes visible at once: a concurrent " +
		"reader never sees part of a committed transaction", testTxCommitAtomicity},
	{"TxRollback", "Rollback discards a transaction's writes", testTxRollback},
	{"TxConflict", "a transaction that wrote a key someone else wrote (and committed) after it began " +
		"fails to commit with ErrConflict and applies none of its writes; disjoint writes do not conflict",
		testTxConflict},
	{"TxDone", "every call on a transaction after Commit or Rollback fails with ErrTxDone, and a " +
		"read-only transaction rejects writes with ErrInvalidArgument", testTxDone},
	{"ActivityCheck", "every read API (Get, MultiGet, NewIterator, VerifyChecksum, VerifyFileChecksums " +
		"on DB, Conn and Tx) accepts its own IO activity and Unknown, and rejects every other activity with " +
		"ErrInvalidArgument and RocksDB's exact message naming the activity given", testActivityCheck},
	{"StatisticsPerActivity", "at stats_level=all each read API's table-file reads are recorded in its " +
		"own FileRead*Micros histogram (and no other user-read one) and, one for one, in SSTReadMicros",
		testStatisticsPerActivity},
	{"StatisticsGating", "the stats level gates recording as RocksDB's does: at the default level the " +
		"five user-read FileRead* histograms stay empty while flush, compaction and DB-open reads are " +
		"recorded; except_timers records no time; disable_all records nothing", testStatisticsGating},
	{"RateLimiterCharging", "reads are charged to the rate limiter only when their ReadOptions carry a " +
		"priority other than PriorityTotal, for every read API", testRateLimiterCharging},
	{"RateLimiterThrottling", "reads charged at a low rate take measurably longer than the same reads " +
		"uncharged", testRateLimiterThrottling},
	{"Corruption", "a flipped byte in every table file is detected: the open, VerifyChecksum and " +
		"VerifyFileChecksums fail with ErrCorruption naming the file, and no read ever returns a wrong " +
		"value", testCorruption},
	{"ContextCancel", "every call given a cancelled or expired context fails with an error matching " +
		"ctx.Err(); a past ReadOptions.Deadline fails reads with context.DeadlineExceeded; a scan whose " +
		"context is cancelled stops with the context's error", testContextCancel},
	{"Close", "after DB.Close every call on the DB and on its Conns, Iterators and Txs fails with " +
		"ErrClosed (a second Close too), and Close stops an iterator in use by another goroutine",
		testClose},
	{"CloseConcurrent", "closing a DB while goroutines call it is orderly: each call either completes " +
		"correctly or fails with ErrClosed, with no panic and no data race", testCloseConcurrent},
	{"HeldSlices", "a key or value an iterator handed out keeps its bytes when the DB is closed under it and " +
		"another database is opened and written: the driver never hands out memory it frees", testHeldSlices},
	{"ConnSession", "a Conn's default ReadOptions apply to its reads (rate-limiter charging included), " +
		"per-call context options override them, and Conn.Close leaves the DB open", testConnSession},
	{"DeleteRange", "DeleteRange and a batch's range deletions delete exactly [start, end), in order within a " +
		"batch (covering earlier writes of the batch, never later ones); empty and inverted ranges are no-ops; " +
		"Get, MultiGet and iterators agree, across flushes, compactions and a reopen", testDeleteRange},
	{"DeleteRangeOpen", "a nil DeleteRange end means \"after every key\" and a nil start \"before every key\", on DB, " +
		"in a Batch and in a Tx, while a non-nil empty end is an empty range; Get, MultiGet and iterators agree, " +
		"across flushes, compactions and a reopen", testDeleteRangeOpen},
	{"TxDeleteRange", "a transaction's DeleteRange hides the range from its reads, erases its earlier writes " +
		"there and not its later ones, applies at Commit, and conflicts with another writer's put into the range " +
		"after BeginTx", testTxDeleteRange},
	{"WriteOptions", "writes whose context, session or transaction carries WriteOptions{Sync: true} succeed as " +
		"any write does; DisableWAL is honoured or refused with ErrNotSupported, writing nothing", testWriteOptions},
	{"SyncWAL", "SyncWAL returns nil, honours its context, and the writes before it survive a reopen", testSyncWAL},
	{"Snapshot", "a snapshot reads the database as of NewSnapshot through Get, MultiGet and iterators, whatever " +
		"is written, deleted, flushed or compacted later; its iterators outlive its Close; after Close its calls " +
		"fail with ErrClosed", testSnapshot},
	{"Checkpoint", "Checkpoint writes a copy holding every write before it and none after, which the same driver " +
		"opens as a database of its own; an empty or used directory is refused", testCheckpoint},
	{"Lookup", "Has, ValueSize and GetPinned on DB, Conn, Tx and Snapshot agree with Get (an absent key is false for " +
		"Has and ErrNotFound for the others); a pinned value stays valid and unchanged until its closer's first Close, " +
		"which returns nil, also across overwrites, flushes, compactions and DB.Close; a second Close returns nil or " +
		"ErrClosed; the reads are Gets for the activity check", testLookup},
	{"BatchReadBack", "a Batch reads back its writes in order (kind, key, value) with Reader and Replay, Len and " +
		"Size count them, and a replayed batch writes the same", testBatchReadBack},
	{"Sizes", "ApproximateSize counts the bytes written into a range (in memory before Flush, on disk after it) " +
		"and about nothing outside it, and zero for an inverted range; DiskUsage is positive and grows by the bytes " +
		"written and flushed; Property of an unknown name is ErrNotFound; each is skipped on ErrNotSupported",
		testSizes},
	{"Ingest", "Ingest of no files is ErrInvalidArgument, of a missing file an error naming it that changes " +
		"nothing; with Config.WriteTable, ingested tables replace older values all at once, a snapshot taken " +
		"before sees none of them, overlapping tables are refused, and later writes win; skipped on " +
		"ErrNotSupported", testIngest},
	{"Merge", "DB.Merge and Batch.Merge with the stringappend merge operator give the existing value and the " +
		"operands joined with ',' (no existing value after a Delete, or for a new key) to Get, MultiGet, iterators " +
		"both ways, snapshots (which keep what they saw) and transactions, across Flush, Compact and a reopen; a " +
		"driver without merges (ErrNotSupported) writes nothing of a batch holding one", testMerge},
	{"Concurrency", "goroutines mixing reads, writes, batches and flushes leave exactly the state the " +
		"committed writes describe, and reads see only values that were written", testConcurrency},
}

// runCase runs c on t. On failure it logs what the case checks, so a
// message from deep inside a helper still comes with its contract.
func runCase(t testing.TB, c testCase, s *suite) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("conformance: case %s checks that %s", c.name, c.explanation)
		}
	})
	c.run(t, s)
}

// suite is what a case knows about the driver under test.
type suite struct {
	driverName string
	// newDSN returns the DSN of a fresh, empty database.
	newDSN func() string
	// caps is Config.Capabilities (nil: DSNCapabilities).
	caps func(Capability) ([]driver.Param, error)
	// writeTable is Config.WriteTable.
	writeTable func(path string, kvs []KV) error
}

// param is a DSN parameter a case adds. A required one that the driver
// rejects skips the case; an optional one (a hint such as
// write_buffer_size) is dropped and the open retried.
type param struct {
	key, value string
	optional   bool
	// capability names the Capability the harness gave the parameter
	// for, if any, for the skip message.
	capability string
}

func req(key, value string) param { return param{key: key, value: value} }
func opt(key, value string) param { return param{key: key, value: value, optional: true} }

// dbh is a DB the suite opened, with the DSN it was opened with.
type dbh struct {
	*driver.DB
	dsn  string
	path string // the DSN's path: a directory, or ":memory:"
	// closed is set by close, so the cleanup does not close twice.
	closed bool
}

const memoryPath = ":memory:"

// open opens a fresh database with params added to newDSN's DSN.
func (s *suite) open(t testing.TB, params ...param) *dbh {
	t.Helper()
	return s.openDSN(t, s.newDSN(), params)
}

// reopen opens h's DSN again (h must be closed).
func (s *suite) reopen(t testing.TB, h *dbh) *dbh {
	t.Helper()
	return s.openDSN(t, h.dsn, nil)
}

// dirOnly skips the case unless h's path is a directory the suite may
// reopen and inspect.
func dirOnly(t testing.TB, h *dbh, what string) {
	t.Helper()
	if h.path == memoryPath {
		t.Skipf("%s needs a database that outlives Close; the DSN's path is %q", what, memoryPath)
	}
}

// openDSN opens base with params added (replacing keys base already has),
// connects at once (Ping) and arranges for the DB to be closed when the
// case ends. It stops the case if the open fails.
func (s *suite) openDSN(t testing.TB, base string, params []param) *dbh {
	t.Helper()
	h, unsupported, err := s.tryOpenDSN(t, base, params)
	if unsupported != "" {
		t.Skip(unsupported)
	}
	if err != nil {
		t.Fatalf("%v", err)
	}
	return h
}

// tryOpenDSN is openDSN returning the open's error. When the driver
// rejects a required parameter it returns a message saying so (and no DB);
// an optional parameter it rejects is dropped.
func (s *suite) tryOpenDSN(t testing.TB, base string, params []param) (h *dbh, unsupported string, err error) {
	t.Helper()
	d, err := driver.ParseDSN(base)
	if err != nil {
		t.Fatalf("newDSN returned %q, which driver.ParseDSN rejects: %v", base, err)
	}
	for _, p := range params {
		d.Params = slices.DeleteFunc(d.Params, func(q driver.Param) bool { return q.Key == p.key })
		d.Params = append(d.Params, driver.Param{Key: p.key, Value: p.value})
	}
	for {
		dsn := d.String()
		db, err := driver.Open(s.driverName, dsn)
		if err == nil {
			if err = db.Ping(context.Background()); err != nil {
				_ = db.Close()
			}
		}
		if err == nil {
			h = &dbh{DB: db, dsn: dsn, path: d.Path}
			t.Cleanup(func() {
				if !h.closed {
					if err := h.DB.Close(); err != nil && !errors.Is(err, driver.ErrClosed) {
						t.Errorf("DB.Close at the end of the case: %v", err)
					}
				}
			})
			return h, "", nil
		}
		// Find which added parameter the error is about, if any. An
		// error may quote the whole DSN, which names every key: look
		// outside it.
		msg := strings.ReplaceAll(err.Error(), dsn, "")
		i := slices.IndexFunc(params, func(p param) bool { return mentions(msg, p.key) })
		if i < 0 {
			return nil, "", fmt.Errorf("opening %q with driver %q: %w", dsn, s.driverName, err)
		}
		p := params[i]
		if !p.optional {
			why := ""
			if p.capability != "" {
				why = fmt.Sprintf("capability %s: the harness gave DSN key %s for it, but ", p.capability, p.key)
			}
			return nil, fmt.Sprintf("%sdriver does not support DSN key %s (opening with %s=%s failed: %v)",
				why, p.key, p.key, p.value, err), nil
		}
		t.Logf("driver rejects the optional DSN key %s (%v); continuing without it", p.key, err)
		params = slices.Delete(slices.Clone(params), i, i+1)
		d.Params = slices.DeleteFunc(d.Params, func(q driver.Param) bool { return q.Key == p.key })
	}
}

// mentions reports whether msg contains key as a word of its own: not as
// part of a longer key ("rate_limit" in "rate_limit_mode").
func mentions(msg, key string) bool {
	isWord := func(c byte) bool {
		return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	for i := 0; ; {
		j := strings.Index(msg[i:], key)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(key)
		if (start == 0 || !isWord(msg[start-1])) && (end == len(msg) || !isWord(msg[end])) {
			return true
		}
		i = start + 1
	}
}

// close closes h and reports a failed Close.
func (h *dbh) close(t testing.TB) {
	t.Helper()
	h.closed = true
	if err := h.DB.Close(); err != nil {
		t.Fatalf("DB.Close: %v; want nil", err)
	}
}

// reader is what DB, Conn and Tx have in common for reading.
type reader interface {
	Get(ctx context.Context, key []byte) ([]byte, error)
	MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error)
	NewIterator(ctx context.Context, opts *driver.IterOptions) (*driver.Iterator, error)
}

// writer is what DB, Conn and Tx have in common for writing.
type writer interface {
	Put(ctx context.Context, key, value []byte) error
	Delete(ctx context.Context, key []byte) error
}

var bg = context.Background()

// withRO returns a background context carrying ro.
func withRO(ro ioctx.ReadOptions) context.Context { return ioctx.WithReadOptions(bg, ro) }

// q formats a key or value for a message: quoted, shortened when long,
// and "nil" for a nil slice (which means "absent" in MultiGet results).
func q(b []byte) string {
	if b == nil {
		return "nil"
	}
	if len(b) > 40 {
		return fmt.Sprintf("%q… (%d bytes)", b[:32], len(b))
	}
	return fmt.Sprintf("%q", b)
}

// key returns the i-th key of a case's key space: fixed width, so the
// numeric and the byte order agree.
func key(i int) []byte { return fmt.Appendf(nil, "key%05d", i) }

// mustPut puts k=v and stops the case if that fails.
func mustPut(t testing.TB, w writer, k, v []byte) {
	t.Helper()
	if err := w.Put(bg, k, v); err != nil {
		t.Fatalf("Put(%s, %s): %v", q(k), q(v), err)
	}
}

// mustDelete deletes k and stops the case if that fails.
func mustDelete(t testing.TB, w writer, k []byte) {
	t.Helper()
	if err := w.Delete(bg, k); err != nil {
		t.Fatalf("Delete(%s): %v", q(k), err)
	}
}

// mustWrite applies b and stops the case if that fails.
func mustWrite(t testing.TB, db interface {
	Write(context.Context, *driver.Batch) error
}, b *driver.Batch) {
	t.Helper()
	if err := db.Write(bg, b); err != nil {
		t.Fatalf("Write of a batch of %d writes: %v", b.Len(), err)
	}
}

// flushIfAble flushes db, if the driver can, and stops the case if that
// fails otherwise.
func flushIfAble(t testing.TB, db *dbh) {
	t.Helper()
	if err := db.Flush(bg); err != nil && !errors.Is(err, driver.ErrNotSupported) {
		t.Fatalf("Flush: %v", err)
	}
}

// compactIfAble compacts all of db, if the driver can, and stops the case
// if that fails otherwise.
func compactIfAble(t testing.TB, db *dbh) {
	t.Helper()
	if err := db.Compact(bg, nil, nil); err != nil && !errors.Is(err, driver.ErrNotSupported) {
		t.Fatalf("Compact: %v", err)
	}
}

// checkGet reports a Get of k that does not return want; want nil means k
// must be absent (ErrNotFound). when says what happened before, for the
// message. It reports whether the Get was right.
func checkGet(t testing.TB, r reader, k, want []byte, when string) bool {
	t.Helper()
	v, err := r.Get(bg, k)
	switch {
	case want == nil && err == nil:
		t.Errorf("%s: Get(%s) = %s; want an error matching driver.ErrNotFound", when, q(k), q(v))
	case want == nil && !errors.Is(err, driver.ErrNotFound):
		t.Errorf("%s: Get(%s) failed with %q; want an error matching driver.ErrNotFound", when, q(k), err)
	case want == nil:
		return true
	case err != nil:
		t.Errorf("%s: Get(%s) failed: %v; want %s", when, q(k), err, q(want))
	case v == nil:
		t.Errorf("%s: Get(%s) returned a nil slice for an empty value; a found empty value must be a "+
			"non-nil empty slice ([]byte{}), since nil means \"not found\" in MultiGet", when, q(k))
	case string(v) != string(want):
		t.Errorf("%s: Get(%s) = %s; want %s", when, q(k), q(v), q(want))
	default:
		return true
	}
	return false
}

// skipIfNotSupported skips the case when err says a capability is missing.
func skipIfNotSupported(t testing.TB, err error, what string) {
	t.Helper()
	if errors.Is(err, driver.ErrNotSupported) {
		t.Skipf("%s: the driver lacks the capability (%v)", what, err)
	}
}
