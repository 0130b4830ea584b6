package readpath

import (
	"context"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/shaledb/shale/internal/sstable"
)

// Range tombstones on the iterator path.
//
// Each child of the merged iterator is one source: a memtable, an L0 table,
// or a level >= 1. A source's range tombstones are loaded when the Iterator
// is made (a memtable's fragmented Set, each table's block, which its reader
// keeps), and a child that any tombstone can affect is wrapped in a
// delFilter that hides the entries a visible tombstone deletes, before the
// merge. This relies on the LSM invariant that, for any one user key, a newer
// source holds higher sequence numbers than an older one (flushes and
// compactions keep it, compactions by truncating tombstones to their output
// tables' bounds): a visible tombstone of a newer source that covers an
// entry deletes it, and every other entry of the child up to the
// tombstone's end, so the child seeks past the covering fragment (forward to
// its end, backward before its start) instead of stepping through what it
// deletes. Going forward into an unbounded fragment (a memtable's
// DeleteRange(start, nil), see package rangedel), the child is exhausted. A tombstone of the child's own source deletes only the entries
// below its sequence number, which the child steps over one by one.
//
// A view without tombstones (no memtable has one and no table of the
// version, manifest.Version.HasRangeDels) builds no filter: its iterators
// are exactly what they were before range deletions.

// delFilter hides the entries of one child that visible tombstones delete.
// It implements base.InternalIterator.
type delFilter struct {
	iter base.InternalIterator
	seq  base.SeqNum
	// own is the source's own tombstones, newer those of the newer sources
	// (nil entries left out).
	own   tombstones
	newer []tombstones
}

// tombstones is a Set with the last gap between its fragments that a key
// fell in: the keys of a scan arrive in order, so most of them fall in the
// same gap and cost two comparisons instead of a binary search.
type tombstones struct {
	set    *rangedel.Set
	lo, hi []byte // the gap [lo, hi), nil bounds unbounded, when inGap
	inGap  bool
}

// covering is Set.Covering, through the cached gap.
func (t *tombstones) covering(key []byte, readSeq base.SeqNum) (base.SeqNum, *rangedel.Fragment) {
	if t.set == nil {
		return 0, nil
	}
	if t.inGap && (t.lo == nil || base.CompareUser(t.set.Compare(), t.lo, key) <= 0) && (t.hi == nil || base.CompareUser(t.set.Compare(), key, t.hi) < 0) {
		return 0, nil
	}
	if lo, hi, ok := t.set.Gap(key); ok {
		t.lo, t.hi, t.inGap = lo, hi, true
		return 0, nil
	}
	return t.set.Covering(key, readSeq)
}

var _ base.InternalIterator = (*delFilter)(nil)

// forward moves forward from kv to the first entry no tombstone deletes.
func (f *delFilter) forward(kv *base.InternalKV) *base.InternalKV {
outer:
	for kv != nil {
		p := kv.K.SeqNum()
		if p > f.seq {
			return kv // invisible: the Iterator skips it
		}
		for i := range f.newer {
			if tseq, fr := f.newer[i].covering(kv.K.UserKey, f.seq); tseq > p {
				if fr.Unbounded() {
					// Everything after kv is deleted too: the child is
					// exhausted (the merging iterator restarts it with
					// Last, never steps it, when it turns back).
					return nil
				}
				kv = f.iter.SeekGE(fr.End)
				continue outer
			}
		}
		if tseq, _ := f.own.covering(kv.K.UserKey, f.seq); tseq > p {
			kv = f.iter.Next()
			continue
		}
		return kv
	}
	return nil
}

// backward is forward going backward.
func (f *delFilter) backward(kv *base.InternalKV) *base.InternalKV {
outer:
	for kv != nil {
		p := kv.K.SeqNum()
		if p > f.seq {
			return kv
		}
		for i := range f.newer {
			if tseq, fr := f.newer[i].covering(kv.K.UserKey, f.seq); tseq > p {
				kv = f.iter.SeekLT(fr.Start)
				continue outer
			}
		}
		if tseq, _ := f.own.covering(kv.K.UserKey, f.seq); tseq > p {
			kv = f.iter.Prev()
			continue
		}
		return kv
	}
	return nil
}

func (f *delFilter) SeekGE(key []byte) *base.InternalKV { return f.forward(f.iter.SeekGE(key)) }
func (f *delFilter) SeekLT(key []byte) *base.InternalKV { return f.backward(f.iter.SeekLT(key)) }
func (f *delFilter) First() *base.InternalKV            { return f.forward(f.iter.First()) }
func (f *delFilter) Last() *base.InternalKV             { return f.backward(f.iter.Last()) }
func (f *delFilter) Next() *base.InternalKV             { return f.forward(f.iter.Next()) }
func (f *delFilter) Prev() *base.InternalKV             { return f.backward(f.iter.Prev()) }
func (f *delFilter) Error() error                       { return f.iter.Error() }
func (f *delFilter) Close() error                       { return f.iter.Close() }

// viewHasRangeDels reports whether any memtable or table of v has range
// tombstones: one atomic load per memtable and one for the version.
func viewHasRangeDels(v *View) bool {
	for _, m := range v.Mems {
		if m.NumRangeDeletions() > 0 {
			return true
		}
	}
	return v.Version != nil && v.Version.HasRangeDels()
}

// tableRangeDels returns the union of the tombstones of those of files that
// have any and overlap [lower, upper), acquiring each (a table cache hit
// once open) only for as long as it takes to read its reader's Set, which
// lives on the Go heap.
func tableRangeDels(
	ctx context.Context, v *View, env sstable.ReadEnv, level int, files []*manifest.FileMetadata, lower, upper []byte,
) (*rangedel.Set, error) {
	var sets []*rangedel.Set
	for _, f := range files {
		if !f.HasRangeDels || !overlapsBounds(v.Cmp, f, lower, upper) {
			continue
		}
		t, err := v.Tables.Acquire(ctx, env, f, level)
		if err != nil {
			return nil, errors.Wrapf(err, "readpath: iterator: acquiring table %s of L%d for its range tombstones", f.FileNum, level)
		}
		if s := t.Reader.RangeDeletions(); s != nil {
			sets = append(sets, s)
		}
		t.Release()
	}
	switch len(sets) {
	case 0:
		return nil, nil
	case 1:
		return sets[0], nil
	}
	var ts []rangedel.Tombstone
	for _, s := range sets {
		ts = s.Tombstones(ts)
	}
	return rangedel.NewCmp(v.Cmp, ts), nil
}

// wrapRangeDels wraps the children whose entries tombstones may delete;
// sets[i] is child i's own tombstones.
func wrapRangeDels(children []base.InternalIterator, sets []*rangedel.Set, seq base.SeqNum) {
	filters := make([]delFilter, len(children))
	var newer []*rangedel.Set
	for i, c := range children {
		if sets[i] != nil || len(newer) > 0 {
			// Each filter has its own gap caches.
			ts := make([]tombstones, len(newer))
			for j, s := range newer {
				ts[j].set = s
			}
			filters[i] = delFilter{iter: c, seq: seq, own: tombstones{set: sets[i]}, newer: ts}
			children[i] = &filters[i]
		}
		if sets[i] != nil {
			newer = append(newer, sets[i])
		}
	}
}

// HasRangeDels reports whether any source of v has range tombstones.
func HasRangeDels(v *View) bool { return viewHasRangeDels(v) }

// WrittenAfter reports whether anything was written in the user-key range
// [start, end) at a sequence number above after: a point entry (value or
// tombstone) or a range tombstone that intersects the range. A nil end is
// unbounded (a transaction's DeleteRange(start, nil)). It serves an
// optimistic transaction's conflict check for its range deletions (and for
// its point writes once range tombstones exist, as a concurrent range
// deletion over a key is a write of it). It reads every memtable entry in
// the range and, of the tables, only those holding sequence numbers above
// after, so its cost is that of scanning the range's recent writes. env is
// used for every table access; the context is checked before every table.
func WrittenAfter(ctx context.Context, v *View, env sstable.ReadEnv, start, end []byte, after base.SeqNum) (bool, error) {
	for _, m := range v.Mems {
		if newerFragment(m.RangeDeletions(), start, end, after) {
			return true, nil
		}
		it := m.NewIter(start, end)
		found := newerEntry(it, after)
		_ = it.Close()
		if found {
			return true, nil
		}
	}
	if v.Version == nil {
		return false, nil
	}
	for level, files := range v.Version.Levels {
		for _, f := range files {
			if f.LargestSeqNum <= after || !overlapsBounds(v.Cmp, f, start, end) {
				continue
			}
			if found, err := writtenInTable(ctx, v, env, f, level, start, end, after); found || err != nil {
				return found, err
			}
		}
	}
	return false, nil
}

func writtenInTable(
	ctx context.Context, v *View, env sstable.ReadEnv, f *manifest.FileMetadata, level int, start, end []byte, after base.SeqNum,
) (bool, error) {
	if err := ctxErr(ctx, env.Deadline, "WrittenAfter: before", f.FileNum); err != nil {
		return false, err
	}
	t, err := v.Tables.Acquire(ctx, env, f, level)
	if err != nil {
		return false, errors.Wrapf(err, "readpath: WrittenAfter: acquiring table %s", f.FileNum)
	}
	defer t.Release()
	if newerFragment(t.Reader.RangeDeletions(), start, end, after) {
		return true, nil
	}
	it, err := t.Reader.NewIter(ctx, env, start, end)
	if err != nil {
		return false, errors.Wrapf(err, "readpath: WrittenAfter in table %s", f.FileNum)
	}
	found := newerEntry(it, after)
	if err := errors.CombineErrors(it.Error(), it.Close()); err != nil {
		return false, errors.Wrapf(err, "readpath: WrittenAfter in table %s", f.FileNum)
	}
	return found, nil
}

// newerFragment reports whether a fragment of s intersecting [start, end)
// has a tombstone above after.
func newerFragment(s *rangedel.Set, start, end []byte, after base.SeqNum) bool {
	for _, f := range s.Overlapping(start, end) {
		if f.Seqs[0] > after {
			return true
		}
	}
	return false
}

// newerEntry reports whether it (bounded to the range) has an entry above
// after.
func newerEntry(it base.InternalIterator, after base.SeqNum) bool {
	for kv := it.First(); kv != nil; kv = it.Next() {
		if kv.K.SeqNum() > after {
			return true
		}
	}
	return false
}
