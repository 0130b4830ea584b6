package cache

import (
	"encoding/binary"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/stretchr/testify/require"
)

// scaled scales a test's operation count down under -race (which slows
// these tests tenfold or more) and -short.
func scaled(n int) int {
	if invariants.RaceEnabled {
		n /= 8
	}
	if testing.Short() {
		n /= 8
	}
	return n
}

// makeValue fills buf with a value that identifies (k, version): a 32-byte
// header followed by a pattern derived from both, so that a buffer reused
// for another value, or poisoned, is told apart from the right one.
func makeValue(buf []byte, k Key, version uint64) []byte {
	for i := range buf {
		buf[i] = byte(k.Offset + version + uint64(i)*7)
	}
	if len(buf) >= 32 {
		binary.LittleEndian.PutUint64(buf[0:], k.ID)
		binary.LittleEndian.PutUint64(buf[8:], k.FileNum)
		binary.LittleEndian.PutUint64(buf[16:], k.Offset)
		binary.LittleEndian.PutUint64(buf[24:], version)
	}
	return buf
}

// newValue returns a fresh value of n (>= 32) bytes for (k, version).
func newValue(n int, k Key, version uint64) []byte { return makeValue(make([]byte, n), k, version) }

// checkValue verifies a value made by makeValue for k and returns its version.
func checkValue(b []byte, k Key) (version uint64, err error) {
	if len(b) < 32 {
		return 0, errors.Newf("value of %s is %d bytes", k, len(b))
	}
	got := Key{binary.LittleEndian.Uint64(b[0:]), binary.LittleEndian.Uint64(b[8:]), binary.LittleEndian.Uint64(b[16:])}
	if got != k {
		return 0, errors.Newf("value of %s carries key %s", k, got)
	}
	version = binary.LittleEndian.Uint64(b[24:])
	for i := 32; i < len(b); i++ {
		if want := byte(k.Offset + version + uint64(i)*7); b[i] != want {
			return 0, errors.Newf("value of %s version %d: byte %d is %#x, want %#x", k, version, i, b[i], want)
		}
	}
	return version, nil
}

// checkInvariants walks every shard under its lock and verifies the index,
// the CLOCK ring, the file lists and the counters against each other.
func checkInvariants(c *Cache) error {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		err := s.checkLocked(c, i)
		s.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *shard) checkLocked(c *Cache, idx int) error {
	entries, err := checkIndex(s.entries, s.mask)
	if err != nil {
		return errors.Wrapf(err, "shard %d: entries", idx)
	}
	var indexed, loading int
	for _, e := range entries {
		switch e.state {
		case stateLoading:
			loading++
		case stateIndexed:
			indexed++
		default:
			return errors.Newf("shard %d: entry %s in the index in state %d", idx, e.key, e.state)
		}
	}
	mainLen, mainSize, err := s.checkRingLocked(c, idx, s.hand, ringMain, indexed)
	if err != nil {
		return err
	}
	scanLen, scanSize, err := s.checkRingLocked(c, idx, s.scanHand, ringScan, indexed)
	if err != nil {
		return err
	}
	highLen, highSize, err := s.checkRingLocked(c, idx, s.highHand, ringHigh, indexed)
	if err != nil {
		return err
	}
	ringLen, size := mainLen+scanLen+highLen, mainSize+scanSize+highSize
	if ringLen != indexed || int64(ringLen) != s.count {
		return errors.Newf("shard %d: rings %d+%d+%d, index %d (and %d loading), count %d",
			idx, mainLen, scanLen, highLen, indexed, loading, s.count)
	}
	if size != s.size || scanSize != s.scanSize || highSize != s.highSize {
		return errors.Newf("shard %d: charges sum to %d (%d on probation, %d high), size says %d (%d, %d)",
			idx, size, scanSize, highSize, s.size, s.scanSize, s.highSize)
	}
	if size > s.capacity {
		return errors.Newf("shard %d: size %d over capacity %d", idx, size, s.capacity)
	}
	if s.highSize > s.highCapacity {
		return errors.Newf("shard %d: high-priority ring holds %d, over its share %d", idx, s.highSize, s.highCapacity)
	}
	if s.scanCapacity != s.capacity/scanShare {
		return errors.Newf("shard %d: probation share %d of capacity %d", idx, s.scanCapacity, s.capacity)
	}
	sentinels, err := checkIndex(s.files, s.mask)
	if err != nil {
		return errors.Wrapf(err, "shard %d: files", idx)
	}
	var inFiles int
	for _, sent := range sentinels {
		if sent.state != stateSentinel || sent.key.Offset != 0 || sent.fileNext == sent {
			return errors.Newf("shard %d: file %s has sentinel state %d and is empty: %t",
				idx, sent.key, sent.state, sent.fileNext == sent)
		}
		for e := sent.fileNext; e != sent; e = e.fileNext {
			inFiles++
			if e.key.ID != sent.key.ID || e.key.FileNum != sent.key.FileNum || e.state != stateIndexed {
				return errors.Newf("shard %d: file list %s holds %s in state %d", idx, sent.key, e.key, e.state)
			}
			if e.fileNext.filePrev != e || e.filePrev.fileNext != e {
				return errors.Newf("shard %d: file links broken at %s", idx, e.key)
			}
			if inFiles > indexed {
				return errors.Newf("shard %d: file lists longer than the index", idx)
			}
		}
	}
	if inFiles != indexed {
		return errors.Newf("shard %d: file lists hold %d entries, index %d", idx, inFiles, indexed)
	}
	return nil
}

// ringKind names a shard's rings in checkRingLocked.
type ringKind int

const (
	ringMain ringKind = iota
	ringScan
	ringHigh
)

// ringOf returns the ring e's flags put it on.
func ringOf(e *entry) ringKind {
	switch {
	case e.scan:
		return ringScan
	case e.inHigh:
		return ringHigh
	}
	return ringMain
}

// checkRingLocked walks the ring headed by hand, of kind ring, and returns
// its length and the sum of its charges. Every entry must be the indexed
// one of its key, in this shard, with consistent links, and flagged for
// this ring (a high-priority ring entry also as high, a probation one as
// not).
func (s *shard) checkRingLocked(c *Cache, idx int, hand *entry, ring ringKind, indexed int) (int, int64, error) {
	var n int
	var size int64
	for e := hand; e != nil; {
		n++
		if n > indexed+1 {
			return 0, 0, errors.Newf("shard %d: ring %d longer than the index (%d)", idx, ring, indexed)
		}
		if s.entries.find(hashKey(e.key)&s.mask, e.key) != e {
			return 0, 0, errors.Newf("shard %d: ring entry %s is not the indexed one", idx, e.key)
		}
		if e.state != stateIndexed {
			return 0, 0, errors.Newf("shard %d: ring entry %s in state %d", idx, e.key, e.state)
		}
		if ringOf(e) != ring || e.scan && e.inHigh || e.inHigh && !e.high || e.scan && e.high {
			return 0, 0, errors.Newf("shard %d: entry %s flagged scan %t high %t inHigh %t on ring %d",
				idx, e.key, e.scan, e.high, e.inHigh, ring)
		}
		if n := e.refs.Load(); n < indexRef {
			return 0, 0, errors.Newf("shard %d: indexed entry %s has %d refs", idx, e.key, n)
		}
		if c.shardFor(e.key) != s {
			return 0, 0, errors.Newf("shard %d: entry %s belongs to another shard", idx, e.key)
		}
		if e.next.prev != e || e.prev.next != e {
			return 0, 0, errors.Newf("shard %d: ring links broken at %s", idx, e.key)
		}
		if e.flight != nil {
			return 0, 0, errors.Newf("shard %d: indexed entry %s has a flight", idx, e.key)
		}
		size += e.charge()
		if e = e.next; e == hand {
			break
		}
	}
	return n, size, nil
}

// checkIndex verifies x's chains (every entry under its masked hash, each
// key once, chained set on all but the head) and returns their entries.
func checkIndex(x index, mask uint64) ([]*entry, error) {
	var all []*entry
	seen := make(map[Key]bool)
	for h, head := range x {
		if head == nil || head.chained {
			return nil, errors.Newf("chain %#x starts with %v", h, head)
		}
		for e := head; e != nil; e = e.hashNext {
			if hashKey(e.key)&mask != h {
				return nil, errors.Newf("%s is on chain %#x", e.key, h)
			}
			if seen[e.key] {
				return nil, errors.Newf("%s is in the index twice", e.key)
			}
			seen[e.key] = true
			if e != head && !e.chained {
				return nil, errors.Newf("%s is not the head of chain %#x but not marked chained", e.key, h)
			}
			all = append(all, e)
		}
	}
	return all, nil
}

// requireQuiescent checks, once every handle has been released, that only the
// index holds references and (in invariants builds) that no freed entry is
// missing from the pools' accounting.
func requireQuiescent(t testing.TB, c *Cache) {
	t.Helper()
	require.NoError(t, checkInvariants(c))
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for _, head := range s.entries {
			for e := head; e != nil; e = e.hashNext {
				if e.state == stateLoading {
					s.mu.Unlock()
					t.Fatalf("entry %s is still loading", e.key)
				}
				if n := e.refs.Load(); n != indexRef {
					s.mu.Unlock()
					t.Fatalf("entry %s has %d references with no handle outstanding", e.key, n-indexRef)
				}
			}
		}
		s.mu.Unlock()
	}
	if invariants.Enabled {
		require.Equal(t, int64(c.Len()), c.live.Load(), "entries neither indexed nor freed")
	}
	require.Equal(t, offHeapIndexed(c), c.OffHeapInUse(), "off-heap buffers neither indexed nor freed")
}

// offHeapIndexed counts the indexed entries whose buffer is off-heap: with
// no handle outstanding, the only region objects that may be live.
func offHeapIndexed(c *Cache) int64 {
	var n int64
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for _, head := range s.entries {
			for e := head; e != nil; e = e.hashNext {
				if c.OffHeap(e.buf) {
					n++
				}
			}
		}
		s.mu.Unlock()
	}
	return n
}

// flightWaiters returns the number of callers waiting for the load of k in
// progress, or -1 if there is none.
func flightWaiters(c *Cache, k Key) int32 {
	s := c.shardFor(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries.find(hashKey(k)&s.mask, k)
	switch {
	case e == nil || e.state != stateLoading:
		return -1
	case e.flight == nil:
		return 0
	}
	return e.flight.waiters
}

// keysInShard returns n distinct keys of file (id, fileNum) that all map to
// shard 0 of c.
func keysInShard(c *Cache, id, fileNum uint64, n int) []Key {
	var keys []Key
	for off := uint64(0); len(keys) < n; off += 4096 {
		if k := (Key{id, fileNum, off}); c.shardFor(k) == &c.shards[0] {
			keys = append(keys, k)
		}
	}
	return keys
}
