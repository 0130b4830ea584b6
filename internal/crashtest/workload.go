package crashtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/engine"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// ChildEnv is the environment variable that carries a child's
// configuration (JSON) from the parent.
const ChildEnv = "SHALE_CRASHTEST_CHILD"

// ChildConfig is what a child process runs.
type ChildConfig struct {
	Dir       string // the database
	StateFile string // the expected-state file
	Seed      uint64
	Writers   int  // goroutines writing (and half as many reading)
	Faults    bool // inject filesystem faults in windows
	Sync      bool // open the database with Sync: every write synced
	// Large adds values of kilobytes and batches of hundreds of writes
	// (TestCrash and shalecrash have them unless -large=false). With
	// several writers these used to make the engine fail a write with
	// "memtable: arena full" and stop writing until a reopen (see
	// TestConcurrentBatchesSmallMemtable).
	Large bool
}

// Env returns the environment entry that passes c to a child.
func (c ChildConfig) Env() string {
	b, _ := json.Marshal(c)
	return ChildEnv + "=" + string(b)
}

// ChildConfigFromEnv returns the configuration the parent passed, and
// false when this process is not a child.
func ChildConfigFromEnv() (ChildConfig, bool, error) {
	s := os.Getenv(ChildEnv)
	if s == "" {
		return ChildConfig{}, false, nil
	}
	var c ChildConfig
	err := json.Unmarshal([]byte(s), &c)
	return c, true, err
}

// key returns the name of key i of the keyspace.
func key(i int) []byte { return []byte(fmt.Sprintf("key%06d", i)) }

// parseKey returns the index of a key of the keyspace.
func parseKey(k []byte) (int, bool) {
	s, ok := strings.CutPrefix(string(k), "key")
	if !ok || len(s) != 6 {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// value returns the bytes of version v of key k: the key and version, then
// filler drawn from both (usually tens of bytes, now and then kilobytes).
// Every byte is determined by (k, v), so a verifier can tell a version that
// was written from any other bytes.
func value(k int, v uint32) []byte {
	rng := rand.New(rand.NewPCG(uint64(k), uint64(v)))
	n := rng.IntN(64)
	if rng.IntN(50) == 0 {
		n = 1000 + rng.IntN(3000)
	}
	b := fmt.Appendf(nil, "key%06d:%d:", k, v)
	b = b[:len(b):len(b)]
	for range n {
		b = append(b, 'a'+byte(rng.IntN(26)))
	}
	return b
}

// isLarge reports whether version v of key k has kilobytes of filler.
func isLarge(k int, v uint32) bool {
	rng := rand.New(rand.NewPCG(uint64(k), uint64(v)))
	rng.IntN(64)
	return rng.IntN(50) == 0
}

// parseValue returns the version val holds if it is exactly a value
// written for key k.
func parseValue(k int, val []byte) (uint32, bool) {
	f := strings.SplitN(string(val), ":", 3)
	if len(f) != 3 {
		return 0, false
	}
	v, err := strconv.ParseUint(f[1], 10, 32)
	if err != nil || v == 0 || uint32(v)&^verMask != 0 {
		return 0, false
	}
	return uint32(v), string(value(k, uint32(v))) == string(val)
}

// child is the workload of one child process.
type child struct {
	cfg  ChildConfig
	st   *stateFile
	keys int
	out  *bufio.Writer
	outM sync.Mutex

	locks []sync.Mutex // one per key, taken in ascending order
	known []bool       // under the key's lock: the newest write's outcome is known
	dbM   sync.RWMutex // writers hold R; a reopen holds W
	db    *driver.DB

	fs       *errorfs.FS
	disk     *errorfs.DiskFull
	faultOn  atomic.Bool
	quiet    atomic.Bool // no faults: the database is being reopened
	ops      atomic.Int64
	writes   atomic.Int64
	failures atomic.Int64 // failed ops since the last fault window
	reopens  int          // under dbM
	fail     chan error
}

// RunChild opens the database, reports "ready" on out, and runs the
// workload until the process is killed, reporting "ops N faults F" every
// few operations. It returns only when a check fails: a read that returned
// a value that was never written or a write that was lost while running,
// or a database that cannot be reopened after faults.
func RunChild(cfg ChildConfig, out io.Writer) error {
	st, err := openState(cfg.StateFile)
	if err != nil {
		return err
	}
	c := &child{
		cfg:   cfg,
		st:    st,
		keys:  len(st.slots),
		out:   bufio.NewWriter(out),
		locks: make([]sync.Mutex, len(st.slots)),
		known: make([]bool, len(st.slots)),
		fail:  make(chan error, 1),
	}
	for i := range c.known {
		c.known[i] = true
	}
	base := vfs.Default
	c.disk = errorfs.NewDiskFull(1 << 62)
	if cfg.Faults {
		window := errorfs.PredicateFunc("faultWindow", func(errorfs.Op) bool { return c.faultOn.Load() && !c.quiet.Load() })
		seed := int64(cfg.Seed)
		c.fs = errorfs.Wrap(base, errorfs.Any(
			errorfs.InjectError(syscall.ENOSPC, errorfs.And(window, errorfs.OnKind(errorfs.OpFileWrite), errorfs.Randomly(0.2, seed))),
			errorfs.And(window, errorfs.OnKind(errorfs.OpFileSync), errorfs.Randomly(0.2, seed+1)),
			errorfs.And(window, errorfs.OnKind(errorfs.OpCreate, errorfs.OpRename), errorfs.Randomly(0.2, seed+2)),
			gatedDisk{c}, // short writes: a budget set just above what is used
		))
	} else {
		c.fs = errorfs.Wrap(base, errorfs.Any())
	}
	c.report("opening")
	if err := c.open(); err != nil {
		return errors.Wrap(err, "open")
	}
	c.report("ready")
	for g := range max(1, cfg.Writers) {
		go c.writer(rand.New(rand.NewPCG(cfg.Seed, uint64(g))))
		if g%2 == 0 {
			go c.reader(rand.New(rand.NewPCG(cfg.Seed, uint64(g)+1000)))
		}
	}
	return <-c.fail
}

func (c *child) report(line string) {
	c.outM.Lock()
	defer c.outM.Unlock()
	fmt.Fprintln(c.out, line)
	_ = c.out.Flush()
}

func (c *child) failf(format string, args ...any) {
	select {
	case c.fail <- errors.Newf(format, args...):
	default:
	}
	select {} // the first failure is reported; everything else stops here
}

func (c *child) open() error {
	db := driver.OpenDB(engine.NewConnector(c.cfg.Dir, &engine.Options{
		FS:                             c.fs,
		Sync:                           c.cfg.Sync,
		WriteBufferSize:                64 << 10,
		TargetFileSizeBase:             32 << 10,
		MaxBytesForLevelBase:           128 << 10,
		Level0FileNumCompactionTrigger: 2,
		BlockCacheSize:                 256 << 10,
	}))
	if err := db.Ping(context.Background()); err != nil {
		_ = db.Close()
		return err
	}
	c.db = db
	return nil
}

// tick counts an op, reports progress, opens and closes fault windows,
// and reopens a database that keeps failing after a window closed.
func (c *child) tick(rng *rand.Rand, write bool) {
	n := c.ops.Add(1)
	if n%50 == 0 {
		c.report(fmt.Sprintf("ops %d faults %d", n, c.fs.Injected()))
	}
	if !c.cfg.Faults || !write {
		return
	}
	// Windows open and close by writes, which readers do not outpace.
	switch c.writes.Add(1) % 300 {
	case 30:
		if rng.IntN(2) == 0 {
			c.disk.SetBudget(c.disk.Used() + int64(rng.IntN(64<<10)))
		}
		c.faultOn.Store(true)
	case 230:
		c.faultOn.Store(false)
		c.disk.SetBudget(1 << 62)
		c.failures.Store(0)
	}
}

// gatedDisk is the child's DiskFull, silent while the database is
// reopened (which must succeed): space used then is not counted, so the
// next budget is a little looser than it looks.
type gatedDisk struct{ c *child }

func (g gatedDisk) MaybeError(op errorfs.Op) error {
	if g.c.quiet.Load() {
		return nil
	}
	return g.c.disk.MaybeError(op)
}

// maybeReopen closes and reopens the database when ops keep failing
// with no fault window open: the database must recover from what the
// faults did.
func (c *child) maybeReopen() {
	if c.faultOn.Load() || c.failures.Load() < 20 {
		return
	}
	c.dbM.Lock()
	defer c.dbM.Unlock()
	if c.failures.Load() < 20 {
		return
	}
	c.quiet.Store(true)
	defer c.quiet.Store(false)
	_ = c.db.Close()
	if err := c.open(); err != nil {
		c.failf("reopen after faults: %v", err)
	}
	// The faults may have lost acknowledged unsynced writes, as a crash
	// does: only what the expected state allows is known now.
	for k := range c.known {
		c.known[k] = false
	}
	c.reopens++
	c.failures.Store(0)
	c.report("reopened")
}

// wop is one write of a batch: a put or delete of key k, or a range
// deletion of keys [k, e).
type wop struct {
	kind byte // 'p', 'd', 'r'
	k, e int
}

func (c *child) writer(rng *rand.Rand) {
	ctx := context.Background()
	for {
		c.tick(rng, true)
		c.maybeReopen()
		switch r := rng.IntN(100); {
		case r < 1:
			c.maintain(ctx, rng)
			continue
		case r < 45:
			c.write(ctx, rng, []wop{{kind: 'p', k: rng.IntN(c.keys)}}, false)
		case r < 60:
			c.write(ctx, rng, []wop{{kind: 'd', k: rng.IntN(c.keys)}}, false)
		case r < 70:
			k := rng.IntN(c.keys)
			c.write(ctx, rng, []wop{{kind: 'r', k: k, e: min(c.keys, k+1+rng.IntN(16))}}, false)
		default:
			n := 2 + rng.IntN(10)
			if c.cfg.Large && rng.IntN(20) == 0 {
				n = 200 + rng.IntN(400) // a large batch: a memtable of its own
			}
			ops := make([]wop, n)
			for i := range ops {
				k := rng.IntN(c.keys)
				switch rng.IntN(10) {
				case 0:
					ops[i] = wop{kind: 'r', k: k, e: min(c.keys, k+1+rng.IntN(8))}
				case 1, 2:
					ops[i] = wop{kind: 'd', k: k}
				default:
					ops[i] = wop{kind: 'p', k: k}
				}
			}
			c.write(ctx, rng, ops, true)
		}
	}
}

// maintain flushes, compacts a range or syncs the WAL.
func (c *child) maintain(ctx context.Context, rng *rand.Rand) {
	c.dbM.RLock()
	defer c.dbM.RUnlock()
	var err error
	switch rng.IntN(3) {
	case 0:
		err = c.db.Flush(ctx)
	case 1:
		k := rng.IntN(c.keys)
		err = c.db.Compact(ctx, key(k), key(min(c.keys-1, k+rng.IntN(200))))
	case 2:
		err = c.db.SyncWAL(ctx)
	}
	if err != nil {
		c.failures.Add(1)
	}
}

// write applies ops (one write, or one batch) under the write-ahead
// protocol of the expected state: record each touched key's new version
// as pending, write, then record the outcome.
func (c *child) write(ctx context.Context, rng *rand.Rand, ops []wop, batch bool) {
	// The final version kind of each key the write touches.
	final := map[int]byte{}
	for _, o := range ops {
		if o.kind == 'r' {
			for k := o.k; k < o.e; k++ {
				final[k] = 'd'
			}
		} else {
			final[o.k] = o.kind
		}
	}
	keys := make([]int, 0, len(final))
	for k := range final {
		keys = append(keys, k)
	}
	slices.Sort(keys)

	c.dbM.RLock()
	defer c.dbM.RUnlock()
	for _, k := range keys {
		c.locks[k].Lock()
	}
	defer func() {
		for _, k := range keys {
			c.locks[k].Unlock()
		}
	}()

	wo := ioctx.WriteOptions{Sync: c.cfg.Sync || rng.IntN(4) == 0}
	for _, k := range keys {
		switch n := len(c.st.slots[k].pending); {
		case n >= maxPending:
			return // the key's outcome is too uncertain: a later synced write will settle it
		case n >= maxPending-1:
			wo.Sync = true // settle the key
		}
	}
	if !wo.Sync && rng.IntN(40) == 0 {
		wo.DisableWAL = true
	}
	vers := make(map[int]uint32, len(keys))
	for _, k := range keys {
		s := &c.st.slots[k]
		v := s.next
		for !c.cfg.Large && isLarge(k, v) {
			v++ // a version never written
		}
		s.next = v + 1
		if final[k] == 'd' {
			v |= delBit
		}
		vers[k] = v
		s.pending = append(s.pending, v)
		if err := c.st.write(k); err != nil {
			c.failf("expected state: %v", err)
		}
	}

	wctx := ioctx.WithWriteOptions(ctx, wo)
	var err error
	if !batch && len(ops) == 1 {
		o := ops[0]
		switch o.kind {
		case 'p':
			err = c.db.Put(wctx, key(o.k), value(o.k, vers[o.k]&verMask))
		case 'd':
			err = c.db.Delete(wctx, key(o.k))
		case 'r':
			err = c.db.DeleteRange(wctx, key(o.k), key(o.e))
		}
	} else {
		var b driver.Batch
		for _, o := range ops {
			switch o.kind {
			case 'p':
				b.Put(key(o.k), value(o.k, vers[o.k]&verMask))
			case 'd':
				b.Delete(key(o.k))
			case 'r':
				b.DeleteRange(key(o.k), key(o.e))
			}
		}
		err = c.db.Write(wctx, &b)
	}

	for _, k := range keys {
		s := &c.st.slots[k]
		switch {
		case err != nil:
			// Not acknowledged: it may or may not be there.
			c.known[k] = false
			continue
		case wo.Sync:
			s.base = vers[k]
			s.pending = s.pending[:0]
		default:
			s.pending[len(s.pending)-1] |= ackedBit
		}
		c.known[k] = true
		if err := c.st.write(k); err != nil {
			c.failf("expected state: %v", err)
		}
	}
	if err != nil {
		if !c.cfg.Faults {
			c.failf("write failed with no faults injected: %v", err)
		}
		c.failures.Add(1)
	}
}

// newest returns the version of the key's newest write.
func (s *keyState) newest() uint32 {
	if n := len(s.pending); n > 0 {
		return s.pending[n-1] &^ ackedBit
	}
	return s.base
}

func (c *child) reader(rng *rand.Rand) {
	ctx := context.Background()
	for {
		c.tick(rng, false)
		if rng.IntN(20) == 0 {
			c.scan(ctx, rng)
			continue
		}
		k := rng.IntN(c.keys)
		c.dbM.RLock()
		c.locks[k].Lock()
		val, err := c.db.Get(ctx, key(k))
		s := &c.st.slots[k]
		switch {
		case err != nil && !errors.Is(err, driver.ErrNotFound):
			if !c.cfg.Faults {
				c.failf("Get(%s): %v", key(k), err)
			}
			c.failures.Add(1)
		default:
			found := err == nil
			var v uint32
			if found {
				var ok bool
				if v, ok = parseValue(k, val); !ok {
					c.failf("Get(%s) = %q: never written", key(k), val)
				}
			}
			if c.known[k] {
				want := s.newest()
				if found != (want&delBit == 0) || (found && v != want&verMask) {
					c.failf("Get(%s) = %s, want the newest write, %s (state %s; %d ops, %d reopens, %d faults injected)",
						key(k), describe(found, v), describeVer(want), describePending(s.pending), c.ops.Load(), c.reopens, c.fs.Injected())
				}
			} else if !s.allows(found, v) {
				c.failf("Get(%s) = %s, which is neither the durable version nor a pending one", key(k), describe(found, v))
			}
		}
		c.locks[k].Unlock()
		c.dbM.RUnlock()
	}
}

// scan reads a range with an iterator, without locks: every entry must be a
// key of the keyspace holding a value written for it.
func (c *child) scan(ctx context.Context, rng *rand.Rand) {
	c.dbM.RLock()
	defer c.dbM.RUnlock()
	lo := rng.IntN(c.keys)
	it, err := c.db.NewIterator(ctx, &driver.IterOptions{LowerBound: key(lo), UpperBound: key(lo + 100)})
	if err != nil {
		c.failures.Add(1)
		return
	}
	move, first := it.Next, it.First
	if rng.IntN(2) == 0 {
		move, first = it.Prev, it.Last
	}
	for ok := first(); ok; ok = move() {
		k, ok := parseKey(it.Key())
		if !ok || k < lo || k >= lo+100 {
			c.failf("scan from %s: key %q out of the keyspace or bounds", key(lo), it.Key())
		}
		if _, ok := parseValue(k, it.Value()); !ok {
			c.failf("scan: %s = %q: never written", it.Key(), it.Value())
		}
	}
	if err := errors.CombineErrors(it.Error(), it.Close()); err != nil {
		if !c.cfg.Faults {
			c.failf("scan: %v", err)
		}
		c.failures.Add(1)
	}
}

func describe(found bool, v uint32) string {
	if !found {
		return "absent"
	}
	return "version " + strconv.FormatUint(uint64(v), 10)
}

func describeVer(v uint32) string {
	if v&delBit != 0 {
		return "absent (deleted by version " + strconv.FormatUint(uint64(v&verMask), 10) + ")"
	}
	return "version " + strconv.FormatUint(uint64(v&verMask), 10)
}
