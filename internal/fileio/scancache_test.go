package fileio

import (
	"bytes"
	"context"
	"testing"

	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/ioctx"
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

// TestPrefetchBufferKeepsCapacity checks that a refill after a shorter one
// reuses the buffer: a scan whose blocks are partly found in the block cache
// breaks its read runs at every cached block, and each run starts with an
// exact read before the readahead grows again. The buffer used to keep only
// the last read's length as capacity, so every growth allocated anew.
func TestPrefetchBufferKeepsCapacity(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	fs, data := testFile(t, "f", 1<<20)
	r := openTest(t, fs, "f", Options{})
	p := NewPrefetchBuffer(r, 0, 8<<10, 64<<10, false)
	ctx := context.Background()
	bad := -1 // the first offset read wrong, outside the measured calls
	run := func(start int) {
		// One exact read, then sequential ones that read ahead up to
		// 64 KiB, then a jump: the next run starts exact again.
		for off := start; off < start+256<<10; off += 4096 {
			got, err := p.Read(ctx, ioctx.IOOptions{}, int64(off), 4096)
			if (err != nil || !bytes.Equal(data[off:off+4096], got)) && bad < 0 {
				bad = off
			}
		}
	}
	run(0) // grows the buffer to 64 KiB
	start := 0
	allocs := testing.AllocsPerRun(10, func() {
		start = (start + 256<<10) % (768 << 10)
		run(start)
	})
	require.Equal(t, -1, bad, "first offset read wrong")
	require.Zero(t, allocs)
}

// TestPrefetchBufferReadaheadThroughCachedBlocks checks that blocks a scan
// finds in the block cache (visited with Sequential, not read) keep the
// readahead's run going: a scan over 1 MiB of 4 KiB blocks that finds every
// fifth one cached reads ahead as a scan that reads them all does, instead
// of starting over with an exact read after each cached block.
func TestPrefetchBufferReadaheadThroughCachedBlocks(t *testing.T) {
	mfs, data := testFile(t, "f", 1<<20)
	ctx := context.Background()
	for _, cachedEvery := range []int{0, 5, 2} {
		fs, reads := countingFS(mfs)
		r := openTest(t, fs, "f", Options{})
		p := NewPrefetchBuffer(r, 0, 0, 0, false)
		for i, off := 0, 0; off < 1<<20; i, off = i+1, off+4096 {
			p.Sequential(int64(off), 4096)
			if cachedEvery > 0 && i%cachedEvery == 0 {
				continue
			}
			got, err := p.Read(ctx, ioctx.IOOptions{}, int64(off), 4096)
			require.NoError(t, err)
			require.True(t, bytes.Equal(data[off:off+4096], got), "offset %d", off)
		}
		// 8 KiB doubling to 256 KiB: 1 exact read, 6 to ramp up, 3 more.
		require.Less(t, reads.Load(), int64(12), "every %d blocks cached", cachedEvery)
	}
}
