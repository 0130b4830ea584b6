package block

import (
	"encoding/binary"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
)

// TrailerLen is the length of a block trailer: the compression type byte and
// the 4-byte checksum. Part of the file format; do not change.
const TrailerLen = 5

// AppendTrailer appends the trailer of block, stored with compression comp
// and checked with ct, to dst and returns the extended slice. block is the
// block as stored (already compressed when comp says so); it may be the tail
// of dst.
func AppendTrailer(dst []byte, ct checksum.Type, comp compress.Type, block []byte) []byte {
	sum := checksum.ComputeBlock(ct, block, byte(comp))
	dst = append(dst, byte(comp))
	return binary.LittleEndian.AppendUint32(dst, sum)
}

// SplitTrailer splits raw, a block as stored followed by its trailer, into the
// block bytes (a subslice of raw) and the compression type the trailer
// names. It does not verify the checksum (see ValidateChecksum) nor that the
// compression type is supported (decompression does). A raw shorter than a
// trailer is an error marked base.ErrCorruption.
func SplitTrailer(raw []byte) ([]byte, compress.Type, error) {
	if len(raw) < TrailerLen {
		return nil, 0, base.CorruptionErrorf("block: %d bytes are too short to hold a block trailer", len(raw))
	}
	n := len(raw) - TrailerLen
	return raw[:n:n], compress.Type(raw[n]), nil
}

// ValidateChecksum verifies the trailer of raw, a block as stored followed by
// its trailer, read from file at offset. A mismatch is an error marked
// base.ErrCorruption in RocksDB's words:
//
//	block checksum mismatch: stored = S, computed = C, type = T  in FILE offset O size N
//
// where CRC32C values are printed unmasked and N excludes the trailer. A
// checksum type this package cannot compute, or a raw too short for a
// trailer, is also corruption. ct == checksum.None skips the check. raw is
// not retained.
func ValidateChecksum(ct checksum.Type, raw []byte, file string, offset uint64) error {
	if len(raw) < TrailerLen {
		return base.CorruptionErrorf("block: %d bytes are too short to hold a block trailer  in %s offset %d",
			len(raw), file, offset)
	}
	if !ct.Supported() {
		return base.CorruptionErrorf("block: unsupported checksum type %s (%d)  in %s offset %d",
			ct, uint8(ct), file, offset)
	}
	if ct == checksum.None {
		return nil
	}
	n := len(raw) - 4
	stored := binary.LittleEndian.Uint32(raw[n:])
	computed := checksum.Compute(ct, raw[:n])
	if stored == computed {
		return nil
	}
	return base.CorruptionErrorf("block checksum mismatch: stored = %d, computed = %d, type = %d  in %s offset %d size %d",
		ct.Unmasked(stored), ct.Unmasked(computed), uint8(ct), file, offset, len(raw)-TrailerLen)
}
