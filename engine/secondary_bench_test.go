package engine

import (
	"context"
	"testing"

	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// BenchmarkSecondaryCatchUp times a CatchUp that replays 1000 new writes
// of 100-byte values from the primary's WAL (and, every few rounds, a flush
// and the tables it adds).
func BenchmarkSecondaryCatchUp(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	primary, err := openDatabase(dir, &Options{FS: vfs.Default})
	require.NoError(b, err)
	defer primary.Close()
	sec, err := openDatabase(dir, &Options{Secondary: true})
	require.NoError(b, err)
	defer sec.Close()
	val := make([]byte, 100)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for j := range 1000 {
			require.NoError(b, primary.Put(ctx, key(i*1000+j), val))
		}
		require.NoError(b, primary.SyncWAL(ctx))
		b.StartTimer()
		require.NoError(b, sec.CatchUp(ctx))
	}
}
