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
	var ringLen int
	var size int64
	if e := s.hand; e != nil {
		for {
			ringLen++
			if ringLen > len(s.entries)+1 {
				return errors.Newf("shard %d: ring longer than the index (%d)", idx, len(s.entries))
			}
			if s.entries[e.key] != e {
				return errors.Newf("shard %d: ring entry %s is not the indexed one", idx, e.key)
			}
			if !e.indexed.Load() {
				return errors.Newf("shard %d: ring entry %s not marked indexed", idx, e.key)
			}
			if e.refs.Load() < 1 {
				return errors.Newf("shard %d: entry %s has %d refs", idx, e.key, e.refs.Load())
			}
			if c.shardFor(e.key) != s {
				return errors.Newf("shard %d: entry %s belongs to another shard", idx, e.key)
			}
			if e.next.prev != e || e.prev.next != e {
				return errors.Newf("shard %d: ring links broken at %s", idx, e.key)
			}
			if e.charge != int64(len(e.buf))+EntryOverhead {
				return errors.Newf("shard %d: entry %s charged %d for %d bytes", idx, e.key, e.charge, len(e.buf))
			}
			size += e.charge
			e = e.next
			if e == s.hand {
				break
			}
		}
	}
	if ringLen != len(s.entries) || int64(ringLen) != s.count.Load() {
		return errors.Newf("shard %d: ring %d, index %d, count %d", idx, ringLen, len(s.entries), s.count.Load())
	}
	if size != s.size.Load() {
		return errors.Newf("shard %d: charges sum to %d, size says %d", idx, size, s.size.Load())
	}
	if size > s.capacity {
		return errors.Newf("shard %d: size %d over capacity %d", idx, size, s.capacity)
	}
	var inFiles int
	for fk, head := range s.files {
		e := head
		for {
			inFiles++
			if fk != (fileKey{e.key.ID, e.key.FileNum}) || s.entries[e.key] != e {
				return errors.Newf("shard %d: file list %v holds %s", idx, fk, e.key)
			}
			if e.fileNext.filePrev != e {
				return errors.Newf("shard %d: file links broken at %s", idx, e.key)
			}
			if inFiles > len(s.entries) {
				return errors.Newf("shard %d: file lists longer than the index", idx)
			}
			if e = e.fileNext; e == head {
				break
			}
		}
	}
	if inFiles != len(s.entries) {
		return errors.Newf("shard %d: file lists hold %d entries, index %d", idx, inFiles, len(s.entries))
	}
	return nil
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
		for k, e := range s.entries {
			if n := e.refs.Load(); n != 1 {
				s.mu.Unlock()
				t.Fatalf("entry %s has %d references with no handle outstanding", k, n)
			}
		}
		nf := len(s.flights)
		s.mu.Unlock()
		require.Zero(t, nf, "flights left in shard %d", i)
	}
	if invariants.Enabled {
		require.Equal(t, int64(c.Len()), c.live.Load(), "entries neither indexed nor freed")
	}
}

// flightWaiters returns the number of callers waiting on k's flight, or -1
// if there is none.
func flightWaiters(c *Cache, k Key) int32 {
	s := c.shardFor(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.flights[k]; f != nil {
		return f.waiters
	}
	return -1
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
