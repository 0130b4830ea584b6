package compact

import (
	"bytes"
	"slices"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/rangedel"
)

// Range tombstones in a compaction.
//
// The inputs' tombstones are merged into one fragmented rangedel.Set. The
// Iter drops every point entry that a tombstone of its own stripe covers
// with a higher sequence number (SetRangeDels): each reader that sees the
// entry also sees the tombstone, so none sees the entry. A RangeDelSplitter
// then hands the tombstones to the output tables, each output getting the
// fragments within its key range, truncated at the first key of the next
// output so that no output's tombstones reach into another's range (the
// readers' "newer source, higher sequence numbers" invariant for a key
// depends on it). Of a fragment's sequence numbers it keeps the highest of
// each stripe (a reader that sees a lower one of the same stripe sees the
// higher one too), and at the bottommost level it drops those of the oldest
// stripe: every entry they cover is gone (dropped here, or nowhere below).

// SetRangeDels makes the Iter drop point entries that dels delete for every
// snapshot that could see them. dels may be nil.
func (i *Iter) SetRangeDels(dels *rangedel.Set) { i.rangeDels = dels }

// coveredInStripe reports whether a tombstone of dels covering kv's key has
// a sequence number above kv's in kv's stripe.
func (i *Iter) coveredInStripe(kv *base.InternalKV, stripe int) bool {
	if i.rangeDels == nil {
		return false
	}
	p := kv.K.SeqNum()
	_, f := i.rangeDels.Covering(kv.K.UserKey, base.MaxSeqNum)
	if f == nil {
		return false
	}
	for _, t := range f.Seqs {
		if t <= p {
			return false // Seqs descend: the rest are below p too
		}
		if i.stripeOf(t) == stripe {
			return true
		}
	}
	return false
}

// RangeDelSplitter deals a compaction's tombstones out to its output tables
// in key order. It is not safe for concurrent use.
type RangeDelSplitter struct {
	frags []rangedel.Fragment // what remains to deal, in order
	cmp   base.Compare        // dels' order; nil is bytewise
}

// NewRangeDelSplitter prepares dels (the merged input tombstones) for the
// outputs: per fragment, the highest sequence number of each stripe that
// snapshots (ascending) make, without the oldest stripe's when bottommost.
func NewRangeDelSplitter(dels *rangedel.Set, snapshots []base.SeqNum, bottommost bool) *RangeDelSplitter {
	if !slices.IsSorted(snapshots) {
		snapshots = slices.Clone(snapshots)
		slices.Sort(snapshots)
	}
	stripeOf := func(seq base.SeqNum) int {
		n, _ := slices.BinarySearch(snapshots, seq)
		return n
	}
	s := &RangeDelSplitter{cmp: dels.Compare()}
	for _, f := range dels.Fragments() {
		var seqs []base.SeqNum
		last := -1
		for _, q := range f.Seqs { // descending, so stripes descend too
			st := stripeOf(q)
			if st == last || (bottommost && st == 0) {
				continue
			}
			seqs, last = append(seqs, q), st
		}
		if len(seqs) > 0 {
			s.frags = append(s.frags, rangedel.Fragment{Start: f.Start, End: f.End, Seqs: seqs})
		}
	}
	return s
}

// Empty reports whether nothing remains to deal.
func (s *RangeDelSplitter) Empty() bool { return len(s.frags) == 0 }

// Take removes and returns the fragments, or parts of fragments, below
// limit (all of them when limit is nil). A fragment that spans limit is cut
// there: [Start, limit) is returned and [limit, End) remains. limit is
// copied; the returned fragments are valid until the next Take.
func (s *RangeDelSplitter) Take(limit []byte) []rangedel.Fragment {
	if limit == nil {
		out := s.frags
		s.frags = nil
		return out
	}
	// The remainder keeps limit as its start: own it.
	limit = bytes.Clone(limit)
	n := 0
	for n < len(s.frags) && base.CompareUser(s.cmp, s.frags[n].End, limit) <= 0 {
		n++
	}
	out := slices.Clone(s.frags[:n])
	s.frags = s.frags[n:]
	if len(s.frags) > 0 && base.CompareUser(s.cmp, s.frags[0].Start, limit) < 0 {
		f := s.frags[0]
		out = append(out, rangedel.Fragment{Start: f.Start, End: limit, Seqs: f.Seqs})
		s.frags[0].Start = limit
	}
	return out
}
