package readpath

import (
	"context"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/errclass"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// TestRequestDeadline checks the request's own deadline (env.Deadline,
// which the context does not carry): before it, reads are unaffected;
// after it, a read that needs a table fails as a timeout before acquiring
// one, as a done context does, and a memtable hit still answers.
func TestRequestDeadline(t *testing.T) {
	v, src := buildHandLSM(t, vfs.NewMem(), handFiles, handMems, sstable.WriterOptions{})
	ctx := context.Background()
	future, past := readEnv(), readEnv()
	future.Deadline = time.Now().Add(time.Hour)
	past.Deadline = time.Now().Add(-time.Millisecond)

	val, err := Get(ctx, v, future, []byte("f"), 100, nil)
	require.NoError(t, err)
	val.Release()

	val, err = Get(ctx, v, past, []byte("m"), 100, nil)
	require.NoError(t, err, "a memtable hit needs no table")
	require.Equal(t, "m51", string(val.Data))

	checkTimedOut := func(t *testing.T, err error) {
		t.Helper()
		require.ErrorIs(t, err, errclass.ErrTimedOut)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	}
	src.resetAcquires()
	_, err = Get(ctx, v, past, []byte("f"), 100, nil)
	checkTimedOut(t, err)
	require.Zero(t, src.acquired(4)+src.acquired(5))

	keys := [][]byte{[]byte("c"), []byte("f")}
	out := make([]Result, len(keys))
	require.NoError(t, MultiGet(ctx, v, future, keys, 100, out))
	for i := range out {
		require.NoError(t, out[i].Err)
		out[i].Value.Release()
	}
	out = make([]Result, len(keys))
	checkTimedOut(t, MultiGet(ctx, v, past, keys, 100, out))

	it := NewIterator(ctx, v, past, 100, IterOptions{})
	for ok := it.First(); ok; ok = it.Next() {
	}
	checkTimedOut(t, it.Error())
	_ = it.Close()
}
