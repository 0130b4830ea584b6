package compress

import (
	"encoding/binary"
	"math"
	"runtime"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/klauspost/compress/zstd"
	"github.com/shaledb/shale/internal/base"
)

// zstd levels, as RocksDB's compression_opts level and the zstd CLI number
// them.
const (
	MinZstdLevel     = 1
	MaxZstdLevel     = 22
	DefaultZstdLevel = 3
)

// maxZstdDecoded bounds what one zstd block may declare it decodes to, and
// what the shared decoder ever decodes (RocksDB's blocks are far smaller;
// the sstable reader applies its own, equal block limit).
const maxZstdDecoded = 256 << 20

// zstdBound is zstd's ZSTD_COMPRESSBOUND for n bytes plus the frame header
// and the varint length prefix: EncodeAll into a buffer this large never
// grows it.
func zstdBound(n int) int {
	b := n + n>>8 + 32 + binary.MaxVarintLen32
	if n < 128<<10 {
		b += (128<<10 - n) >> 11
	}
	return b
}

// The encoders, one per klauspost encoder level (it has four: zstd levels
// 1-2 map to fastest, 3-5 to default, 6-9 to better, 10-22 to best, as
// zstd.EncoderLevelFromZstd says), made when first used. EncodeAll is safe
// for concurrent use; each encoder keeps up to GOMAXPROCS states.
var (
	encOnce [zstd.SpeedBestCompression + 1]sync.Once
	encs    [zstd.SpeedBestCompression + 1]*zstd.Encoder
)

func zstdEncoder(level int) *zstd.Encoder {
	level = min(max(level, MinZstdLevel), MaxZstdLevel)
	l := zstd.EncoderLevelFromZstd(level)
	encOnce[l].Do(func() {
		e, err := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(l),
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
			// A block's own trailer checksums it.
			zstd.WithEncoderCRC(false),
			// One frame of one segment that declares its content size.
			zstd.WithSingleSegment(true),
		)
		if err != nil {
			panic(err) // only for invalid options
		}
		encs[l] = e
	})
	return encs[l]
}

// EncodeZstd returns src as a zstd block at level (clamped to MinZstdLevel to
// MaxZstdLevel), appended to dst[:0], whether or not that saves space; the
// result shares dst's memory when its capacity is at least Buffer's. src
// must be shorter than 4 GiB. Most callers want CompressLevel.
func EncodeZstd(level int, dst, src []byte) []byte {
	if n := zstdBound(len(src)); cap(dst) < n {
		dst = make([]byte, 0, n)
	}
	out := binary.AppendUvarint(dst[:0], uint64(len(src)))
	return zstdEncoder(level).EncodeAll(src, out)
}

// zstdDecoder returns the decoder of every zstd block, made when first
// used (a program that reads no zstd pays nothing for it). DecodeAll is
// safe for concurrent use. With the cap limit it decodes into the caller's
// buffer and refuses a frame that would not fit there instead of
// allocating.
var zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(runtime.GOMAXPROCS(0)),
		zstd.WithDecodeAllCapLimit(true),
		zstd.WithDecoderMaxMemory(maxZstdDecoded),
		zstd.WithDecoderMaxWindow(maxZstdDecoded),
	)
	if err != nil {
		panic(err) // only for invalid options
	}
	return d
})

// zstdHeader splits a zstd block into its decoded length and its frame,
// checking that the frame declares that same content size.
func zstdHeader(src []byte) (int, []byte, error) {
	v, k := binary.Uvarint(src)
	if k <= 0 || v > math.MaxUint32 {
		return 0, nil, base.CorruptionErrorf("compress: bad zstd length header in %d-byte block", len(src))
	}
	if v > maxZstdDecoded {
		return 0, nil, base.CorruptionErrorf("compress: zstd block of %d bytes claims %d decoded bytes, over the %d-byte limit", len(src), v, maxZstdDecoded)
	}
	frame := src[k:]
	var h zstd.Header
	if err := h.Decode(frame); err != nil {
		return 0, nil, base.MarkCorruption(errors.Wrapf(err, "compress: bad zstd frame header in %d-byte block", len(src)))
	}
	if !h.HasFCS || h.FrameContentSize != v {
		return 0, nil, base.CorruptionErrorf("compress: zstd block of %d bytes: length header says %d, frame says %d (declared: %t)", len(src), v, h.FrameContentSize, h.HasFCS)
	}
	return int(v), frame, nil
}
