package crashtest

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"os"

	"github.com/cockroachdb/errors"
)

// The expected state lives in a file of one 64-byte slot per key, RocksDB's
// expected_state.h in miniature. A slot says which versions of the key a
// database recovered after a crash may hold:
//
//   - base: the newest version known durable — acknowledged by a synced
//     write, or found by the last verification;
//   - pending: up to maxPending versions written after base, oldest first,
//     each recorded before its write is issued (so a kill -9 between the
//     record and the write only widens what is allowed) and marked acked
//     once an unsynced write returns.
//
// A recovered database is right for the key when it holds base or one of
// the pending versions (a delete version allows "absent"). A synced write's
// acknowledgement replaces base with it and drops the pending versions
// before it. Each slot is written with one pwrite of 64 bytes within a
// page, which a SIGKILL cannot tear; a checksum would catch it anyway.
const (
	slotSize   = 64
	maxPending = 8

	delBit   = 1 << 31 // the version deletes the key
	ackedBit = 1 << 30 // a pending version whose (unsynced) write returned
	verMask  = ackedBit - 1
)

// keyState is one key's slot.
type keyState struct {
	base    uint32 // version | delBit
	next    uint32 // the next version to write
	pending []uint32
}

func (s *keyState) encode(b []byte) {
	clear(b[:slotSize])
	binary.LittleEndian.PutUint32(b[0:], s.base)
	binary.LittleEndian.PutUint32(b[4:], s.next)
	binary.LittleEndian.PutUint32(b[8:], uint32(len(s.pending)))
	for i, p := range s.pending {
		binary.LittleEndian.PutUint32(b[12+4*i:], p)
	}
	binary.LittleEndian.PutUint32(b[60:], crc32.ChecksumIEEE(b[:60]))
}

func (s *keyState) decode(b []byte) error {
	if crc32.ChecksumIEEE(b[:60]) != binary.LittleEndian.Uint32(b[60:]) {
		return errors.New("crashtest: expected-state slot fails its checksum (torn write?)")
	}
	s.base = binary.LittleEndian.Uint32(b[0:])
	s.next = binary.LittleEndian.Uint32(b[4:])
	n := binary.LittleEndian.Uint32(b[8:])
	if n > maxPending {
		return errors.Newf("crashtest: expected-state slot has %d pending versions", n)
	}
	s.pending = s.pending[:0]
	for i := range n {
		s.pending = append(s.pending, binary.LittleEndian.Uint32(b[12+4*i:]))
	}
	return nil
}

// allows reports whether a recovered database may hold version v of the
// key (found: a put of v; not found: any delete).
func (s *keyState) allows(found bool, v uint32) bool {
	ok := func(x uint32) bool {
		if !found {
			return x&delBit != 0
		}
		return x&delBit == 0 && x&verMask == v
	}
	if ok(s.base) {
		return true
	}
	for _, p := range s.pending {
		if ok(p) {
			return true
		}
	}
	return false
}

// stateFile is the expected-state file, open for reading and writing.
type stateFile struct {
	f     *os.File
	slots []keyState
}

// createState writes a fresh state file for n keys: every key absent.
func createState(path string, n int) error {
	b := make([]byte, slotSize*n)
	for i := range n {
		s := keyState{base: delBit, next: 1}
		s.encode(b[i*slotSize:])
	}
	return os.WriteFile(path, b, 0o644)
}

func openState(path string) (*stateFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(f)
	if err == nil && len(b)%slotSize != 0 {
		err = errors.Newf("crashtest: %s: size %d is not a whole number of slots", path, len(b))
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	s := &stateFile{f: f, slots: make([]keyState, len(b)/slotSize)}
	for i := range s.slots {
		if err := s.slots[i].decode(b[i*slotSize:]); err != nil {
			_ = f.Close()
			return nil, errors.Wrapf(err, "key %d", i)
		}
	}
	return s, nil
}

// write stores slot k (the caller holds the key's lock).
func (s *stateFile) write(k int) error {
	var b [slotSize]byte
	s.slots[k].encode(b[:])
	_, err := s.f.WriteAt(b[:], int64(k)*slotSize)
	return err
}

func (s *stateFile) Close() error { return s.f.Close() }
