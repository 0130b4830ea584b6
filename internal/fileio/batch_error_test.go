//go:build linux

package fileio

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// TestMultiReadErrorNamesOffsetOnce pins the text of a failed batch read:
// "fileio: read of N bytes at offset X of NAME: read NAME: ERRNO", as a
// failed Read says it. On Linux, with the temporary directory on a
// filesystem the io_uring path serves (ext4, xfs, btrfs), the batch goes to
// the ring, whose error used to add "vfs: read of N bytes at offset X"
// again; on tmpfs it goes to pread and the test checks that path only. A
// directory opened as a file fails every read with EISDIR.
func TestMultiReadErrorNamesOffsetOnce(t *testing.T) {
	dir := t.TempDir()
	r, err := Open(vfs.Default, dir, Options{})
	require.NoError(t, err)
	defer r.Close()
	if r.Size() < 200 {
		t.Skipf("directory of %d bytes", r.Size())
	}
	reqs := []ReadRequest{
		{Offset: 0, Len: 100, Scratch: make([]byte, 100)},
		{Offset: 100, Len: 50, Scratch: make([]byte, 50)},
	}
	_ = r.MultiRead(context.Background(), ioctx.IOOptions{}, reqs)
	for _, q := range reqs {
		want := fmt.Sprintf("fileio: read of %d bytes at offset %d of %s: read %s: is a directory", q.Len, q.Offset, dir, dir)
		require.EqualError(t, q.Err, want)
		require.Equal(t, 1, strings.Count(q.Err.Error(), "offset"), "%v", q.Err)
	}
	_, err = r.Read(context.Background(), ioctx.IOOptions{}, 0, 100, make([]byte, 100))
	require.EqualError(t, err, fmt.Sprintf("fileio: read of 100 bytes at offset 0 of %s: read %s: is a directory", dir, dir),
		"a single Read says it the same way")
}
