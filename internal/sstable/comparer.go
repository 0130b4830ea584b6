package sstable

import (
	"github.com/shaledb/shale/internal/base"
)

// separatorCmp is separator for a table with a non-bytewise Comparer: its
// Separator shortens the key, or, without one, a is kept whole. A shortened
// key s must lie strictly between the user keys (ua < s < ub), so that s
// with the smallest trailer of its user key sorts above a and below b; any
// other answer keeps a, which is always correct.
func (w *Writer) separatorCmp(a, ua, ub []byte) []byte {
	c := w.opts.Comparer
	if c.Separator != nil {
		w.sepBuf = c.Separator(w.sepBuf[:0], ua, ub)
		if n := len(w.sepBuf); n < len(ua) && c.Compare(ua, w.sepBuf) < 0 && c.Compare(w.sepBuf, ub) < 0 {
			return w.withShortTrailer()
		}
	}
	w.sepBuf = append(w.sepBuf[:0], a...)
	return w.sepBuf
}

// successorCmp is successor for a table with a non-bytewise Comparer: its
// Successor shortens the key, or, without one, a is kept whole.
func (w *Writer) successorCmp(a, ua []byte) []byte {
	c := w.opts.Comparer
	if c.Successor != nil {
		w.sepBuf = c.Successor(w.sepBuf[:0], ua)
		if n := len(w.sepBuf); n < len(ua) && c.Compare(ua, w.sepBuf) < 0 {
			return w.withShortTrailer()
		}
	}
	w.sepBuf = append(w.sepBuf[:0], a...)
	return w.sepBuf
}

// withShortTrailer appends to sepBuf, a shortened separator's user key, the
// trailer shortKey gives (the smallest internal key of that user key).
func (w *Writer) withShortTrailer() []byte {
	w.sepBuf = base.MakeInternalKey(nil, base.MaxSeqNum, base.KindMax).Append(w.sepBuf)
	return w.sepBuf
}

// checkComparer checks that the table's recorded comparer is the Reader's.
func (r *Reader) checkComparer() error {
	if r.opts.Comparer == nil && r.opts.BuiltinComparer {
		if c := base.BuiltinComparer(r.props.ComparerName); c != nil {
			r.opts.Comparer, r.cmp = c, c.UserCompare()
		}
	}
	want := r.opts.Comparer
	if want == nil {
		want = base.DefaultComparer
	}
	got := r.props.ComparerName
	if got == "" {
		got = base.BytewiseName
	}
	if got != want.Name {
		return base.InvalidArgumentf("sstable: %s: the table's keys are ordered by comparer %q, but it is read with comparer %q",
			r.name, got, want.Name)
	}
	return nil
}

// ComparerName returns the name of the comparer that ordered the table's
// keys.
func (r *Reader) ComparerName() string {
	if r.props.ComparerName == "" {
		return base.BytewiseName
	}
	return r.props.ComparerName
}

// seekGECmp is seekGE for a table with a non-bytewise comparer: a binary
// search comparing whole separators, since the common prefix and the
// abbreviations order keys bytewise only.
func (x *indexTable) seekGECmp(key []byte) int {
	lo, hi := 0, x.n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if base.CompareEncodedCmp(x.cmp, x.sep(mid), key) < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// Compare returns the user-key order the Reader reads the table in (nil
// for bytewise).
func (r *Reader) Compare() base.Compare { return r.cmp }
