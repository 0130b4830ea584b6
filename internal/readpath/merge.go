package readpath

import (
	"bytes"
	"context"
	"slices"

	"github.com/cockroachdb/errors"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/merge"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/statistics"
)

// Merge operands on the read path.
//
// The Iterator resolves them: a key whose newest visible entry is a
// KindMerge has the value View.Merge makes of its visible operands, newest
// down to the first Set (the base), tombstone or range-deleted entry (no
// base; the range-deletion filters hide everything a tombstone covers, so
// the operands the Iterator sees stop where the tombstone is), or the end of
// the key's entries (no base). Get and MultiGet, which stop at a key's
// newest entry, hand a key whose newest entry is an operand to a one-key
// Iterator (resolveMerge): merges cost a scan of the key's entries, the
// common case of plain values pays nothing.

// iterMerge is an Iterator's merge state.
type iterMerge struct {
	op    merge.Operator
	stats *statistics.Statistics
	// ahead says the merged iterator stands past the entries of the key
	// shown going forward, at aheadKV (nil when exhausted): resolving its
	// operands had to look beyond them.
	ahead   bool
	aheadKV *base.InternalKV
	// key and value hold the key shown going forward and its merged
	// value. operands is the operands' bytes back to back, ends where each
	// ends; slices the operands handed to the operator; base the base
	// value going backward.
	key, value []byte
	operands   []byte
	ends       []int
	slices     [][]byte
	base       []byte
	hasBase    bool
}

// addOperand appends an operand.
func (m *iterMerge) addOperand(v []byte) {
	m.operands = append(m.operands, v...)
	m.ends = append(m.ends, len(m.operands))
}

// reset forgets the operands.
func (m *iterMerge) reset() {
	m.operands, m.ends, m.hasBase = m.operands[:0], m.ends[:0], false
}

// full merges the operands (in m.ends order, reversed when newestFirst)
// with the base value, if any.
func (m *iterMerge) full(key, baseVal []byte, hasBase, newestFirst bool) ([]byte, error) {
	if m.op == nil {
		return nil, merge.ErrNoOperator(key)
	}
	m.slices = m.slices[:0]
	start := 0
	for _, end := range m.ends {
		m.slices = append(m.slices, m.operands[start:end:end])
		start = end
	}
	if newestFirst {
		slices.Reverse(m.slices)
	}
	v, err := merge.Full(m.op, m.stats, key, baseVal, hasBase, m.slices)
	clear(m.slices)
	return v, err
}

// mergeForward shows kv's key, whose newest visible entry kv is an operand:
// it collects the older operands up to a base, a tombstone or the next key,
// and leaves the merged iterator there (mg.ahead).
func (it *Iterator) mergeForward(kv *base.InternalKV) bool {
	m := &it.mg
	if m.op == nil {
		return it.fail(merge.ErrNoOperator(kv.K.UserKey))
	}
	m.reset()
	m.key = append(m.key[:0], kv.K.UserKey...)
	m.addOperand(kv.V)
	var baseVal []byte
	hasBase := false
	for kv = it.iter.Next(); kv != nil; kv = it.iter.Next() {
		if !bytes.Equal(kv.K.UserKey, m.key) {
			break
		}
		if kv.K.SeqNum() > it.seq {
			continue
		}
		k := kv.K.Kind()
		if k == base.KindMerge {
			m.addOperand(kv.V)
			continue
		}
		if k == base.KindSet {
			baseVal, hasBase = kv.V, true
		}
		// A Set or a tombstone ends the operands; the older entries of
		// the key are skipped when the Iterator moves on.
		break
	}
	if kv == nil {
		if err := it.iter.Error(); err != nil {
			return it.fail(err)
		}
	}
	v, err := m.full(m.key, baseVal, hasBase, true)
	if err != nil {
		return it.fail(err)
	}
	m.value = v
	m.ahead, m.aheadKV = true, kv
	it.key, it.value = m.key, m.value
	it.keyBuf = append(it.keyBuf[:0], m.key...)
	it.pos = posValid
	return true
}

// mergeBackward takes kv, an operand of the key findPrev is reading
// (oldest entry first), over prev, the kind of the key's entry read before
// it: KindSet makes valBuf the base, KindMerge adds to the operands,
// KindDelete (or a new key) starts without a base.
func (it *Iterator) mergeBackward(kv *base.InternalKV, prev base.Kind) {
	m := &it.mg
	switch prev {
	case base.KindMerge:
	case base.KindSet:
		m.reset()
		m.base = append(m.base[:0], it.valBuf...)
		m.hasBase = true
	default:
		m.reset()
		it.keyBuf = append(it.keyBuf[:0], kv.K.UserKey...)
	}
	m.addOperand(kv.V)
}

// finishBackward makes the value of the key findPrev found to end in
// operands; false when the merge failed (the Iterator is stopped).
func (it *Iterator) finishBackward() bool {
	m := &it.mg
	v, err := m.full(it.keyBuf, m.base, m.hasBase, false)
	if err != nil {
		return it.fail(err)
	}
	it.valBuf = append(it.valBuf[:0], v...)
	return true
}

// errNeedMerge is get's answer for a key whose newest visible entry is a
// merge operand: Get resolves it with resolveMerge.
var errNeedMerge = errors.New("readpath: the key's newest entry is a merge operand")

// resolveMerge returns key's value at seq when its newest visible entry is a
// merge operand. It walks the sources in Get's order (memtables newest
// first, then keyTables), reading every entry of key in each, newest first,
// and collects the operands down to a Set (the base), a tombstone, an entry
// a range tombstone covers (no base), or the last source. A covering range
// tombstone of a source also ends the walk after that source: every older
// source's entries of key are numbered below it. The value is a copy the
// caller owns.
func resolveMerge(ctx context.Context, v *View, env sstable.ReadEnv, key []byte, seq base.SeqNum) (Value, error) {
	if v.Merge == nil {
		return Value{}, merge.ErrNoOperator(key)
	}
	r := mergeResolver{key: key, seq: seq}
	// key followed by a zero byte is key's successor in bytewise order
	// only: under another comparer the sources are read unbounded, and
	// source stops at the first other key anyway.
	var upper []byte
	if v.Cmp == nil {
		upper = append(append(make([]byte, 0, len(key)+1), key...), 0)
	}
	for _, m := range v.Mems {
		var tseq base.SeqNum
		if dels := m.RangeDeletions(); dels != nil {
			tseq, _ = dels.Covering(key, seq)
		}
		it := m.NewIter(key, upper)
		r.source(it, tseq)
		_ = it.Close()
		if r.done || tseq > 0 {
			return r.finish(v)
		}
	}
	if v.Version != nil {
		h := bloom.Hash(key)
		tables := keyTables{levels: v.Version.Levels[:], key: key, cmp: v.Cmp}
		for f, level, ok := tables.next(); ok; f, level, ok = tables.next() {
			if err := ctxErr(ctx, env.Deadline, "Get: before", f.FileNum); err != nil {
				return Value{}, err
			}
			t, err := v.Tables.Acquire(ctx, env, f, level)
			if err != nil {
				return Value{}, errors.Wrapf(err, "readpath: Get: acquiring table %s", f.FileNum)
			}
			var tseq base.SeqNum
			if dels := t.Reader.RangeDeletions(); dels != nil {
				tseq, _ = dels.Covering(key, seq)
			}
			if tseq > 0 || t.Reader.MayContainKey(key, h) {
				it, err := t.Reader.NewIter(ctx, env, key, upper)
				if err == nil {
					r.source(it, tseq)
					err = it.Close()
				}
				if err != nil {
					t.Release()
					return Value{}, errors.Wrapf(err, "readpath: Get in table %s", f.FileNum)
				}
			}
			t.Release()
			if r.done || tseq > 0 {
				break
			}
		}
	}
	return r.finish(v)
}

// mergeResolver collects a key's operands for resolveMerge.
type mergeResolver struct {
	key     []byte
	seq     base.SeqNum
	m       iterMerge
	baseVal []byte
	hasBase bool
	done    bool // a base, tombstone or covered entry ended the operands
}

// source reads one source's entries of the key, newest first; tseq is the
// newest range tombstone of the source covering the key at seq (0: none).
func (r *mergeResolver) source(it base.InternalIterator, tseq base.SeqNum) {
	for kv := it.SeekGE(r.key); kv != nil && !r.done; kv = it.Next() {
		if !bytes.Equal(kv.K.UserKey, r.key) {
			break
		}
		s := kv.K.SeqNum()
		if s > r.seq {
			continue
		}
		if s < tseq {
			r.done = true
			break
		}
		switch kv.K.Kind() {
		case base.KindMerge:
			r.m.addOperand(kv.V)
		case base.KindSet:
			r.baseVal, r.hasBase, r.done = append(r.baseVal[:0], kv.V...), true, true
		default:
			r.done = true
		}
	}
}

// finish merges what was collected.
func (r *mergeResolver) finish(v *View) (Value, error) {
	if len(r.m.ends) == 0 {
		// The newest entry was an operand when get looked: only a
		// concurrent change of the view could leave none (it cannot).
		if r.hasBase {
			return Value{Data: r.baseVal}, nil
		}
		return Value{}, base.ErrNotFound
	}
	r.m.op, r.m.stats = v.Merge, v.Stats
	val, err := r.m.full(r.key, r.baseVal, r.hasBase, true)
	if err != nil {
		return Value{}, err
	}
	return Value{Data: val}, nil
}
