package compact

import (
	"bytes"
	"slices"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/merge"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/shaledb/shale/statistics"
)

// MergeIter combines the merge operands an Iter keeps, as RocksDB's
// MergeHelper does in flushes and compactions. Of each run of operands of
// one user key in one snapshot stripe (the Iter keeps a stripe's entries
// down from an operand to its first Set or tombstone), it writes:
//
//   - one Set, at the newest operand's sequence number, of FullMerge over
//     the Set below the run in the same stripe (its base), or over no base
//     when a tombstone of the stripe ends the run, or when nothing of the
//     key is older, in the input or below the output level (elide);
//   - else one operand, of PartialMerge of the run, newest sequence number,
//     when the operator combines every adjacent pair;
//   - else the run as it was.
//
// Nothing is ever merged across a snapshot boundary, so every snapshot
// reads what it read before. A run that a range tombstone cuts (one
// covering the key with a sequence number between the run's newest and its
// base) is written as it was: the tombstone decides at read time. A
// FullMerge failure also leaves the run as it was, so that the reads of the
// key report it (the compaction does not fail on user data).
//
// It has Iter's First/Next/Error/Close/Stats. Its entries are valid until
// the next call.
type MergeIter struct {
	it    *Iter
	op    merge.Operator
	stats *statistics.Statistics
	elide func(userKey []byte) bool
	dels  *rangedel.Set

	// pending is the input entry read past a run, handled next.
	pending *base.InternalKV
	// out are the entries made of the last run, key their user key.
	key  []byte
	out  []runEntry
	next int
	kv   base.InternalKV
	run  []runEntry
	ops  [][]byte
}

// runEntry is an owned copy of an entry of a run.
type runEntry struct {
	trailer uint64
	value   []byte
}

// NewMergeIter wraps it, the compaction or flush iterator whose snapshots
// and elide it shares (nil elide never merges without a base found in the
// input). dels are the compaction's range tombstones (nil for none); op
// nil passes everything through.
func NewMergeIter(it *Iter, op merge.Operator, stats *statistics.Statistics, dels *rangedel.Set) *MergeIter {
	return &MergeIter{it: it, op: op, stats: stats, elide: it.elide, dels: dels}
}

// First positions at the first entry.
func (m *MergeIter) First() *base.InternalKV {
	m.pending, m.out, m.next = nil, m.out[:0], 0
	return m.handle(m.it.First())
}

// Next moves to the next entry.
func (m *MergeIter) Next() *base.InternalKV {
	if m.next < len(m.out) {
		return m.emit()
	}
	if kv := m.pending; kv != nil {
		m.pending = nil
		return m.handle(kv)
	}
	return m.handle(m.it.Next())
}

// Error is the Iter's error.
func (m *MergeIter) Error() error { return m.it.Error() }

// Close closes the Iter.
func (m *MergeIter) Close() error { return m.it.Close() }

// Stats is the Iter's.
func (m *MergeIter) Stats() Stats { return m.it.Stats() }

func (m *MergeIter) emit() *base.InternalKV {
	e := m.out[m.next]
	m.next++
	m.kv = base.InternalKV{K: base.InternalKey{UserKey: m.key, Trailer: e.trailer}, V: e.value}
	return &m.kv
}

// handle returns kv, or what its run of operands becomes.
func (m *MergeIter) handle(kv *base.InternalKV) *base.InternalKV {
	if kv == nil || m.op == nil || kv.K.Kind() != base.KindMerge {
		return kv
	}
	m.key = append(m.key[:0], kv.K.UserKey...)
	stripe := m.it.stripeOf(kv.K.SeqNum())
	m.run = append(m.run[:0], runEntry{kv.K.Trailer, bytes.Clone(kv.V)})
	var end *base.InternalKV // the entry after the run
	sameStripe := false      // end is a Set or tombstone of the run's stripe
	for {
		end = m.it.Next()
		if end == nil || !bytes.Equal(end.K.UserKey, m.key) || m.it.stripeOf(end.K.SeqNum()) != stripe {
			break
		}
		if end.K.Kind() == base.KindMerge {
			m.run = append(m.run, runEntry{end.K.Trailer, bytes.Clone(end.V)})
			continue
		}
		sameStripe = true
		break
	}
	if end == nil && m.it.Error() != nil {
		return nil
	}
	top := base.SeqNum(m.run[0].trailer >> 8)
	lowest := base.SeqNum(m.run[len(m.run)-1].trailer >> 8)
	if sameStripe {
		lowest = end.K.SeqNum()
	}
	m.out, m.next = m.out[:0], 0
	m.pending = end
	if m.dels != nil {
		if t, _ := m.dels.Covering(m.key, top); t > lowest {
			m.out = append(m.out, m.run...)
			return m.emit()
		}
	}
	// The operands, oldest first.
	m.ops = m.ops[:0]
	for i := len(m.run) - 1; i >= 0; i-- {
		m.ops = append(m.ops, m.run[i].value)
	}
	var v []byte
	var err error
	full := true
	switch {
	case sameStripe && end.K.Kind() == base.KindSet:
		v, err = merge.Full(m.op, m.stats, m.key, end.V, true, m.ops)
	case sameStripe:
		v, err = merge.Full(m.op, m.stats, m.key, nil, false, m.ops)
	case (end == nil || !bytes.Equal(end.K.UserKey, m.key)) && m.elide != nil && m.elide(m.key):
		v, err = merge.Full(m.op, m.stats, m.key, nil, false, m.ops)
	default:
		full = false
	}
	switch {
	case full && err == nil:
		if sameStripe {
			m.pending = nil // the base is merged in
		}
		m.out = append(m.out, runEntry{base.MakeTrailer(top, base.KindSet), v})
	case !full && len(m.ops) > 1:
		if p, ok := m.partial(); ok {
			m.out = append(m.out, runEntry{base.MakeTrailer(top, base.KindMerge), p})
			break
		}
		m.out = append(m.out, m.run...)
	default:
		m.out = append(m.out, m.run...)
	}
	clear(m.ops)
	return m.emit()
}

// partial combines the operands (m.ops, oldest first) into one, when the
// operator combines every adjacent pair.
func (m *MergeIter) partial() ([]byte, bool) {
	acc := m.ops[0]
	for _, o := range m.ops[1:] {
		p, ok := m.op.PartialMerge(m.key, acc, o)
		if !ok {
			return nil, false
		}
		acc = p
	}
	return slices.Clip(acc), true
}
