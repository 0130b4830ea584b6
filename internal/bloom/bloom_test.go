package bloom

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/shaledb/shale/internal/cpubench"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/stretchr/testify/require"
)

func key(i int) []byte { return binary.BigEndian.AppendUint32([]byte("key"), uint32(i)) }

func build(bitsPerKey int, keys ...[]byte) []byte {
	b := NewBuilder(bitsPerKey)
	for _, k := range keys {
		b.AddKey(k)
	}
	return b.Finish(nil)
}

// referenceFilter builds a filter straight from the format in the package
// doc, independently of Builder: L lines, k probes, the line from the high
// bits of h, the bits from the top 9 bits of h*golden^(j+1).
func referenceFilter(bitsPerKey int, keys [][]byte) []byte {
	lines := (len(keys)*bitsPerKey + 511) / 512
	if lines < 1 {
		lines = 1
	}
	k := int(probesByBitsPerKey[min(bitsPerKey, 40)])
	out := make([]byte, lines*64+2)
	out[lines*64] = byte(k)
	out[lines*64+1] = 0xff
	for _, key := range keys {
		h := Hash(key)
		line := int(uint64(h) * uint64(lines) >> 32)
		p := h
		for range k {
			p *= 0x9e3779b9
			bit := int(p >> 23)
			out[line*64+bit/8] |= 1 << (bit % 8)
		}
	}
	return out
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		bitsPerKey, n int
		wantLines     int
		wantK         byte
	}{
		{10, 0, 1, 6},
		{10, 3, 1, 6},
		{10, 51, 1, 6},
		{10, 52, 2, 6}, // 520 bits round up to two lines
		{10, 100, 2, 6},
		{10, 1000, 20, 6},
		{1, 100, 1, 1},
		{2, 1000, 4, 1},
		{3, 100, 1, 2},
		{20, 100, 4, 11},
		{40, 10, 1, 17},
		{50, 10, 1, 17},
		{0, 10, 1, 1}, // treated as 1 bit per key
	} {
		t.Run(fmt.Sprintf("bits_per_key=%d/n=%d", tc.bitsPerKey, tc.n), func(t *testing.T) {
			var keys [][]byte
			for i := range tc.n {
				keys = append(keys, key(i))
			}
			f := build(tc.bitsPerKey, keys...)
			require.Len(t, f, tc.wantLines*64+2)
			require.Equal(t, Size(tc.n, tc.bitsPerKey), len(f))
			require.Equal(t, tc.wantK, f[len(f)-2])
			require.Equal(t, byte(EncodingBlocked), f[len(f)-1])
			require.Equal(t, referenceFilter(max(tc.bitsPerKey, 1), keys), f)
		})
	}
}

// TestProbesTable pins the k the Builder chooses: monotone in the bits per
// key, and round(b ln 2) or below (blocking moves the best k down).
func TestProbesTable(t *testing.T) {
	prev := 1
	for b := 1; b <= 60; b++ {
		k := numProbes(b)
		require.GreaterOrEqual(t, k, prev, "bits per key %d", b)
		require.LessOrEqual(t, k, max(1, int(math.Round(float64(b)*math.Ln2))), "bits per key %d", b)
		require.LessOrEqual(t, k, maxProbes)
		prev = k
	}
	require.Equal(t, 6, numProbes(10))
}

func TestGolden(t *testing.T) {
	// Pinned bytes: a change here changes the file format.
	f := build(10, []byte("apple"), []byte("banana"), []byte("cherry"))
	require.Equal(t, "200000000010000000000040000000000600000000005000080000000000000000000000000000000400000000000000d000000281200200000004000000000006ff", hex.EncodeToString(f))
	require.Equal(t, uint32(0x5c94729f), Hash([]byte("apple")))
	// Two lines, so that the line choice is pinned too.
	var keys [][]byte
	for i := range 60 {
		keys = append(keys, key(i))
	}
	f = build(10, keys...)
	require.Len(t, f, 130)
	require.Equal(t, "d0210a2800825100c80b68c08020080e014101a172048200623413fbe38921880810011289c5812a50000085004205031711c60129a72c540350122c40004692adc090a9124904d5802800400e096016094020ce1972840c22060b210923c06a559331096cd00a5234a48010442304380831853e030423a38015081cca56214706ff", hex.EncodeToString(f))
}

// TestFalsePositiveRate checks there are no false negatives and measures
// the false-positive rate against the model in the package doc.
func TestFalsePositiveRate(t *testing.T) {
	for _, tc := range []struct {
		bitsPerKey int
		model      float64 // expected rate, from the package doc's model
	}{
		{10, 0.0096},
		{20, 0.00019},
		{6, 0.0575},
	} {
		t.Run(fmt.Sprintf("bits_per_key=%d", tc.bitsPerKey), func(t *testing.T) {
			const n, absent = 20000, 400000
			b := NewBuilder(tc.bitsPerKey)
			for i := range n {
				b.AddKey(key(i))
			}
			f := b.Finish(nil)
			for i := range n {
				require.True(t, mayContain(f, key(i)), "false negative for key %d", i)
			}
			fp := 0
			for i := n; i < n+absent; i++ {
				if mayContain(f, key(i)) {
					fp++
				}
			}
			rate := float64(fp) / absent
			t.Logf("false-positive rate at %d bits/key: %.4f%% (model %.4f%%)", tc.bitsPerKey, 100*rate, 100*tc.model)
			// Within 25% of the model (and 3 false positives for the
			// sparse case): far below would mean a filter larger than
			// the format says, far above a poor probe sequence.
			require.InDelta(t, tc.model, rate, max(tc.model/4, 3.0/absent))
		})
	}
}

func TestMalformedMatchesEverything(t *testing.T) {
	valid := build(10, key(1), key(2))
	with := func(edit func(f []byte) []byte) []byte { return edit(bytes.Clone(valid)) }
	for _, tc := range []struct {
		name   string
		filter []byte
	}{
		{"nil", nil},
		{"one-byte", []byte{7}},
		{"trailer only", []byte{6, 0xff}},
		{"short line", make([]byte, 63+2)},
		{"k=0", with(func(f []byte) []byte { f[len(f)-2] = 0; return f })},
		{"k=31", with(func(f []byte) []byte { f[len(f)-2] = 31; return f })},
		{"k=255", with(func(f []byte) []byte { f[len(f)-2] = 255; return f })},
		{"unknown encoding", with(func(f []byte) []byte { f[len(f)-1] = 0xfe; return f })},
		{"flat pre-release filter", append(make([]byte, 64), 7)},
		{"partial line", with(func(f []byte) []byte { return append(f[:len(f)-2], 0, 6, 0xff) })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range 100 {
				require.True(t, mayContain(tc.filter, key(i)))
			}
		})
	}
	// An all-zero line with a valid trailer rejects everything: the checks
	// above are not vacuous.
	zero := append(make([]byte, 64), 6, 0xff)
	for i := range 100 {
		require.False(t, mayContain(zero, key(i)))
	}
}

func TestCacheAligned(t *testing.T) {
	f := build(10, key(1), key(2), key(3))
	buf := make([]byte, len(f)+64)
	for skip := range 64 {
		g := buf[skip : skip+len(f)]
		copy(g, f)
		a := CacheAligned(g)
		require.Equal(t, f, a)
		require.Zero(t, uintptr(unsafe.Pointer(unsafe.SliceData(a)))%LineSize)
		if uintptr(unsafe.Pointer(unsafe.SliceData(g)))%LineSize == 0 {
			require.Same(t, unsafe.SliceData(g), unsafe.SliceData(a), "aligned input is not copied")
		}
	}
	require.Empty(t, CacheAligned(nil))
}

// mayContain is a filter query for key: what every user of the package does,
// hashing a key once and probing filters with the hash.
func mayContain(filter, key []byte) bool { return MayContainHash(filter, Hash(key)) }

func TestBuilderReuse(t *testing.T) {
	b := NewBuilder(10)
	b.AddKey(key(99))
	prefix := []byte("prefix")
	first := b.Finish(append([]byte(nil), prefix...))
	require.Equal(t, prefix, first[:len(prefix)])
	require.Equal(t, build(10, key(99)), first[len(prefix):])
	require.Equal(t, first[len(prefix):], b.Finish(nil), "Finish does not reset")

	b.Reset()
	require.Zero(t, b.NumKeys())
	b.AddKey(key(1))
	b.AddHash(Hash(key(2)))
	require.Equal(t, build(10, key(1), key(2)), b.Finish(nil))

	// Finish into a dirty buffer with spare capacity clears the array.
	dirty := bytes.Repeat([]byte{0xff}, 64)[:0]
	require.Equal(t, build(10, key(1), key(2)), b.Finish(dirty))
}

func TestMayContainAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	f := build(10, key(1), key(2))
	k := key(3)
	require.Zero(t, testing.AllocsPerRun(100, func() { mayContain(f, k) }))
	h := Hash(k)
	require.Zero(t, testing.AllocsPerRun(100, func() { MayContainHash(f, h) }))
}

// FuzzBloom queries arbitrary bytes as a filter (never panicking), and
// checks that a filter built over keys taken from the input has no false
// negatives.
func FuzzBloom(f *testing.F) {
	f.Add(build(10, []byte("apple"), []byte("banana")), []byte("apple"))
	f.Add(build(10), []byte(""))
	f.Add(build(1, key(1), key(2), key(3)), key(4))
	f.Add(build(44, key(1)), key(1))
	f.Add([]byte{0xff, 0x1f}, []byte("k"))
	f.Add(append(make([]byte, 64), 6, 0xff), []byte("k"))
	f.Add(append(bytes.Repeat([]byte{0x55}, 128), 30, 0xff), []byte("k"))
	f.Add([]byte{}, []byte("k"))
	f.Fuzz(func(t *testing.T, filter, k []byte) {
		got := mayContain(filter, k)
		if got != MayContainHash(filter, Hash(k)) {
			t.Fatal("MayContain and MayContainHash disagree")
		}
		if n := len(filter) - 2; !got && (n < 64 || n%64 != 0 || filter[n+1] != EncodingBlocked ||
			filter[n] == 0 || filter[n] > 30) {
			t.Fatalf("malformed filter (%d bytes, trailer % x) rejected a key", len(filter), filter[max(0, n):])
		}

		// Keys from the fuzzer's bytes, split on 0; bits per key from k.
		bitsPerKey := 1
		if len(k) > 0 {
			bitsPerKey = int(k[0]%40) + 1
		}
		keys := bytes.Split(filter, []byte{0})
		built := build(bitsPerKey, keys...)
		for _, key := range keys {
			if !mayContain(built, key) {
				t.Fatalf("false negative for %q", key)
			}
		}
	})
}

func BenchmarkMayContain(b *testing.B) {
	for _, bitsPerKey := range []int{10, 20} {
		for _, n := range []int{1000, 100000} {
			bb := NewBuilder(bitsPerKey)
			for i := range n {
				bb.AddKey(key(i))
			}
			f := bb.Finish(nil)
			// Half present, half absent.
			probes := make([][]byte, 1024)
			for i := range probes {
				probes[i] = key(i * n / 512)
			}
			b.Run(fmt.Sprintf("bits_per_key=%d/keys=%d", bitsPerKey, n), func(b *testing.B) {
				b.ReportAllocs()
				defer cpubench.Start(b)()
				i := 0
				for b.Loop() {
					mayContain(f, probes[i%len(probes)])
					i++
				}
			})
		}
	}
}

func BenchmarkBuild(b *testing.B) {
	const n = 10000
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = key(i)
	}
	bb := NewBuilder(10)
	var out []byte
	b.Run(fmt.Sprintf("bits_per_key=10/keys=%d", n), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bb.Reset()
			for _, k := range keys {
				bb.AddKey(k)
			}
			out = bb.Finish(out[:0])
		}
	})
}

// BenchmarkMayContainHash measures the probes alone (hashes precomputed) on
// filters that fit in the L2 cache (keys=100000, 122 KiB) and that do not
// (keys=10000000, 12 MiB), half of the queries for present keys.
func BenchmarkMayContainHash(b *testing.B) {
	for _, n := range []int{100000, 10000000} {
		bb := NewBuilder(10)
		rng := rand.New(rand.NewPCG(1, 2))
		for range n {
			bb.AddHash(rng.Uint32())
		}
		f := bb.Finish(nil)
		// Present hashes replay the generator; absent ones come from
		// another seed.
		probes := make([]uint32, 1<<16)
		present := rand.New(rand.NewPCG(1, 2))
		absent := rand.New(rand.NewPCG(3, 4))
		for i := range probes {
			if i%2 == 0 {
				probes[i] = present.Uint32()
			} else {
				probes[i] = absent.Uint32()
			}
		}
		b.Run(fmt.Sprintf("bits_per_key=10/keys=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			defer cpubench.Start(b)()
			i := 0
			for b.Loop() {
				MayContainHash(f, probes[i%len(probes)])
				i++
			}
		})
	}
}
