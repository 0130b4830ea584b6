package engine

import (
	"context"
	"github.com/shaledb/shale/internal/merge"
	"io"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
)

// DriverName is the name the engine registers with the driver package.
const DriverName = "shale"

func init() { driver.Register(DriverName, Driver{}) }

// Driver is the "shale" driver: it opens engine databases for the driver
// façade. Importing this package registers it, as importing a database/sql
// driver does.
type Driver struct{}

var (
	_ driver.Driver        = Driver{}
	_ driver.DriverContext = Driver{}
)

// Open opens the database the DSN names (see ParseDSN). The returned
// connection owns the database: its Close closes it.
func (Driver) Open(dsn string) (driver.DriverConn, error) {
	c, err := Driver{}.OpenConnector(dsn)
	if err != nil {
		return nil, err
	}
	dc, err := c.Connect(context.Background())
	if err != nil {
		return nil, err
	}
	owned := dc.(*conn)
	owned.owner = c.(*connector)
	return owned, nil
}

// OpenConnector parses dsn once; the returned Connector opens the database on
// the façade's first use.
func (Driver) OpenConnector(dsn string) (driver.Connector, error) {
	dir, opts, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return &connector{dir: dir, opts: opts}, nil
}

// NewConnector returns a Connector for the database in dir (or MemoryPath)
// with opts (nil for the defaults), for driver.OpenDB: the way to give the
// engine typed options a DSN cannot carry, such as an EventListener. opts is
// copied; it is checked, and the database opened, on the façade's first use
// (Ping or the first call), and the DB's Close closes it.
func NewConnector(dir string, opts *Options) driver.Connector {
	c := &connector{dir: dir, opts: &Options{}}
	if opts != nil {
		*c.opts = *opts
	}
	return c
}

// connector opens one engine database and owns it: DB.Close closes it
// through io.Closer.
type connector struct {
	dir  string
	opts *Options // not nil; from ParseDSN or a copy of NewConnector's

	mu sync.Mutex
	db *database
}

var _ driver.Connector = (*connector)(nil)

func (c *connector) Driver() driver.Driver { return Driver{} }

// Connect opens the database, once; later calls share it.
func (c *connector) Connect(context.Context) (driver.DriverConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.db == nil {
		opts, dir := c.opts, c.dir
		if dir == MemoryPath {
			if err := opts.validateFor(dir); err != nil {
				return nil, err
			}
			o := *opts
			o.FS = vfs.NewMem()
			opts, dir = &o, "/memory"
		}
		db, err := openDatabase(dir, opts)
		if err != nil {
			return nil, err
		}
		c.db = db
	}
	return &conn{db: c.db}, nil
}

// Close closes the database the connector opened.
func (c *connector) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.db == nil {
		return nil
	}
	err := c.db.Close()
	c.db = nil
	return err
}

// conn is the engine's driver connection, the one way programs reach a
// database: the façade has already resolved each read's options (checked,
// merged, tagged; ioctx.ReadRequest) and each write's, and conn runs the
// engine's implementations with them. Every conn of a connector shares its
// database. Safe for concurrent use.
type conn struct {
	db *database
	// owner is set on a connection from Driver.Open, which has no
	// Connector for the façade to close: the connection closes it.
	owner *connector
}

var (
	_ driver.DriverConn    = (*conn)(nil)
	_ driver.MultiGetter   = (*conn)(nil)
	_ driver.Flusher       = (*conn)(nil)
	_ driver.Compacter     = (*conn)(nil)
	_ driver.Verifier      = (*conn)(nil)
	_ driver.TxBeginner    = (*conn)(nil)
	_ driver.StatsReporter = (*conn)(nil)
	_ driver.RangeDeleter  = (*conn)(nil)
	_ driver.WALSyncer     = (*conn)(nil)
	_ driver.Snapshotter   = (*conn)(nil)
	_ driver.Checkpointer  = (*conn)(nil)
	_ driver.ValueSizer    = (*conn)(nil)
	_ driver.PinnedGetter  = (*conn)(nil)
	_ driver.Checker       = (*conn)(nil)
	_ driver.Resumer       = (*conn)(nil)
	_ driver.Ingester      = (*conn)(nil)
)

func (c *conn) Get(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, error) {
	call := readCall{env: req}
	if err := c.db.startRead(ctx, &call); err != nil {
		return nil, err
	}
	return c.db.getCopyImpl(&call, key, readLatest)
}

// ValueSize looks key's value up pinned, takes its length and releases it:
// no copy, and no allocation when the value is found in a cached block or a
// memtable.
func (c *conn) ValueSize(ctx context.Context, req ioctx.ReadRequest, key []byte) (int, error) {
	call := readCall{env: req}
	if err := c.db.startRead(ctx, &call); err != nil {
		return 0, err
	}
	return c.db.valueSizeImpl(&call, key, readLatest)
}

// GetPinned returns key's value without copying it where it can stay put
// (see getPinnedImpl), with a Closer that releases it. The value stays
// valid until the Closer's Close, also after the database's Close.
func (c *conn) GetPinned(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, io.Closer, error) {
	call := readCall{env: req}
	if err := c.db.startRead(ctx, &call); err != nil {
		return nil, nil, err
	}
	return newPinnedCloser(c.db.getPinnedImpl(&call, key, readLatest))
}

// Check verifies the database's structure and every block (see
// database.Check).
func (c *conn) Check(ctx context.Context) error { return c.db.Check(ctx) }

// Resume retries the background work whose failure stopped writes (see
// database.Resume).
func (c *conn) Resume(ctx context.Context) error { return c.db.Resume(ctx) }

func (c *conn) MultiGet(ctx context.Context, req ioctx.ReadRequest, keys [][]byte) ([][]byte, error) {
	call := readCall{env: req}
	if err := c.db.startRead(ctx, &call); err != nil {
		return nil, err
	}
	return c.db.multiGetImpl(&call, keys, readLatest)
}

// Put, Delete and Write receive the façade's resolved write options and
// call the engine's implementations with them, which never look in ctx.

func (c *conn) Put(ctx context.Context, wo ioctx.WriteOptions, key, value []byte) error {
	return c.db.putImpl(ctx, wo, key, value)
}

func (c *conn) Delete(ctx context.Context, wo ioctx.WriteOptions, key []byte) error {
	return c.db.deleteImpl(ctx, wo, key)
}

// Write copies the façade's batch into a pooled engine batch, reading it
// with its allocation-free reader.
func (c *conn) Write(ctx context.Context, wo ioctx.WriteOptions, db *driver.Batch) error {
	b := batchPool.Get().(*writeBatch)
	defer func() {
		// A pooled batch keeps its memory: do not keep a huge one's.
		if b.Len() <= maxPooledBatch {
			b.Reset()
			batchPool.Put(b)
		}
	}()
	// The façade's encoding is the engine's records without the header:
	// size the batch once instead of growing it.
	b.b.Grow(db.Size())
	b.checker, _ = c.db.opts.MergeOperator.(merge.OperandChecker)
	b.cmp = c.db.ucmp()
	db.Replay(b)
	if b.err != nil {
		return b.err
	}
	if b.merges > 0 {
		if err := c.db.prepareMerges(ctx, b); err != nil {
			return err
		}
	}
	return c.db.writeOpts(ctx, &b.b, wo, nil)
}

// maxPooledBatch is the largest encoded batch conn.Write returns to the
// pool.
const maxPooledBatch = 1 << 20

// An engine batch takes the façade's writes as they are.
var _ driver.BatchWriter = (*writeBatch)(nil)

// DeleteRange writes one range tombstone with the façade's write options.
func (c *conn) DeleteRange(ctx context.Context, wo ioctx.WriteOptions, start, end []byte) error {
	return c.db.deleteRangeImpl(ctx, wo, start, end)
}

func (c *conn) SyncWAL(ctx context.Context) error { return c.db.SyncWAL(ctx) }

func (c *conn) Checkpoint(ctx context.Context, dir string) error { return c.db.Checkpoint(ctx, dir) }

// Ingest adds tables TableWriter wrote (see database.Ingest).
func (c *conn) Ingest(ctx context.Context, paths []string) error { return c.db.Ingest(ctx, paths) }

func (c *conn) NewSnapshot(ctx context.Context) (driver.DriverSnapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, err := c.db.NewSnapshot()
	if err != nil {
		return nil, err
	}
	return driverSnapshot{s}, nil
}

// driverSnapshot is the engine's driver snapshot: its reads take the
// façade's resolved requests and run the implementations at the snapshot's
// sequence number.
type driverSnapshot struct{ s *snapshot }

var (
	_ driver.DriverSnapshot      = driverSnapshot{}
	_ driver.SnapshotMultiGetter = driverSnapshot{}
	_ driver.ValueSizer          = driverSnapshot{}
	_ driver.PinnedGetter        = driverSnapshot{}
)

// ValueSize is conn.ValueSize at the snapshot.
func (ds driverSnapshot) ValueSize(ctx context.Context, req ioctx.ReadRequest, key []byte) (int, error) {
	call := readCall{env: req}
	if err := ds.s.startRead(ctx, &call); err != nil {
		return 0, err
	}
	return ds.s.db.valueSizeImpl(&call, key, ds.s.seq)
}

// GetPinned is conn.GetPinned at the snapshot. The value stays valid until
// the Closer's Close, also after the snapshot's and the database's.
func (ds driverSnapshot) GetPinned(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, io.Closer, error) {
	call := readCall{env: req}
	if err := ds.s.startRead(ctx, &call); err != nil {
		return nil, nil, err
	}
	return newPinnedCloser(ds.s.db.getPinnedImpl(&call, key, ds.s.seq))
}

func (ds driverSnapshot) Get(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, error) {
	call := readCall{env: req}
	if err := ds.s.startRead(ctx, &call); err != nil {
		return nil, err
	}
	return ds.s.db.getCopyImpl(&call, key, ds.s.seq)
}

func (ds driverSnapshot) MultiGet(ctx context.Context, req ioctx.ReadRequest, keys [][]byte) ([][]byte, error) {
	call := readCall{env: req}
	if err := ds.s.startRead(ctx, &call); err != nil {
		return nil, err
	}
	return ds.s.db.multiGetImpl(&call, keys, ds.s.seq)
}

func (ds driverSnapshot) NewIterator(ctx context.Context, req ioctx.ReadRequest, opts driver.IterOptions) (driver.Iter, error) {
	call := readCall{env: req}
	if err := ds.s.startRead(ctx, &call); err != nil {
		return nil, err
	}
	return driverIter(ds.s.db.newIteratorImpl(&call, &iterOptions{LowerBound: opts.LowerBound, UpperBound: opts.UpperBound, Prefix: opts.Prefix}, ds.s.seq))
}

func (ds driverSnapshot) Close() error { return ds.s.Close() }

// driverIter hands an engine iterator to the façade: on an error, a nil
// driver.Iter, not a nil pointer wrapped in a non-nil interface.
func driverIter(it driver.Iter, err error) (driver.Iter, error) {
	if err != nil {
		return nil, err
	}
	return it, nil
}

func (c *conn) NewIterator(ctx context.Context, req ioctx.ReadRequest, opts driver.IterOptions) (driver.Iter, error) {
	call := readCall{env: req}
	if err := c.db.startRead(ctx, &call); err != nil {
		return nil, err
	}
	return driverIter(c.db.newIteratorImpl(&call, &iterOptions{LowerBound: opts.LowerBound, UpperBound: opts.UpperBound, Prefix: opts.Prefix}, readLatest))
}

func (c *conn) Flush(ctx context.Context) error { return c.db.Flush(ctx) }

func (c *conn) Compact(ctx context.Context, start, end []byte) error {
	return c.db.Compact(ctx, start, end)
}

func (c *conn) VerifyChecksum(ctx context.Context, req ioctx.ReadRequest) error {
	call := readCall{env: req}
	if err := c.db.startRead(ctx, &call); err != nil {
		return err
	}
	return c.db.verifyChecksumImpl(&call)
}

func (c *conn) VerifyFileChecksums(ctx context.Context, req ioctx.ReadRequest) error {
	call := readCall{env: req}
	if err := c.db.startRead(ctx, &call); err != nil {
		return err
	}
	return c.db.verifyFileChecksumsImpl(&call)
}

func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.DriverTx, error) {
	// The commit is written with the façade's resolved write options.
	wo := opts.WriteOptions
	tx, err := c.db.BeginTx(ctx, &txnOptions{ReadOnly: opts.ReadOnly, Sync: wo.Sync,
		DisableWAL: wo.DisableWAL, RateLimiterPriority: wo.RateLimiterPriority})
	if err != nil {
		return nil, err
	}
	return &driverTx{tx: tx}, nil
}

func (c *conn) Statistics() *statistics.Statistics { return c.db.Statistics() }

// Close closes the database when the connection owns it; otherwise the
// connector owns the database and closes it.
func (c *conn) Close() error {
	if c.owner != nil {
		return c.owner.Close()
	}
	return nil
}

// driverTx is the engine's driver transaction: its reads take the
// façade's resolved requests.
type driverTx struct {
	tx *txn
}

var (
	_ driver.DriverTx       = (*driverTx)(nil)
	_ driver.TxMultiGetter  = (*driverTx)(nil)
	_ driver.TxRangeDeleter = (*driverTx)(nil)
	_ driver.ValueSizer     = (*driverTx)(nil)
)

// ValueSize is the size of key's value as the transaction sees it: its own
// latest write of key, found in its batch, else the snapshot's value,
// looked up pinned. No copy either way.
func (t *driverTx) ValueSize(ctx context.Context, req ioctx.ReadRequest, key []byte) (int, error) {
	if err := t.tx.check(); err != nil {
		return 0, err
	}
	call := readCall{env: req}
	if err := t.tx.db.startRead(ctx, &call); err != nil {
		return 0, err
	}
	v, err := t.tx.getPinnedImpl(&call, key)
	if err != nil {
		return 0, err
	}
	n := len(v.Data)
	v.Release()
	return n, nil
}

func (t *driverTx) Get(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, error) {
	if err := t.tx.check(); err != nil {
		return nil, err
	}
	call := readCall{env: req}
	if err := t.tx.db.startRead(ctx, &call); err != nil {
		return nil, err
	}
	return t.tx.getImpl(&call, key)
}

func (t *driverTx) MultiGet(ctx context.Context, req ioctx.ReadRequest, keys [][]byte) ([][]byte, error) {
	if err := t.tx.check(); err != nil {
		return nil, err
	}
	call := readCall{env: req}
	if err := t.tx.db.startRead(ctx, &call); err != nil {
		return nil, err
	}
	return t.tx.multiGetImpl(&call, keys)
}

func (t *driverTx) NewIterator(ctx context.Context, req ioctx.ReadRequest, opts driver.IterOptions) (driver.Iter, error) {
	if err := t.tx.check(); err != nil {
		return nil, err
	}
	call := readCall{env: req}
	if err := t.tx.db.startRead(ctx, &call); err != nil {
		return nil, err
	}
	return driverIter(t.tx.newIteratorImpl(&call, &iterOptions{LowerBound: opts.LowerBound, UpperBound: opts.UpperBound, Prefix: opts.Prefix}))
}

func (t *driverTx) Put(ctx context.Context, key, value []byte) error {
	return t.tx.Put(ctx, key, value)
}

func (t *driverTx) Delete(ctx context.Context, key []byte) error { return t.tx.Delete(ctx, key) }

func (t *driverTx) DeleteRange(ctx context.Context, start, end []byte) error {
	return t.tx.DeleteRange(ctx, start, end)
}

func (t *driverTx) Commit() error { return t.tx.Commit() }

func (t *driverTx) Rollback() error { return t.tx.Rollback() }

// pinnedCloser is the Closer of a value GetPinned handed out. It is
// allocated per call and never recycled: a caller may call Close again at
// any time, and must then get an error matching ErrClosed, not release
// another read's value.
type pinnedCloser struct {
	v      pinnedValue
	closed atomic.Bool
}

// newPinnedCloser returns v's value and a Closer that releases it, or err.
func newPinnedCloser(v pinnedValue, err error) ([]byte, io.Closer, error) {
	if err != nil {
		return nil, nil, err
	}
	p := &pinnedCloser{v: v}
	return p.v.Data, p, nil
}

// Close releases the value. Closing again returns an error marked ErrClosed
// and releases nothing.
func (p *pinnedCloser) Close() error {
	if p.closed.Swap(true) {
		return errPinnedClosed
	}
	p.v.Release()
	return nil
}

var errPinnedClosed = base.Mark(errors.New("engine: pinned value already closed"), ErrClosed)
