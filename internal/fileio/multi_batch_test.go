package fileio

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/iobatch"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// mappableFile is what MemFS opens: a file that can also be mapped.
type mappableFile interface {
	vfs.File
	vfs.Mappable
}

// batchFile is a file with an iobatch.Reader that reads each request with
// ReadAt, fails the offsets in fail, and counts its batches.
type batchFile struct {
	mappableFile
	decline bool
	fail    map[int64]error

	mu      sync.Mutex
	batches [][]int64 // the offsets of each batch read
}

func (f *batchFile) ReadAtBatch(_ ioctx.IOOptions, reqs []iobatch.Read) bool {
	if f.decline {
		return false
	}
	offs := make([]int64, len(reqs))
	for i := range reqs {
		q := &reqs[i]
		offs[i] = q.Off
		if err := f.fail[q.Off]; err != nil {
			q.N, q.Err = 0, err
			continue
		}
		q.N, q.Err = f.ReadAt(q.P, q.Off)
	}
	f.mu.Lock()
	f.batches = append(f.batches, offs)
	f.mu.Unlock()
	return true
}

// TestMultiReadBatch checks when MultiRead hands its requests to the file's
// iobatch.Reader in one call, and that the outcomes, statistics and errors
// are those of the request-by-request path.
func TestMultiReadBatch(t *testing.T) {
	const size = 10000
	errDevice := errors.New("device error")
	reqs := func(offs ...int64) []ReadRequest {
		rs := make([]ReadRequest, len(offs))
		for i, off := range offs {
			rs[i] = ReadRequest{Offset: off, Len: 100, Scratch: make([]byte, 100)}
		}
		return rs
	}
	for _, tc := range []struct {
		name     string
		reqs     []ReadRequest
		opts     ioctx.IOOptions
		mmap     bool
		decline  bool
		fail     map[int64]error
		fileSize int64 // the size the Reader is told, when not the file's
		batches  [][]int64
		failed   map[int64]error // the class of each failing request's error
	}{
		{name: "batched", reqs: reqs(0, 100, 5000, 9900), batches: [][]int64{{0, 100, 5000, 9900}}},
		{name: "two", reqs: reqs(0, 9000), batches: [][]int64{{0, 9000}}},
		{name: "single", reqs: reqs(5000)},
		{name: "timeout", reqs: reqs(0, 5000), opts: ioctx.IOOptions{Timeout: time.Hour}},
		{name: "mapped", reqs: reqs(0, 5000), mmap: true},
		{name: "declined", reqs: reqs(0, 5000), decline: true},
		{name: "read error", reqs: reqs(0, 5000, 9000), fail: map[int64]error{5000: errDevice},
			batches: [][]int64{{0, 5000, 9000}}, failed: map[int64]error{5000: errDevice}},
		// The Reader thinks the file longer than it is: the read at 9950
		// is short at the end of the file.
		{name: "short read", reqs: reqs(0, 9950), fileSize: size + 50,
			batches: [][]int64{{0, 9950}}, failed: map[int64]error{9950: base.ErrCorruption}},
		// A request beyond the file is refused without reading, by the
		// request-by-request path.
		{name: "beyond the file", reqs: reqs(0, 9950),
			failed: map[int64]error{9950: base.ErrCorruption}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, data := testFile(t, "f", size)
			f, err := fs.Open("f")
			require.NoError(t, err)
			bf := &batchFile{mappableFile: f.(mappableFile), decline: tc.decline, fail: tc.fail}
			stats := statistics.New(statistics.LevelAll)
			r, err := NewReader(bf, "f", max(size, tc.fileSize), Options{Stats: stats, Mmap: tc.mmap})
			require.NoError(t, err)
			defer r.Close()

			tc.opts.Activity = ioctx.ActivityMultiGet
			err = r.MultiRead(context.Background(), tc.opts, tc.reqs)
			require.Equal(t, tc.batches, bf.batches)
			var first error
			for _, q := range tc.reqs {
				if class := tc.failed[q.Offset]; class != nil {
					require.ErrorIs(t, q.Err, class, "request at %d", q.Offset)
					require.Nil(t, q.Result)
					first = cmpOr(first, q.Err)
					continue
				}
				require.NoError(t, q.Err, "request at %d", q.Offset)
				require.Equal(t, data[q.Offset:q.Offset+int64(q.Len)], q.Result)
			}
			require.Equal(t, first, err, "MultiRead returns the first request's error")
			require.Equal(t, uint64(1), stats.HistogramData(statistics.FileReadMultiGetMicros).Count)
			require.Equal(t, uint64(1), stats.HistogramData(statistics.MultiGetIOBatchSize).Count)
		})
	}
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// TestMultiReadBatchFaultInjection: a file wrapped for fault injection
// (errorfs) has no iobatch.Reader even when the file under it has one (the
// OS file), so the injector sees, and can fail, every request of a
// MultiRead.
func TestMultiReadBatchFaultInjection(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 1<<16)
	for i := range data {
		data[i] = byte(i * 7)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), data, 0o644))
	var mu sync.Mutex
	var seen []int64
	fs := errorfs.Wrap(vfs.Default, errorfs.Any(
		errorfs.Observe(func(op errorfs.Op) {
			if op.Kind == errorfs.OpFileRead {
				mu.Lock()
				seen = append(seen, op.Offset)
				mu.Unlock()
			}
		}),
		errorfs.PredicateFunc("the read at 8192", func(op errorfs.Op) bool {
			return op.Kind == errorfs.OpFileRead && op.Offset == 8192
		}),
	))
	r := openTest(t, fs, filepath.Join(dir, "f"), Options{})
	rs := make([]ReadRequest, 8)
	for i := range rs {
		rs[i] = ReadRequest{Offset: int64(i) * 4096, Len: 4096, Scratch: make([]byte, 4096)}
	}
	err := r.MultiRead(context.Background(), ioctx.IOOptions{}, rs)
	require.ErrorIs(t, err, errorfs.ErrInjected)
	require.ElementsMatch(t, []int64{0, 4096, 8192, 12288, 16384, 20480, 24576, 28672}, seen)
	for _, q := range rs {
		if q.Offset == 8192 {
			require.ErrorIs(t, q.Err, errorfs.ErrInjected)
			continue
		}
		require.NoError(t, q.Err)
		require.Equal(t, data[q.Offset:q.Offset+4096], q.Result)
	}
}

// TestMultiReadBatchDisk reads an OS file, whose batches go to io_uring on
// Linux where it is available and the filesystem suits it, including a
// request that ends at the end of the file.
func TestMultiReadBatchDisk(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	_, data := testFile(t, "unused", 1<<20)
	require.NoError(t, os.WriteFile(name, data, 0o644))
	r := openTest(t, vfs.Default, name, Options{})
	for _, n := range []int{2, 16, 40} {
		rs := make([]ReadRequest, n)
		step := int64(len(data) / n)
		for i := range rs {
			l := 1 + (i*977)%int(step)
			rs[i] = ReadRequest{Offset: int64(i) * step, Len: l, Scratch: make([]byte, l)}
		}
		last := &rs[n-1]
		last.Len = len(data) - int(last.Offset)
		last.Scratch = make([]byte, last.Len)
		require.NoError(t, r.MultiRead(context.Background(), ioctx.IOOptions{}, rs))
		for _, q := range rs {
			require.Equal(t, data[q.Offset:q.Offset+int64(q.Len)], q.Result)
		}
	}
}
