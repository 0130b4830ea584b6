package cache

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPoisonWholeBuffer pins what poison and checkPoison promise whatever
// their implementation: poison sets every byte, first to last, of buffers of
// any length (a whole 1 MiB slab included), and checkPoison sees a single
// byte that differs anywhere, the first and the last included. Both are
// byte loops today, which under -race cost most of the sstable package's
// time (a slab poisoned byte by byte each time it goes back to the pool); a
// bulk rewrite must keep passing this.
func TestPoisonWholeBuffer(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 7, 8, 9, 4095, 4096, 4097, slabSize - 1, slabSize} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			// A guard byte either side: poison must not write past b.
			buf := make([]byte, n+2)
			for i := range buf {
				buf[i] = byte(i%251) ^ 0x5a
			}
			guard0, guard1 := buf[0], buf[n+1]
			b := buf[1 : n+1]
			require.Equal(t, n == 0, checkPoison(b), "before poison")
			poison(b)
			for i, c := range b {
				if c != poisonByte {
					t.Fatalf("byte %d of %d is %#x after poison", i, n, c)
				}
			}
			require.Equal(t, guard0, buf[0], "poison wrote before the buffer")
			require.Equal(t, guard1, buf[n+1], "poison wrote after the buffer")
			require.True(t, checkPoison(b))
			for _, at := range []int{0, n / 2, n - 1} {
				if at < 0 || n == 0 {
					continue
				}
				b[at] ^= 0x01
				require.False(t, checkPoison(b), "byte %d of %d changed", at, n)
				b[at] ^= 0x01
			}
			require.True(t, checkPoison(b))
		})
	}
}
