package compress

import (
	"math"
	"strconv"

	"github.com/cockroachdb/errors"
	"github.com/golang/snappy"
	"github.com/shaledb/shale/internal/base"
)

// Type names a block compression algorithm.
//
// These values are part of the file format (RocksDB's CompressionType ids);
// do not change them.
type Type uint8

const (
	// None stores blocks uncompressed.
	None Type = 0
	// Snappy stores blocks in the Snappy block format.
	Snappy Type = 1
	// Zstd stores blocks as RocksDB does (kZSTD): a varint32 of the decoded
	// length, then one zstd frame that declares the same content size.
	Zstd Type = 7
)

// names spells every RocksDB compression id, so an error about a file written
// with one shale cannot read says which it was.
var names = [...]string{
	None:   "none",
	Snappy: "snappy",
	2:      "zlib",
	3:      "bzip2",
	4:      "lz4",
	5:      "lz4hc",
	6:      "xpress",
	7:      "zstd",
}

// String returns the type's DSN spelling ("none", "snappy"; RocksDB's name for
// other known ids), or "Type(n)".
func (t Type) String() string {
	if int(t) < len(names) {
		return names[t]
	}
	return "Type(" + strconv.Itoa(int(t)) + ")"
}

// Supported reports whether this package can compress and decompress t.
func (t Type) Supported() bool { return t == None || t == Snappy || t == Zstd }

// ParseType parses a DSN spelling ("none", "snappy" or "zstd"). Anything else
// is an error marked base.ErrInvalidArgument that names it.
func ParseType(s string) (Type, error) {
	switch s {
	case "none":
		return None, nil
	case "snappy":
		return Snappy, nil
	case "zstd":
		return Zstd, nil
	}
	return 0, base.InvalidArgumentf("compress: unknown or unsupported compression %q; use none, snappy or zstd", s)
}

// Compress is CompressLevel with DefaultZstdLevel.
func Compress(t Type, dst, src []byte) ([]byte, Type) {
	return CompressLevel(t, DefaultZstdLevel, dst, src)
}

// CompressLevel compresses src with t (zstd at level, MinZstdLevel to
// MaxZstdLevel; other types ignore it), appending to dst[:0]. It returns
// the compressed bytes and t when that saves at least 1/8 of len(src);
// otherwise it returns (src, None) and the caller stores src as is.
//
// The returned slice is either src or shares dst's memory (dst is reused when
// its capacity is at least Buffer's); it is valid until the caller next
// reuses that buffer. t must be supported: any other type is a bug,
// reported by returning (src, None) after base.AssertionFailedf.
func CompressLevel(t Type, level int, dst, src []byte) ([]byte, Type) {
	switch t {
	case None:
		return src, None
	case Zstd:
		if uint64(zstdBound(len(src))) > math.MaxUint32 {
			return src, None
		}
		out := EncodeZstd(level, dst, src)
		if len(out) < len(src)-len(src)/8 {
			return out, Zstd
		}
		return src, None
	case Snappy:
		n := snappy.MaxEncodedLen(len(src))
		if n < 0 {
			// Too large for one Snappy block; blocks are never this big.
			return src, None
		}
		if cap(dst) < n {
			dst = make([]byte, n)
		}
		out := snappy.Encode(dst[:n], src)
		if len(out) < len(src)-len(src)/8 {
			return out, Snappy
		}
		return src, None
	}
	// Writers validate their options, so this is a bug: it panics in
	// invariants builds, and otherwise stores the block uncompressed, which
	// is still a correct block.
	_ = base.AssertionFailedf("compress: cannot compress with unsupported type %s", t)
	return src, None
}

// Buffer returns dst, or a new buffer when dst is too small, with the
// capacity Compress needs to compress n bytes with t into it rather than
// into an allocation of its own. A caller that keeps its compression buffer
// from one call to the next grows it here: Compress returns src for data
// that does not compress, so a buffer it allocated would be lost.
func Buffer(t Type, dst []byte, n int) []byte {
	m := 0
	switch t {
	case Snappy:
		m = snappy.MaxEncodedLen(n)
	case Zstd:
		m = zstdBound(n)
	}
	if m > cap(dst) {
		return make([]byte, 0, m)
	}
	return dst
}

// DecodedLen returns the length of src once decompressed with t. A corrupt
// length header or an unsupported type is an error marked
// base.ErrCorruption.
func DecodedLen(t Type, src []byte) (int, error) {
	switch t {
	case None:
		return len(src), nil
	case Snappy:
		n, err := snappy.DecodedLen(src)
		if err != nil {
			return 0, base.MarkCorruption(errors.Wrapf(err, "compress: bad snappy length header in %d-byte block", len(src)))
		}
		return n, nil
	case Zstd:
		n, _, err := zstdHeader(src)
		return n, err
	}
	return 0, unsupportedCorruption(t)
}

// DecompressInto decompresses src, compressed with t, into dst and returns
// dst[:n], n being DecodedLen(t, src). dst must have len >= n; it never
// allocates. dst and src must not overlap. Corrupt input, or a type this
// package does not support, is an error marked base.ErrCorruption. The result
// shares dst's memory.
func DecompressInto(t Type, dst, src []byte) ([]byte, error) {
	n, err := DecodedLen(t, src)
	if err != nil {
		return nil, err
	}
	if len(dst) < n {
		return nil, base.AssertionFailedf("compress: destination of %d bytes is shorter than the decoded length %d", len(dst), n)
	}
	switch t {
	case None:
		return dst[:copy(dst, src)], nil
	case Snappy:
		out, err := snappy.Decode(dst[:n], src)
		if err != nil {
			return nil, base.MarkCorruption(errors.Wrapf(err, "compress: cannot decode %d-byte snappy block", len(src)))
		}
		return out, nil
	case Zstd:
		_, frame, err := zstdHeader(src)
		if err != nil {
			return nil, err
		}
		// The decoder refuses (ErrDecoderSizeExceeded) any frame, or any
		// further frame, that would not fit in cap(dst[:0:n]), so it never
		// allocates a buffer of its own, whatever the input says.
		out, err := zstdDecoder().DecodeAll(frame, dst[:0:n])
		if err != nil {
			return nil, base.MarkCorruption(errors.Wrapf(err, "compress: cannot decode %d-byte zstd block", len(src)))
		}
		if len(out) != n {
			return nil, base.CorruptionErrorf("compress: zstd block of %d bytes decoded to %d bytes, its header says %d", len(src), len(out), n)
		}
		return out, nil
	}
	return nil, unsupportedCorruption(t)
}

func unsupportedCorruption(t Type) error {
	return base.CorruptionErrorf("compress: unsupported compression type %s (%d)", t, uint8(t))
}
