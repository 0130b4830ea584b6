package checksum

import (
	"strconv"

	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/crc"
)

// Type names a block checksum algorithm.
//
// These values are part of the file format (RocksDB's ChecksumType); do not
// change them.
type Type uint8

const (
	// None stores no checksum; blocks are not verified.
	None Type = 0
	// CRC32C is the masked CRC-32C (Castagnoli) of the data.
	CRC32C Type = 1
	// XXHash32 is RocksDB's kxxHash. It is recognised but not supported.
	XXHash32 Type = 2
	// XXHash64 is the low 32 bits of XXH64 with seed 0 (RocksDB's kxxHash64).
	XXHash64 Type = 3
	// XXH3 is RocksDB's kXXH3. It is recognised but not supported.
	XXH3 Type = 4
)

// names are the DSN spellings, indexed by Type.
var names = [...]string{
	None:     "none",
	CRC32C:   "crc32c",
	XXHash32: "xxh32",
	XXHash64: "xxh64",
	XXH3:     "xxh3",
}

// String returns the type's DSN spelling ("none", "crc32c", "xxh64", and
// "xxh32" and "xxh3" for the unsupported RocksDB types), or "Type(n)".
func (t Type) String() string {
	if int(t) < len(names) {
		return names[t]
	}
	return "Type(" + strconv.Itoa(int(t)) + ")"
}

// Supported reports whether this package can compute checksums of type t.
func (t Type) Supported() bool {
	return t == None || t == CRC32C || t == XXHash64
}

// ParseType parses a DSN spelling. A recognised but unsupported type, or an
// unknown name, is an error marked base.ErrInvalidArgument that names it.
func ParseType(s string) (Type, error) {
	for t, name := range names {
		if s != name {
			continue
		}
		if !Type(t).Supported() {
			return 0, base.InvalidArgumentf("checksum: type %q (RocksDB checksum type %d) is not supported; use none, crc32c or xxh64", s, t)
		}
		return Type(t), nil
	}
	return 0, base.InvalidArgumentf("checksum: unknown type %q; use none, crc32c or xxh64", s)
}

// Compute returns the checksum of type t over data. data is the block bytes
// followed by the compression type byte, as the trailer covers them; it is
// only read during the call. None returns 0.
//
// t must be supported (see Type.Supported); callers check a type read from a
// file before computing with it, so Compute panics on any other type.
func Compute(t Type, data []byte) uint32 {
	switch t {
	case None:
		return 0
	case CRC32C:
		return crc.New(data).Value()
	case XXHash64:
		return uint32(xxhash.Sum64(data))
	}
	panic(unsupported(t))
}

// ComputeBlock returns Compute(t, append(block, typeByte)) without building
// the concatenation, for writers whose trailer byte is not yet next to the
// block in memory. block is only read during the call.
func ComputeBlock(t Type, block []byte, typeByte byte) uint32 {
	// A slice of a local array would escape to the heap through the hash
	// functions; slicing a global does not allocate.
	tb := singleBytes[typeByte][:]
	switch t {
	case None:
		return 0
	case CRC32C:
		return crc.New(block).Update(tb).Value()
	case XXHash64:
		var d xxhash.Digest
		d.Reset()
		_, _ = d.Write(block)
		_, _ = d.Write(tb)
		return uint32(d.Sum64())
	}
	panic(unsupported(t))
}

// singleBytes[b] holds the byte b.
var singleBytes = func() (a [256][1]byte) {
	for i := range a {
		a[i][0] = byte(i)
	}
	return a
}()

// Unmasked returns v as RocksDB prints a checksum of type t in error
// messages: CRC32C values unmasked, others unchanged.
func (t Type) Unmasked(v uint32) uint32 {
	if t == CRC32C {
		return crc.Unmask(v)
	}
	return v
}

func unsupported(t Type) error {
	return errors.AssertionFailedf("checksum: cannot compute unsupported checksum type %s (%d)", t, uint8(t))
}
