package crc

import (
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shaledb/shale/internal/invariants"
	"github.com/stretchr/testify/require"
)

func ascending(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

func descending(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(n - 1 - i)
	}
	return b
}

func filled(n int, v byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = v
	}
	return b
}

// iSCSI read command, from LevelDB's crc32c_test.cc (RFC 3720 B.4).
var iscsiRead = []byte{
	0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
	0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
	0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
}

// The raw values are LevelDB's crc32c test vectors plus the CRC-32C check
// value of "123456789"; the masked values were computed independently with a
// bit-at-a-time CRC-32C and the mask formula in Python, not with this package.
var vectors = []struct {
	name   string
	data   []byte
	raw    uint32
	masked uint32
}{
	{"empty", nil, 0x00000000, 0xa282ead8},
	{"a", []byte("a"), 0xc1d04330, 0x28e46e78},
	{"check-123456789", []byte("123456789"), 0xe3069283, 0xc78ab0e5},
	{"zeros-32", make([]byte, 32), 0x8a9136aa, 0x0fd7fffa},
	{"ones-32", filled(32, 0xff), 0x62a8ab43, 0xf909b029},
	{"ascending-32", ascending(32), 0x46dd794e, 0x951f7892},
	{"descending-32", descending(32), 0x113fdb5c, 0x593b0d57},
	{"iscsi-read-48", iscsiRead, 0xd9963a56, 0x17309e04},
	{"wal-type-byte-full", []byte{1}, 0xa016d052, 0x43282b05},
	{"wal-full-hello", []byte("\x01hello"), 0x6719daea, 0x5857b90b},
}

func TestVectors(t *testing.T) {
	for _, v := range vectors {
		t.Run(v.name, func(t *testing.T) {
			require.Equal(t, v.raw, Value(v.data), "Value (raw)")
			require.Equal(t, v.raw, uint32(New(v.data)), "uint32(New)")
			require.Equal(t, v.masked, New(v.data).Value(), "New().Value (masked)")
			require.Equal(t, v.masked, Mask(v.raw), "Mask")
			require.Equal(t, v.raw, Unmask(v.masked), "Unmask")
		})
	}
}

// TestUpdateSplits checks that summing in pieces equals summing at once, for
// every split point of a few inputs, and that the zero CRC is the identity.
func TestUpdateSplits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 300)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"hello-world", []byte("hello world")},
		{"iscsi-read-48", iscsiRead},
		{"random-300", random},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := New(tc.data)
			require.Equal(t, crc32.Checksum(tc.data, crc32.MakeTable(crc32.Castagnoli)), uint32(want))
			require.Equal(t, want, CRC(0).Update(tc.data))
			for i := 0; i <= len(tc.data); i++ {
				for _, j := range []int{i, (i + len(tc.data)) / 2, len(tc.data)} {
					got := New(tc.data[:i]).Update(tc.data[i:j]).Update(tc.data[j:])
					require.Equal(t, want, got, "split at %d,%d", i, j)
				}
			}
		})
	}
}

// maskFixedPoints are the only inputs that Mask leaves unchanged, found by
// checking all 2^32 values (they are also the only x with Mask(Mask(x)) == x).
// LevelDB's test asserts Mask(c) != c for one particular c; that holds for
// every input but these two.
var maskFixedPoints = []uint32{0x8299f00b, 0xd7ee9ab5}

func TestMaskRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	samples := []uint32{0, 1, 0xffffffff, maskDelta, 0x80000000, 0x7fff, 0x8000}
	samples = append(samples, maskFixedPoints...)
	for range 1000 {
		samples = append(samples, rng.Uint32())
	}
	for _, c := range samples {
		m := Mask(c)
		require.Equal(t, c, Unmask(m), "Unmask(Mask(%#x))", c)
		require.Equal(t, c, Unmask(Unmask(Mask(m))), "Unmask twice of Mask twice (%#x)", c)
		require.Equal(t, m, Unmask(Mask(m)), "Unmask(Mask(Mask(%#x)))", c)
		if slices.Contains(maskFixedPoints, c) {
			require.Equal(t, c, m, "%#x is a fixed point of Mask", c)
			continue
		}
		require.NotEqual(t, c, m, "Mask(%#x) must differ from its input", c)
		require.NotEqual(t, c, Mask(m), "Mask(Mask(%#x))", c)
	}
}

func TestAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	data := ascending(4096)
	var sink uint32
	allocs := testing.AllocsPerRun(100, func() {
		sink += New(data[:100]).Update(data[100:]).Value() + Value(data)
	})
	require.Zero(t, allocs)
	_ = sink
}

func BenchmarkCRC(b *testing.B) {
	for _, size := range []int{64, 4 << 10, 32 << 10, 1 << 20} {
		data := make([]byte, size)
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		b.Run(fmt.Sprintf("size=%s", sizeName(size)), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			var sink uint32
			for b.Loop() {
				sink += New(data).Value()
			}
			_ = sink
		})
	}
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	default:
		return fmt.Sprintf("%dB", n)
	}
}
