package sstable

import (
	"context"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/sstable/block"
)

// Iter iterates over the entries of one table whose user keys lie in
// [lower, upper). It is two-level: a position in the in-memory index picks
// data blocks, and a block iterator walks the current one, whose memory is
// pinned (a cache handle, or a buffer of the Iter) until the Iter moves to
// another block.
//
// A block read on its own (a seek's) and the first exactReads blocks of a
// scan after it go straight into the block cache's memory (see
// Reader.loadDataDirect), in automatic readahead mode, unless the readahead
// buffer holds them. Other block reads go through
// a fileio.PrefetchBuffer: readahead grows on sequential access, blocks
// found in the cache included (or is ReadEnv.ReadaheadSize), and with
// ReadEnv.AsyncIO the next chunk is read asynchronously. Blocks come from and go to the
// block cache as ReadEnv.FillCache says; a block the Iter moves to from the
// adjacent one, cached or not, is a scan's (PrefetchBuffer.Sequential) and
// goes in with cache.PriorityScan, the first of a run with PriorityNormal. Data blocks that cannot hold keys in
// range are not read: moving forward stops at the first index separator at
// or above upper, moving backward at the first below lower. A forward scan
// pins the cached block after the one it moves to early, so that its memory
// arrives while the Iter walks the current one (see lookAhead); that is
// not observable in tickers or the cache's contents.
//
// The Iter checks the context given to NewIter before every block it moves
// to, cached or not, and passes it to every file read: the DB iterator's
// context, which a cancelled call or a passed deadline makes done.
//
// An error (IO, corruption, a done context) stops the Iter: every later move
// returns nil, and Error and Close return the error. A move that returns nil
// without an error leaves the Iter exhausted: Next and Prev return nil until
// a First, Last or seek repositions it.
//
// Iter implements base.InternalIterator; the InternalKV a move returns, and
// the memory it points to, are valid until the next move or Close. An Iter
// is not safe for concurrent use.
type Iter struct {
	r *Reader
	// x is the table's index: the Reader's own, or xv, a view of the
	// cached index that ih pins until Close, or of xown.index, the Iter's
	// own copy of one the cache did not hold, read without
	// ReadEnv.FillCache (see pinIndexFor).
	// In a partitioned table x is index partition part (-1 before the
	// first is loaded), which ih pins, with the cache, until the Iter
	// moves to another partition or closes.
	x            *indexTable
	xv           indexTable
	ih           cache.Handle
	xown         metaScratch
	part         int
	ctx          context.Context
	env          ReadEnv
	lower, upper []byte

	// ib is the index entry of the current block in x, in [0, x.len());
	// it is meaningful only while the Iter is positioned or moving.
	ib   int
	data block.Iter
	// loaded says data holds the block at cur, pinned by pin.
	loaded bool
	cur    block.Handle
	pin    BlockPin
	// belowUpper says every entry of the loaded block is below upper: its
	// index separator, which is >= every entry, has a user key < upper. Then
	// forward moves within it skip the bound check, and the next block is
	// worth reading.
	belowUpper bool
	// ahead, when valid, pins the cached block aheadAt, the one after the
	// loaded block, which a forward scan looked up early (see lookAhead);
	// aheadMissed says the look-up of aheadAt missed instead.
	ahead       cache.Handle
	aheadAt     block.Handle
	aheadMissed bool
	// run counts the blocks the Iter moved to since the last one that did
	// not adjoin its predecessor.
	run int

	valid bool
	kv    base.InternalKV
	err   error

	// pf is the readahead buffer, kept, with its buffers, when the Iter
	// goes back to iterPool; pfReady says NewIter's caller has set it up
	// for r's file. exposed says a block the Iter moved to was in pf's or
	// buf's memory (not the cache's): a caller may hold keys and values
	// that point there, so release drops both rather than let another
	// Iter, maybe another database's, write over them.
	pf      *fileio.PrefetchBuffer
	pfReady bool
	exposed bool
	buf     []byte // decompressed blocks that are not cached
	key     []byte // the encoded search key
}

// maxPooledPrefetch bounds the readahead buffers a pooled Iter keeps: a
// long scan's grow to fileio.DefaultMaxReadahead, which a recycled Iter
// rarely needs.
const maxPooledPrefetch = 32 << 10

// exactReads is how many blocks after a seek's (or a First's) a scan reads
// one by one, each straight into the block cache's memory, before it reads
// through the readahead buffer. Readahead pays for long scans; a short one
// (YCSB E's scans of 1-100 rows span 1-8 blocks of 4 KiB) would copy each
// block from the readahead buffer into the cache and read blocks it never
// visits. BenchmarkYCSBE in bench/, CPU per scan: 0 -> 2 blocks 0.945x,
// 2 -> 4 0.975x (medians of 6 alternated rounds).
const exactReads = 4

var _ base.InternalIterator = (*Iter)(nil)

var iterPool = sync.Pool{New: func() any { return new(Iter) }}

// NewIter returns an iterator over the entries whose user keys are in
// [lower, upper); a nil bound is unbounded. lower and upper are retained and
// must not change until Close. ctx is used for the block reads of every move
// (see Iter). The caller must Close the iterator, before closing the Reader.
func (r *Reader) NewIter(ctx context.Context, env ReadEnv, lower, upper []byte) (*Iter, error) {
	i := iterPool.Get().(*Iter)
	i.r, i.ctx, i.env, i.lower, i.upper = r, ctx, env, lower, upper
	i.part = -1
	if r.top != nil {
		// Partitions are pinned as moves reach them.
		return i, nil
	}
	x, ih, err := r.pinIndexFor(ctx, i.env.IO, -1, &i.xv, r.scratchFor(&i.env, &i.xown))
	if err != nil {
		i.release()
		return nil, err
	}
	i.x, i.ih = x, ih
	return i, nil
}

// SeekGE moves to the first entry whose user key is >= key (and >= lower).
// key is not retained.
func (i *Iter) SeekGE(key []byte) *base.InternalKV {
	if i.err != nil {
		return nil
	}
	if i.lower != nil && base.CompareUser(i.r.cmp, key, i.lower) < 0 {
		key = i.lower
	}
	if i.upper != nil && base.CompareUser(i.r.cmp, key, i.upper) >= 0 {
		return i.exhaust()
	}
	i.key = appendSearchKey(i.key[:0], key, base.MaxSeqNum)
	if !i.seekBlock() || !i.loadBlock() {
		return i.exhaust()
	}
	if !i.data.SeekGE(i.key) {
		return i.skipForward()
	}
	return i.forwardKV()
}

// SeekLT moves to the last entry whose user key is < key (and < upper).
// key is not retained.
func (i *Iter) SeekLT(key []byte) *base.InternalKV {
	if i.err != nil {
		return nil
	}
	if i.upper != nil && base.CompareUser(i.r.cmp, key, i.upper) > 0 {
		key = i.upper
	}
	if i.lower != nil && base.CompareUser(i.r.cmp, key, i.lower) <= 0 {
		return i.exhaust()
	}
	i.key = appendSearchKey(i.key[:0], key, base.MaxSeqNum)
	if !i.seekBlock() {
		if i.err != nil {
			return nil
		}
		// Every entry is < key.
		return i.lastFromIndex()
	}
	if !i.loadBlock() {
		return nil
	}
	if !i.data.SeekLT(i.key) {
		return i.skipBackward()
	}
	return i.backwardKV()
}

// First moves to the first entry (the first at or above lower).
func (i *Iter) First() *base.InternalKV {
	if i.lower != nil {
		return i.SeekGE(i.lower)
	}
	if i.err != nil {
		return nil
	}
	if !i.loadPart(0) {
		return nil
	}
	if i.ib = 0; !i.forwardBlock() || !i.loadBlock() {
		return i.exhaust()
	}
	if !i.data.First() {
		return i.skipForward()
	}
	return i.forwardKV()
}

// Last moves to the last entry (the last below upper).
func (i *Iter) Last() *base.InternalKV {
	if i.upper != nil {
		return i.SeekLT(i.upper)
	}
	if i.err != nil {
		return nil
	}
	return i.lastFromIndex()
}

func (i *Iter) lastFromIndex() *base.InternalKV {
	if !i.loadPart(i.r.numParts() - 1) {
		return nil
	}
	if i.ib = i.x.len() - 1; !i.backwardBlock() || !i.loadBlock() {
		return i.exhaust()
	}
	if !i.data.Last() {
		return i.skipBackward()
	}
	return i.backwardKV()
}

// Next moves to the following entry; on an exhausted Iter it returns nil.
func (i *Iter) Next() *base.InternalKV {
	if !i.valid {
		return nil
	}
	if !i.data.Next() {
		return i.skipForward()
	}
	return i.forwardKV()
}

// Prev moves to the preceding entry; on an exhausted Iter it returns nil.
func (i *Iter) Prev() *base.InternalKV {
	if !i.valid {
		return nil
	}
	if !i.data.Prev() {
		return i.skipBackward()
	}
	return i.backwardKV()
}

// Error returns the error that stopped the iterator, if any.
func (i *Iter) Error() error { return i.err }

// Close releases the current block and the readahead buffer (waiting for an
// asynchronous read still in flight) and returns the iterator's error. The
// Iter must not be used afterwards.
func (i *Iter) Close() error {
	err := i.err
	i.release()
	return err
}

func (i *Iter) release() {
	i.unload()
	i.dropAhead()
	pf, buf, key, xown := i.pf, i.buf, i.key, i.xown
	if pf != nil {
		if i.exposed {
			pf.Close()
			pf = nil
		} else {
			pf.Reset(nil, 0, 0, 0, false, maxPooledPrefetch)
		}
	}
	i.ih.Release()
	if cap(buf) > maxPooledBuf || i.exposed {
		buf = nil
	}
	xown.trim()
	*i = Iter{pf: pf, buf: buf[:0], key: key[:0], xown: xown}
	iterPool.Put(i)
}

// skipForward moves to the first entry of the following blocks, once the
// current block is exhausted going forward.
func (i *Iter) skipForward() *base.InternalKV {
	for {
		if err := i.data.Error(); err != nil {
			return i.fail(i.r.wrapBlockErr(err, "data", i.cur))
		}
		// The next block's entries are all above the current separator,
		// whose user key is >= upper unless belowUpper.
		if !i.belowUpper {
			return i.exhaust()
		}
		if i.ib++; !i.forwardBlock() {
			return i.exhaust()
		}
		if !i.loadNextBlock() {
			return nil
		}
		if i.data.First() {
			return i.forwardKV()
		}
	}
}

// skipBackward moves to the last entry of the preceding blocks, once the
// current block is exhausted going backward.
func (i *Iter) skipBackward() *base.InternalKV {
	for {
		if err := i.data.Error(); err != nil {
			return i.fail(i.r.wrapBlockErr(err, "data", i.cur))
		}
		if i.ib--; !i.backwardBlock() {
			return i.exhaust()
		}
		// The block's entries are all <= its separator: if that is below
		// lower, so are they.
		if i.lower != nil && i.x.compareUserKey(i.ib, i.lower) < 0 {
			return i.exhaust()
		}
		if !i.loadBlock() {
			return nil
		}
		if i.data.Last() {
			return i.backwardKV()
		}
	}
}

// forwardKV makes the data iterator's entry current, or exhausts the
// iterator when the entry is at or above upper.
func (i *Iter) forwardKV() *base.InternalKV {
	ik, err := i.r.decodeKey(i.data.Key(), i.cur)
	if err != nil {
		return i.fail(err)
	}
	if !i.belowUpper && i.upper != nil && base.CompareUser(i.r.cmp, ik.UserKey, i.upper) >= 0 {
		return i.exhaust()
	}
	i.r.applyGlobalSeqNum(&ik)
	i.kv = base.InternalKV{K: ik, V: i.data.Value()}
	i.valid = true
	return &i.kv
}

// backwardKV makes the data iterator's entry current, or exhausts the
// iterator when the entry is below lower.
func (i *Iter) backwardKV() *base.InternalKV {
	ik, err := i.r.decodeKey(i.data.Key(), i.cur)
	if err != nil {
		return i.fail(err)
	}
	if i.lower != nil && base.CompareUser(i.r.cmp, ik.UserKey, i.lower) < 0 {
		return i.exhaust()
	}
	i.r.applyGlobalSeqNum(&ik)
	i.kv = base.InternalKV{K: ik, V: i.data.Value()}
	i.valid = true
	return &i.kv
}

// seekBlock sets ib to the first index entry whose separator is >= the
// search key i.key: in a partitioned table, in the partition the top-level
// index picks, loaded. It reports false when there is none (every entry is
// below i.key) or on an error (then i.err is set).
func (i *Iter) seekBlock() bool {
	if p := i.r.partitionOf(i.key); p >= 0 {
		if p == i.r.top.len() || !i.loadPart(p) {
			return false
		}
	}
	i.ib = i.x.seekGE(i.key)
	return i.forwardBlock()
}

// forwardBlock moves ib, when it is past the end of x, to the first entry of
// the following partitions, loading the partition. It reports false when
// there is none, or on an error.
func (i *Iter) forwardBlock() bool {
	for i.ib >= i.x.len() {
		if i.r.top == nil || i.part+1 >= i.r.top.len() || !i.loadPart(i.part+1) {
			return false
		}
		i.ib = 0
	}
	return true
}

// backwardBlock moves ib, when it is before the start of x, to the last
// entry of the preceding partitions, loading the partition. It reports false
// when there is none, or on an error.
func (i *Iter) backwardBlock() bool {
	for i.ib < 0 {
		if i.r.top == nil || i.part <= 0 || !i.loadPart(i.part-1) {
			return false
		}
		i.ib = i.x.len() - 1
	}
	return true
}

// loadPart makes x index partition p of a partitioned table (a no-op for an
// unpartitioned one, whose whole index x is), releasing the one it held. It
// reports false, with the iterator failed, on an error.
func (i *Iter) loadPart(p int) bool {
	if i.r.top == nil || p == i.part {
		return true
	}
	i.ih.Release()
	i.x, i.ih, i.part = nil, cache.Handle{}, -1
	if err := i.ctx.Err(); err != nil {
		i.fail(errors.Wrapf(err, "sstable: %s: iterator reading %s", i.r.name, partName("index", p)))
		return false
	}
	x, ih, err := i.r.pinIndexFor(i.ctx, i.env.IO, p, &i.xv, i.r.scratchFor(&i.env, &i.xown))
	if err != nil {
		i.fail(err)
		return false
	}
	i.x, i.ih, i.part = x, ih, p
	return true
}

// loadBlock makes data iterate over the block of index entry i.ib. It
// reports false, with the iterator failed, on an error.
func (i *Iter) loadBlock() bool { return i.load(false) }

// loadNextBlock is loadBlock for a forward move (Next) from the block before
// ib: it may look ahead (see lookAhead).
func (i *Iter) loadNextBlock() bool { return i.load(true) }

func (i *Iter) load(forward bool) bool {
	h := i.x.handle(i.ib)
	i.belowUpper = i.upper == nil || i.x.compareUserKey(i.ib, i.upper) < 0
	if i.loaded && h == i.cur {
		return true
	}
	i.unload()
	if err := i.ctx.Err(); err != nil {
		i.fail(errors.Wrapf(err, "sstable: %s: iterator reading block %s", i.r.name, h))
		return false
	}
	if !i.pfReady {
		if i.pf == nil {
			i.pf = fileio.NewPrefetchBuffer(i.r.file, int(i.env.ReadaheadSize), 0, 0, i.env.AsyncIO)
		} else {
			i.pf.Reset(i.r.file, int(i.env.ReadaheadSize), 0, 0, i.env.AsyncIO, maxPooledPrefetch)
		}
		i.pfReady = true
	}
	// A block next to the last one this Iter moved to is part of a scan:
	// if it is loaded into the cache, it goes in on probation, so that a
	// scan over more data than the cache does not evict the blocks that
	// point reads and hits keep there (see the cache package).
	dest := blockDest{pf: i.pf, dec: &i.buf}
	// The block adjoins the one loaded before it: the Iter is scanning.
	scan := i.pf.Sequential(int64(h.Offset), int(h.Length)+block.TrailerLen)
	if scan {
		dest.pri = cache.PriorityScan
		i.run++
	} else {
		i.run = 0
	}
	if i.run <= exactReads && i.env.ReadaheadSize == 0 && i.env.FillCache && i.r.opts.Cache != nil &&
		!i.r.file.Mapped() && !i.pf.Holds(int64(h.Offset), int(h.Length)+block.TrailerLen) {
		// A block read on its own (a seek's), or one of the first of a
		// scan, reads exactly the block in automatic readahead mode:
		// read it straight into the cache's memory rather than through
		// pf, which would copy it there (unless readahead brought it in).
		dest.direct = true
	}
	data, pin, found := i.takeAhead(h)
	if forward && scan && i.pf.MostlyCached() {
		i.lookAhead()
	}
	if found != aheadHit {
		if i.ahead.Valid() {
			// The next block is cached: a refill for this one need not
			// read it.
			i.pf.LimitNextRefill(int64(h.Offset) + int64(h.Length) + block.TrailerLen)
		}
		var err error
		var loc blockLoc
		if found == aheadMiss {
			data, pin, loc, err = i.readMissed(h, dest)
		} else {
			data, pin, loc, err = i.r.readData(i.ctx, &i.env, h, dest)
		}
		if loc != locCache {
			i.exposed = true
		}
		i.pf.LimitNextRefill(0)
		if err != nil {
			i.fail(err)
			return false
		}
	}
	i.pin = pin
	if err := i.data.InitInternalCmp(i.r.cmp, data); err != nil {
		i.fail(i.r.wrapBlockErr(err, "data", h))
		return false
	}
	i.loaded, i.cur = true, h
	return true
}

// unload drops the current block.
func (i *Iter) unload() {
	i.data.Reset()
	i.pin.Release()
	i.pin = BlockPin{}
	i.loaded = false
}

func (i *Iter) exhaust() *base.InternalKV {
	i.dropAhead()
	i.valid = false
	i.kv = base.InternalKV{}
	return nil
}

// fail stops the iterator with err (the first error sticks) and drops the
// current block.
func (i *Iter) fail(err error) *base.InternalKV {
	if i.err == nil {
		i.err = err
	}
	i.unload()
	return i.exhaust()
}
