package compress

import (
	"math/rand/v2"
	"testing"
)

// TestBufferCompressesInPlace pins Buffer's promise: with its buffer,
// Compress allocates nothing, also for data that does not compress (which
// it returns as src, so a buffer of its own would be lost).
func TestBufferCompressesInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	zeros := make([]byte, 4096)
	for _, src := range [][]byte{random, zeros} {
		buf := Buffer(Snappy, nil, len(src))
		allocs := testing.AllocsPerRun(10, func() {
			buf = Buffer(Snappy, buf, len(src))
			Compress(Snappy, buf, src)
		})
		if allocs != 0 {
			t.Fatalf("Compress with Buffer's buffer allocated %v times", allocs)
		}
	}
	if b := Buffer(None, nil, 100); b != nil {
		t.Fatalf("Buffer(None) allocated %d bytes", cap(b))
	}
}
