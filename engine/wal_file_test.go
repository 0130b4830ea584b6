package engine

import (
	"bytes"
	"sync"
	"testing"

	"github.com/shaledb/shale/internal/vfs"
	"github.com/shaledb/shale/internal/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

func TestWALFile(t *testing.T) {
	fs := vfs.NewMem()
	f, err := fs.Create("/log")
	require.NoError(t, err)
	require.NoError(t, syncDir(fs, "/"))
	w := newWALFile(f)
	var want bytes.Buffer
	for i := range 1000 {
		p := bytes.Repeat([]byte{byte(i)}, 1+i%700)
		n, err := w.Write(p)
		require.NoError(t, err)
		require.Equal(t, len(p), n)
		want.Write(p)
		if i%100 == 99 {
			require.NoError(t, w.Sync())
			// Everything written before Sync is durable after it.
			crashed := fs.CrashClone()
			require.Equal(t, want.Bytes(), readAll(t, crashed, "/log"))
		}
	}
	require.NoError(t, w.Close())
	require.Equal(t, want.Bytes(), readAll(t, fs, "/log"), "Close writes what is buffered")
	_, err = w.Write([]byte("late"))
	require.Error(t, err)
}

func TestWALFileBackpressure(t *testing.T) {
	fs := vfs.NewMem()
	f, err := fs.Create("/log")
	require.NoError(t, err)
	w := newWALFile(f)
	chunk := make([]byte, 1<<20)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 3 * walMaxPending / len(chunk) {
			_, err := w.Write(chunk)
			require.NoError(t, err)
			w.mu.Lock()
			require.LessOrEqual(t, len(w.pending), walMaxPending+len(chunk))
			w.mu.Unlock()
		}
	}()
	wg.Wait()
	require.NoError(t, w.Close())
	require.Len(t, readAll(t, fs, "/log"), 3*walMaxPending)
}

func TestWALFileErrorsAreSticky(t *testing.T) {
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.OnKind(errorfs.OpFileWrite))
	f, err := fs.Create("/log")
	require.NoError(t, err)
	w := newWALFile(f)
	_, err = w.Write([]byte("x"))
	require.NoError(t, err, "buffered")
	err = w.Sync()
	require.ErrorIs(t, err, errorfs.ErrInjected)
	_, err = w.Write([]byte("y"))
	require.ErrorIs(t, err, errorfs.ErrInjected, "later writes fail too")
	require.ErrorIs(t, w.Close(), errorfs.ErrInjected)
}
