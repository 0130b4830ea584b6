package compress

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/golang/snappy"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/stretchr/testify/require"
)

func TestTypeNames(t *testing.T) {
	for _, tc := range []struct {
		t         Type
		name      string
		supported bool
	}{
		{None, "none", true},
		{Snappy, "snappy", true},
		{Type(2), "zlib", false},
		{Type(4), "lz4", false},
		{Zstd, "zstd", true},
		{Type(8), "Type(8)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.name, tc.t.String())
			require.Equal(t, tc.supported, tc.t.Supported())
			got, err := ParseType(tc.name)
			if !tc.supported {
				require.True(t, errors.Is(err, base.ErrInvalidArgument), "%v", err)
				require.Contains(t, err.Error(), tc.name)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.t, got)
		})
	}
	// RocksDB's compression ids; a change breaks every file written.
	require.EqualValues(t, 0, None)
	require.EqualValues(t, 1, Snappy)
	require.EqualValues(t, 7, Zstd)
}

// blockLike returns n bytes resembling a data block: keys sharing prefixes
// and short values, compressible but not trivially.
func blockLike(rng *rand.Rand, n int) []byte {
	var b []byte
	for len(b) < n {
		b = fmt.Appendf(b, "user/%08d/field%02d=", rng.IntN(1e6), rng.IntN(20))
		for range 8 {
			b = append(b, byte('a'+rng.IntN(26)))
		}
	}
	return b[:n]
}

func random(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func TestCompressRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name string
		t    Type
		src  []byte
		want Type
	}{
		{"none/block", None, blockLike(rng, 4096), None},
		{"snappy/empty", Snappy, nil, None},
		{"snappy/one-byte", Snappy, []byte{'x'}, None},
		{"snappy/zeros", Snappy, make([]byte, 4096), Snappy},
		{"snappy/block", Snappy, blockLike(rng, 4096), Snappy},
		{"snappy/random", Snappy, random(rng, 4096), None},
		{"snappy/large-block", Snappy, blockLike(rng, 256<<10), Snappy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, got := Compress(tc.t, nil, tc.src)
			require.Equal(t, tc.want, got)
			if got == None {
				require.Equal(t, tc.src, out)
			}
			// LevelDB's rule, checked against snappy directly: compressed
			// exactly when that saves at least an eighth.
			if tc.t == Snappy {
				enc := snappy.Encode(nil, tc.src)
				pays := len(enc) < len(tc.src)-len(tc.src)/8
				require.Equal(t, pays, got == Snappy, "snappy size %d of %d", len(enc), len(tc.src))
			}
			requireDecodes(t, got, out, tc.src)
		})
	}
}

// requireDecodes checks that out, compressed as ct, declares src's length
// and decompresses to src.
func requireDecodes(t *testing.T, ct Type, out, src []byte) {
	t.Helper()
	n, err := DecodedLen(ct, out)
	require.NoError(t, err)
	require.Equal(t, len(src), n)
	dec, err := DecompressInto(ct, make([]byte, n), out)
	require.NoError(t, err)
	require.True(t, bytes.Equal(src, dec))
}

func TestCompressThreshold(t *testing.T) {
	// Random bytes followed by zeros: the compressed size falls as the zero
	// run grows, so the outcome flips from None to Snappy exactly where the
	// 1/8 rule says.
	rng := rand.New(rand.NewPCG(1, 2))
	const size = 4096
	prefix := random(rng, size)
	flips := 0
	last := None
	for zeros := 0; zeros <= size; zeros += 16 {
		src := append(append([]byte(nil), prefix[:size-zeros]...), make([]byte, zeros)...)
		_, got := Compress(Snappy, nil, src)
		want := None
		if len(snappy.Encode(nil, src)) < size-size/8 {
			want = Snappy
		}
		require.Equal(t, want, got, "zeros=%d", zeros)
		if got != last {
			flips++
			last = got
		}
	}
	require.Equal(t, 1, flips, "expected one switch from None to Snappy")
}

func TestCompressReusesDst(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := blockLike(rng, 4096)
	dst := make([]byte, 0, snappy.MaxEncodedLen(len(src)))
	out, ct := Compress(Snappy, dst, src)
	require.Equal(t, Snappy, ct)
	require.Same(t, &dst[:1][0], &out[0])
}

func TestDecodeCorrupt(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	good, ct := Compress(Snappy, nil, blockLike(rng, 4096))
	require.Equal(t, Snappy, ct)
	for _, tc := range []struct {
		name    string
		t       Type
		src     []byte
		lenErr  bool   // DecodedLen fails too
		message string // part of the error text
	}{
		{"empty", Snappy, nil, true, "length header"},
		{"overlong-length", Snappy, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, true, "length header"},
		{"truncated", Snappy, good[:len(good)/2], false, "snappy"},
		{"bad-tag", Snappy, append([]byte{10}, 0xff, 0xff, 0xff), false, "snappy"},
		{"lz4", Type(4), good, true, "lz4"},
		{"unknown", Type(200), good, true, "Type(200)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := DecodedLen(tc.t, tc.src)
			if tc.lenErr {
				require.True(t, base.IsCorruption(err), "%v", err)
				require.Contains(t, err.Error(), tc.message)
				n = 0
			} else {
				require.NoError(t, err)
			}
			_, err = DecompressInto(tc.t, make([]byte, n), tc.src)
			require.True(t, base.IsCorruption(err), "%v", err)
			require.Contains(t, err.Error(), tc.message)
		})
	}
}

func TestDecompressIntoShortDst(t *testing.T) {
	src, ct := Compress(Snappy, nil, make([]byte, 100))
	require.Equal(t, Snappy, ct)
	call := func() error {
		_, err := DecompressInto(Snappy, make([]byte, 99), src)
		return err
	}
	if invariants.Enabled {
		require.Panics(t, func() { _ = call() })
		return
	}
	err := call()
	require.True(t, errors.IsAssertionFailure(err), "%v", err)
}

func TestAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	src := blockLike(rng, 4096)
	dst := make([]byte, 0, snappy.MaxEncodedLen(len(src)))
	var enc []byte
	require.Zero(t, testing.AllocsPerRun(100, func() { enc, _ = Compress(Snappy, dst, src) }))
	out := make([]byte, len(src))
	require.Zero(t, testing.AllocsPerRun(100, func() {
		if _, err := DecompressInto(Snappy, out, enc); err != nil {
			t.Fatal(err)
		}
	}))
}

// FuzzDecompress decodes arbitrary bytes as each block type, and checks that
// compressing the input round-trips.
func FuzzDecompress(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, src := range [][]byte{nil, []byte("a"), make([]byte, 100), blockLike(rng, 300), random(rng, 64)} {
		enc, _ := Compress(Snappy, nil, src)
		f.Add(byte(Snappy), enc)
		f.Add(byte(None), src)
	}
	for _, src := range [][]byte{nil, make([]byte, 100), blockLike(rng, 300), blockLike(rng, 4096)} {
		enc, _ := CompressLevel(Zstd, 1, nil, src)
		f.Add(byte(Zstd), enc)
		f.Add(byte(Zstd), append(binary.AppendUvarint(nil, uint64(len(src))), zstdEncoder(19).EncodeAll(src, nil)...))
	}
	f.Add(byte(Snappy), []byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add(byte(Zstd), []byte("zstd"))
	f.Fuzz(func(t *testing.T, typ byte, data []byte) {
		ct := Type(typ)
		n, err := DecodedLen(ct, data)
		if err == nil && n <= 1<<20 {
			// Larger claimed lengths are the caller's to bound (a block's
			// handle says how large it can be).
			var out []byte
			out, err = DecompressInto(ct, make([]byte, n), data)
			if err == nil && len(out) != n {
				t.Fatalf("decoded %d bytes, header said %d", len(out), n)
			}
		}
		if err != nil && !base.IsCorruption(err) {
			t.Fatalf("error not marked corruption: %v", err)
		}

		for _, c := range []Type{Snappy, Zstd} {
			enc, got := Compress(c, nil, data)
			n, err = DecodedLen(got, enc)
			if err != nil {
				t.Fatal(err)
			}
			dec, err := DecompressInto(got, make([]byte, n), enc)
			if err != nil || !bytes.Equal(dec, data) {
				t.Fatalf("round trip %s: %v", c, err)
			}
		}
	})
}

func BenchmarkCompress(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{4 << 10, 32 << 10} {
		src := blockLike(rng, size)
		dst := make([]byte, 0, snappy.MaxEncodedLen(size))
		b.Run(fmt.Sprintf("type=snappy/size=%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				Compress(Snappy, dst, src)
			}
		})
	}
}

func BenchmarkDecompressInto(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{4 << 10, 32 << 10} {
		src := blockLike(rng, size)
		enc, ct := Compress(Snappy, nil, src)
		if ct != Snappy {
			b.Fatal("not compressed")
		}
		out := make([]byte, size)
		b.Run(fmt.Sprintf("type=snappy/size=%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecompressInto(Snappy, out, enc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
