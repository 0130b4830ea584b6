package checksum

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/crc"
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
		{CRC32C, "crc32c", true},
		{XXHash32, "xxh32", false},
		{XXHash64, "xxh64", true},
		{XXH3, "xxh3", false},
		{Type(5), "Type(5)", false},
		{Type(255), "Type(255)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.name, tc.t.String())
			require.Equal(t, tc.supported, tc.t.Supported())
			got, err := ParseType(tc.name)
			if tc.supported {
				require.NoError(t, err)
				require.Equal(t, tc.t, got)
				return
			}
			require.Error(t, err)
			require.True(t, errors.Is(err, base.ErrInvalidArgument), "%v", err)
			require.Contains(t, err.Error(), tc.name)
		})
	}
}

func TestRocksDBValues(t *testing.T) {
	// RocksDB's ChecksumType values; a change breaks every file written.
	require.EqualValues(t, 0, None)
	require.EqualValues(t, 1, CRC32C)
	require.EqualValues(t, 2, XXHash32)
	require.EqualValues(t, 3, XXHash64)
	require.EqualValues(t, 4, XXH3)
}

func TestCompute(t *testing.T) {
	for _, tc := range []struct {
		t    Type
		data string
		want uint32
	}{
		{None, "anything", 0},
		// CRC-32C check value of "123456789" is 0xe3069283; stored masked.
		{CRC32C, "123456789", crc.Mask(0xe3069283)},
		{CRC32C, "", crc.Mask(0)},
		// XXH64("") = 0xef46db3751d8e999, XXH64("abc") = 0x44bc2cf5ad770999.
		{XXHash64, "", 0x51d8e999},
		{XXHash64, "abc", 0xad770999},
	} {
		t.Run(fmt.Sprintf("%s/%q", tc.t, tc.data), func(t *testing.T) {
			require.Equal(t, tc.want, Compute(tc.t, []byte(tc.data)))
		})
	}
	// The masked CRC of "123456789", pinned: it is what trailers store.
	require.Equal(t, uint32(0xc78ab0e5), Compute(CRC32C, []byte("123456789")))
}

func TestComputeBlock(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ct := range []Type{None, CRC32C, XXHash64} {
		for _, size := range []int{0, 1, 31, 32, 33, 100, 4096} {
			t.Run(fmt.Sprintf("type=%s/size=%d", ct, size), func(t *testing.T) {
				block := make([]byte, size)
				for i := range block {
					block[i] = byte(rng.Uint32())
				}
				typeByte := byte(rng.Uint32())
				want := Compute(ct, append(block[:size:size], typeByte))
				require.Equal(t, want, ComputeBlock(ct, block, typeByte))
			})
		}
	}
}

func TestComputeDetectsChange(t *testing.T) {
	data := []byte("block contents\x01")
	for _, ct := range []Type{CRC32C, XXHash64} {
		sum := Compute(ct, data)
		for i := range data {
			flipped := append([]byte(nil), data...)
			flipped[i] ^= 0x10
			require.NotEqual(t, sum, Compute(ct, flipped), "type %s, byte %d", ct, i)
		}
	}
}

func TestComputeUnsupportedPanics(t *testing.T) {
	for _, ct := range []Type{XXHash32, XXH3, Type(9)} {
		require.Panics(t, func() { Compute(ct, []byte("x")) }, "%s", ct)
		require.Panics(t, func() { ComputeBlock(ct, []byte("x"), 0) }, "%s", ct)
	}
}

func TestUnmasked(t *testing.T) {
	require.Equal(t, uint32(0xe3069283), CRC32C.Unmasked(Compute(CRC32C, []byte("123456789"))))
	require.Equal(t, uint32(12345), XXHash64.Unmasked(12345))
	require.Equal(t, uint32(7), None.Unmasked(7))
}

func TestComputeAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	data := make([]byte, 4096)
	for _, ct := range []Type{CRC32C, XXHash64} {
		require.Zero(t, testing.AllocsPerRun(100, func() { Compute(ct, data) }), "Compute %s", ct)
		require.Zero(t, testing.AllocsPerRun(100, func() { ComputeBlock(ct, data, 1) }), "ComputeBlock %s", ct)
	}
}

func BenchmarkCompute(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ct := range []Type{CRC32C, XXHash64} {
		for _, size := range []int{64, 4 << 10, 64 << 10} {
			data := make([]byte, size)
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			b.Run(fmt.Sprintf("type=%s/size=%s", ct, sizeName(size)), func(b *testing.B) {
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					ComputeBlock(ct, data, 1)
				}
			})
		}
	}
}

func sizeName(n int) string {
	if n >= 1<<10 && n%(1<<10) == 0 {
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}
