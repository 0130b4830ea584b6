package compact

import (
	"bytes"
	"slices"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/rangedel"
)

// Stats counts what an Iter dropped. The names follow RocksDB's tickers. A
// plain value, safe to copy.
type Stats struct {
	// DroppedNewerEntry counts entries dropped because a newer entry of the
	// same user key is visible to every snapshot that could see them
	// (COMPACTION_KEY_DROP_NEWER_ENTRY).
	DroppedNewerEntry uint64
	// DroppedObsolete counts tombstones dropped because no snapshot needs
	// them and nothing below the output level can hold their key, and the
	// older entries of the key that they hid (COMPACTION_KEY_DROP_OBSOLETE).
	DroppedObsolete uint64
}

// Iter is the compaction iterator: it passes through the entries of its
// input (the merged inputs of a compaction, in base.CompareInternal order)
// that some reader may still see, and drops the rest.
//
// The snapshots divide sequence numbers into stripes: with snapshots s1 <
// s2 < ... < sn, the stripes are [0, s1], (s1, s2], ..., (sn, max]. A
// reader at snapshot s sees, for each user key, the newest entry with
// sequence number <= s, and a reader without a snapshot sees the newest
// entry. So of the entries of a user key in one stripe, only the newest can
// be seen; the others are dropped (Stats.DroppedNewerEntry).
//
// A merge operand (KindMerge) applies to the entries below it: when the
// newest kept entry of a stripe is one, the next entry of the stripe is
// kept too, as if it were the newest, and so on down to a Set, a tombstone
// or the end of the stripe. The operands themselves are combined by the
// merge step of the caller, not here.
//
// A tombstone is dropped when it is the newest entry of the oldest stripe
// ([0, s1], or all sequence numbers when there are no snapshots) and elide
// reports that no file below the compaction holds its key: every reader
// that sees it would see nothing without it. The older entries it hid go
// with it (Stats.DroppedObsolete). A tombstone in a newer stripe is kept, as
// an older snapshot may see the value it deletes.
//
// Iter checks the order of its input as it goes: entries out of order, or
// with an unknown kind, stop it with an error marked base.ErrCorruption, as
// writing them would make corrupt tables.
//
// An Iter is not safe for concurrent use.
type Iter struct {
	input     base.InternalIterator
	snapshots []base.SeqNum
	elide     func(userKey []byte) bool
	cmp       base.Compare // the input's user-key order; nil is bytewise

	key         []byte // the current user key, copied
	hasKey      bool
	prevTrailer uint64 // trailer of the last entry of key that was read
	stripe      int    // stripe of the last entry of key kept or dropped as newer
	skipKey     bool   // the rest of key is obsolete: its tombstone was dropped
	// mergeOpen says the last entry of key kept is a merge operand: the
	// older entries of its stripe are what it applies to, so the next one
	// is kept as if it were the newest of the stripe.
	mergeOpen bool

	// rangeDels are the compaction's range tombstones, nil when none.
	rangeDels *rangedel.Set

	err   error
	stats Stats
}

// NewIter returns an Iter over input. snapshots are the sequence numbers of
// the open snapshots, in ascending order (NewIter sorts a copy if they are
// not); the slice is not modified and must not be modified while the Iter is
// in use. elide reports whether a user key exists nowhere below the
// compaction's output level (Compaction.KeyNotExistsBeyondOutputLevel); nil
// never drops a tombstone. elide's argument is valid only during the call.
// The Iter owns input and closes it.
func NewIter(input base.InternalIterator, snapshots []base.SeqNum, elide func(userKey []byte) bool) *Iter {
	if !slices.IsSorted(snapshots) {
		snapshots = slices.Clone(snapshots)
		slices.Sort(snapshots)
	}
	return &Iter{input: input, snapshots: snapshots, elide: elide}
}

// First positions the Iter at the first entry to keep and returns it, or
// nil when there is none or an error occurred (see Error). The entry and
// its key and value belong to the input iterator and are valid until the
// next call to First or Next.
func (i *Iter) First() *base.InternalKV {
	i.hasKey, i.skipKey, i.err = false, false, nil
	return i.next(i.input.First())
}

// Next moves to the next entry to keep and returns it, or nil at the end or
// on error. Ownership is as for First.
func (i *Iter) Next() *base.InternalKV {
	if i.err != nil {
		return nil
	}
	return i.next(i.input.Next())
}

// next returns kv or the first entry after it that is kept.
func (i *Iter) next(kv *base.InternalKV) *base.InternalKV {
	for ; kv != nil; kv = i.input.Next() {
		if !kv.K.Valid() {
			i.err = base.CorruptionErrorf("compact: entry %s has unknown kind %d", kv.K, kv.K.Trailer&0xff)
			return nil
		}
		stripe := i.stripeOf(kv.K.SeqNum())
		if !i.hasKey || !bytes.Equal(kv.K.UserKey, i.key) {
			if i.hasKey && base.CompareUser(i.cmp, kv.K.UserKey, i.key) < 0 {
				i.err = base.CorruptionErrorf("compact: input out of order: key %q after %q", kv.K.UserKey, i.key)
				return nil
			}
			i.key = append(i.key[:0], kv.K.UserKey...)
			i.hasKey, i.skipKey = true, false
		} else {
			if kv.K.Trailer >= i.prevTrailer {
				i.err = base.CorruptionErrorf("compact: input out of order: %s after trailer %#x of the same key",
					kv.K, i.prevTrailer)
				return nil
			}
			if i.skipKey {
				i.prevTrailer = kv.K.Trailer
				i.stats.DroppedObsolete++
				continue
			}
			if stripe == i.stripe && !i.mergeOpen {
				i.prevTrailer = kv.K.Trailer
				i.stats.DroppedNewerEntry++
				continue
			}
		}
		i.prevTrailer, i.stripe, i.mergeOpen = kv.K.Trailer, stripe, false
		// kv is the newest entry of key in its stripe.
		if stripe == 0 && kv.K.Kind() == base.KindDelete && i.elide != nil && i.elide(i.key) {
			i.skipKey = true
			i.stats.DroppedObsolete++
			continue
		}
		if i.coveredInStripe(kv, stripe) {
			// The older entries of key in this stripe go as newer-shadowed
			// ones; those of older stripes are checked on their own.
			i.stats.DroppedObsolete++
			continue
		}
		i.mergeOpen = kv.K.Kind() == base.KindMerge
		return kv
	}
	return nil
}

// stripeOf returns the index of seq's stripe: the number of snapshots below
// it.
func (i *Iter) stripeOf(seq base.SeqNum) int {
	n, _ := slices.BinarySearch(i.snapshots, seq)
	return n
}

// Error returns the error that stopped the Iter: corrupt input, or the
// input iterator's error.
func (i *Iter) Error() error {
	if i.err != nil {
		return i.err
	}
	return i.input.Error()
}

// Stats returns what the Iter has dropped so far.
func (i *Iter) Stats() Stats { return i.stats }

// Close closes the input and returns the Iter's error, or the input's
// error from closing.
func (i *Iter) Close() error {
	err := i.input.Close()
	if i.err != nil {
		return i.err
	}
	return err
}
