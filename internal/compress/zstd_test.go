package compress

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/stretchr/testify/require"
)

func TestZstdRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, level := range []int{MinZstdLevel, 2, DefaultZstdLevel, 6, 9, 10, 19, MaxZstdLevel} {
		for _, tc := range []struct {
			name string
			src  []byte
			want Type
		}{
			{"empty", nil, None},
			{"one-byte", []byte{'x'}, None},
			{"zeros", make([]byte, 4096), Zstd},
			{"block", blockLike(rng, 4096), Zstd},
			{"random", random(rng, 4096), None},
			{"large-block", blockLike(rng, 256<<10), Zstd},
		} {
			t.Run(fmt.Sprintf("level=%d/%s", level, tc.name), func(t *testing.T) {
				dst := Buffer(Zstd, nil, len(tc.src))
				out, got := CompressLevel(Zstd, level, dst, tc.src)
				require.Equal(t, tc.want, got)
				if got == Zstd {
					require.Same(t, &dst[:1][0], &out[0], "Buffer's buffer was not used")
				}
				requireDecodes(t, got, out, tc.src)
			})
		}
	}
}

// TestZstdCorrupt feeds damaged and hostile zstd blocks: each is an error
// marked corruption, never a panic, and never a buffer larger than the one
// the caller passed.
func TestZstdCorrupt(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := blockLike(rng, 4096)
	good, ct := Compress(Zstd, nil, src)
	require.Equal(t, Zstd, ct)
	k := len(binary.AppendUvarint(nil, uint64(len(src))))
	frame := good[k:]
	withLen := func(n uint64, frame []byte) []byte {
		return append(binary.AppendUvarint(nil, n), frame...)
	}
	// A frame of 1 GiB of zeros would compress to a few KiB; its header
	// alone is enough to claim it.
	hugeFrame := zstdEncoder(1).EncodeAll(make([]byte, 4<<20), nil)
	flipped := slices.Clone(good)
	flipped[len(flipped)/2] ^= 0x40
	for _, tc := range []struct {
		name    string
		src     []byte
		lenErr  bool
		message string
	}{
		{"empty", nil, true, "length header"},
		{"length-only", good[:k], true, "frame header"},
		{"overlong-length", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, true, "length header"},
		{"huge-length", withLen(1<<31, frame), true, "limit"},
		{"length-mismatch", withLen(uint64(len(src))+1, frame), true, "frame says"},
		{"bad-magic", withLen(uint64(len(src)), append([]byte{0, 0, 0, 0}, frame[4:]...)), true, "frame header"},
		{"truncated", good[:len(good)/2], false, "zstd"},
		{"flipped", flipped, false, "zstd"},
		{"two-frames", append(slices.Clone(good), frame...), false, "zstd"},
		{"hostile-size", withLen(4<<20, hugeFrame), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := DecodedLen(Zstd, tc.src)
			if tc.lenErr {
				require.True(t, base.IsCorruption(err), "%v", err)
				require.Contains(t, err.Error(), tc.message)
				n = 0
			} else {
				require.NoError(t, err)
			}
			if tc.name == "hostile-size" {
				// Honest about its size, so it decodes into a buffer of
				// that size, and into nothing larger.
				dst := make([]byte, n)
				out, err := DecompressInto(Zstd, dst, tc.src)
				require.NoError(t, err)
				require.Same(t, &dst[0], &out[0])
				// Lying about it (a 4 KiB buffer for a 4 MiB frame) is refused.
				short := withLen(4096, hugeFrame)
				_, err = DecodedLen(Zstd, short)
				require.True(t, base.IsCorruption(err), "%v", err)
				return
			}
			out, err := DecompressInto(Zstd, make([]byte, n), tc.src)
			if err == nil && tc.name == "flipped" {
				// Frames carry no checksum of their own (the block trailer
				// has one), so a flip in a literal decodes to other bytes.
				require.Len(t, out, n)
				return
			}
			require.True(t, base.IsCorruption(err), "%v", err)
			require.Contains(t, err.Error(), tc.message)
		})
	}
}

// TestZstdDecodeNoGrowth decodes a frame that declares a small size but
// decodes to more (a second frame appended): the decoder stops at the
// caller's capacity rather than allocating.
func TestZstdDecodeNoGrowth(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	big := zstdEncoder(1).EncodeAll(make([]byte, 64<<20), nil)
	small := zstdEncoder(1).EncodeAll([]byte("hello"), nil)
	src := append(append(binary.AppendUvarint(nil, 5), small...), big...)
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	_, err := DecompressInto(Zstd, make([]byte, 5), src)
	runtime.ReadMemStats(&ms1)
	require.True(t, base.IsCorruption(err), "%v", err)
	require.Less(t, ms1.TotalAlloc-ms0.TotalAlloc, uint64(1<<20), "decoding allocated")
}

func TestZstdAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	src := blockLike(rng, 4096)
	for _, level := range []int{1, 3, 9, 19} {
		dst := Buffer(Zstd, nil, len(src))
		var enc []byte
		CompressLevel(Zstd, level, dst, src) // the encoder's state is made on first use
		require.Zero(t, testing.AllocsPerRun(100, func() { enc, _ = CompressLevel(Zstd, level, dst, src) }), "level %d", level)
		out := make([]byte, len(src))
		require.Zero(t, testing.AllocsPerRun(100, func() {
			if _, err := DecompressInto(Zstd, out, enc); err != nil {
				t.Fatal(err)
			}
		}), "level %d", level)
	}
}

// benchValues returns n bytes of the bench workload's entries, as a data
// block holds them: 16-byte keys and 256-byte values, either random or
// somewhat compressible (half of each value repeats earlier text).
func benchValues(rng *rand.Rand, n int, compressible bool) []byte {
	var b []byte
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}
	for i := 0; len(b) < n; i++ {
		b = fmt.Appendf(b, "key%013d", rng.Int64N(1e12))
		v := make([]byte, 0, 256)
		if compressible {
			for len(v) < 128 {
				v = append(v, words[rng.IntN(len(words))]...)
				v = append(v, ' ')
			}
			v = v[:128]
		}
		for len(v) < 256 {
			v = append(v, byte(rng.Uint32()))
		}
		b = append(b, v...)
	}
	return b[:n]
}

// BenchmarkCodecs measures snappy and zstd at levels 1, 3 and 9 on 4 KiB
// blocks of the bench workload's entries, reporting the compressed size as
// a fraction of the input (ratio, lower is smaller).
func BenchmarkCodecs(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const size = 4 << 10
	for _, data := range []struct {
		name string
		src  []byte
	}{
		{"random", benchValues(rng, size, false)},
		{"compressible", benchValues(rng, size, true)},
	} {
		for _, c := range []struct {
			name  string
			t     Type
			level int
		}{{"snappy", Snappy, 0}, {"zstd1", Zstd, 1}, {"zstd3", Zstd, 3}, {"zstd9", Zstd, 9}} {
			dst := Buffer(c.t, nil, size)
			out, ct := CompressLevel(c.t, c.level, dst, data.src)
			ratio := float64(len(out)) / float64(size)
			enc := slices.Clone(out)
			b.Run(fmt.Sprintf("data=%s/codec=%s/op=compress", data.name, c.name), func(b *testing.B) {
				b.SetBytes(size)
				b.ReportAllocs()
				for b.Loop() {
					CompressLevel(c.t, c.level, dst, data.src)
				}
				b.ReportMetric(ratio, "ratio")
			})
			b.Run(fmt.Sprintf("data=%s/codec=%s/op=decompress", data.name, c.name), func(b *testing.B) {
				b.SetBytes(size)
				b.ReportAllocs()
				buf := make([]byte, size)
				for b.Loop() {
					if _, err := DecompressInto(ct, buf, enc); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(ratio, "ratio")
			})
		}
	}
}
