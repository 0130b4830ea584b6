package wal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/iotest"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/stretchr/testify/require"
)

// patternRecords returns records of the given sizes filled with a pattern
// that cannot contain an embedded intact chunk, so the damage tests can
// expect exact torn-tail classifications.
func patternRecords(sizes ...int) [][]byte {
	var out [][]byte
	for i, n := range sizes {
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(31*j + 7*i + 1)
		}
		out = append(out, b)
	}
	return out
}

// chunkInfo is a chunk of a written log and the record it belongs to.
type chunkInfo struct {
	off, end int64
	record   int
}

// chunksOf lists the chunks of a writer-produced log.
func chunksOf(l writtenLog) []chunkInfo {
	var out []chunkInfo
	for i := range l.records {
		for off := l.starts[i]; off < l.ends[i]; {
			n := int64(binary.LittleEndian.Uint16(l.data[off+4:]))
			out = append(out, chunkInfo{off: off, end: off + headerSize + n, record: i})
			off += headerSize + n // a record's chunks are contiguous
		}
	}
	return out
}

// truncationCuts returns the offsets at which to cut a log: all of them for a
// small log, otherwise every offset near a chunk or block boundary plus a
// stride through the rest.
func truncationCuts(l writtenLog) []int {
	if len(l.data) <= 4<<10 {
		cuts := make([]int, len(l.data)+1)
		for i := range cuts {
			cuts[i] = i
		}
		return cuts
	}
	set := map[int]bool{}
	add := func(center int64) {
		// Either side of the point, and where a header after it would be
		// one byte short, complete, and one byte into its payload.
		for _, d := range []int{-2, -1, 0, 1, 2, headerSize - 1, headerSize, headerSize + 1} {
			if c := int(center) + d; c >= 0 && c <= len(l.data) {
				set[c] = true
			}
		}
	}
	for _, c := range chunksOf(l) {
		add(c.off)
		add(c.end)
	}
	for b := 0; b <= len(l.data); b += BlockSize {
		add(int64(b))
	}
	for c := 0; c <= len(l.data); c += 4099 {
		set[c] = true
	}
	cuts := make([]int, 0, len(set))
	for c := range set {
		cuts = append(cuts, c)
	}
	slices.Sort(cuts)
	return cuts
}

// TestTruncateEveryOffset cuts logs at (every / many) offsets and checks each
// mode: a cut is a torn tail unless it falls exactly at a record's end or in
// the padding after it.
func TestTruncateEveryOffset(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sizes []int
	}{
		{"small", []int{0, 1, 10, 200, 1000, 0, 5}},
		{"blocks", []int{BlockSize - headerSize, 3, BlockSize - 4*headerSize + 2, 100, 3 * BlockSize, 0, BlockSize, 50}},
	} {
		l := writeLog(t, patternRecords(tc.sizes...))
		cuts := truncationCuts(l)
		t.Run(tc.name, func(t *testing.T) {
			for _, cut := range cuts {
				data := l.data[:cut]
				// k records survive whole; the cut is clean if nothing of
				// record k was written.
				k := 0
				for k < len(l.records) && l.ends[k] <= int64(cut) {
					k++
				}
				clean := k == len(l.records) || int64(cut) <= l.starts[k]
				prefixEnd := int64(0)
				if k > 0 {
					prefixEnd = l.ends[k-1]
				}
				for _, mode := range allModes {
					res := readAll(t, data, mode)
					requireRecords(t, l.records[:k], res.records)
					require.Equal(t, prefixEnd, res.offset, "cut %d %s", cut, mode)
					if clean {
						require.NoError(t, res.err, "cut %d %s", cut, mode)
						require.NoError(t, res.stop, "cut %d %s", cut, mode)
						require.Zero(t, res.droppedRecs, "cut %d %s", cut, mode)
						continue
					}
					switch mode {
					case AbsoluteConsistency:
						require.True(t, base.IsCorruption(res.err), "cut %d: %v", cut, res.err)
					case TolerateCorruptedTailRecords:
						require.NoError(t, res.err, "cut %d: a truncation is always a torn tail", cut)
						require.True(t, base.IsCorruption(res.stop), "cut %d", cut)
						require.Contains(t, res.stop.Error(), "torn tail")
					case PointInTime:
						require.NoError(t, res.err)
						require.True(t, base.IsCorruption(res.stop), "cut %d", cut)
					case SkipAnyCorrupted:
						require.NoError(t, res.err)
						require.True(t, base.IsCorruption(res.stop), "cut %d", cut)
						require.Equal(t, 1, res.droppedRecs, "cut %d", cut)
						require.Equal(t, int64(cut)-l.starts[k], res.droppedBytes, "cut %d", cut)
					}
				}
			}
		})
	}
}

// TestFlipEachChunk flips bits in every header byte and in payload bytes of
// every chunk of a multi-block log.
func TestFlipEachChunk(t *testing.T) {
	l := writeLog(t, patternRecords(10, 0, BlockSize, 300, 2*BlockSize+17, BlockSize-2*headerSize-300-17, 5, 40))
	chunks := chunksOf(l)
	require.Greater(t, len(chunks), len(l.records), "some records span blocks")
	for ci, c := range chunks {
		positions := []int64{0, 1, 2, 3, 4, 5, 6}
		if n := c.end - c.off - headerSize; n > 0 {
			positions = append(positions, headerSize, headerSize+n/2, headerSize+n-1)
		}
		for _, pos := range positions {
			for _, bit := range []byte{0x01, 0x80} {
				t.Run(fmt.Sprintf("chunk=%d/pos=%d/bit=%#x", ci, pos, bit), func(t *testing.T) {
					data := bytes.Clone(l.data)
					data[c.off+pos] ^= bit
					j := c.record
					prefixEnd := int64(0)
					if j > 0 {
						prefixEnd = l.ends[j-1]
					}
					lastChunk := ci == len(chunks)-1
					for _, mode := range []RecoveryMode{TolerateCorruptedTailRecords, AbsoluteConsistency, PointInTime} {
						res := readAll(t, data, mode)
						requireRecords(t, l.records[:j], res.records)
						require.Equal(t, prefixEnd, res.offset)
						switch {
						case mode == AbsoluteConsistency:
							require.True(t, base.IsCorruption(res.err), "%v", res.err)
						case mode == PointInTime:
							require.NoError(t, res.err)
							require.True(t, base.IsCorruption(res.stop))
						case lastChunk:
							require.NoError(t, res.err)
							require.Contains(t, res.stop.Error(), "torn tail")
						default:
							require.True(t, base.IsCorruption(res.err), "%v", res.err)
							require.Contains(t, res.err.Error(), "corruption in the middle of the log")
							require.Contains(t, res.err.Error(), fmt.Sprintf("an intact chunk follows at offset %d", chunks[ci+1].off))
						}
					}
					// SkipAnyCorrupted never returns what was not written, and
					// loses nothing outside the damaged chunk's block.
					res := readAll(t, data, SkipAnyCorrupted)
					require.NoError(t, res.err)
					require.Equal(t, 1, res.droppedRecs)
					require.True(t, isSubsequence(res.records, l.records), "skip returned a record that was not written")
					blockEnd := (c.off/BlockSize + 1) * BlockSize
					var want [][]byte
					for i, rec := range l.records {
						if i < j || l.starts[i] >= blockEnd {
							want = append(want, rec)
						}
					}
					require.True(t, isSubsequence(want, res.records), "skip lost a record outside the damaged block")
					if pos < 4 || pos >= headerSize {
						// The checksum or payload is damaged, the length is
						// good: exactly record j is lost.
						want = slices.Delete(slices.Clone(l.records), j, j+1)
						requireRecords(t, want, res.records)
						require.Equal(t, l.ends[j]-l.starts[j], res.droppedBytes)
					}
				})
			}
		}
	}
}

// isSubsequence reports whether sub appears in order within all.
func isSubsequence(sub, all [][]byte) bool {
	i := 0
	for _, rec := range all {
		if i < len(sub) && bytes.Equal(sub[i], rec) {
			i++
		}
	}
	return i == len(sub)
}

// TestZeroedRegions covers zeros appended past the end (a size made durable
// before the data), zeroed tails in place, and zeroed chunks mid-log.
func TestZeroedRegions(t *testing.T) {
	// This log ends 3 bytes before a block boundary: 3 more zeros are only
	// padding.
	l := writeLog(t, patternRecords(100, BlockSize-2*headerSize-100-3))
	require.Equal(t, int64(BlockSize-3), int64(len(l.data)))
	all := len(l.records)
	for _, tc := range []struct {
		name    string
		edit    func([]byte) []byte
		records int
		torn    bool // else mid-log
		clean   bool
	}{
		{"append-1", appendZeros(1), all, true, true},
		{"append-3-padding", appendZeros(3), all, true, true},
		{"append-4", appendZeros(4), all, true, false},
		{"append-9", appendZeros(9), all, true, false},
		{"append-block", appendZeros(BlockSize), all, true, false},
		{"append-3-blocks", appendZeros(3*BlockSize + 5), all, true, false},
		{"zero-last-chunk", zeroRange(l.starts[1], int64(len(l.data))), 1, true, false},
		{"zero-last-chunk-header", zeroRange(l.starts[1], l.starts[1]+headerSize), 1, true, false},
		{"zero-everything", zeroRange(0, int64(len(l.data))), 0, true, false},
		{"zero-first-chunk", zeroRange(0, l.ends[0]), 0, false, false},
		{"zero-first-chunk-header", zeroRange(0, headerSize), 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.edit(bytes.Clone(l.data))
			for _, mode := range allModes {
				res := readAll(t, data, mode)
				requireRecords(t, l.records[:tc.records], res.records[:min(len(res.records), tc.records)])
				switch {
				case tc.clean:
					requireRecords(t, l.records, res.records)
					require.NoError(t, res.err)
					require.NoError(t, res.stop)
				case mode == SkipAnyCorrupted:
					require.NoError(t, res.err)
					require.Equal(t, 1, res.droppedRecs)
				case mode == PointInTime:
					require.Len(t, res.records, tc.records)
					require.NoError(t, res.err)
					require.Error(t, res.stop)
				case mode == AbsoluteConsistency:
					require.Len(t, res.records, tc.records)
					require.True(t, base.IsCorruption(res.err))
				case tc.torn:
					require.Len(t, res.records, tc.records)
					require.NoError(t, res.err)
					require.Contains(t, res.stop.Error(), "torn tail")
				default:
					require.Len(t, res.records, tc.records)
					require.Contains(t, res.err.Error(), "corruption in the middle of the log")
				}
			}
		})
	}
}

func appendZeros(n int) func([]byte) []byte {
	return func(b []byte) []byte { return append(b, make([]byte, n)...) }
}

func zeroRange(from, to int64) func([]byte) []byte {
	return func(b []byte) []byte { clear(b[from:to]); return b }
}

// rawChunk frames one chunk by hand, so tests can build logs the Writer
// never writes.
func rawChunk(typ byte, payload string) []byte {
	b := make([]byte, headerSize, headerSize+len(payload))
	b = append(b, payload...)
	var c uint32
	if typ <= lastType {
		c = typeCRC[typ].Update([]byte(payload)).Value()
	}
	binary.LittleEndian.PutUint32(b, c)
	binary.LittleEndian.PutUint16(b[4:], uint16(len(payload)))
	b[6] = typ
	return b
}

func TestChunkSequences(t *testing.T) {
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	full, first, middle, last := func(s string) []byte { return rawChunk(fullType, s) },
		func(s string) []byte { return rawChunk(firstType, s) },
		func(s string) []byte { return rawChunk(middleType, s) },
		func(s string) []byte { return rawChunk(lastType, s) }
	badLen := full("x")
	binary.LittleEndian.PutUint16(badLen[4:], BlockSize)
	// At offset 8, 32753 payload bytes fit; this claims one more.
	badLenByOne := full("x")
	binary.LittleEndian.PutUint16(badLenByOne[4:], BlockSize-8-headerSize+1)

	type outcome struct {
		records []string
		result  string // eof, stopped or error
		match   string
	}
	for _, tc := range []struct {
		name     string
		data     []byte
		tolerate outcome
		skip     outcome
	}{
		{
			name:     "fragments",
			data:     cat(first("a"), middle("b"), middle(""), last("c"), full("d")),
			tolerate: outcome{[]string{"abc", "d"}, "eof", ""},
			skip:     outcome{[]string{"abc", "d"}, "eof", ""},
		},
		{
			name:     "empty-fragments",
			data:     cat(first(""), last(""), full("")),
			tolerate: outcome{[]string{"", ""}, "eof", ""},
			skip:     outcome{[]string{"", ""}, "eof", ""},
		},
		{
			name:     "orphan-middle-at-end",
			data:     cat(full("a"), middle("b")),
			tolerate: outcome{[]string{"a"}, "stopped", "torn tail: middle chunk at offset 8 (length 1) with no record in progress"},
			skip:     outcome{[]string{"a"}, "stopped", "middle chunk at offset 8 (length 1) with no record in progress"},
		},
		{
			name:     "orphan-last-mid-log",
			data:     cat(last("x"), full("a")),
			tolerate: outcome{nil, "error", "corruption in the middle of the log: last chunk at offset 0 (length 1) with no record in progress; an intact chunk follows at offset 8"},
			skip:     outcome{[]string{"a"}, "eof", ""},
		},
		{
			name:     "first-then-full",
			data:     cat(full("a"), first("b"), full("c")),
			tolerate: outcome{[]string{"a"}, "error", "record at offset 8 has no last chunk: a full chunk at offset 16 starts another record"},
			skip:     outcome{[]string{"a", "c"}, "eof", ""},
		},
		{
			name:     "first-then-first",
			data:     cat(first("a"), middle("b"), first("c"), last("d")),
			tolerate: outcome{nil, "error", "record at offset 0 has no last chunk: a first chunk at offset 16 starts another record"},
			skip:     outcome{[]string{"cd"}, "eof", ""},
		},
		{
			name:     "first-then-eof",
			data:     cat(full("a"), first("b"), middle("c")),
			tolerate: outcome{[]string{"a"}, "stopped", "torn tail: record at offset 8 has no last chunk before EOF at offset 24"},
			skip:     outcome{[]string{"a"}, "stopped", "record at offset 8 has no last chunk before EOF"},
		},
		{
			name:     "unknown-type-mid-log",
			data:     cat(full("a"), rawChunk(9, "zz"), full("b")),
			tolerate: outcome{[]string{"a"}, "error", "unknown chunk type 9 at offset 8; an intact chunk follows at offset 17"},
			// The rest of the block is dropped, so "b" is lost with it.
			skip: outcome{[]string{"a"}, "stopped", "unknown chunk type 9 at offset 8"},
		},
		{
			name:     "unknown-type-at-end",
			data:     cat(full("a"), rawChunk(200, "zz")),
			tolerate: outcome{[]string{"a"}, "stopped", "torn tail: unknown chunk type 200 at offset 8"},
			skip:     outcome{[]string{"a"}, "stopped", "unknown chunk type 200"},
		},
		{
			name:     "bad-length",
			data:     cat(full("a"), badLen),
			tolerate: outcome{[]string{"a"}, "stopped", "torn tail: bad length 32768 in full chunk at offset 8: 32753 bytes fit before the block ends"},
			skip:     outcome{[]string{"a"}, "stopped", "bad length 32768"},
		},
		{
			name:     "bad-length-by-one",
			data:     cat(full("a"), badLenByOne),
			tolerate: outcome{[]string{"a"}, "stopped", "torn tail: bad length 32754 in full chunk at offset 8: 32753 bytes fit before the block ends"},
			skip:     outcome{[]string{"a"}, "stopped", "bad length 32754"},
		},
		{
			name:     "zero-type-with-length-mid-log",
			data:     cat(full("a"), rawChunk(zeroType, "zz"), full("b")),
			tolerate: outcome{[]string{"a"}, "error", "chunk type 0 (zeroed or unwritten region) at offset 8; an intact chunk follows at offset 17"},
			skip:     outcome{[]string{"a"}, "stopped", "chunk type 0"},
		},
		{
			name:     "checksum-then-garbage",
			data:     cat(full("a"), func() []byte { c := full("bb"); c[0] ^= 1; return c }(), []byte("garbage!")),
			tolerate: outcome{[]string{"a"}, "stopped", "torn tail: checksum mismatch in full chunk at offset 8 (length 2)"},
			skip:     outcome{[]string{"a"}, "stopped", "checksum mismatch"},
		},
		{
			name: "checksum-then-zero-type-with-valid-checksum",
			// Type 0 is never intact, whatever its checksum.
			data:     cat(full("a"), func() []byte { c := full("b"); c[0] ^= 1; return c }(), rawChunk(zeroType, "zz")),
			tolerate: outcome{[]string{"a"}, "stopped", "torn tail: checksum mismatch in full chunk at offset 8 (length 1)"},
			skip:     outcome{[]string{"a"}, "stopped", "checksum mismatch in full chunk at offset 8"},
		},
		{
			name: "checksum-then-embedded-chunk",
			// The damaged chunk's payload holds an intact chunk: the search
			// finds it, so this is reported as mid-log corruption (the safe
			// side), and Skip does not trust the length into it.
			data:     cat(full("a"), func() []byte { c := full(string(full("inner"))); c[0] ^= 1; return c }()),
			tolerate: outcome{[]string{"a"}, "error", "an intact chunk follows at offset 15"},
			skip:     outcome{[]string{"a"}, "stopped", "checksum mismatch"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(mode RecoveryMode, want outcome) {
				res := readAll(t, tc.data, mode)
				var got []string
				for _, r := range res.records {
					got = append(got, string(r))
				}
				require.Equal(t, want.records, got, "%s", mode)
				var msg error
				switch want.result {
				case "eof":
					require.NoError(t, res.err)
					require.NoError(t, res.stop)
				case "stopped":
					require.NoError(t, res.err, "%s", mode)
					msg = res.stop
				case "error":
					msg = res.err
				default:
					t.Fatalf("bad result %q", want.result)
				}
				if want.result != "eof" {
					require.Error(t, msg, "%s: want %s", mode, want.result)
					require.True(t, base.IsCorruption(msg), "%s: %v", mode, msg)
					require.Contains(t, msg.Error(), want.match, "%s", mode)
				}
			}
			check(TolerateCorruptedTailRecords, tc.tolerate)
			check(SkipAnyCorrupted, tc.skip)
			// PointInTime and AbsoluteConsistency return the same prefix as
			// TolerateCorruptedTailRecords and stop or fail at any damage.
			damaged := tc.tolerate.result != "eof"
			pit := outcome{tc.tolerate.records, "eof", ""}
			abs := pit
			if damaged {
				pit.result, abs.result = "stopped", "error"
			}
			check(PointInTime, pit)
			check(AbsoluteConsistency, abs)
		})
	}
}

// failReader returns data, then err instead of EOF.
type failReader struct {
	r   io.Reader
	err error
}

func (f *failReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, f.err
	}
	return n, err
}

func TestReadErrors(t *testing.T) {
	l := writeLog(t, patternRecords(10, BlockSize, 20))
	errRead := errors.New("injected read failure")
	for _, tc := range []struct {
		name    string
		data    []byte
		mode    RecoveryMode
		records int
	}{
		// The failing read returns the rest of the data with the error; the
		// data is not used.
		{"first-block", l.data[:100], PointInTime, 0},
		{"second-block", l.data, TolerateCorruptedTailRecords, 1},
		{"second-block-cut", l.data[:BlockSize+100], AbsoluteConsistency, 1},
		// The read error happens while searching past the damage.
		{"during-search", func() []byte { d := bytes.Clone(l.data[:BlockSize+100]); d[20] ^= 1; return d }(), TolerateCorruptedTailRecords, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(&failReader{bytes.NewReader(tc.data), errRead}, tc.mode)
			for i := range tc.records {
				_, err := r.Next()
				require.NoError(t, err, "record %d", i)
			}
			_, err := r.Next()
			require.True(t, errors.Is(err, errRead), "%v", err)
			require.False(t, base.IsCorruption(err), "an I/O error is not corruption: %v", err)
			require.Contains(t, err.Error(), "wal: reading block at offset")
			_, err2 := r.Next()
			require.Equal(t, err, err2, "sticky")
			_, reason := r.Stopped()
			require.NoError(t, reason)
		})
	}
}

// TestShortReads feeds the reader through readers that return little data
// per call.
func TestShortReads(t *testing.T) {
	l := writeLog(t, patternRecords(0, 10, BlockSize, 3*BlockSize+5, 20))
	for name, wrap := range map[string]func(io.Reader) io.Reader{
		"one-byte":  iotest.OneByteReader,
		"half":      iotest.HalfReader,
		"data-err":  iotest.DataErrReader,
		"plain-eof": func(r io.Reader) io.Reader { return r },
	} {
		t.Run(name, func(t *testing.T) {
			r := NewReader(wrap(bytes.NewReader(l.data)), AbsoluteConsistency)
			for i, want := range l.records {
				got, err := r.Next()
				require.NoError(t, err)
				require.True(t, bytes.Equal(want, got), "record %d", i)
			}
			_, err := r.Next()
			require.Equal(t, io.EOF, err)
		})
	}
}

func TestReaderNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "000007.log")
	f, err := os.Create(path)
	require.NoError(t, err)
	w := NewWriter(f)
	_, err = w.WriteRecord([]byte("hello"))
	require.NoError(t, err)
	require.NoError(t, w.Sync())
	_, err = f.Write([]byte{1, 2, 3}) // a torn header
	require.NoError(t, err)
	require.NoError(t, f.Close())

	f, err = os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r := NewReader(f, AbsoluteConsistency)
	rec, err := r.Next()
	require.NoError(t, err)
	require.Equal(t, "hello", string(rec))
	_, err = r.Next()
	require.True(t, base.IsCorruption(err))
	require.Contains(t, err.Error(), "wal "+path+": corruption: incomplete chunk header at offset 12: 3 of 7 bytes before EOF")
}

func TestUnknownMode(t *testing.T) {
	r := NewReader(bytes.NewReader(nil), SkipAnyCorrupted+1)
	_, err := r.Next()
	require.True(t, errors.Is(err, base.ErrInvalidArgument), "%v", err)
	require.Equal(t, "RecoveryMode(4)", (SkipAnyCorrupted + 1).String())
	require.Equal(t, "PointInTime", PointInTime.String())
}

func TestEmptyLog(t *testing.T) {
	for _, mode := range allModes {
		res := readAll(t, nil, mode)
		require.Empty(t, res.records)
		require.NoError(t, res.err)
		require.NoError(t, res.stop)
		require.Zero(t, res.offset)
	}
}

// TestStoppedBeforeEnd checks Stopped and Dropped before the end is reached.
func TestStoppedBeforeEnd(t *testing.T) {
	l := writeLog(t, patternRecords(1, 2))
	data := bytes.Clone(l.data)
	data[len(data)-1] ^= 1
	r := NewReader(bytes.NewReader(data), PointInTime)
	off, reason := r.Stopped()
	require.Zero(t, off)
	require.NoError(t, reason)
	_, err := r.Next()
	require.NoError(t, err)
	off, reason = r.Stopped()
	require.Equal(t, l.ends[0], off)
	require.NoError(t, reason, "not stopped yet")
	_, err = r.Next()
	require.Equal(t, io.EOF, err)
	off, reason = r.Stopped()
	require.Equal(t, l.ends[0], off)
	require.True(t, base.IsCorruption(reason))
}

func TestReaderAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var records [][]byte
	for range 2000 {
		n := rng.IntN(200)
		if rng.IntN(20) == 0 {
			n = rng.IntN(3 * BlockSize)
		}
		records = append(records, randomRecord(rng, n))
	}
	l := writeLog(t, records)
	r := NewReader(bytes.NewReader(l.data), TolerateCorruptedTailRecords)
	// Warm up: the fragment buffer grows to the largest record once.
	for range 100 {
		_, err := r.Next()
		require.NoError(t, err)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs, "Next allocates only to grow its fragment buffer")
}

// TestTailIncomplete classifies the damage a log stops at: only what a crash
// during an append can leave (a chunk cut short by EOF, a record missing its
// later chunks, zeros to EOF) is an incomplete final record; damage to a
// complete chunk at the end is not, though TolerateCorruptedTailRecords
// still stops there without an error.
func TestTailIncomplete(t *testing.T) {
	// Three records; the last spans a block boundary.
	l := writeLog(t, patternRecords(100, 300, BlockSize))
	last := l.starts[2]
	end := int64(len(l.data))
	garbage := func(from, to int64) func([]byte) []byte {
		return func(b []byte) []byte {
			rng := rand.New(rand.NewPCG(uint64(from), uint64(to)))
			for i := from; i < to; i++ {
				b[i] = byte(rng.Uint32()) | 0x80 // never a valid type byte
			}
			return b
		}
	}
	for _, tc := range []struct {
		name       string
		edit       func([]byte) []byte
		records    int
		incomplete bool
	}{
		{"cut-header", func(b []byte) []byte { return b[:last+3] }, 2, true},
		{"cut-payload", func(b []byte) []byte { return b[:last+headerSize+10] }, 2, true},
		{"cut-at-block", func(b []byte) []byte { return b[:BlockSize] }, 2, true},
		{"append-zeros", appendZeros(3 * BlockSize), 3, true},
		{"zero-last-record", zeroRange(last, end), 2, true},
		{"flip-last-payload", func(b []byte) []byte { b[end-3] ^= 0x10; return b }, 2, false},
		{"flip-last-type", func(b []byte) []byte { b[BlockSize+6] = 9; return b }, 2, false},
		{"garbage-last-block", garbage(BlockSize, end), 2, false},
		{"garbage-from-last-record", garbage(last, end), 2, false},
		{"zeros-then-garbage", func(b []byte) []byte {
			clear(b[last:end])
			b[end-1] = 0x55
			return b
		}, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.edit(bytes.Clone(l.data))
			for _, mode := range []RecoveryMode{TolerateCorruptedTailRecords, PointInTime, SkipAnyCorrupted} {
				r := NewReader(bytes.NewReader(data), mode)
				n := 0
				for {
					_, err := r.Next()
					if err == io.EOF {
						break
					}
					require.NoError(t, err, "%s", mode)
					n++
				}
				_, reason := r.Stopped()
				require.Error(t, reason, "%s: the log stops at the damage", mode)
				require.Equal(t, tc.records, n, "%s: the records before the damage", mode)
				require.Equal(t, tc.incomplete, r.TailIncomplete(), "%s: %v", mode, reason)
			}
			r := NewReader(bytes.NewReader(data), AbsoluteConsistency)
			for {
				if _, err := r.Next(); err != nil {
					require.True(t, base.IsCorruption(err))
					break
				}
			}
			require.False(t, r.TailIncomplete(), "an error is not a stop")
		})
	}
	r := NewReader(bytes.NewReader(l.data), PointInTime)
	for {
		if _, err := r.Next(); err != nil {
			break
		}
	}
	require.False(t, r.TailIncomplete(), "a clean end")
}
