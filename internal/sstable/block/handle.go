package block

import (
	"encoding/binary"
	"fmt"

	"github.com/shaledb/shale/internal/base"
)

// MaxHandleLen is the longest encoding of a Handle: two varint64s. Part of
// the file format; do not change.
const MaxHandleLen = 2 * binary.MaxVarintLen64

// Handle locates a block in a table file. Length does not count the block's
// TrailerLen-byte trailer. A Handle is a plain value, safe to copy and share.
type Handle struct {
	Offset, Length uint64
}

// Append appends the handle's encoding to dst and returns the extended slice.
func (h Handle) Append(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, h.Offset)
	return binary.AppendUvarint(dst, h.Length)
}

// String formats the handle as "(offset, length)".
func (h Handle) String() string { return fmt.Sprintf("(%d, %d)", h.Offset, h.Length) }

// DecodeHandle decodes a handle from the start of b and returns it with the
// number of bytes it took. A truncated or overlong varint is an error marked
// base.ErrCorruption. b is not retained.
func DecodeHandle(b []byte) (Handle, int, error) {
	off, n := binary.Uvarint(b)
	if n <= 0 {
		return Handle{}, 0, badHandle(b, "offset", n)
	}
	length, m := binary.Uvarint(b[n:])
	if m <= 0 {
		return Handle{}, 0, badHandle(b, "length", m)
	}
	return Handle{Offset: off, Length: length}, n + m, nil
}

func badHandle(b []byte, field string, n int) error {
	if n == 0 {
		return base.CorruptionErrorf("block: truncated handle %s in %d bytes", field, len(b))
	}
	return base.CorruptionErrorf("block: handle %s overflows 64 bits", field)
}
