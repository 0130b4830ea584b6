package fileio

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/errclass"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// testFile writes n pseudo-random bytes to name on a fresh MemFS and returns
// the filesystem and the contents.
func testFile(t testing.TB, name string, n int) (*vfs.MemFS, []byte) {
	t.Helper()
	fs := vfs.NewMem()
	data := make([]byte, n)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	f, err := fs.Create(name)
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	return fs, data
}

func openTest(t testing.TB, fs vfs.FS, name string, opts Options) *Reader {
	t.Helper()
	r, err := Open(fs, name, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func TestReadContents(t *testing.T) {
	fs, data := testFile(t, "f", 10000)
	for _, mmap := range []bool{false, true} {
		r := openTest(t, fs, "f", Options{Mmap: mmap})
		require.Equal(t, int64(len(data)), r.Size())
		require.Equal(t, mmap, r.Mapped())
		for _, rg := range [][2]int{{0, 1}, {0, 10000}, {5000, 4999}, {9999, 1}, {123, 0}} {
			scratch := make([]byte, rg[1])
			got, err := r.Read(context.Background(), ioctx.IOOptions{}, int64(rg[0]), rg[1], scratch)
			require.NoError(t, err)
			require.Equal(t, data[rg[0]:rg[0]+rg[1]], got)
		}
		require.Equal(t, int64(1+10000+4999+1), r.BytesRead())
	}
}

func TestMmapReadDoesNotCopy(t *testing.T) {
	fs, _ := testFile(t, "f", 4096)
	r := openTest(t, fs, "f", Options{Mmap: true})
	a, err := r.Read(context.Background(), ioctx.IOOptions{}, 100, 10, nil)
	require.NoError(t, err)
	b, err := r.Read(context.Background(), ioctx.IOOptions{}, 100, 10, nil)
	require.NoError(t, err)
	require.Same(t, &a[0], &b[0], "a mapped read slices the mapping")
}

func TestReadErrors(t *testing.T) {
	fs, _ := testFile(t, "f", 1000)
	r := openTest(t, fs, "f", Options{})
	ctx := context.Background()
	scratch := make([]byte, 2000)

	_, err := r.Read(ctx, ioctx.IOOptions{}, 900, 200, scratch)
	require.True(t, errors.Is(err, base.ErrCorruption), "a read past the end is corruption: %v", err)
	require.Contains(t, err.Error(), "beyond the file's 1000 bytes")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = r.Read(cancelled, ioctx.IOOptions{}, 0, 10, scratch)
	require.ErrorIs(t, err, cancelled.Err())
	require.ErrorIs(t, err, context.Canceled)

	// A file shorter than its recorded size: short read → corruption.
	f, err := fs.Open("f")
	require.NoError(t, err)
	short, err := NewReader(f, "f", 2000, Options{})
	require.NoError(t, err)
	defer short.Close()
	_, err = short.Read(ctx, ioctx.IOOptions{}, 500, 1000, scratch)
	require.True(t, errors.Is(err, base.ErrCorruption), "%v", err)
	require.Contains(t, err.Error(), "short read")

	// An IO error is returned, not hidden.
	efs := errorfs.Wrap(fs, errorfs.OnKind(errorfs.OpFileRead))
	r2 := openTest(t, efs, "f", Options{})
	_, err = r2.Read(ctx, ioctx.IOOptions{}, 0, 10, scratch)
	require.ErrorIs(t, err, errorfs.ErrInjected)
	require.Contains(t, err.Error(), "offset 0 of f")
}

func TestReadStatistics(t *testing.T) {
	fs, _ := testFile(t, "f", 1000)
	ctx := context.Background()
	scratch := make([]byte, 100)
	for _, level := range []statistics.Level{
		statistics.LevelDisableAll, statistics.LevelExceptHistogramOrTimers, statistics.LevelExceptTimers,
		statistics.LevelExceptDetailedTimers, statistics.LevelExceptTimeForMutex, statistics.LevelAll,
	} {
		t.Run(level.String(), func(t *testing.T) {
			stats := statistics.New(level)
			r := openTest(t, fs, "f", Options{Stats: stats})
			for _, a := range []ioctx.Activity{ioctx.ActivityGet, ioctx.ActivityFlush, ioctx.ActivityUnknown} {
				_, err := r.Read(ctx, ioctx.IOOptions{Activity: a}, 0, 100, scratch)
				require.NoError(t, err)
			}
			count := func(h statistics.Histogram) uint64 { return stats.HistogramData(h).Count }
			timers := level >= statistics.LevelExceptDetailedTimers
			userReads := level > statistics.LevelExceptDetailedTimers
			require.Equal(t, b2u(timers)*3, count(statistics.SSTReadMicros), "one aggregate sample per read")
			require.Equal(t, b2u(timers), count(statistics.FileReadFlushMicros))
			require.Equal(t, b2u(userReads), count(statistics.FileReadGetMicros))
			require.Zero(t, count(statistics.FileReadMultiGetMicros))
			tickers := level >= statistics.LevelExceptHistogramOrTimers
			require.Equal(t, b2u(tickers)*300, stats.TickerCount(statistics.NonLastLevelReadBytes))
			require.Equal(t, b2u(tickers)*3, stats.TickerCount(statistics.NonLastLevelReadCount))
			require.Zero(t, stats.TickerCount(statistics.LastLevelReadBytes))
		})
	}
	stats := statistics.New(statistics.LevelAll)
	r := openTest(t, fs, "f", Options{Stats: stats, LastLevel: true})
	_, err := r.Read(ctx, ioctx.IOOptions{}, 0, 100, scratch)
	require.NoError(t, err)
	require.Equal(t, uint64(100), stats.TickerCount(statistics.LastLevelReadBytes))
	require.Equal(t, uint64(1), stats.TickerCount(statistics.LastLevelReadCount))
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func TestReadCarriesIOOptions(t *testing.T) {
	mfs, _ := testFile(t, "f", 1000)
	var mu sync.Mutex
	var seen []ioctx.IOOptions
	fs := errorfs.WrapObserver(mfs, func(op errorfs.Op) {
		if op.Kind == errorfs.OpFileRead {
			mu.Lock()
			seen = append(seen, op.IO)
			mu.Unlock()
		}
	})
	r := openTest(t, fs, "f", Options{})
	opts := ioctx.IOOptions{Activity: ioctx.ActivityVerifyDBChecksum, RateLimiterPriority: ioctx.PriorityLow, Timeout: time.Hour}
	ctx := context.Background()
	_, err := r.Read(ctx, opts, 0, 10, make([]byte, 10))
	require.NoError(t, err)
	reqs := []ReadRequest{{Offset: 0, Len: 5, Scratch: make([]byte, 5)}, {Offset: 10, Len: 5, Scratch: make([]byte, 5)}}
	require.NoError(t, r.MultiRead(ctx, opts, reqs))
	done := make(chan struct{})
	req := ReadRequest{Offset: 20, Len: 5, Scratch: make([]byte, 5)}
	require.NoError(t, r.ReadAsync(ctx, opts, &req, func(*ReadRequest) { close(done) }))
	<-done
	require.NoError(t, req.Err)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 4)
	for _, s := range seen {
		require.Equal(t, opts, s)
	}
}

func TestRateLimiterCharging(t *testing.T) {
	fs, _ := testFile(t, "f", 64<<10)
	ctx := context.Background()
	limiter := ratelimit.NewGeneric(1<<30, 0, 0, ratelimit.ModeAll)
	defer limiter.Close()
	r := openTest(t, fs, "f", Options{Limiter: limiter})
	scratch := make([]byte, 64<<10)

	_, err := r.Read(ctx, ioctx.IOOptions{}, 0, 4096, scratch)
	require.NoError(t, err)
	require.Zero(t, limiter.TotalRequests(ioctx.PriorityTotal), "PriorityTotal is not charged")

	for _, pri := range []ioctx.Priority{ioctx.PriorityLow, ioctx.PriorityMid, ioctx.PriorityHigh, ioctx.PriorityUser} {
		_, err := r.Read(ctx, ioctx.IOOptions{RateLimiterPriority: pri}, 0, 4096, scratch)
		require.NoError(t, err)
		require.Equal(t, int64(1), limiter.TotalRequests(pri), pri.String())
		require.Equal(t, int64(4096), limiter.TotalBytesThrough(pri), pri.String())
	}
	reqs := []ReadRequest{{Offset: 0, Len: 100, Scratch: scratch[:100]}, {Offset: 200, Len: 300, Scratch: scratch[100:400]}}
	require.NoError(t, r.MultiRead(ctx, ioctx.IOOptions{RateLimiterPriority: ioctx.PriorityUser}, reqs))
	require.Equal(t, int64(2), limiter.TotalRequests(ioctx.PriorityUser), "MultiRead charges its total in one request")
	require.Equal(t, int64(4096+400), limiter.TotalBytesThrough(ioctx.PriorityUser))

	// A limiter that does not limit reads is not charged.
	writesOnly := ratelimit.NewGeneric(1<<30, 0, 0, ratelimit.ModeWrites)
	defer writesOnly.Close()
	r2 := openTest(t, fs, "f", Options{Limiter: writesOnly})
	_, err = r2.Read(ctx, ioctx.IOOptions{RateLimiterPriority: ioctx.PriorityUser}, 0, 4096, scratch)
	require.NoError(t, err)
	require.Zero(t, writesOnly.TotalRequests(ioctx.PriorityTotal))

	// A read larger than a burst is charged in burst-sized pieces.
	small := ratelimit.NewGeneric(100<<10, 100*time.Millisecond, 0, ratelimit.ModeAll) // 10 KiB bursts
	defer small.Close()
	r3 := openTest(t, fs, "f", Options{Limiter: small})
	burst := small.SingleBurstBytes()
	got, err := r3.Read(ctx, ioctx.IOOptions{RateLimiterPriority: ioctx.PriorityHigh}, 0, int(2*burst+5), scratch)
	require.NoError(t, err)
	require.Len(t, got, int(2*burst+5))
	require.Equal(t, int64(3), small.TotalRequests(ioctx.PriorityHigh))
}

// TestRateLimiterWaitExcludedFromRead checks RocksDB's rule: the buffered
// Read excludes the limiter's wait from its latency sample, MultiRead does
// not.
func TestRateLimiterWaitExcludedFromRead(t *testing.T) {
	fs, _ := testFile(t, "f", 64<<10)
	ctx := context.Background()
	// 40 KiB/s with 100 ms refills: 4 KiB bursts, so reading 8 KiB waits for
	// at least one refill (~100 ms).
	limiter := ratelimit.NewGeneric(40<<10, 100*time.Millisecond, 0, ratelimit.ModeAll)
	defer limiter.Close()
	stats := statistics.New(statistics.LevelAll)
	r := openTest(t, fs, "f", Options{Limiter: limiter, Stats: stats})
	scratch := make([]byte, 64<<10)
	opts := ioctx.IOOptions{RateLimiterPriority: ioctx.PriorityUser, Activity: ioctx.ActivityGet}

	start := time.Now()
	_, err := r.Read(ctx, opts, 0, 12<<10, scratch)
	require.NoError(t, err)
	took := time.Since(start)
	require.Greater(t, took, 50*time.Millisecond, "the read must have waited for the limiter")
	d := stats.HistogramData(statistics.FileReadGetMicros)
	require.Equal(t, uint64(1), d.Count)
	require.Less(t, d.Max, uint64(took.Microseconds()/2), "Read's sample excludes the wait")

	stats.Reset()
	reqs := []ReadRequest{{Offset: 0, Len: 6 << 10, Scratch: scratch[:6<<10]}, {Offset: 8 << 10, Len: 6 << 10, Scratch: scratch[6<<10 : 12<<10]}}
	start = time.Now()
	require.NoError(t, r.MultiRead(ctx, ioctx.IOOptions{RateLimiterPriority: ioctx.PriorityUser, Activity: ioctx.ActivityMultiGet}, reqs))
	took = time.Since(start)
	require.Greater(t, took, 50*time.Millisecond)
	d = stats.HistogramData(statistics.FileReadMultiGetMicros)
	require.Equal(t, uint64(1), d.Count, "one sample per MultiRead")
	require.GreaterOrEqual(t, d.Max, uint64(took.Microseconds()/2), "MultiRead's sample includes the wait")
	require.Equal(t, uint64(1), stats.HistogramData(statistics.MultiGetIOBatchSize).Count)
	require.Equal(t, uint64(2), stats.HistogramData(statistics.MultiGetIOBatchSize).Sum)
}

func TestRateLimiterWaitHonoursContextAndTimeout(t *testing.T) {
	fs, _ := testFile(t, "f", 64<<10)
	limiter := ratelimit.NewGeneric(10<<10, 100*time.Millisecond, 0, ratelimit.ModeAll) // 1 KiB bursts
	defer limiter.Close()
	r := openTest(t, fs, "f", Options{Limiter: limiter})
	scratch := make([]byte, 64<<10)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := r.Read(ctx, ioctx.IOOptions{RateLimiterPriority: ioctx.PriorityUser}, 0, 32<<10, scratch)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, ctx.Err())

	_, err = r.Read(context.Background(), ioctx.IOOptions{RateLimiterPriority: ioctx.PriorityUser, Timeout: 30 * time.Millisecond}, 0, 32<<10, scratch)
	require.ErrorIs(t, err, errclass.ErrTimedOut, "%v", err)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// TestReadAsyncRateLimiterWaitHonoursTimeout checks that ReadAsync's
// limiter wait, made on the reading goroutine, is bounded by the IO timeout
// as Read's and MultiRead's are, instead of waiting for the whole charge and
// reporting the timeout afterwards.
func TestReadAsyncRateLimiterWaitHonoursTimeout(t *testing.T) {
	fs, _ := testFile(t, "f", 64<<10)
	limiter := ratelimit.NewGeneric(10<<10, 100*time.Millisecond, 0, ratelimit.ModeAll) // 1 KiB bursts
	defer limiter.Close()
	r := openTest(t, fs, "f", Options{Limiter: limiter})
	// 32 KiB at 10 KiB/s would wait about 3 s.
	req := ReadRequest{Offset: 0, Len: 32 << 10, Scratch: make([]byte, 32<<10)}
	done := make(chan struct{})
	start := time.Now()
	opts := ioctx.IOOptions{RateLimiterPriority: ioctx.PriorityUser, Timeout: 30 * time.Millisecond}
	require.NoError(t, r.ReadAsync(context.Background(), opts, &req, func(*ReadRequest) { close(done) }))
	<-done
	took := time.Since(start)
	require.ErrorIs(t, req.Err, errclass.ErrTimedOut, "%v", req.Err)
	require.ErrorIs(t, req.Err, context.DeadlineExceeded)
	require.Contains(t, req.Err.Error(), "rate limiter wait")
	require.Less(t, took, time.Second, "the wait must end at the IO timeout, not after the whole charge")
	require.Nil(t, req.Result)
}

// slowFS delays every read by a fixed time.
type slowFile struct {
	vfs.File
	delay time.Duration
}

func (f slowFile) ReadAt(p []byte, off int64) (int, error) {
	time.Sleep(f.delay)
	return f.File.ReadAt(p, off)
}

func TestReadTimeout(t *testing.T) {
	fs, _ := testFile(t, "f", 1000)
	f, err := fs.Open("f")
	require.NoError(t, err)
	r, err := NewReader(slowFile{File: f, delay: 20 * time.Millisecond}, "f", 1000, Options{})
	require.NoError(t, err)
	defer r.Close()
	scratch := make([]byte, 100)
	_, err = r.Read(context.Background(), ioctx.IOOptions{Timeout: time.Millisecond}, 0, 100, scratch)
	require.ErrorIs(t, err, errclass.ErrTimedOut)
	require.Contains(t, err.Error(), "longer than its IO timeout")
	_, err = r.Read(context.Background(), ioctx.IOOptions{Timeout: time.Second}, 0, 100, scratch)
	require.NoError(t, err)
}

func TestMultiRead(t *testing.T) {
	fs, data := testFile(t, "f", 10000)
	stats := statistics.New(statistics.LevelAll)
	for _, mmap := range []bool{false, true} {
		stats.Reset()
		r := openTest(t, fs, "f", Options{Mmap: mmap, Stats: stats})
		reqs := []ReadRequest{
			{Offset: 0, Len: 100, Scratch: make([]byte, 100)},
			{Offset: 100, Len: 50, Scratch: make([]byte, 50)},
			{Offset: 9000, Len: 1000, Scratch: make([]byte, 1000)},
		}
		require.NoError(t, r.MultiRead(context.Background(), ioctx.IOOptions{Activity: ioctx.ActivityMultiGet}, reqs))
		for _, q := range reqs {
			require.NoError(t, q.Err)
			require.Equal(t, data[q.Offset:q.Offset+int64(q.Len)], q.Result)
		}
		require.Equal(t, uint64(1), stats.HistogramData(statistics.SSTReadMicros).Count)
		require.Equal(t, uint64(1), stats.HistogramData(statistics.FileReadMultiGetMicros).Count)

		// One bad request fails itself and the call; the others are read.
		reqs = []ReadRequest{{Offset: 0, Len: 10, Scratch: make([]byte, 10)}, {Offset: 9995, Len: 10, Scratch: make([]byte, 10)}}
		err := r.MultiRead(context.Background(), ioctx.IOOptions{}, reqs)
		require.True(t, errors.Is(err, base.ErrCorruption))
		require.NoError(t, reqs[0].Err)
		require.Equal(t, data[:10], reqs[0].Result)
		require.Error(t, reqs[1].Err)
	}
}

func TestReadAsync(t *testing.T) {
	fs, data := testFile(t, "f", 10000)
	stats := statistics.New(statistics.LevelAll)
	r := openTest(t, fs, "f", Options{Stats: stats})
	var wg sync.WaitGroup
	reqs := make([]ReadRequest, 10)
	for i := range reqs {
		reqs[i] = ReadRequest{Offset: int64(i * 1000), Len: 1000, Scratch: make([]byte, 1000)}
		wg.Add(1)
		require.NoError(t, r.ReadAsync(context.Background(), ioctx.IOOptions{Activity: ioctx.ActivityDBIterator}, &reqs[i],
			func(*ReadRequest) { wg.Done() }))
	}
	wg.Wait()
	for _, q := range reqs {
		require.NoError(t, q.Err)
		require.Equal(t, data[q.Offset:q.Offset+1000], q.Result)
	}
	// The submission is timed, once per ReadAsync, in both histograms.
	require.Equal(t, uint64(10), stats.HistogramData(statistics.SSTReadMicros).Count)
	require.Equal(t, uint64(10), stats.HistogramData(statistics.FileReadDBIteratorMicros).Count)
	require.Equal(t, uint64(10), stats.HistogramData(statistics.AsyncReadBytes).Count)
	require.Equal(t, uint64(10000), stats.HistogramData(statistics.AsyncReadBytes).Sum)

	// A failing async read reports through the callback and counts an error.
	bad := ReadRequest{Offset: 9999, Len: 10, Scratch: make([]byte, 10)}
	done := make(chan struct{})
	require.NoError(t, r.ReadAsync(context.Background(), ioctx.IOOptions{}, &bad, func(*ReadRequest) { close(done) }))
	<-done
	require.Error(t, bad.Err)
	require.Equal(t, uint64(1), stats.TickerCount(statistics.AsyncReadErrorCount))

	// A done context fails the submission; the callback is not called.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := r.ReadAsync(ctx, ioctx.IOOptions{}, &bad, func(*ReadRequest) { t.Error("callback after a failed submission") })
	require.ErrorIs(t, err, context.Canceled)
}

// countingFS counts file reads.
func countingFS(fs vfs.FS) (vfs.FS, *atomic.Int64) {
	var n atomic.Int64
	return errorfs.WrapObserver(fs, func(op errorfs.Op) {
		if op.Kind == errorfs.OpFileRead {
			n.Add(1)
		}
	}), &n
}

func TestPrefetchBuffer(t *testing.T) {
	mfs, data := testFile(t, "f", 1<<20)
	ctx := context.Background()
	for _, async := range []bool{false, true} {
		fs, reads := countingFS(mfs)
		r := openTest(t, fs, "f", Options{})
		p := NewPrefetchBuffer(r, 0, 8<<10, 64<<10, async)
		// Sequential 4 KiB reads over 1 MiB.
		for off := 0; off < 1<<20; off += 4096 {
			got, err := p.Read(ctx, ioctx.IOOptions{}, int64(off), 4096)
			require.NoError(t, err)
			require.True(t, bytes.Equal(data[off:off+4096], got), "offset %d", off)
		}
		p.Close()
		// Without readahead that would be 256 reads; with readahead growing to
		// 64 KiB it is about 1 MiB / 64 KiB plus the ramp.
		require.Less(t, reads.Load(), int64(30), "async=%v", async)
		require.Greater(t, reads.Load(), int64(15), "async=%v", async)
	}

	// Random reads do not read ahead.
	fs, reads := countingFS(mfs)
	r := openTest(t, fs, "f", Options{})
	p := NewPrefetchBuffer(r, 0, 0, 0, false)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100 {
		off := int64(rng.IntN(1<<20-4096)) &^ 4095
		got, err := p.Read(ctx, ioctx.IOOptions{}, off+1, 100)
		require.NoError(t, err)
		require.Equal(t, data[off+1:off+101], got)
	}
	require.Equal(t, int64(100), reads.Load())

	// A fixed readahead reads that much every time.
	fs, reads = countingFS(mfs)
	r = openTest(t, fs, "f", Options{})
	p = NewPrefetchBuffer(r, 100<<10, 0, 0, false)
	for off := 0; off < 200<<10; off += 1024 {
		_, err := p.Read(ctx, ioctx.IOOptions{}, int64(off), 1024)
		require.NoError(t, err)
	}
	require.Equal(t, int64(2), reads.Load())

	// Reads near the end are clipped to the file.
	got, err := p.Read(ctx, ioctx.IOOptions{}, 1<<20-10, 10)
	require.NoError(t, err)
	require.Equal(t, data[1<<20-10:], got)
	_, err = p.Read(ctx, ioctx.IOOptions{}, 1<<20-10, 11)
	require.Error(t, err)
}

func TestReadAllocations(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	fs, _ := testFile(t, "f", 1<<16)
	stats := statistics.New(statistics.DefaultLevel)
	limiter := ratelimit.NewGeneric(1<<40, 0, 0, ratelimit.ModeAll)
	defer limiter.Close()
	r := openTest(t, fs, "f", Options{Stats: stats, Limiter: limiter})
	scratch := make([]byte, 4096)
	ctx := context.Background()
	for _, opts := range []ioctx.IOOptions{
		{Activity: ioctx.ActivityGet},
		{Activity: ioctx.ActivityGet, RateLimiterPriority: ioctx.PriorityUser},
	} {
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := r.Read(ctx, opts, 0, 4096, scratch); err != nil {
				t.Fatal(err)
			}
		})
		require.Zero(t, allocs, "%+v", opts)
	}
}

func TestPrefetchHint(t *testing.T) {
	fs, _ := testFile(t, "f", 1000)
	r := openTest(t, fs, "f", Options{})
	require.NoError(t, r.Prefetch(context.Background(), ioctx.IOOptions{}, 0, 1000))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, r.Prefetch(ctx, ioctx.IOOptions{}, 0, 1000), context.Canceled)
}

func TestMmapRequiresMappable(t *testing.T) {
	fs, _ := testFile(t, "f", 100)
	f, err := fs.Open("f")
	require.NoError(t, err)
	_, err = NewReader(struct{ vfs.File }{f}, "f", 100, Options{Mmap: true})
	require.ErrorIs(t, err, base.ErrInvalidArgument)
	require.NoError(t, f.Close())
}

func BenchmarkRead(b *testing.B) {
	fs, _ := testFile(b, "f", 1<<20)
	for _, level := range []statistics.Level{statistics.LevelDisableAll, statistics.DefaultLevel, statistics.LevelAll} {
		for _, mmap := range []bool{false, true} {
			b.Run("stats="+level.String()+"/mmap="+map[bool]string{false: "false", true: "true"}[mmap], func(b *testing.B) {
				r := openTest(b, fs, "f", Options{Stats: statistics.New(level), Mmap: mmap})
				scratch := make([]byte, 4096)
				ctx := context.Background()
				opts := ioctx.IOOptions{Activity: ioctx.ActivityGet}
				b.ReportAllocs()
				b.SetBytes(4096)
				off := int64(0)
				for b.Loop() {
					if _, err := r.Read(ctx, opts, off, 4096, scratch); err != nil {
						b.Fatal(err)
					}
					off = (off + 4096) % (1 << 20)
				}
			})
		}
	}
}

// BenchmarkMultiRead measures a MultiRead of 16 blocks of 4 KiB from a file
// of the operating system's, read in turn or by several goroutines: the
// comparison behind readAll's choice and DefaultParallelAfter, on the
// machine and filesystem at hand. ns/read is the time per block. The file
// is in SHALE_BENCH_DIR (as for the engine's benchmarks; /dev/shm for
// tmpfs), else in the temporary directory; either way it was just written,
// so the page cache holds it.
func BenchmarkMultiRead(b *testing.B) {
	const size, blocks, block = 1 << 20, 16, 4096
	dir := os.Getenv("SHALE_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	name := filepath.Join(dir, fmt.Sprintf("fileio-bench-%d", os.Getpid()))
	b.Cleanup(func() { _ = os.Remove(name) })
	f, err := vfs.Default.Create(name)
	require.NoError(b, err)
	_, err = f.Write(make([]byte, size))
	require.NoError(b, err)
	require.NoError(b, f.Close())
	for _, tc := range []struct {
		name  string
		after time.Duration
	}{
		{"reads=serial", -1},
		{"reads=parallel", time.Nanosecond}, // every first read counts as slow
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := openTest(b, vfs.Default, name, Options{ParallelAfter: tc.after})
			rng := rand.New(rand.NewPCG(1, 2))
			reqs := make([]ReadRequest, blocks)
			scratch := make([]byte, blocks*block)
			ctx := context.Background()
			b.ReportAllocs()
			b.SetBytes(blocks * block)
			for b.Loop() {
				// Blocks in distinct, ascending slots of the file.
				slot := 0
				for i := range reqs {
					slot += 1 + rng.IntN(size/block/blocks-1)
					reqs[i] = ReadRequest{Offset: int64(slot * block), Len: block, Scratch: scratch[i*block : (i+1)*block]}
				}
				if err := r.MultiRead(ctx, ioctx.IOOptions{}, reqs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*blocks), "ns/read")
		})
	}
}

func TestMultiReadParallel(t *testing.T) {
	fs, data := testFile(t, "f", 1<<20)
	stats := statistics.New(statistics.LevelAll)
	// Every first read counts as slow: the rest are read in parallel.
	r := openTest(t, fs, "f", Options{Stats: stats, ParallelAfter: time.Nanosecond})
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 20 {
		n := 1 + rng.IntN(24)
		reqs := make([]ReadRequest, n)
		off := int64(0)
		for i := range reqs {
			off += int64(rng.IntN(8 << 10))
			l := 1 + rng.IntN(8<<10)
			reqs[i] = ReadRequest{Offset: off, Len: l, Scratch: make([]byte, l)}
			off += int64(l)
		}
		bad := -1
		if round%4 == 3 && reqs[n-1].Offset+int64(reqs[n-1].Len) < 1<<20 {
			// Make the last request run past the end of the file.
			bad = n - 1
			reqs[bad].Offset = 1<<20 - 10
			reqs[bad].Len, reqs[bad].Scratch = 100, make([]byte, 100)
		}
		stats.Reset()
		err := r.MultiRead(context.Background(), ioctx.IOOptions{Activity: ioctx.ActivityMultiGet}, reqs)
		for i, q := range reqs {
			if i == bad {
				require.Error(t, q.Err)
				continue
			}
			require.NoError(t, q.Err, "round %d request %d", round, i)
			require.Equal(t, data[q.Offset:q.Offset+int64(q.Len)], q.Result)
		}
		if bad >= 0 {
			require.ErrorIs(t, err, base.ErrCorruption)
		} else {
			require.NoError(t, err)
		}
		require.Equal(t, uint64(1), stats.HistogramData(statistics.FileReadMultiGetMicros).Count, "one sample per call")
	}
}

// countingFile records how many ReadAt calls run at once.
type countingFile struct {
	vfs.File
	delay        time.Duration
	active, most atomic.Int32
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	n := f.active.Add(1)
	for m := f.most.Load(); n > m && !f.most.CompareAndSwap(m, n); m = f.most.Load() {
	}
	time.Sleep(f.delay)
	defer f.active.Add(-1)
	return f.File.ReadAt(p, off)
}

// TestMultiReadParallelOnlyWhenSlow checks that a MultiRead reads in
// parallel when its first read is slow (a device) and in turn when it is
// fast (the page cache), where goroutine hand-offs would cost more.
func TestMultiReadParallelOnlyWhenSlow(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("parallel reads need GOMAXPROCS >= 2")
	}
	fs, data := testFile(t, "f", 1<<20)
	for _, tc := range []struct {
		name     string
		delay    time.Duration
		opts     Options
		parallel bool
	}{
		// "Fast" is relative to ParallelAfter: under -race or on a
		// loaded machine a page-cache read can take longer than the default.
		{"fast", 0, Options{ParallelAfter: time.Hour}, false},
		{"slow", 2 * time.Millisecond, Options{}, true},
		{"slow/never", 2 * time.Millisecond, Options{ParallelAfter: -1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := fs.Open("f")
			require.NoError(t, err)
			cf := &countingFile{File: f, delay: tc.delay}
			r, err := NewReader(cf, "f", 1<<20, tc.opts)
			require.NoError(t, err)
			defer r.Close()
			reqs := make([]ReadRequest, 8)
			for i := range reqs {
				reqs[i] = ReadRequest{Offset: int64(i) << 16, Len: 4096, Scratch: make([]byte, 4096)}
			}
			require.NoError(t, r.MultiRead(context.Background(), ioctx.IOOptions{}, reqs))
			for _, q := range reqs {
				require.Equal(t, data[q.Offset:q.Offset+int64(q.Len)], q.Result)
			}
			if tc.parallel {
				require.Greater(t, cf.most.Load(), int32(1), "reads overlapped")
			} else {
				require.Equal(t, int32(1), cf.most.Load(), "reads overlapped")
			}
		})
	}
}
