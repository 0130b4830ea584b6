package bloom

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"testing"

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
// doc, independently of Builder.
func referenceFilter(bitsPerKey int, keys [][]byte) []byte {
	m := len(keys) * bitsPerKey
	if m < 64 {
		m = 64
	}
	m = (m + 7) / 8 * 8
	k := int(math.Floor(float64(bitsPerKey)*0.69314718056 + 0.5))
	k = min(max(k, 1), 30)
	out := make([]byte, m/8+1)
	out[m/8] = byte(k)
	for _, key := range keys {
		h := Hash(key)
		delta := (h >> 17) | (h << 15)
		for range k {
			pos := int(h % uint32(m))
			out[pos/8] |= 1 << (pos % 8)
			h += delta
		}
	}
	return out
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		bitsPerKey, n int
		wantLen       int // bit array bytes + 1
		wantK         byte
	}{
		{10, 0, 9, 7},
		{10, 3, 9, 7},
		{10, 7, 10, 7}, // 70 bits round up to 72
		{10, 100, 126, 7},
		{1, 100, 14, 1},
		{2, 100, 26, 1},
		{3, 100, 39, 2},
		{20, 100, 251, 14},
		{44, 10, 56, 30},
		{50, 10, 64, 30},
		{0, 10, 9, 1}, // treated as 1 bit per key
	} {
		t.Run(fmt.Sprintf("bits_per_key=%d/n=%d", tc.bitsPerKey, tc.n), func(t *testing.T) {
			var keys [][]byte
			for i := range tc.n {
				keys = append(keys, key(i))
			}
			f := build(tc.bitsPerKey, keys...)
			require.Len(t, f, tc.wantLen)
			require.Equal(t, tc.wantK, f[len(f)-1])
			require.Equal(t, referenceFilter(max(tc.bitsPerKey, 1), keys), f)
		})
	}
}

func TestGolden(t *testing.T) {
	// Pinned bytes: a change here changes the file format.
	f := build(10, []byte("apple"), []byte("banana"), []byte("cherry"))
	require.Equal(t, "a108c2ec0c02083107", hex.EncodeToString(f))
	require.Equal(t, uint32(0x5c94729f), Hash([]byte("apple")))
}

func TestNoFalseNegativesAndRate(t *testing.T) {
	const n, absent = 10000, 100000
	b := NewBuilder(10)
	for i := range n {
		b.AddKey(key(i))
	}
	f := b.Finish(nil)
	for i := range n {
		require.True(t, MayContain(f, key(i)), "false negative for key %d", i)
	}
	fp := 0
	for i := n; i < n+absent; i++ {
		if MayContain(f, key(i)) {
			fp++
		}
	}
	rate := float64(fp) / absent
	t.Logf("false-positive rate at 10 bits/key: %.3f%%", 100*rate)
	require.LessOrEqual(t, rate, 0.02)
	// Far below the theoretical ~0.8% would mean the filter is larger
	// than the format says.
	require.GreaterOrEqual(t, rate, 0.003)
}

func TestMalformedMatchesEverything(t *testing.T) {
	for _, tc := range []struct {
		name   string
		filter []byte
	}{
		{"nil", nil},
		{"one-byte", []byte{7}},
		{"k=0", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"k=31", []byte{0, 0, 0, 0, 0, 0, 0, 0, 31}},
		{"k=255", []byte{0, 0, 255}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range 100 {
				require.True(t, MayContain(tc.filter, key(i)))
			}
		})
	}
	// An all-zero array with a valid k rejects everything: the check above
	// is not vacuous.
	require.False(t, MayContain([]byte{0, 0, 0, 0, 0, 0, 0, 0, 7}, key(1)))
}

func TestMayContainHash(t *testing.T) {
	f := build(10, key(1), key(2), key(3))
	for i := range 1000 {
		require.Equal(t, MayContain(f, key(i)), MayContainHash(f, Hash(key(i))))
	}
}

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
	require.Zero(t, testing.AllocsPerRun(100, func() { MayContain(f, k) }))
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
	f.Add([]byte{}, []byte("k"))
	f.Fuzz(func(t *testing.T, filter, k []byte) {
		got := MayContain(filter, k)
		if got != MayContainHash(filter, Hash(k)) {
			t.Fatal("MayContain and MayContainHash disagree")
		}
		if len(filter) > 1 {
			if probes := filter[len(filter)-1]; (probes == 0 || probes > 30) && !got {
				t.Fatalf("malformed filter (k=%d) rejected a key", probes)
			}
		}

		// Keys from the fuzzer's bytes, split on 0; bits per key from k.
		bitsPerKey := 1
		if len(k) > 0 {
			bitsPerKey = int(k[0]%40) + 1
		}
		keys := bytes.Split(filter, []byte{0})
		built := build(bitsPerKey, keys...)
		for _, key := range keys {
			if !MayContain(built, key) {
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
				i := 0
				for b.Loop() {
					MayContain(f, probes[i%len(probes)])
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
