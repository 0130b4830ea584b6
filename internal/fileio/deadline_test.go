package fileio

import (
	"context"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/errclass"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

// readCountingFile counts the reads that reach the file.
type readCountingFile struct {
	slowFile
	reads int
}

func (f *readCountingFile) ReadAt(p []byte, off int64) (int, error) {
	f.reads++
	return f.slowFile.ReadAt(p, off)
}

// TestReadDeadline checks the request's deadline, carried by value in
// IOOptions: a read that would start after it fails as a timeout without
// reaching the file, by every read method; a read before it has its
// timeout lowered to the time left.
func TestReadDeadline(t *testing.T) {
	fs, _ := testFile(t, "f", 1000)
	f, err := fs.Open("f")
	require.NoError(t, err)
	cf := &readCountingFile{slowFile: slowFile{File: f}}
	r, err := NewReader(cf, "f", 1000, Options{})
	require.NoError(t, err)
	defer r.Close()
	scratch := make([]byte, 100)
	past := ioctx.IOOptions{Deadline: time.Now().Add(-time.Millisecond)}

	checkTimedOut := func(t *testing.T, err error) {
		t.Helper()
		require.ErrorIs(t, err, errclass.ErrTimedOut)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Contains(t, err.Error(), "Deadline exceeded")
	}
	for _, tc := range []struct {
		name string
		read func(ioctx.IOOptions) error
	}{
		{"Read", func(o ioctx.IOOptions) error {
			_, err := r.Read(context.Background(), o, 0, 100, scratch)
			return err
		}},
		{"MultiRead", func(o ioctx.IOOptions) error {
			return r.MultiRead(context.Background(), o, []ReadRequest{{Offset: 0, Len: 10, Scratch: scratch[:10]}, {Offset: 20, Len: 10, Scratch: scratch[10:20]}})
		}},
		{"ReadAsync", func(o ioctx.IOOptions) error {
			req := ReadRequest{Offset: 0, Len: 100, Scratch: scratch}
			done := make(chan struct{})
			if err := r.ReadAsync(context.Background(), o, &req, func(*ReadRequest) { close(done) }); err != nil {
				return err
			}
			<-done
			return req.Err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cf.reads, cf.delay = 0, 0
			checkTimedOut(t, tc.read(past))
			require.Zero(t, cf.reads, "a read past the deadline must not reach the file")
			require.NoError(t, tc.read(ioctx.IOOptions{Deadline: time.Now().Add(time.Hour)}))
			require.Positive(t, cf.reads)
			// A read that starts before the deadline but ends after it fails
			// as one past its IO timeout, the time that was left.
			cf.delay = 20 * time.Millisecond
			err := tc.read(ioctx.IOOptions{Deadline: time.Now().Add(time.Millisecond), Timeout: time.Hour})
			require.ErrorIs(t, err, errclass.ErrTimedOut)
		})
	}
}

// TestReadWithTimeoutAndLimiterAllocations checks that a read with an IO
// timeout or a deadline, charged to a limiter that has the bytes, costs no
// allocation: the context bounding a limiter wait is made only for a wait.
func TestReadWithTimeoutAndLimiterAllocations(t *testing.T) {
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
		{Activity: ioctx.ActivityGet, RateLimiterPriority: ioctx.PriorityUser, Timeout: time.Hour},
		{Activity: ioctx.ActivityGet, RateLimiterPriority: ioctx.PriorityUser, Deadline: time.Now().Add(time.Hour)},
		{Activity: ioctx.ActivityGet, Timeout: time.Hour, Deadline: time.Now().Add(time.Hour)},
	} {
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := r.Read(ctx, opts, 0, 4096, scratch); err != nil {
				t.Fatal(err)
			}
		})
		require.Zero(t, allocs, "%+v", opts)
	}
	require.Equal(t, int64(2*101*4096), limiter.TotalBytesThrough(ioctx.PriorityUser), "the reads granted at once are charged")
}
