package engine

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/cpubench"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
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
			require.LessOrEqual(t, w.pendingBytes, walMaxPending+len(chunk))
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

// TestWALFileWritesInBackground checks that unsynced writes reach the file
// without Sync or Close, whether the background goroutine is idle when they
// come (one write, then a pause) or at work (bursts): Write wakes it only
// when it is idle, and a drain in progress must take the bytes written
// meanwhile.
func TestWALFileWritesInBackground(t *testing.T) {
	fs := vfs.NewMem()
	f, err := fs.Create("/log")
	require.NoError(t, err)
	w := newWALFile(f)
	defer func() { require.NoError(t, w.Close()) }()
	var want bytes.Buffer
	for i := range 200 {
		for j := range 1 + i%50 {
			p := bytes.Repeat([]byte{byte(i + j)}, 1+(i*j)%300)
			_, err := w.Write(p)
			require.NoError(t, err)
			want.Write(p)
		}
		require.Eventually(t, func() bool {
			return bytes.Equal(fileBytes(fs, "/log"), want.Bytes())
		}, 2*time.Minute, 50*time.Microsecond, "burst %d", i)
	}
}

// fileBytes returns the bytes in file name, nil when it is empty or cannot
// be read: Eventually calls it, outside the test's goroutine.
func fileBytes(fs vfs.FS, name string) []byte {
	f, err := fs.Open(name)
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	info, err := f.Stat()
	if err != nil || info.Size() == 0 {
		return nil
	}
	data := make([]byte, info.Size())
	if _, err := f.ReadAt(data, 0); err != nil {
		return nil
	}
	return data
}

// BenchmarkWALFileWrite hands 300-byte records (the size of the bench's
// fill records, framed) to a walFile over a file on tmpfs where there is
// one, as the commit leader does for unsynced writes; cpu-ns/op counts the
// background goroutine's work too.
func BenchmarkWALFileWrite(b *testing.B) {
	dir, err := os.MkdirTemp(benchBaseDir(), "shale-walfile-")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	f, err := vfs.Default.Create(filepath.Join(dir, "log"))
	if err != nil {
		b.Fatal(err)
	}
	w := newWALFile(f)
	rec := make([]byte, 300)
	b.ReportAllocs()
	stopCPU := cpubench.Start(b)
	for b.Loop() {
		if _, err := w.Write(rec); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	stopCPU()
}

// gatedFile blocks every Write until gate is closed.
type gatedFile struct {
	vfs.File
	gate chan struct{}
}

func (f *gatedFile) Write(p []byte) (int, error) {
	<-f.gate
	return f.File.Write(p)
}

// TestWALFileBacklogAllocations checks that a backlog behind a slow file is
// held in chunks allocated once, not in a buffer grown by append (which
// allocates and copies about twice the backlog), and that once drained the
// chunks kept (walMaxFreeChunks) are reused by a second backlog.
func TestWALFileBacklogAllocations(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	fs := vfs.NewMem()
	mf, err := fs.Create("/log")
	require.NoError(t, err)
	f := &gatedFile{File: mf, gate: make(chan struct{})}
	w := newWALFile(f)
	rec := make([]byte, 300)
	const backlog = walMaxPending - walChunkSize // the writer would wait at walMaxPending
	var want int
	// writeBacklog writes backlog bytes in records while the file is blocked
	// (the first record may reach the background writer, which then waits
	// for the gate) and returns the bytes allocated meanwhile.
	writeBacklog := func(backlog int) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range backlog / len(rec) {
			_, err := w.Write(rec)
			require.NoError(t, err)
			want += len(rec)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	first := writeBacklog(backlog)
	require.Less(t, first, uint64(backlog+backlog/4), "the first backlog allocates about its size")
	close(f.gate)
	require.NoError(t, w.Sync())
	f.gate = make(chan struct{})
	// The background writer holds a chunk while it waits at the gate.
	second := writeBacklog((walMaxFreeChunks - 1) * walChunkSize)
	require.Less(t, second, uint64(walChunkSize/2), "a second backlog reuses the chunks kept")
	close(f.gate)
	require.NoError(t, w.Close())
	require.Len(t, readAll(t, fs, "/log"), want)
}

// TestWALFileFreeChunksCapped checks that after a backlog of many chunks
// drains, a walFile keeps at most walMaxFreeChunks of them for itself, and
// none once closed (walChunks takes up to as many for the next WAL).
func TestWALFileFreeChunksCapped(t *testing.T) {
	for _, backlog := range []int{walChunkSize / 2, 3 * walChunkSize, walMaxPending - walChunkSize, walMaxPending} {
		t.Run(strconv.Itoa(backlog), func(t *testing.T) {
			fs := vfs.NewMem()
			mf, err := fs.Create("/log")
			require.NoError(t, err)
			f := &gatedFile{File: mf, gate: make(chan struct{})}
			w := newWALFile(f)
			rec := make([]byte, 1000)
			for range backlog / len(rec) {
				_, err := w.Write(rec)
				require.NoError(t, err)
			}
			close(f.gate)
			require.NoError(t, w.Sync())
			w.mu.Lock()
			kept := len(w.free)
			w.mu.Unlock()
			require.LessOrEqual(t, kept, walMaxFreeChunks)
			require.NoError(t, w.Close())
			require.Empty(t, w.free, "a closed walFile keeps no chunk")
			require.Len(t, readAll(t, fs, "/log"), backlog/len(rec)*len(rec))
		})
	}
}

// TestWALFileChunksOutliveTheirFile checks that a WAL's drained chunks serve
// the next WAL's backlog (a walFile lasts one memtable): a second file's
// backlog that fits the chunks kept allocates next to nothing. The chunks
// are shared by the process's WALs, so a database of another test could
// take them in between: the check gets a few attempts.
func TestWALFileChunksOutliveTheirFile(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	rec := make([]byte, 300)
	fs := vfs.NewMem()
	// backlogOn writes backlog bytes to a new WAL named name behind a
	// blocked file, then drains and closes it, and returns the bytes
	// allocated while the backlog was written.
	backlogOn := func(name string, backlog int) uint64 {
		mf, err := fs.Create(name)
		require.NoError(t, err)
		f := &gatedFile{File: mf, gate: make(chan struct{})}
		w := newWALFile(f)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range backlog / len(rec) {
			_, err := w.Write(rec)
			require.NoError(t, err)
		}
		runtime.ReadMemStats(&after)
		close(f.gate)
		require.NoError(t, w.Close())
		return after.TotalAlloc - before.TotalAlloc
	}
	var second uint64
	for attempt := range 3 {
		backlogOn("/a"+strconv.Itoa(attempt), walMaxPending-walChunkSize)
		if second = backlogOn("/b"+strconv.Itoa(attempt), (walMaxFreeChunks-1)*walChunkSize); second < walChunkSize/2 {
			return
		}
	}
	t.Fatalf("the second WAL's backlog allocated %d bytes: the first's chunks were not reused", second)
}

// setWALInlineAfter makes walFile's inline threshold d for the test.
func setWALInlineAfter(t *testing.T, d time.Duration) {
	t.Helper()
	prev := walInlineAfterHook.Swap(&d)
	t.Cleanup(func() { walInlineAfterHook.Store(prev) })
}

// TestWALFileInline checks which writes the leader makes itself: a lone
// record once the file has been quiet for the threshold, and a record a
// Sync follows, reach the file before Write returns and leave the
// background goroutine asleep; a record others are queued behind, and a
// lone one within the threshold, are handed off and reach the file later.
func TestWALFileInline(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hint   walHint
		after  time.Duration
		inline bool
	}{
		{"lone", walLone, 0, true},
		{"lone within the threshold", walLone, time.Hour, false},
		{"syncing", walSyncing, time.Hour, true},
		{"queued", walQueued, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setWALInlineAfter(t, tc.after)
			fs := vfs.NewMem()
			f, err := fs.Create("/log")
			require.NoError(t, err)
			require.NoError(t, syncDir(fs, "/"))
			w := newWALFile(f)
			var want bytes.Buffer
			for i := range 20 {
				w.hint = tc.hint
				p := bytes.Repeat([]byte{byte(i)}, 1+i*37)
				n, err := w.Write(p)
				require.NoError(t, err)
				require.Equal(t, len(p), n)
				want.Write(p)
				if tc.inline {
					require.Equal(t, want.Bytes(), fileBytes(fs, "/log"), "write %d is in the file when Write returns", i)
					w.mu.Lock()
					idle := w.idle
					w.mu.Unlock()
					require.True(t, idle, "the background goroutine was not woken")
				} else {
					require.Eventually(t, func() bool {
						return bytes.Equal(fileBytes(fs, "/log"), want.Bytes())
					}, 2*time.Minute, 50*time.Microsecond, "write %d", i)
				}
			}
			require.NoError(t, w.Sync())
			require.Equal(t, want.Bytes(), readAll(t, fs.CrashClone(), "/log"))
			require.NoError(t, w.Close())
		})
	}
}

// TestWALFileInlineKeepsOrder checks that a record the leader would write
// itself waits behind bytes still pending or being written by the
// background goroutine, so the file keeps the records' order.
func TestWALFileInlineKeepsOrder(t *testing.T) {
	setWALInlineAfter(t, 0)
	fs := vfs.NewMem()
	mf, err := fs.Create("/log")
	require.NoError(t, err)
	require.NoError(t, syncDir(fs, "/"))
	f := &gatedFile{File: mf, gate: make(chan struct{})}
	w := newWALFile(f)
	write := func(h walHint, s string) {
		w.hint = h
		_, err := w.Write([]byte(s))
		require.NoError(t, err)
	}
	write(walQueued, "a")
	// The background goroutine takes "a" and blocks writing it.
	require.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.writing
	}, 2*time.Minute, 50*time.Microsecond)
	// None of these may write to the blocked file itself: they queue.
	done := make(chan struct{})
	go func() {
		defer close(done)
		write(walLone, "b")    // being written: appended
		write(walQueued, "c")  // pending
		write(walLone, "d")    // pending: appended
		write(walSyncing, "e") // pending: appended
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("a write went to the file while another write was in progress")
	}
	close(f.gate)
	require.NoError(t, w.Sync())
	require.Equal(t, "abcde", string(readAll(t, fs.CrashClone(), "/log")))
	write(walLone, "f") // nothing pending: inline
	require.Equal(t, "abcdef", string(fileBytes(fs, "/log")))
	require.NoError(t, w.Close())

	// Bytes pending that the background goroutine has not taken yet (it is
	// started late here, so that they stay pending) come first too.
	f2, err := fs.Create("/log2")
	require.NoError(t, err)
	w = &walFile{f: f2, idle: true, wake: make(chan struct{}, 1), finished: make(chan struct{})}
	w.cond.L = &w.mu
	write(walQueued, "a")
	write(walLone, "b")
	write(walSyncing, "c")
	require.Empty(t, fileBytes(fs, "/log2"), "nothing overtook the pending bytes")
	go w.writeLoop()
	require.NoError(t, w.Sync())
	require.Equal(t, "abc", string(fileBytes(fs, "/log2")))
	require.NoError(t, w.Close())
}

// TestWALFileInlineErrorIsSticky checks that a write the leader makes
// itself fails its own Write, and every later Write, Sync and Close.
func TestWALFileInlineErrorIsSticky(t *testing.T) {
	setWALInlineAfter(t, 0)
	for _, h := range []walHint{walLone, walSyncing} {
		fs := errorfs.Wrap(vfs.NewMem(), errorfs.OnKind(errorfs.OpFileWrite))
		f, err := fs.Create("/log")
		require.NoError(t, err)
		w := newWALFile(f)
		w.hint = h
		_, err = w.Write([]byte("x"))
		require.ErrorIs(t, err, errorfs.ErrInjected, "hint %d: the write itself fails", h)
		w.hint = walQueued
		_, err = w.Write([]byte("y"))
		require.ErrorIs(t, err, errorfs.ErrInjected, "later writes fail too")
		require.ErrorIs(t, w.Sync(), errorfs.ErrInjected)
		require.ErrorIs(t, w.Close(), errorfs.ErrInjected)
	}
}

// TestWALFileLoneDecision pins when a lone record goes inline without a
// test's threshold: only once the file has been quiet for walInlineAfter,
// only while the last measured wake of the background goroutine was slow,
// and never more than walWakeProbe times in a row, so that the wake is
// measured again.
func TestWALFileLoneDecision(t *testing.T) {
	quiet, busy := time.Now().Add(-time.Second), time.Now().Add(time.Hour)
	for _, tc := range []struct {
		name      string
		slowWake  bool
		inlined   int
		lastWrite time.Time
		want      bool
	}{
		{"quiet, slow wakes", true, 0, quiet, true},
		{"quiet, slow wakes, last before the probe", true, walWakeProbe - 1, quiet, true},
		{"quiet, slow wakes, probe due", true, walWakeProbe, quiet, false},
		{"quiet, cheap wakes", false, 0, quiet, false},
		{"a write just now", true, 0, busy, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &walFile{hint: walLone, slowWake: tc.slowWake, inlined: tc.inlined, lastWrite: tc.lastWrite}
			require.Equal(t, tc.want, w.inlineLocked())
			if tc.want {
				require.Equal(t, tc.inlined+1, w.inlined, "an inline record counts toward the probe")
			}
		})
	}
	// A new walFile writes lone records inline until a wake is measured.
	fs := vfs.NewMem()
	f, err := fs.Create("/log")
	require.NoError(t, err)
	w := newWALFile(f)
	w.lastWrite = quiet
	require.True(t, w.slowWake)
	// The probe: after walWakeProbe inline records, one is handed off.
	for i := range walWakeProbe + 1 {
		w.hint = walLone
		w.lastWrite = quiet
		_, err := w.Write([]byte{byte(i)})
		require.NoError(t, err)
		if i < walWakeProbe {
			require.Len(t, fileBytes(fs, "/log"), i+1, "record %d is written inline", i)
		}
	}
	require.Zero(t, w.inlined, "the hand-off measured a wake")
	require.NoError(t, w.Close())
	require.Len(t, readAll(t, fs, "/log"), walWakeProbe+1)
}
