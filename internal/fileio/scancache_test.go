package fileio

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPrefetchBufferSequential pins which visited ranges Sequential calls a
// scan's: one that starts where the last ended (forward) or ends where it
// started (backward), whatever came between, and nothing else.
func TestPrefetchBufferSequential(t *testing.T) {
	type visit struct {
		off  int64
		n    int
		want bool
	}
	for _, tc := range []struct {
		name   string
		visits []visit
	}{
		{"first visit", []visit{{0, 100, false}}},
		{"forward run", []visit{{0, 100, false}, {100, 50, true}, {150, 200, true}}},
		{"backward run", []visit{{350, 200, false}, {150, 200, true}, {100, 50, true}, {0, 100, true}}},
		{"gap ends the run", []visit{{0, 100, false}, {100, 50, true}, {200, 50, false}, {250, 10, true}}},
		{"overlap is not a run", []visit{{0, 100, false}, {50, 100, false}}},
		{"same block again", []visit{{0, 100, false}, {0, 100, false}}},
		{"seek back to the start", []visit{{0, 100, false}, {100, 100, true}, {200, 100, true}, {0, 100, false}, {100, 100, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPrefetchBuffer(nil, 0, 0, 0, false)
			for i, v := range tc.visits {
				require.Equal(t, v.want, p.Sequential(v.off, v.n), "visit %d: %d bytes at %d", i, v.n, v.off)
			}
		})
	}
}
