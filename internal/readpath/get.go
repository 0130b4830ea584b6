package readpath

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/statistics"
)

// Value is a Get or MultiGet result.
//
// Data is read-only. It points into a memtable, where it stays valid as long
// as the memtable (the View the caller holds keeps it), or into a table block
// (cached, in a pooled buffer, or in a memory mapping) that the Value pins:
// then it is valid until Release. Release must be called exactly once per
// Value returned with a nil error (a Result's Value whatever its Found),
// after the last use of Data; calling it again, or on the zero Value, does
// nothing. Copies of a Value share its pin: release exactly one of them.
//
// A Value may be released on any goroutine; it is not safe for concurrent
// use otherwise (one Value, one owner).
type Value struct {
	Data []byte

	// pin keeps Data's block alive; ref keeps its table open (a mapped
	// table's blocks are in the mapping). MultiGet puts both behind hold
	// when several Values share them.
	pin  sstable.BlockPin
	ref  TableRef
	hold *holder
}

// Release drops what keeps Data alive and clears the Value.
func (v *Value) Release() {
	v.pin.Release()
	v.ref.Release()
	if v.hold != nil {
		v.hold.unref()
	}
	*v = Value{}
}

// holder is a reference-counted owner of a block pin and a table reference,
// for Values that share them: the keys MultiGet found in one table share
// the table's reference, and the duplicates of a key share its block pin.
// When the count drops to zero it releases both and its parent. Pooled.
type holder struct {
	refs   atomic.Int32
	pin    sstable.BlockPin
	ref    TableRef
	parent *holder
}

var holders = sync.Pool{New: func() any { return new(holder) }}

func newHolder(refs int32, pin sstable.BlockPin, ref TableRef, parent *holder) *holder {
	h := holders.Get().(*holder)
	h.refs.Store(refs)
	h.pin, h.ref, h.parent = pin, ref, parent
	return h
}

func (h *holder) unref() {
	switch n := h.refs.Add(-1); {
	case n > 0:
		return
	case n < 0:
		panic(base.AssertionFailedf("readpath: Value released more often than it was returned (%d)", n))
	}
	pin, ref, parent := h.pin, h.ref, h.parent
	h.pin, h.ref, h.parent = sstable.BlockPin{}, TableRef{}, nil
	holders.Put(h)
	pin.Release()
	ref.Release()
	if parent != nil {
		parent.unref()
	}
}

// Get returns the newest value of key visible at seq (entries with sequence
// numbers <= seq; a seq above base.MaxSeqNum sees everything), or an error
// marked base.ErrNotFound when there is none or the newest visible entry is
// a tombstone.
//
// The sources are searched newest first and the first entry found decides:
// the memtables in View order, then the L0 tables whose key range contains
// key (newest first), then in each level >= 1 the one table whose range
// contains key (binary search over the level). Each table applies its bloom
// filter before reading anything (inside sstable.Reader.Get). The context is
// checked before every table; a done context fails the call with an error
// for which errors.Is(err, ctx.Err()) holds. env is used for every table
// access, the table opens included, and is not checked or re-tagged.
//
// The caller must Release the Value (see Value). A Get whose block is in the
// block cache, or whose value is in a memtable, does not allocate.
//
// Tickers (View.Stats): NumberKeysRead per call; MemtableHit when a memtable
// decides (value or tombstone), else MemtableMiss; GetHitL0, GetHitL1 or
// GetHitL2AndUp when a table holds the value; BytesRead with the value's
// length; the BytesPerRead histogram with it (0 when not found), as RocksDB's
// DBImpl::GetImpl records them.
//
// timer, when not nil, is the caller's timer of the lookup (DBGet), started
// with v.Stats.StartGet: Get stops it when it records the lookup's tickers,
// so the sample and the counts go to the statistics in one shard access
// (statistics.RecordGet).
func Get(ctx context.Context, v *View, env sstable.ReadEnv, key []byte, seq base.SeqNum, timer *statistics.GetTimer) (Value, error) {
	c := statistics.GetCounts{Hit: statistics.NumTickers}
	val, err := get(ctx, v, &env, key, seq, &c)
	if err == errNeedMerge {
		// A copy, so that key does not escape on the common path: the
		// merge path allocates anyway.
		val, err = resolveMerge(ctx, v, env, bytes.Clone(key), seq)
	}
	if err == nil {
		c.Found, c.Bytes = true, uint64(len(val.Data))
	}
	v.Stats.RecordGet(timer, &c)
	return val, err
}

// get looks key up and notes in c where it was decided.
func get(ctx context.Context, v *View, env *sstable.ReadEnv, key []byte, seq base.SeqNum, c *statistics.GetCounts) (Value, error) {
	for _, m := range v.Mems {
		var data []byte
		var kind base.Kind
		var found bool
		if dels := m.RangeDeletions(); dels == nil {
			data, kind, found = m.Get(key, seq)
		} else {
			// A covering tombstone newer than the newest point hides it;
			// and, newer sources holding newer sequence numbers of a key,
			// no older source can hold a visible point above it.
			tseq, _ := dels.Covering(key, seq)
			var pseq base.SeqNum
			data, kind, pseq, found = m.GetEntry(key, seq)
			if tseq > 0 && (!found || pseq < tseq) {
				data, kind, found = nil, base.KindRangeDelete, true
			}
		}
		if !found {
			continue
		}
		c.MemtableHit = true
		if kind == base.KindMerge {
			return Value{}, errNeedMerge
		}
		if kind != base.KindSet {
			return Value{}, base.ErrNotFound
		}
		return Value{Data: data}, nil
	}
	if v.Version == nil {
		return Value{}, base.ErrNotFound
	}
	h := bloom.Hash(key) // once for every table's filter
	tables := keyTables{levels: v.Version.Levels[:], key: key, cmp: v.Cmp}
	for f, level, ok := tables.next(); ok; f, level, ok = tables.next() {
		if val, done, err := getFromTable(ctx, v, env, f, level, key, h, seq, &c.Tables); done {
			if err == nil {
				c.Hit = levelHitTicker(level)
			}
			return val, err
		}
	}
	return Value{}, base.ErrNotFound
}

// keyTables walks, newest first, the tables of a version that may hold a
// key: the L0 tables whose range contains it (newest first), then in each
// level >= 1 the one table whose range contains it, found by binary search.
// A point lookup searches them in this order and stops at the first entry
// of the key, which is the newest. (MultiGet walks the same order, batched:
// each table once for all the keys it may hold.)
type keyTables struct {
	levels [][]*manifest.FileMetadata
	key    []byte
	level  int // the level being walked
	l0     int // the next L0 table to look at
	cmp    base.Compare
}

// next returns the next table that may hold the key and its level; ok is
// false when there is none left.
func (w *keyTables) next() (f *manifest.FileMetadata, level int, ok bool) {
	for w.level < len(w.levels) {
		level, files := w.level, w.levels[w.level]
		if level == 0 && w.l0 < len(files) {
			f := files[w.l0]
			w.l0++
			if containsKey(w.cmp, f, w.key) {
				return f, 0, true
			}
			continue
		}
		w.level++
		if level > 0 {
			if i := findFile(w.cmp, files, w.key); i < len(files) && base.CompareUser(w.cmp, files[i].Smallest.UserKey, w.key) <= 0 {
				return files[i], level, true
			}
		}
	}
	return nil, 0, false
}

// getFromTable looks key, whose bloom.Hash is h, up in table f of level.
// done reports whether the table decided the Get: a value, a tombstone
// (ErrNotFound) or an error. The table's bloom filter and data block cache
// tickers are counted in ticks, which Get records with its own, when they
// go to the same Statistics (the table's Stats is v.Stats); otherwise the
// table records them.
func getFromTable(
	ctx context.Context, v *View, env *sstable.ReadEnv, f *manifest.FileMetadata, level int, key []byte, h uint32, seq base.SeqNum,
	ticks *statistics.TableTicks,
) (val Value, done bool, err error) {
	if err := ctxErr(ctx, env.Deadline, "Get: before", f.FileNum); err != nil {
		return Value{}, true, err
	}
	t, err := v.Tables.Acquire(ctx, *env, f, level)
	if err != nil {
		return Value{}, true, errors.Wrapf(err, "readpath: Get: acquiring table %s", f.FileNum)
	}
	dels := t.Reader.RangeDeletions()
	var data []byte
	var kind base.Kind
	var pseq base.SeqNum
	var found bool
	var pin sstable.BlockPin
	if t.Reader.Stats() == v.Stats {
		data, kind, pseq, found, pin, err = t.Reader.GetCounted(ctx, *env, key, h, seq, ticks)
	} else {
		data, kind, pseq, found, pin, err = t.Reader.GetHashSeq(ctx, *env, key, h, seq)
	}
	if dels != nil && err == nil {
		// As for a memtable: a covering tombstone above the point (or with
		// no point) decides the Get.
		if tseq, _ := dels.Covering(key, seq); tseq > 0 && (!found || pseq < tseq) {
			pin.Release()
			t.Release()
			return Value{}, true, base.ErrNotFound
		}
	}
	switch {
	case err != nil:
		t.Release()
		return Value{}, true, errors.Wrapf(err, "readpath: Get in table %s", f.FileNum)
	case !found:
		t.Release()
		return Value{}, false, nil
	case kind == base.KindMerge:
		pin.Release()
		t.Release()
		return Value{}, true, errNeedMerge
	case kind != base.KindSet:
		pin.Release()
		t.Release()
		return Value{}, true, base.ErrNotFound
	}
	return Value{Data: data, pin: pin, ref: t}, true, nil
}

func levelHitTicker(level int) statistics.Ticker {
	switch level {
	case 0:
		return statistics.GetHitL0
	case 1:
		return statistics.GetHitL1
	}
	return statistics.GetHitL2AndUp
}

// containsKey reports whether key is within f's user-key range.
func containsKey(cmp base.Compare, f *manifest.FileMetadata, key []byte) bool {
	if base.CompareUser(cmp, f.Smallest.UserKey, key) > 0 {
		return false
	}
	c := base.CompareUser(cmp, key, f.Largest.UserKey)
	// A range-deletion sentinel largest key excludes its user key.
	return c < 0 || (c == 0 && !f.Largest.IsExclusiveSentinel())
}

// findFile returns the index of the first file of a sorted, non-overlapping
// level whose largest user key is >= key (> key for a range-deletion
// sentinel, which excludes its user key): the only one that can hold key.
// It is a hand-written binary search so that nothing escapes to the heap.
func findFile(cmp base.Compare, files []*manifest.FileMetadata, key []byte) int {
	lo, hi := 0, len(files)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if c := base.CompareUser(cmp, files[m].Largest.UserKey, key); c < 0 || (c == 0 && files[m].Largest.IsExclusiveSentinel()) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// findFileLT returns one past the index of the last file of a sorted,
// non-overlapping level whose smallest user key is < key: the files [0, i)
// can hold keys below key.
func findFileLT(cmp base.Compare, files []*manifest.FileMetadata, key []byte) int {
	lo, hi := 0, len(files)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if base.CompareUser(cmp, files[m].Smallest.UserKey, key) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// LatestSeqNum returns the sequence number of the newest entry of key (a
// value or a tombstone) at any sequence number, for an optimistic
// transaction's conflict check; found is false when key has no entry at all.
//
// It searches the sources in Get's order and stops at the first that holds
// an entry of key, which is the newest: a memtable iterator seek, then, for
// each table that can hold key and whose bloom filter does not rule it out,
// a table iterator bounded to key (one data block read when it is not
// cached). env is used for every table access; the context is checked before
// every table. It records no tickers.
func LatestSeqNum(ctx context.Context, v *View, env sstable.ReadEnv, key []byte) (seq base.SeqNum, found bool, err error) {
	// Iterators are bounded to [key, key+"\x00"): only key's entries.
	// That is the key alone only in bytewise order: with another
	// comparer the iterators run unbounded above, and an entry found must
	// be key's.
	var upper []byte
	if v.Cmp == nil {
		upper = append(append(make([]byte, 0, len(key)+1), key...), 0)
	}
	for _, m := range v.Mems {
		it := m.NewIter(key, upper)
		kv := it.SeekGE(key)
		if kv != nil && !bytes.Equal(kv.K.UserKey, key) {
			kv = nil
		}
		if kv != nil {
			seq = kv.K.SeqNum()
		}
		_ = it.Close()
		if kv != nil {
			return seq, true, nil
		}
	}
	if v.Version == nil {
		return 0, false, nil
	}
	h := bloom.Hash(key)
	tables := keyTables{levels: v.Version.Levels[:], key: key, cmp: v.Cmp}
	for f, level, ok := tables.next(); ok; f, level, ok = tables.next() {
		if seq, found, err := latestInTable(ctx, v, &env, f, level, key, upper, h); found || err != nil {
			return seq, found, err
		}
	}
	return 0, false, nil
}

func latestInTable(
	ctx context.Context, v *View, env *sstable.ReadEnv, f *manifest.FileMetadata, level int, key, upper []byte, h uint32,
) (base.SeqNum, bool, error) {
	if err := ctxErr(ctx, env.Deadline, "LatestSeqNum: before", f.FileNum); err != nil {
		return 0, false, err
	}
	t, err := v.Tables.Acquire(ctx, *env, f, level)
	if err != nil {
		return 0, false, errors.Wrapf(err, "readpath: LatestSeqNum: acquiring table %s", f.FileNum)
	}
	defer t.Release()
	if !t.Reader.MayContainKey(key, h) {
		return 0, false, nil
	}
	it, err := t.Reader.NewIter(ctx, *env, key, upper)
	if err != nil {
		return 0, false, errors.Wrapf(err, "readpath: LatestSeqNum in table %s", f.FileNum)
	}
	kv := it.SeekGE(key)
	var seq base.SeqNum
	found := kv != nil && bytes.Equal(kv.K.UserKey, key)
	if found {
		seq = kv.K.SeqNum()
	}
	if err := it.Close(); err != nil {
		return 0, false, errors.Wrapf(err, "readpath: LatestSeqNum in table %s", f.FileNum)
	}
	return seq, found, nil
}
