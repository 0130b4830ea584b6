package engine

import (
	"context"
	"testing"

	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

// TestWriteAllocations pins the allocation budget of the single-key write
// path (issue 15's fill): Put, Delete and Write of a reused one-record
// Batch allocate nothing once the database runs, with statistics off, at the
// default level and at LevelAll, unsynced and synced. The memtable is large
// enough that no write rotates it, and the WAL's buffers have grown to
// their working size during the warm-up.
func TestWriteAllocations(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, tc := range []struct {
		name  string
		stats func(*Options)
		sync  bool
	}{
		{"stats=off", func(o *Options) { o.DisableStatistics = true }, false},
		{"stats=default", func(o *Options) { o.Statistics = statistics.New(statistics.LevelExceptDetailedTimers) }, false},
		{"stats=all", func(o *Options) { o.Statistics = statistics.New(statistics.LevelAll) }, false},
		{"stats=default/sync", func(o *Options) { o.Statistics = statistics.New(statistics.LevelExceptDetailedTimers) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := smallOptions(nil)
			opts.WriteBufferSize = 32 << 20
			tc.stats(opts)
			db, _ := openTestDB(t, opts)
			ctx := ioctx.WithWriteOptions(context.Background(), ioctx.WriteOptions{Sync: tc.sync})
			k := make([]byte, 16)
			v := make([]byte, 256)
			i := 0
			next := func() []byte {
				i++
				k[0], k[1], k[2], k[3] = byte(i>>24), byte(i>>16), byte(i>>8), byte(i)
				return k
			}
			for range 2000 {
				require.NoError(t, db.Put(ctx, next(), v))
			}
			b := newWriteBatch()
			require.Zero(t, testing.AllocsPerRun(2000, func() {
				if err := db.Put(ctx, next(), v); err != nil {
					t.Fatal(err)
				}
			}), "Put")
			require.Zero(t, testing.AllocsPerRun(2000, func() {
				if err := db.Delete(ctx, next()); err != nil {
					t.Fatal(err)
				}
			}), "Delete")
			require.Zero(t, testing.AllocsPerRun(2000, func() {
				b.Reset()
				b.Put(next(), v)
				if err := db.Write(ctx, b, nil); err != nil {
					t.Fatal(err)
				}
			}), "Write")
		})
	}
}
