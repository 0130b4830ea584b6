package rangedel

import (
	"bytes"
	"encoding/binary"
	"slices"

	"github.com/shaledb/shale/internal/base"
)

// Tombstone deletes the keys in [Start, End) written below sequence number
// Seq; an empty End is unbounded (see the package doc).
type Tombstone struct {
	Start, End []byte
	Seq        base.SeqNum
}

// Unbounded reports whether t deletes every key from Start on.
func (t *Tombstone) Unbounded() bool { return len(t.End) == 0 }

// Fragment is a piece [Start, End) of the key space and the sequence numbers
// of the tombstones covering it, highest first; an empty End is unbounded.
type Fragment struct {
	Start, End []byte
	Seqs       []base.SeqNum
}

// Unbounded reports whether f reaches past every key.
func (f *Fragment) Unbounded() bool { return len(f.End) == 0 }

// Contains reports whether key is in [f.Start, f.End).
func (f *Fragment) Contains(key []byte) bool {
	return bytes.Compare(f.Start, key) <= 0 && Before(key, f.End)
}

// ContainsCmp is Contains in the order of cmp (bytewise when nil).
func (f *Fragment) ContainsCmp(cmp base.Compare, key []byte) bool {
	return base.CompareUser(cmp, f.Start, key) <= 0 && BeforeCmp(cmp, key, f.End)
}

// BeforeCmp is Before in the order of cmp (bytewise when nil).
func BeforeCmp(cmp base.Compare, key, end []byte) bool {
	return len(end) == 0 || base.CompareUser(cmp, key, end) < 0
}

// Before reports whether key is below end, an exclusive end of a tombstone
// or fragment: always when end is empty (unbounded). Before(start, end) is
// whether [start, end) holds any key.
func Before(key, end []byte) bool {
	return len(end) == 0 || bytes.Compare(key, end) < 0
}

// Visible returns the highest sequence number of f's tombstones that is at
// most readSeq, or 0 when none is.
func (f *Fragment) Visible(readSeq base.SeqNum) base.SeqNum {
	for _, s := range f.Seqs {
		if s <= readSeq {
			return s
		}
	}
	return 0
}

// Set is a fragmented set of tombstones; see the package doc.
type Set struct {
	frags []Fragment
	// cmp orders the fragments' keys; nil is bytewise.
	cmp base.Compare
}

// Compare returns the user-key order of s (nil for bytewise).
func (s *Set) Compare() base.Compare {
	if s == nil {
		return nil
	}
	return s.cmp
}

// New fragments ts, leaving ts itself unchanged; the
// Set refers to the tombstones' key bytes. Its cost is O(b log b + c) for b
// boundaries and c (fragment, covering tombstone) pairs, which is O(n²) only
// for n tombstones that all nest. Unbounded tombstones cover the last
// fragment, [the largest boundary, unbounded), and each one before it from
// their starts on.
func New(ts []Tombstone) *Set { return NewCmp(nil, ts) }

// NewCmp is New for keys ordered by cmp (bytewise when nil).
func NewCmp(cmp base.Compare, ts []Tombstone) *Set {
	bounds := make([][]byte, 0, 2*len(ts))
	open := false // whether some tombstone is unbounded
	for i := range ts {
		t := &ts[i]
		switch {
		case t.Unbounded():
			bounds, open = append(bounds, t.Start), true
		case base.CompareUser(cmp, t.Start, t.End) < 0:
			bounds = append(bounds, t.Start, t.End)
		}
	}
	if len(bounds) == 0 {
		return nil
	}
	ucmp := cmp
	if ucmp == nil {
		ucmp = bytes.Compare
	}
	slices.SortFunc(bounds, ucmp)
	bounds = slices.CompactFunc(bounds, bytes.Equal)
	// seqs[i] collects the tombstones covering [bounds[i], end(i)), where
	// end(i) is bounds[i+1], or unbounded for the last piece when open.
	n := len(bounds) - 1
	if open {
		n++
	}
	end := func(i int) []byte {
		if i+1 < len(bounds) {
			return bounds[i+1]
		}
		return nil
	}
	seqs := make([][]base.SeqNum, n)
	for i := range ts {
		t := &ts[i]
		if !BeforeCmp(cmp, t.Start, t.End) {
			continue
		}
		i, _ := slices.BinarySearchFunc(bounds, t.Start, ucmp)
		for ; i < n && BeforeCmp(cmp, bounds[i], t.End); i++ {
			seqs[i] = append(seqs[i], t.Seq)
		}
	}
	s := &Set{cmp: cmp}
	for i, sq := range seqs {
		if len(sq) == 0 {
			continue
		}
		slices.SortFunc(sq, func(a, b base.SeqNum) int { return compareDesc(a, b) })
		sq = slices.Compact(sq)
		if n := len(s.frags); n > 0 && bytes.Equal(s.frags[n-1].End, bounds[i]) && slices.Equal(s.frags[n-1].Seqs, sq) {
			s.frags[n-1].End = end(i)
			continue
		}
		s.frags = append(s.frags, Fragment{Start: bounds[i], End: end(i), Seqs: sq})
	}
	return s
}

func compareDesc(a, b base.SeqNum) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// FromFragments returns the Set of fragments that are already sorted,
// non-overlapping and each well formed (as DecodeFragment checks), e.g. the
// ones a table's range-deletion block holds. It does not copy frags. It
// returns nil for none and an error marked base.ErrCorruption when frags
// are out of order or overlap (an unbounded fragment can only be the last).
func FromFragments(frags []Fragment) (*Set, error) { return FromFragmentsCmp(nil, frags) }

// FromFragmentsCmp is FromFragments for keys ordered by cmp (bytewise when
// nil).
func FromFragmentsCmp(cmp base.Compare, frags []Fragment) (*Set, error) {
	if len(frags) == 0 {
		return nil, nil
	}
	for i := range frags {
		f := &frags[i]
		if !BeforeCmp(cmp, f.Start, f.End) || len(f.Seqs) == 0 {
			return nil, base.CorruptionErrorf("rangedel: fragment %d [%q, %q) is empty", i, f.Start, f.End)
		}
		if i > 0 && !frags[i-1].endsBy(cmp, f.Start) {
			return nil, base.CorruptionErrorf("rangedel: fragment %d [%q, %q) overlaps or precedes [%q, %q)",
				i, f.Start, f.End, frags[i-1].Start, frags[i-1].End)
		}
	}
	return &Set{frags: frags, cmp: cmp}, nil
}

// Empty reports whether the set has no fragments.
func (s *Set) Empty() bool { return s == nil || len(s.frags) == 0 }

// Len returns the number of fragments.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.frags)
}

// Fragments returns the fragments in order. The caller must not modify them.
func (s *Set) Fragments() []Fragment {
	if s == nil {
		return nil
	}
	return s.frags
}

// endsBy reports whether f ends at or before key (never when unbounded).
func (f *Fragment) endsBy(cmp base.Compare, key []byte) bool {
	return len(f.End) != 0 && base.CompareUser(cmp, f.End, key) <= 0
}

// Unbounded reports whether the set's last fragment is unbounded: the Set
// holds an unbounded tombstone.
func (s *Set) Unbounded() bool {
	return s != nil && len(s.frags) > 0 && s.frags[len(s.frags)-1].Unbounded()
}

// ClampEnd returns the Set with its unbounded fragment, if any, ended at
// end: cut to [Start, end), or left out when end <= Start. Only the last
// fragment can be unbounded, and only unbounded tombstones cover it; each
// of them then ends at end, or at the last fragment's start when that is
// larger. A flush calls it with an end above every key the tombstones can
// delete, where the clamped Set deletes exactly what s does (see the package
// doc). The result refers to end and shares s's fragments, which it does
// not modify.
func (s *Set) ClampEnd(end []byte) *Set {
	if !s.Unbounded() {
		return s
	}
	n := len(s.frags)
	last := s.frags[n-1]
	if base.CompareUser(s.cmp, last.Start, end) < 0 {
		frags := slices.Clone(s.frags)
		frags[n-1].End = end
		return &Set{frags: frags, cmp: s.cmp}
	}
	if n == 1 {
		return nil
	}
	return &Set{frags: s.frags[: n-1 : n-1], cmp: s.cmp}
}

// firstEndingAfter returns the index of the first fragment whose end is
// above key, or len(s.frags): the only fragment that can contain key.
func (s *Set) firstEndingAfter(key []byte) int {
	i, j := 0, len(s.frags)
	for i < j {
		h := int(uint(i+j) >> 1)
		if s.frags[h].endsBy(s.cmp, key) {
			i = h + 1
		} else {
			j = h
		}
	}
	return i
}

// search returns the index of the fragment containing key, or -1.
func (s *Set) search(key []byte) int {
	i := s.firstEndingAfter(key)
	if i < len(s.frags) && base.CompareUser(s.cmp, s.frags[i].Start, key) <= 0 {
		return i
	}
	return -1
}

// Covering returns the highest sequence number at most readSeq of a
// tombstone covering key, and the fragment holding key; seq is 0 (and f nil)
// when no visible tombstone covers key. A point (key, p) is deleted for a
// reader at readSeq exactly when p < seq.
func (s *Set) Covering(key []byte, readSeq base.SeqNum) (seq base.SeqNum, f *Fragment) {
	if s == nil {
		return 0, nil
	}
	i := s.search(key)
	if i < 0 {
		return 0, nil
	}
	f = &s.frags[i]
	if seq = f.Visible(readSeq); seq == 0 {
		return 0, nil
	}
	return seq, f
}

// Gap reports whether key is in no fragment and, if so, the gap of the key
// space around it that no fragment touches: [lo, hi), a nil bound being
// unbounded. (lo is never an unbounded fragment's end: no key follows it.) A reader moving through keys in order caches the gap and skips
// the search for every key still inside it.
func (s *Set) Gap(key []byte) (lo, hi []byte, ok bool) {
	if s == nil {
		return nil, nil, true
	}
	i := s.firstEndingAfter(key)
	if i < len(s.frags) {
		if base.CompareUser(s.cmp, s.frags[i].Start, key) <= 0 {
			return nil, nil, false
		}
		hi = s.frags[i].Start
	}
	if i > 0 {
		lo = s.frags[i-1].End
	}
	return lo, hi, true
}

// Overlapping returns the fragments that intersect [lo, hi); a nil bound is
// unbounded.
func (s *Set) Overlapping(lo, hi []byte) []Fragment {
	if s == nil {
		return nil
	}
	i := 0
	if lo != nil {
		i, _ = slices.BinarySearchFunc(s.frags, lo, func(f Fragment, k []byte) int {
			if f.endsBy(s.cmp, k) {
				return -1
			}
			return 1
		})
	}
	j := len(s.frags)
	if hi != nil {
		j, _ = slices.BinarySearchFunc(s.frags, hi, func(f Fragment, k []byte) int {
			if base.CompareUser(s.cmp, f.Start, k) < 0 {
				return -1
			}
			return 1
		})
	}
	if i >= j {
		return nil
	}
	return s.frags[i:j]
}

// Tombstones returns the tombstones the fragments stand for: one per
// (fragment, sequence number), so New(s.Tombstones()) equals s. Merging the
// tombstones of several sets and fragmenting them again is how compaction
// combines its inputs' tombstones.
func (s *Set) Tombstones(dst []Tombstone) []Tombstone {
	for _, f := range s.Fragments() {
		for _, q := range f.Seqs {
			dst = append(dst, Tombstone{Start: f.Start, End: f.End, Seq: q})
		}
	}
	return dst
}

// AppendValue appends the encoding of f's End and sequence numbers (the
// value of f's block entry, see the package doc) to dst. f must be bounded:
// an unbounded fragment is never stored (its empty End would not decode).
func AppendValue(dst []byte, f *Fragment) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(f.End)))
	dst = append(dst, f.End...)
	dst = binary.AppendUvarint(dst, uint64(len(f.Seqs)))
	for _, q := range f.Seqs {
		dst = binary.AppendUvarint(dst, uint64(q))
	}
	return dst
}

// DecodeFragment decodes the block entry (start, value) of a fragment. The
// result refers to start and value (Seqs is newly allocated). A malformed
// value, an empty range, an empty End (unbounded fragments are never stored)
// or sequence numbers that are not strictly decreasing give an error marked
// base.ErrCorruption.
func DecodeFragment(start, value []byte) (Fragment, error) {
	n, w := binary.Uvarint(value)
	if w <= 0 || n > uint64(len(value)-w) {
		return Fragment{}, base.CorruptionErrorf("rangedel: fragment %q: bad end length", start)
	}
	f := Fragment{Start: start, End: value[w : w+int(n) : w+int(n)]}
	value = value[w+int(n):]
	if len(f.End) == 0 {
		return Fragment{}, base.CorruptionErrorf("rangedel: fragment %q has no end: an unbounded fragment is never stored", f.Start)
	}
	// That Start < End, in the database's order, FromFragmentsCmp checks.
	if bytes.Equal(f.Start, f.End) {
		return Fragment{}, base.CorruptionErrorf("rangedel: fragment [%q, %q) is empty", f.Start, f.End)
	}
	cnt, w := binary.Uvarint(value)
	// Each sequence number takes at least a byte.
	if w <= 0 || cnt == 0 || cnt > uint64(len(value)-w) {
		return Fragment{}, base.CorruptionErrorf("rangedel: fragment [%q, %q): bad sequence number count", f.Start, f.End)
	}
	value = value[w:]
	f.Seqs = make([]base.SeqNum, 0, cnt)
	for range cnt {
		q, w := binary.Uvarint(value)
		if w <= 0 || q > uint64(base.MaxSeqNum) {
			return Fragment{}, base.CorruptionErrorf("rangedel: fragment [%q, %q): bad sequence number", f.Start, f.End)
		}
		if k := len(f.Seqs); k > 0 && base.SeqNum(q) >= f.Seqs[k-1] {
			return Fragment{}, base.CorruptionErrorf("rangedel: fragment [%q, %q): sequence numbers not decreasing", f.Start, f.End)
		}
		f.Seqs = append(f.Seqs, base.SeqNum(q))
		value = value[w:]
	}
	if len(value) != 0 {
		return Fragment{}, base.CorruptionErrorf("rangedel: fragment [%q, %q): %d trailing bytes", f.Start, f.End, len(value))
	}
	return f, nil
}
