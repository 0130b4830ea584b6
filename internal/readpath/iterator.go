package readpath

import (
	"bytes"
	"context"
	"sync"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/merging"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/statistics"
)

// IterOptions are an Iterator's bounds: it shows user keys in
// [LowerBound, UpperBound); a nil bound is open. NewIterator copies them.
type IterOptions struct {
	LowerBound, UpperBound []byte

	// FilterPrefix, when not nil, is a prefix, by the prefix extractor named
	// PrefixExtractorName, of every user key in [LowerBound, UpperBound):
	// the caller (the engine, from driver.IterOptions.Prefix) guarantees
	// it. NewIterator then asks the filter of each table overlapping the
	// bounds about it (sstable.Reader.PrefixMayMatch), ticking
	// BloomFilterPrefixChecked, and leaves out every table whose filter
	// rules it out (BloomFilterPrefixUseful): such a table has no key in
	// the bounds. A table with range tombstones is kept whatever its filter
	// says, since they may delete keys of the prefix in older tables.
	FilterPrefix        []byte
	PrefixExtractorName string
}

// iterPos is where an Iterator stands.
type iterPos uint8

const (
	// posNone: not positioned yet, or stopped by an error. Next and Prev
	// return false.
	posNone iterPos = iota
	// posValid: at an entry.
	posValid
	// posBeforeStart: before the first entry (Prev ran off the start, or
	// SeekLT found nothing). Next moves to the first entry.
	posBeforeStart
	// posAfterEnd: after the last entry (Next ran off the end, or SeekGE
	// found nothing). Prev moves to the last entry.
	posAfterEnd
)

type direction uint8

const (
	forward direction = iota
	reverse
)

// Iterator is the DB iterator: the newest entry of each user key visible at
// its sequence number, in key order, with tombstones and everything newer
// than the sequence number hidden, within its bounds.
//
// # Structure
//
// A merging iterator (package merging) over one iterator per memtable (empty
// ones left out), one per L0 table, and one level iterator per level >= 1
// yields every version of every key; the Iterator resolves visibility on top
// of it with LevelDB's DBIter algorithm. With a single source (one level
// after a full compaction) the Iterator moves that source itself, and the
// comments call it the merged iterator all the same. Going forward the merged
// iterator stands at the entry shown, and Next skips the remaining versions
// of its key. Going backward it stands before all versions of the key shown:
// Prev scans back over every version of the previous key, keeping the newest
// visible one in a buffer of the Iterator's own. Changing direction
// re-positions it once.
//
// Tables are opened lazily, through View.Tables, when the merged iterator
// first needs them (a level iterator opens the next table as it crosses a
// file boundary and releases the previous one); tables whose key range lies
// outside the bounds are never acquired, and the bounds go down to every
// table iterator, so blocks outside them are never read. Reads carry the
// ReadEnv given to NewIterator.
//
// # Positioning
//
// First, Last, SeekGE and SeekLT position the Iterator; Next and Prev move it
// and may change direction at any point. Each returns whether the Iterator
// is now at an entry (Valid). An Iterator that ran off the end (or whose
// SeekGE found nothing) moves to the last entry on Prev; one that ran off
// the start (or whose SeekLT found nothing) moves to the first on Next.
// Before the first positioning, and after an error, Next and Prev return
// false.
//
// Key and Value are read-only and valid until the next positioning call or
// Close; copy them to keep them. Going forward they point into memtable or
// block memory and moving allocates nothing while the blocks are cached;
// going backward they point into the Iterator's buffers, which are reused.
//
// # Errors and contexts
//
// An error (a failed table open or block read, corruption, a done context)
// stops the Iterator for good: every later move returns false, and Error and
// Close return the error. The context given to NewIterator is checked
// before every table is acquired and every block is read; a done context
// stops the Iterator with an error for which errors.Is(err, ctx.Err())
// holds.
//
// # Statistics
//
// First, Last, SeekGE and SeekLT tick NumberDBSeek and, when they land on an
// entry, NumberDBSeekFound and IterBytesRead (key and value lengths);
// SeekGE and SeekLT are timed in the DBSeek histogram. Next and Prev count
// NumberDBNext, NumberDBNextFound, NumberDBPrev, NumberDBPrevFound and
// IterBytesRead locally and add them to View.Stats at Close, as RocksDB's
// DBIter does with its local statistics.
//
// The View, and what it references (memtables, version, table source), must
// stay alive until Close. An Iterator is not safe for concurrent use.
type Iterator struct {
	stats        *statistics.Statistics
	seq          base.SeqNum
	lower, upper []byte
	cmp          base.Compare // v.Cmp
	// prefix is the prefix filter question of IterOptions.FilterPrefix,
	// asked of each table as NewIterator adds it; nil when none.
	prefix *prefixCheck
	pc     prefixCheck // what prefix points to

	// iter is what the Iterator moves: merged, or the only child itself
	// when there is just one, so that a scan of one level (after a full
	// compaction, with the memtables empty) pays for no merging at all.
	iter base.InternalIterator
	// sc holds the level iterators, the merging iterator and the seek
	// buffer, recycled through scratchPool from one Iterator to the next
	// (nil after Close): none of it is memory a caller is handed.
	sc     *iterScratch
	levels []levelIter // sc.levels

	pos iterPos
	dir direction
	// ikv is the merged iterator's entry while it is at one going backward
	// (the entry before all versions of the key shown), nil when it ran off
	// the start.
	ikv *base.InternalKV

	key, value []byte
	// keyBuf holds the key to skip going forward, and the key shown going
	// backward; valBuf holds the value shown going backward.
	keyBuf, valBuf []byte

	err    error
	closed bool

	// mg is the merge state: the operator, and what resolving a key's
	// operands needs (see merge.go).
	mg iterMerge

	// Local tickers, added to stats at Close.
	nNext, nNextFound, nPrev, nPrevFound, bytesRead uint64
}

// NewIterator returns an Iterator over v's entries visible at seq (those with
// sequence numbers <= seq) within opts' bounds. It opens no table (the first
// positioning call does, through v.Tables, with env), except, when v has
// range tombstones, the tables within the bounds that have some, to read
// their tombstones (a failure there is the Iterator's Error). The caller
// must Close it.
//
// Every write numbered <= seq must already be in v's memtables, as it is
// when seq is a sequence number the engine has published: the Iterator
// leaves out the memtables that are empty when it is created.
func NewIterator(ctx context.Context, v *View, env sstable.ReadEnv, seq base.SeqNum, opts IterOptions) *Iterator {
	it := &Iterator{}
	it.Init(ctx, v, env, seq, opts)
	return it
}

// iterScratch is the part of an Iterator that scratchPool recycles: what
// NewIterator would otherwise allocate for every Iterator. A caller never
// holds memory of it: keys and values point into blocks, memtables and the
// Iterator's own buffers, which are not recycled.
type iterScratch struct {
	levels   []levelIter
	children []base.InternalIterator
	sets     []*rangedel.Set
	merged   merging.Iter
	// seekBuf holds a copy of the key being sought: the caller may pass
	// Key(), whose memory a child releases when the seek moves it to
	// another block or table, before the other children have used it.
	seekBuf []byte
}

var scratchPool = sync.Pool{New: func() any { return new(iterScratch) }}

// maxPooledSeekBuf bounds the seek buffer a recycled iterScratch keeps.
const maxPooledSeekBuf = 4 << 10

// release clears what sc references and puts it back in scratchPool.
func (sc *iterScratch) release() {
	// Past their lengths the slices are zero: they only grow by append,
	// and addLevel zeroes a level iterator it drops.
	clear(sc.levels)
	clear(sc.children)
	clear(sc.sets)
	sc.merged.Reset()
	sc.levels, sc.children, sc.sets = sc.levels[:0], sc.children[:0], sc.sets[:0]
	if cap(sc.seekBuf) > maxPooledSeekBuf {
		sc.seekBuf = nil
	}
	scratchPool.Put(sc)
}

// Init makes it, a zero Iterator, what NewIterator(ctx, v, env, seq, opts)
// returns, so that a caller can embed an Iterator in its own structure.
func (it *Iterator) Init(ctx context.Context, v *View, env sstable.ReadEnv, seq base.SeqNum, opts IterOptions) {
	*it = Iterator{stats: v.Stats, seq: seq, cmp: v.Cmp}
	sc := scratchPool.Get().(*iterScratch)
	it.sc = sc
	it.mg.op, it.mg.stats = v.Merge, v.Stats
	var filterPrefix []byte
	if opts.FilterPrefix != nil && opts.PrefixExtractorName != "" {
		filterPrefix = opts.FilterPrefix
	}
	var fp []byte
	it.lower, it.upper, fp = cloneBounds(opts.LowerBound, opts.UpperBound, filterPrefix)
	if filterPrefix != nil {
		it.pc = prefixCheck{name: opts.PrefixExtractorName, prefix: fp, hash: bloom.Hash(fp)}
		it.prefix = &it.pc
	}

	n := 0
	if vers := v.Version; vers != nil {
		for _, f := range vers.Levels[0] {
			if overlapsBounds(it.cmp, f, it.lower, it.upper) {
				n++
			}
		}
		for _, files := range vers.Levels[1:] {
			if len(files) > 0 {
				n++
			}
		}
	}
	// levels must not grow once a level iterator's address is taken.
	if cap(sc.levels) < n {
		sc.levels = make([]levelIter, 0, n)
	}
	it.levels = sc.levels[:0]
	children := sc.children[:0]
	sets := sc.sets[:0] // each child's range tombstones, when any exist
	hasDels := viewHasRangeDels(v)
	for _, m := range v.Mems {
		// An empty memtable, the mutable one after a flush, is left out: it
		// can only receive writes numbered above seq, which are hidden.
		if !m.Empty() {
			children = append(children, m.NewIter(it.lower, it.upper))
			if hasDels {
				sets = append(sets, m.RangeDeletions())
			}
		}
	}
	if vers := v.Version; vers != nil {
		for i, f := range vers.Levels[0] {
			if overlapsBounds(it.cmp, f, it.lower, it.upper) {
				it.addLevel(ctx, v, env, 0, vers.Levels[0][i:i+1])
			}
		}
		for level := 1; level < len(vers.Levels); level++ {
			if len(vers.Levels[level]) > 0 {
				it.addLevel(ctx, v, env, level, vers.Levels[level])
			}
		}
	}
	for i := range it.levels {
		children = append(children, &it.levels[i])
		if hasDels && it.err == nil {
			l := &it.levels[i]
			set, err := tableRangeDels(ctx, v, env, l.level, l.files, it.lower, it.upper)
			it.err = err
			sets = append(sets, set)
		}
	}
	if hasDels && it.err == nil {
		wrapRangeDels(children, sets, seq)
	}
	sc.levels, sc.children, sc.sets = it.levels, children, sets
	if len(children) == 1 {
		// The Iterator never moves it while exhausted, nor after an error
		// (see findNext and findPrev), so it needs none of the merging
		// iterator's guarantees.
		it.iter = children[0]
	} else {
		sc.merged.Init(children...)
		sc.merged.SetCompare(it.cmp)
		it.iter = &sc.merged
	}
}

// addLevel adds a level iterator over files unless none of them overlaps
// the bounds.
func (it *Iterator) addLevel(ctx context.Context, v *View, env sstable.ReadEnv, level int, files []*manifest.FileMetadata) {
	it.levels = append(it.levels, levelIter{})
	l := &it.levels[len(it.levels)-1]
	l.init(ctx, env, v.Tables, level, files, it.lower, it.upper, it.cmp)
	if it.prefix != nil {
		l.files = it.prefix.prune(ctx, v, env, level, l.files)
	}
	if len(l.files) == 0 {
		// Zeroed, as iterScratch.release expects past the length.
		*l = levelIter{}
		it.levels = it.levels[:len(it.levels)-1]
	}
}

// cloneBounds copies the bounds and the filter prefix into one
// allocation; a nil one stays nil.
func cloneBounds(lower, upper, prefix []byte) (l, u, p []byte) {
	if lower == nil && upper == nil && prefix == nil {
		return nil, nil, nil
	}
	buf := make([]byte, 0, len(lower)+len(upper)+len(prefix))
	clone := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		start := len(buf)
		buf = append(buf, b...)
		return buf[start:len(buf):len(buf)]
	}
	l = clone(lower)
	u = clone(upper)
	p = clone(prefix)
	return l, u, p
}

// First moves to the first entry at or above the lower bound.
func (it *Iterator) First() bool {
	return it.recordSeek(it.first())
}

// Last moves to the last entry below the upper bound.
func (it *Iterator) Last() bool {
	return it.recordSeek(it.last())
}

// SeekGE moves to the first entry whose key is >= key (and >= the lower
// bound). key is only read during the call; it may be the Iterator's own
// Key().
func (it *Iterator) SeekGE(key []byte) bool {
	sw := it.stats.StartStopWatch(statistics.DBSeek, statistics.HistogramNone)
	ok := it.seekGE(key)
	sw.Stop()
	return it.recordSeek(ok)
}

// SeekLT moves to the last entry whose key is < key (and < the upper
// bound). key is only read during the call; it may be the Iterator's own
// Key().
func (it *Iterator) SeekLT(key []byte) bool {
	sw := it.stats.StartStopWatch(statistics.DBSeek, statistics.HistogramNone)
	ok := it.seekLT(key)
	sw.Stop()
	return it.recordSeek(ok)
}

// Next moves to the following entry.
func (it *Iterator) Next() bool {
	it.nNext++
	var ok bool
	if it.pos == posValid && it.dir == forward {
		// The common step, inlined here: the merged iterator is at the key
		// shown; step past it and skip its older versions. The entry there
		// is usually already the next key's visible value, which is shown
		// without findNext's loop and checks.
		it.keyBuf = append(it.keyBuf[:0], it.key...)
		var kv *base.InternalKV
		if it.mg.ahead {
			// A merged key was shown: the merged iterator already
			// stands past the entries that made it.
			kv, it.mg.ahead = it.mg.aheadKV, false
		} else {
			kv = it.iter.Next()
		}
		if kv != nil && kv.K.SeqNum() <= it.seq && kv.K.Kind() == base.KindSet &&
			base.CompareUser(it.cmp, kv.K.UserKey, it.keyBuf) > 0 {
			it.key, it.value = kv.K.UserKey, kv.V
			ok = true
		} else {
			ok = it.findNext(kv, true)
		}
	} else {
		ok = it.next()
	}
	if !ok {
		return false
	}
	it.nNextFound++
	it.bytesRead += uint64(len(it.key) + len(it.value))
	return true
}

// Prev moves to the preceding entry.
func (it *Iterator) Prev() bool {
	it.nPrev++
	if !it.prev() {
		return false
	}
	it.nPrevFound++
	it.bytesRead += uint64(len(it.key) + len(it.value))
	return true
}

// Valid reports whether the Iterator is at an entry.
func (it *Iterator) Valid() bool { return it.pos == posValid }

// Key returns the current entry's key; nil when not Valid. See Iterator for
// how long it stays valid.
func (it *Iterator) Key() []byte { return it.key }

// Value returns the current entry's value; nil when not Valid (and possibly
// nil for an empty value). See Iterator for how long it stays valid.
func (it *Iterator) Value() []byte { return it.value }

// Error returns the error that stopped the Iterator, if any.
func (it *Iterator) Error() error { return it.err }

// Close closes the memtable, table and level iterators, releases every
// table, adds the local tickers to the statistics, and returns the error
// that stopped the Iterator, if any. A second Close does nothing and returns
// nil. The Iterator must not be used after Close.
func (it *Iterator) Close() error {
	if it.closed {
		return nil
	}
	it.closed = true
	err := it.iter.Close()
	if it.err != nil {
		err = it.err
	}
	it.iter, it.levels = nil, nil
	it.sc.release()
	it.sc = nil
	st := it.stats
	st.RecordTick(statistics.NumberDBNext, it.nNext)
	st.RecordTick(statistics.NumberDBNextFound, it.nNextFound)
	st.RecordTick(statistics.NumberDBPrev, it.nPrev)
	st.RecordTick(statistics.NumberDBPrevFound, it.nPrevFound)
	st.RecordTick(statistics.IterBytesRead, it.bytesRead)
	it.pos, it.key, it.value, it.ikv = posNone, nil, nil, nil
	return err
}

func (it *Iterator) recordSeek(ok bool) bool {
	st := it.stats
	st.RecordTick(statistics.NumberDBSeek, 1)
	if ok {
		st.RecordTick(statistics.NumberDBSeekFound, 1)
		st.RecordTick(statistics.IterBytesRead, uint64(len(it.key)+len(it.value)))
	}
	return ok
}

func (it *Iterator) first() bool {
	if it.err != nil {
		return false
	}
	it.dir, it.mg.ahead = forward, false
	return it.findNext(it.iter.First(), false)
}

func (it *Iterator) last() bool {
	if it.err != nil {
		return false
	}
	it.dir, it.mg.ahead = reverse, false
	return it.findPrev(it.iter.Last())
}

func (it *Iterator) seekGE(key []byte) bool {
	if it.err != nil {
		return false
	}
	if it.lower != nil && base.CompareUser(it.cmp, key, it.lower) < 0 {
		key = it.lower
	}
	it.sc.seekBuf = append(it.sc.seekBuf[:0], key...)
	it.dir, it.mg.ahead = forward, false
	return it.findNext(it.iter.SeekGE(it.sc.seekBuf), false)
}

func (it *Iterator) seekLT(key []byte) bool {
	if it.err != nil {
		return false
	}
	if it.upper != nil && base.CompareUser(it.cmp, key, it.upper) > 0 {
		key = it.upper
	}
	it.sc.seekBuf = append(it.sc.seekBuf[:0], key...)
	it.dir, it.mg.ahead = reverse, false
	return it.findPrev(it.iter.SeekLT(it.sc.seekBuf))
}

// next is Next from anywhere but an entry shown going forward, which Next
// handles itself.
func (it *Iterator) next() bool {
	switch {
	case it.pos == posBeforeStart:
		return it.first()
	case it.pos != posValid:
		return false
	}
	// Going backward, the merged iterator is before every version of the
	// key shown, which keyBuf holds: step into them and skip them.
	it.dir = forward
	var kv *base.InternalKV
	if it.ikv == nil {
		kv = it.iter.First()
	} else {
		kv = it.iter.Next()
	}
	return it.findNext(kv, true)
}

func (it *Iterator) prev() bool {
	switch it.pos {
	case posValid:
	case posAfterEnd:
		return it.last()
	default:
		return false
	}
	if it.dir == reverse {
		return it.findPrev(it.ikv)
	}
	// The merged iterator is at the newest visible version of the key shown:
	// step back before all of its versions.
	it.dir = reverse
	it.keyBuf = append(it.keyBuf[:0], it.key...)
	var kv *base.InternalKV
	switch {
	case !it.mg.ahead:
		kv = it.iter.Prev()
	case it.mg.aheadKV == nil:
		// Resolving a merged key ran the merged iterator off the end,
		// where it must not be stepped: start again from the last entry.
		kv = it.iter.Last()
	default:
		kv = it.iter.Prev()
	}
	it.mg.ahead = false
	for kv != nil && base.CompareUser(it.cmp, kv.K.UserKey, it.keyBuf) >= 0 {
		kv = it.iter.Prev()
	}
	return it.findPrev(kv)
}

// maxSequentialSkip is how many hidden versions of one key the iterator
// steps over before it seeks past them instead (RocksDB's
// max_sequential_skip_in_iterations): a key overwritten thousands of times in
// the memtable would otherwise cost thousands of steps per Next.
const maxSequentialSkip = 8

// findNext moves forward from kv, the merged iterator's entry, to the first
// visible value. With skipping, entries of keys <= keyBuf are hidden.
func (it *Iterator) findNext(kv *base.InternalKV, skipping bool) bool {
	skipped := 0
	for kv != nil {
		if kv.K.SeqNum() > it.seq {
			kv = it.iter.Next()
			continue
		}
		switch kv.K.Kind() {
		case base.KindDelete:
			// Hide the older versions of the deleted key.
			if !skipping || !bytes.Equal(kv.K.UserKey, it.keyBuf) {
				it.keyBuf = append(it.keyBuf[:0], kv.K.UserKey...)
				skipping, skipped = true, 0
			}
		case base.KindSet:
			if !skipping || base.CompareUser(it.cmp, kv.K.UserKey, it.keyBuf) > 0 {
				it.key, it.value = kv.K.UserKey, kv.V
				it.pos = posValid
				return true
			}
		case base.KindMerge:
			if !skipping || base.CompareUser(it.cmp, kv.K.UserKey, it.keyBuf) > 0 {
				return it.mergeForward(kv)
			}
		default:
			return it.fail(base.CorruptionErrorf("readpath: iterator: entry %s has an unknown kind", kv.K))
		}
		if skipped++; skipped > maxSequentialSkip && it.cmp == nil {
			// Seek to the first key after keyBuf: keyBuf followed by a zero
			// byte is its immediate successor (in bytewise order; with
			// another comparer the Iterator steps on).
			it.sc.seekBuf = append(append(it.sc.seekBuf[:0], it.keyBuf...), 0)
			kv, skipped = it.iter.SeekGE(it.sc.seekBuf), 0
			continue
		}
		kv = it.iter.Next()
	}
	return it.exhausted(posAfterEnd)
}

// findPrev moves backward from kv, the merged iterator's entry, over every
// version of the previous key that has a visible value, and shows the newest
// visible one. The merged iterator is left at the entry before them (ikv).
func (it *Iterator) findPrev(kv *base.InternalKV) bool {
	// KindDelete until a value is found: a key whose newest visible entry
	// is a tombstone has nothing to show.
	kind := base.KindDelete
	for ; kv != nil; kv = it.iter.Prev() {
		if kv.K.SeqNum() > it.seq {
			continue
		}
		if kind != base.KindDelete && base.CompareUser(it.cmp, kv.K.UserKey, it.keyBuf) < 0 {
			// The first visible entry of a key before the one found.
			break
		}
		prevKind := kind
		switch kind = kv.K.Kind(); kind {
		case base.KindDelete:
			it.keyBuf, it.valBuf = it.keyBuf[:0], it.valBuf[:0]
		case base.KindSet:
			it.keyBuf = append(it.keyBuf[:0], kv.K.UserKey...)
			it.valBuf = append(it.valBuf[:0], kv.V...)
		case base.KindMerge:
			// Entries of one key come oldest first: an operand applies
			// to the value or operands below it (prevKind), if any.
			it.mergeBackward(kv, prevKind)
		default:
			return it.fail(base.CorruptionErrorf("readpath: iterator: entry %s has an unknown kind", kv.K))
		}
	}
	it.ikv = kv
	if kv == nil {
		if err := it.iter.Error(); err != nil {
			return it.fail(err)
		}
	}
	if kind == base.KindMerge && !it.finishBackward() {
		return false
	}
	if kind == base.KindDelete {
		return it.exhausted(posBeforeStart)
	}
	it.key, it.value = it.keyBuf, it.valBuf
	it.pos = posValid
	return true
}

// exhausted handles the merged iterator running out: an error, or the end
// p.
func (it *Iterator) exhausted(p iterPos) bool {
	if err := it.iter.Error(); err != nil {
		return it.fail(err)
	}
	it.pos, it.key, it.value, it.ikv = p, nil, nil, nil
	return false
}

func (it *Iterator) fail(err error) bool {
	if it.err == nil {
		it.err = err
	}
	it.pos, it.key, it.value, it.ikv = posNone, nil, nil, nil
	it.mg.ahead = false
	return false
}

// prefixCheck is an Iterator's prefix filter question (see
// IterOptions.FilterPrefix): the extractor's name, the prefix and its hash.
type prefixCheck struct {
	name   string
	prefix []byte
	hash   uint32
}

// prune returns files without those whose prefix filter rules the prefix
// out; files itself when it drops none. A table it cannot acquire is kept:
// the level iterator reports the error when it gets there.
func (pc *prefixCheck) prune(ctx context.Context, v *View, env sstable.ReadEnv, level int, files []*manifest.FileMetadata) []*manifest.FileMetadata {
	var kept []*manifest.FileMetadata // nil until a file is dropped
	for i, f := range files {
		if pc.mayMatch(ctx, v, env, level, f) {
			if kept != nil {
				kept = append(kept, f)
			}
			continue
		}
		if kept == nil {
			kept = append(make([]*manifest.FileMetadata, 0, len(files)-1), files[:i]...)
		}
	}
	if kept == nil {
		return files
	}
	return kept
}

// mayMatch asks f's filter about the prefix.
func (pc *prefixCheck) mayMatch(ctx context.Context, v *View, env sstable.ReadEnv, level int, f *manifest.FileMetadata) bool {
	t, err := v.Tables.Acquire(ctx, env, f, level)
	if err != nil {
		return true
	}
	defer t.Release()
	if t.Reader.RangeDeletions() != nil {
		return true
	}
	checked, may, err := t.Reader.PrefixMayMatch(ctx, env.IO, pc.name, pc.prefix, pc.hash)
	if err != nil || !checked {
		return true
	}
	v.Stats.RecordTick(statistics.BloomFilterPrefixChecked, 1)
	if !may {
		v.Stats.RecordTick(statistics.BloomFilterPrefixUseful, 1)
	}
	return may
}
