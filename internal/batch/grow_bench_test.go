package batch

import (
	"fmt"
	"testing"
)

// BenchmarkBuildMillion builds issue 12's batch: a million sets of 32-byte
// keys to 32-byte values, from an empty batch, with or without a size hint.
// The bytes allocated per op are the cost of growing the buffer.
func BenchmarkBuildMillion(b *testing.B) {
	const n = 1000000
	key := make([]byte, 32)
	value := make([]byte, 32)
	for _, hint := range []bool{false, true} {
		b.Run(fmt.Sprintf("hint=%t", hint), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bt := New()
				if hint {
					bt.Grow(n * (1 + 1 + len(key) + 1 + len(value)))
				}
				for i := range n {
					key[0], key[1], key[2] = byte(i), byte(i>>8), byte(i>>16)
					bt.Set(key, value)
				}
			}
		})
	}
}
