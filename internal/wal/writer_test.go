package wal

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/stretchr/testify/require"
)

// randomRecord returns n bytes from rng.
func randomRecord(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// writtenLog is a log and what the writer reported while writing it.
type writtenLog struct {
	data    []byte
	records [][]byte
	starts  []int64 // WriteRecord's offsets
	ends    []int64 // Size() after each record: where the record's last chunk ends
}

func writeLog(t testing.TB, records [][]byte) writtenLog {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	l := writtenLog{records: records}
	for _, rec := range records {
		off, err := w.WriteRecord(rec)
		require.NoError(t, err)
		l.starts = append(l.starts, off)
		l.ends = append(l.ends, w.Size())
	}
	require.NoError(t, w.Close())
	l.data = buf.Bytes()
	require.Equal(t, int64(len(l.data)), w.Size())
	return l
}

// checkRoundTrip writes records, checks the offsets the writer reports, and
// reads them back in every mode, checking Offset after each record.
func checkRoundTrip(t *testing.T, records [][]byte) {
	t.Helper()
	l := writeLog(t, records)
	prevEnd := int64(0)
	for i := range records {
		// A record starts where the previous one ended, or at the next block
		// when fewer than headerSize bytes were left for padding.
		start := prevEnd
		if left := BlockSize - prevEnd%BlockSize; left < headerSize {
			start += left
		}
		require.Equal(t, start, l.starts[i], "start of record %d", i)
		require.Greater(t, l.ends[i], l.starts[i], "record %d has at least a header", i)
		prevEnd = l.ends[i]
	}
	for _, mode := range allModes {
		r := NewReader(bytes.NewReader(l.data), mode)
		for i, want := range records {
			got, err := r.Next()
			require.NoError(t, err, "%s: record %d", mode, i)
			require.True(t, bytes.Equal(want, got), "%s: record %d: want %d bytes, got %d", mode, i, len(want), len(got))
			require.Equal(t, l.ends[i], r.Offset(), "%s: Offset after record %d", mode, i)
		}
		_, err := r.Next()
		require.Equal(t, io.EOF, err, "%s", mode)
		off, reason := r.Stopped()
		require.NoError(t, reason)
		require.Equal(t, int64(len(l.data)), off)
	}
}

func TestRoundTripSizes(t *testing.T) {
	const chunkMax = BlockSize - headerSize
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{0, 1, 2, 100, chunkMax - 1, chunkMax, chunkMax + 1, BlockSize, 2*chunkMax - 1, 2 * chunkMax,
		2*BlockSize + 1, 3*BlockSize + 123, 100000}
	// Put each record after a first one that ends at these block offsets: a
	// block start, the last offsets where a header still fits, and the
	// padding zone. (No record can end at block offsets 1 to 6: every chunk
	// is at least a header long.)
	endOffsets := []int{0, headerSize, headerSize + 1, BlockSize - 2*headerSize, BlockSize - headerSize - 1,
		BlockSize - headerSize, BlockSize - headerSize + 1, BlockSize - 1}
	for _, size := range sizes {
		for _, at := range endOffsets {
			t.Run(fmt.Sprintf("size=%d/after=%d", size, at), func(t *testing.T) {
				var records [][]byte
				if at > 0 {
					records = append(records, randomRecord(rng, at-headerSize))
				}
				records = append(records, randomRecord(rng, size), randomRecord(rng, 3))
				checkRoundTrip(t, records)
			})
		}
	}
}

func TestRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var records [][]byte
	for range 400 {
		var n int
		switch rng.IntN(10) {
		case 0:
			n = 0
		case 1, 2:
			n = BlockSize - headerSize - 5 + rng.IntN(10)
		case 3:
			n = rng.IntN(5 * BlockSize)
		default:
			n = rng.IntN(300)
		}
		records = append(records, randomRecord(rng, n))
	}
	checkRoundTrip(t, records)
}

// TestWriterFlushPoints writes the same records with Flush and Sync calls at
// random points: the bytes must not depend on them.
func TestWriterFlushPoints(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var records [][]byte
	for range 200 {
		records = append(records, randomRecord(rng, rng.IntN(3*BlockSize/2)))
	}
	want := writeLog(t, records).data
	for _, sync := range []bool{false, true} {
		var sw syncWriter
		w := NewWriter(&sw)
		for _, rec := range records {
			_, err := w.WriteRecord(rec)
			require.NoError(t, err)
			switch {
			case rng.IntN(4) > 0:
			case sync:
				require.NoError(t, w.Sync())
				require.Equal(t, w.Size(), int64(sw.synced), "Sync leaves nothing unsynced")
			default:
				require.NoError(t, w.Flush())
				require.Equal(t, w.Size(), int64(sw.buf.Len()), "Flush leaves nothing buffered")
			}
		}
		require.NoError(t, w.Close())
		require.True(t, bytes.Equal(want, sw.buf.Bytes()), "sync=%t: output differs at byte %d", sync, firstDiff(want, sw.buf.Bytes()))
		require.Zero(t, sw.closes, "Close must not close the underlying writer")
	}
}

// syncWriter records writes and syncs.
type syncWriter struct {
	buf      bytes.Buffer
	writes   []int // sizes of Write calls
	syncs    int
	synced   int // bytes written as of the last Sync
	closes   int
	syncErr  error
	writeErr error
}

func (s *syncWriter) Write(p []byte) (int, error) {
	if s.writeErr != nil {
		return 0, s.writeErr
	}
	s.writes = append(s.writes, len(p))
	return s.buf.Write(p)
}

func (s *syncWriter) Sync() error {
	s.syncs++
	if s.syncErr != nil {
		return s.syncErr
	}
	s.synced = s.buf.Len()
	return nil
}

func (s *syncWriter) Close() error { s.closes++; return nil }

func TestWriterBuffering(t *testing.T) {
	var sw syncWriter
	w := NewWriter(&sw)
	off, err := w.WriteRecord([]byte("small"))
	require.NoError(t, err)
	require.Zero(t, off)
	require.Equal(t, int64(headerSize+5), w.Size(), "Size counts buffered bytes")
	require.Zero(t, sw.buf.Len(), "a small record stays buffered")

	// A large record is written out as it is framed, in bounded pieces.
	big := make([]byte, 10*BlockSize)
	_, err = w.WriteRecord(big)
	require.NoError(t, err)
	require.NotEmpty(t, sw.writes)
	for _, n := range sw.writes {
		require.LessOrEqual(t, n, flushThreshold+headerSize+BlockSize)
	}
	require.Less(t, w.Size()-int64(sw.buf.Len()), int64(flushThreshold), "under a threshold's worth stays buffered")

	require.NoError(t, w.Sync())
	require.Equal(t, 1, sw.syncs)
	require.Equal(t, w.Size(), int64(sw.synced))
}

// failWriter accepts limit bytes, then fails.
type failWriter struct {
	n, limit int
	short    bool // fail by writing less without an error
}

var errInjected = errors.New("injected write failure")

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n+len(p) <= f.limit {
		f.n += len(p)
		return len(p), nil
	}
	k := f.limit - f.n
	f.n = f.limit
	if f.short {
		return k, nil
	}
	return k, errInjected
}

func TestWriterErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		limit   int
		short   bool
		records []int
		wantErr error
	}{
		{"fails-on-flush", 0, false, []int{10}, errInjected},
		{"fails-inside-big-record", BlockSize / 2, false, []int{4 * BlockSize}, errInjected},
		{"fails-after-some-records", 3 * BlockSize, false, []int{BlockSize, BlockSize, BlockSize, BlockSize, 10}, errInjected},
		{"short-write", BlockSize, true, []int{3 * BlockSize}, io.ErrShortWrite},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fw := &failWriter{limit: tc.limit, short: tc.short}
			w := NewWriter(fw)
			var err error
			for _, n := range tc.records {
				if _, err = w.WriteRecord(make([]byte, n)); err != nil {
					break
				}
			}
			if err == nil {
				err = w.Flush()
			}
			require.Error(t, err)
			require.True(t, errors.Is(err, tc.wantErr), "%v", err)
			require.Contains(t, err.Error(), "wal: writing")
			require.False(t, base.IsCorruption(err))
			// Sticky: every later call reports it.
			_, err2 := w.WriteRecord([]byte("more"))
			require.True(t, errors.Is(err2, tc.wantErr))
			require.True(t, errors.Is(w.Flush(), tc.wantErr))
			require.True(t, errors.Is(w.Sync(), tc.wantErr))
			require.True(t, errors.Is(w.Close(), tc.wantErr))
		})
	}
}

func TestWriterSyncError(t *testing.T) {
	errSync := errors.New("injected sync failure")
	sw := &syncWriter{syncErr: errSync}
	w := NewWriter(sw)
	_, err := w.WriteRecord([]byte("a"))
	require.NoError(t, err)
	err = w.Sync()
	require.True(t, errors.Is(err, errSync), "%v", err)
	require.Equal(t, headerSize+1, sw.buf.Len(), "the bytes were flushed before the sync")
	// A failed fsync is not retried: the kernel may have dropped the pages.
	sw.syncErr = nil
	require.True(t, errors.Is(w.Sync(), errSync))
	_, err = w.WriteRecord([]byte("b"))
	require.True(t, errors.Is(err, errSync))
	require.Equal(t, 1, sw.syncs)
}

func TestWriterWithoutSync(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	_, err := w.WriteRecord([]byte("a"))
	require.NoError(t, err)
	require.NoError(t, w.Sync(), "Sync without a Sync method flushes")
	require.Equal(t, headerSize+1, buf.Len())
}

func TestWriterClose(t *testing.T) {
	var sw syncWriter
	w := NewWriter(&sw)
	_, err := w.WriteRecord([]byte("a"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.Equal(t, headerSize+1, sw.buf.Len(), "Close flushes")
	require.Zero(t, sw.syncs, "Close does not sync")
	require.Zero(t, sw.closes, "Close does not close the underlying writer")
	for _, err := range []error{
		w.Close(),
		w.Flush(),
		w.Sync(),
		func() error { _, err := w.WriteRecord(nil); return err }(),
	} {
		require.True(t, errors.Is(err, base.ErrClosed), "%v", err)
	}
	require.Equal(t, int64(headerSize+1), w.Size())
}

func TestWriterAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, size := range []int{0, 100, 4 << 10, BlockSize, 100 << 10} {
		t.Run(fmt.Sprintf("size=%d", size), func(t *testing.T) {
			rec := make([]byte, size)
			w := NewWriter(io.Discard)
			allocs := testing.AllocsPerRun(200, func() {
				if _, err := w.WriteRecord(rec); err != nil {
					t.Fatal(err)
				}
			})
			require.Zero(t, allocs)
			allocs = testing.AllocsPerRun(50, func() {
				if _, err := w.WriteRecord(rec); err != nil {
					t.Fatal(err)
				}
				if err := w.Sync(); err != nil {
					t.Fatal(err)
				}
			})
			require.Zero(t, allocs)
		})
	}
}
