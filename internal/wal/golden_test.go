package wal

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/crc"
	"github.com/stretchr/testify/require"
)

// The golden logs in testdata/ were written by testdata/gen_golden.py, an
// independent implementation of LevelDB's log writer; their records and chunk
// layout are listed in the .txt file of the same name. See that script for
// the spec grammar.

var goldenLogs = []string{"small", "blocks"}

type goldenChunk struct {
	off    int64
	typ    byte
	length int
}

type goldenSpec struct {
	records [][]byte
	chunks  []goldenChunk
}

// parseRecordSpec decodes the argument of a "record" line.
func parseRecordSpec(t testing.TB, arg string) []byte {
	kind, rest, _ := strings.Cut(arg, " ")
	f := strings.Fields(rest)
	atoi := func(s string) int {
		n, err := strconv.ParseInt(s, 0, 64)
		require.NoError(t, err, "record %q", arg)
		return int(n)
	}
	switch kind {
	case "empty":
		return []byte{}
	case "str":
		return []byte(rest)
	case "pat":
		require.Len(t, f, 2, "record %q", arg)
		n, seed := atoi(f[0]), atoi(f[1])
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(31*i + seed)
		}
		return b
	case "fill":
		require.Len(t, f, 2, "record %q", arg)
		return bytes.Repeat([]byte{byte(atoi(f[1]))}, atoi(f[0]))
	}
	t.Fatalf("unknown record kind in %q", arg)
	return nil
}

var chunkTypes = map[string]byte{"full": fullType, "first": firstType, "middle": middleType, "last": lastType}

func readGoldenSpec(t testing.TB, name string) goldenSpec {
	f, err := os.Open(filepath.Join("testdata", name+".txt"))
	require.NoError(t, err)
	defer f.Close()
	var s goldenSpec
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "record "):
			s.records = append(s.records, parseRecordSpec(t, strings.TrimPrefix(line, "record ")))
		case strings.HasPrefix(line, "chunk "):
			f := strings.Fields(line)
			require.Len(t, f, 4, "%q", line)
			off, err := strconv.ParseInt(f[1], 10, 64)
			require.NoError(t, err)
			typ, ok := chunkTypes[f[2]]
			require.True(t, ok, "%q", line)
			n, err := strconv.Atoi(f[3])
			require.NoError(t, err)
			s.chunks = append(s.chunks, goldenChunk{off, typ, n})
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, s.records)
	return s
}

func readGoldenLog(t testing.TB, name string) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", name+".log"))
	require.NoError(t, err)
	return b
}

// TestGoldenWriter checks that Writer reproduces each golden log byte for
// byte, and that WriteRecord reports each record's first chunk.
func TestGoldenWriter(t *testing.T) {
	for _, name := range goldenLogs {
		t.Run(name, func(t *testing.T) {
			spec := readGoldenSpec(t, name)
			want := readGoldenLog(t, name)
			var buf bytes.Buffer
			w := NewWriter(&buf)
			var starts []int64
			for _, rec := range spec.records {
				off, err := w.WriteRecord(rec)
				require.NoError(t, err)
				starts = append(starts, off)
			}
			require.Equal(t, int64(len(want)), w.Size())
			require.NoError(t, w.Close())
			require.True(t, bytes.Equal(want, buf.Bytes()), "writer output differs from testdata/%s.log at byte %d",
				name, firstDiff(want, buf.Bytes()))
			var wantStarts []int64
			for _, c := range spec.chunks {
				if c.typ == fullType || c.typ == firstType {
					wantStarts = append(wantStarts, c.off)
				}
			}
			require.Equal(t, wantStarts, starts)
		})
	}
}

// TestGoldenChunks walks each golden log with a decoder written for this
// test (not Reader) and checks the chunk layout the .txt lists, every
// checksum, and that every byte outside chunks is zero padding.
func TestGoldenChunks(t *testing.T) {
	for _, name := range goldenLogs {
		t.Run(name, func(t *testing.T) {
			spec := readGoldenSpec(t, name)
			data := readGoldenLog(t, name)
			var got []goldenChunk
			var payload []byte
			var records [][]byte
			for off := 0; off < len(data); {
				if left := BlockSize - off%BlockSize; left < headerSize {
					require.Equal(t, make([]byte, min(left, len(data)-off)), data[off:min(off+left, len(data))], "padding at %d", off)
					off += left
					continue
				}
				n := int(binary.LittleEndian.Uint16(data[off+4:]))
				typ := data[off+6]
				p := data[off+headerSize : off+headerSize+n]
				want := crc.New(append([]byte{typ}, p...)).Value()
				require.Equal(t, want, binary.LittleEndian.Uint32(data[off:]), "checksum of chunk at %d", off)
				got = append(got, goldenChunk{int64(off), typ, n})
				payload = append(payload, p...)
				if typ == fullType || typ == lastType {
					records = append(records, payload)
					payload = nil
				}
				off += headerSize + n
			}
			require.Equal(t, spec.chunks, got)
			requireRecords(t, spec.records, records)
		})
	}
}

// TestGoldenReader reads each golden log in every mode.
func TestGoldenReader(t *testing.T) {
	for _, name := range goldenLogs {
		for _, mode := range allModes {
			t.Run(name+"/"+mode.String(), func(t *testing.T) {
				spec := readGoldenSpec(t, name)
				data := readGoldenLog(t, name)
				res := readAll(t, data, mode)
				require.NoError(t, res.err)
				requireRecords(t, spec.records, res.records)
				require.Equal(t, int64(len(data)), res.offset)
				require.NoError(t, res.stop)
				require.Zero(t, res.droppedRecs)
			})
		}
	}
}

var allModes = []RecoveryMode{TolerateCorruptedTailRecords, AbsoluteConsistency, PointInTime, SkipAnyCorrupted}

var modeNames = map[string]RecoveryMode{
	"tolerate":    TolerateCorruptedTailRecords,
	"absolute":    AbsoluteConsistency,
	"pointintime": PointInTime,
	"skip":        SkipAnyCorrupted,
}

// readResult is everything a Reader reported over a whole log.
type readResult struct {
	records      [][]byte // copies
	err          error    // the error that ended the log, nil for io.EOF
	offset       int64
	stop         error
	stopOffset   int64
	droppedRecs  int
	droppedBytes int64
}

// readAll reads data to the end in mode. It fails the test if Next does not
// finish within the bound a log of len(data) bytes allows (each record takes
// at least one 7-byte header), or if Next's result changes after the end.
func readAll(t testing.TB, data []byte, mode RecoveryMode) readResult {
	r := NewReader(bytes.NewReader(data), mode)
	var res readResult
	for i := 0; ; i++ {
		if i > len(data)/headerSize+1 {
			t.Fatalf("%s: more records than a %d-byte log can hold", mode, len(data))
		}
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			res.err = err
			break
		}
		res.records = append(res.records, bytes.Clone(rec))
	}
	// The end is sticky.
	rec, err := r.Next()
	require.Nil(t, rec)
	if res.err == nil {
		require.Equal(t, io.EOF, err)
	} else {
		require.Equal(t, res.err, err)
	}
	res.offset = r.Offset()
	res.stopOffset, res.stop = r.Stopped()
	require.Equal(t, res.offset, res.stopOffset, "Stopped's offset is Offset")
	res.droppedRecs, res.droppedBytes = r.Dropped()
	if res.err != nil {
		require.NoError(t, res.stop, "no stop reason after an error")
	}
	if mode != SkipAnyCorrupted {
		require.Zero(t, res.droppedRecs)
		require.Zero(t, res.droppedBytes)
	}
	return res
}

// damageCase is one "case" of testdata/damage.txt.
type damageCase struct {
	name    string
	base    string
	edits   [][]string
	expects []damageExpect
}

type damageExpect struct {
	mode         RecoveryMode
	records      []int
	offset       int64
	result       string
	droppedRecs  int
	droppedBytes int64
	match        string
}

func parseIndexes(t testing.TB, s string) []int {
	var out []int
	if s == "-" {
		return out
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		require.NoError(t, err)
		b := a
		if isRange {
			b, err = strconv.Atoi(hi)
			require.NoError(t, err)
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out
}

func readDamageCases(t testing.TB) []damageCase {
	f, err := os.Open(filepath.Join("testdata", "damage.txt"))
	require.NoError(t, err)
	defer f.Close()
	var cases []damageCase
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cmd, rest, _ := strings.Cut(line, " ")
		if cmd == "case" {
			cases = append(cases, damageCase{name: rest})
			continue
		}
		require.NotEmpty(t, cases, "%q before the first case", line)
		c := &cases[len(cases)-1]
		switch cmd {
		case "base":
			c.base = strings.TrimSuffix(rest, ".log")
		case "truncate", "flip", "zero", "append-zeros":
			c.edits = append(c.edits, strings.Fields(line))
		case "expect":
			modeName, rest, _ := strings.Cut(rest, " ")
			mode, ok := modeNames[modeName]
			require.True(t, ok, "mode in %q", line)
			e := damageExpect{mode: mode}
			rest, e.match, _ = strings.Cut(rest, "match=")
			for _, kv := range strings.Fields(rest) {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "records":
					e.records = parseIndexes(t, v)
				case "offset":
					e.offset, err = strconv.ParseInt(v, 10, 64)
					require.NoError(t, err)
				case "result":
					e.result = v
				case "dropped":
					r, b, _ := strings.Cut(v, "/")
					e.droppedRecs, err = strconv.Atoi(r)
					require.NoError(t, err)
					e.droppedBytes, err = strconv.ParseInt(b, 10, 64)
					require.NoError(t, err)
				default:
					t.Fatalf("unknown key %q in %q", k, line)
				}
			}
			c.expects = append(c.expects, e)
		default:
			t.Fatalf("unknown line %q", line)
		}
	}
	require.NoError(t, sc.Err())
	return cases
}

func applyEdits(t testing.TB, data []byte, edits [][]string) []byte {
	data = bytes.Clone(data)
	num := func(s string) int {
		n, err := strconv.ParseInt(s, 0, 64)
		require.NoError(t, err)
		return int(n)
	}
	for _, e := range edits {
		switch e[0] {
		case "truncate":
			data = data[:num(e[1])]
		case "flip":
			data[num(e[1])] ^= byte(num(e[2]))
		case "zero":
			clear(data[num(e[1]) : num(e[1])+num(e[2])])
		case "append-zeros":
			data = append(data, make([]byte, num(e[1]))...)
		default:
			t.Fatalf("unknown edit %q", e)
		}
	}
	return data
}

// TestDamageCases runs testdata/damage.txt.
func TestDamageCases(t *testing.T) {
	cases := readDamageCases(t)
	require.NotEmpty(t, cases)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Len(t, c.expects, len(allModes), "one expect line per mode")
			spec := readGoldenSpec(t, c.base)
			data := applyEdits(t, readGoldenLog(t, c.base), c.edits)
			for _, e := range c.expects {
				t.Run(e.mode.String(), func(t *testing.T) {
					res := readAll(t, data, e.mode)
					var want [][]byte
					for _, i := range e.records {
						want = append(want, spec.records[i])
					}
					requireRecords(t, want, res.records)
					require.Equal(t, e.offset, res.offset, "offset")
					require.Equal(t, e.droppedRecs, res.droppedRecs, "dropped records")
					require.Equal(t, e.droppedBytes, res.droppedBytes, "dropped bytes")
					var msg error
					switch e.result {
					case "eof":
						require.NoError(t, res.err)
						require.NoError(t, res.stop)
					case "stopped":
						require.NoError(t, res.err)
						require.Error(t, res.stop)
						msg = res.stop
					case "error":
						require.Error(t, res.err)
						msg = res.err
					default:
						t.Fatalf("unknown result %q", e.result)
					}
					if msg != nil {
						require.True(t, base.IsCorruption(msg), "%v is not marked corruption", msg)
						require.Contains(t, msg.Error(), e.match)
					}
				})
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// requireRecords compares record lists without printing megabytes of bytes.
func requireRecords(t testing.TB, want, got [][]byte) {
	t.Helper()
	for i := range min(len(want), len(got)) {
		if !bytes.Equal(want[i], got[i]) {
			t.Fatalf("record %d differs: want %d bytes %.40q, got %d bytes %.40q (first difference at byte %d)",
				i, len(want[i]), want[i], len(got[i]), got[i], firstDiff(want[i], got[i]))
		}
	}
	if len(want) != len(got) {
		t.Fatalf("want %d records, got %d", len(want), len(got))
	}
}
