package batch

import (
	"bytes"
	"encoding/hex"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/stretchr/testify/require"
)

var rewrite = flag.Bool("rewrite", false, "rewrite golden files in testdata/")

// op is one record, as a test writes it and as a Reader returns it.
type op struct {
	kind       base.Kind
	key, value string
}

func (o op) apply(b *Batch) {
	switch o.kind {
	case base.KindSet:
		b.Set([]byte(o.key), []byte(o.value))
	case base.KindRangeDelete:
		b.DeleteRange([]byte(o.key), []byte(o.value))
	case base.KindMerge:
		b.Merge([]byte(o.key), []byte(o.value))
	default:
		b.Delete([]byte(o.key))
	}
}

func build(seq base.SeqNum, ops ...op) *Batch {
	b := New()
	b.SetSeqNum(seq)
	for _, o := range ops {
		o.apply(b)
	}
	return b
}

// readAll decodes every record of b, failing the test on an error.
func readAll(t testing.TB, b *Batch) []op {
	t.Helper()
	var ops []op
	r := b.Reader()
	for {
		kind, key, value, ok, err := r.Next()
		require.NoError(t, err)
		if !ok {
			return ops
		}
		if kind == base.KindDelete {
			require.Nil(t, value, "a Delete has no value")
		} else {
			require.NotNil(t, value, "a Set's value is non-nil, even when empty")
		}
		ops = append(ops, op{kind, string(key), string(value)})
	}
}

func set(k, v string) op { return op{base.KindSet, k, v} }

// mrg is a merge operand v for k.
func mrg(k, v string) op { return op{base.KindMerge, k, v} }
func del(k string) op    { return op{base.KindDelete, k, ""} }

// rdel is a range deletion of [start, end).
func rdel(start, end string) op { return op{base.KindRangeDelete, start, end} }

func TestRoundTrip(t *testing.T) {
	long := strings.Repeat("x", 300) // a two-byte varint length
	for _, tc := range []struct {
		name string
		seq  base.SeqNum
		ops  []op
		len  int
	}{
		{name: "empty", seq: 0, ops: nil, len: 12},
		{name: "one-set", seq: 7, ops: []op{set("k", "v")}, len: 12 + 5},
		{name: "one-delete", seq: 7, ops: []op{del("k")}, len: 12 + 3},
		{name: "empty-key-and-value", seq: 1, ops: []op{set("", "")}, len: 12 + 3},
		{name: "long", seq: 1 << 40, ops: []op{set(long, long), del(long)}, len: 12 + (1 + 2 + 300 + 2 + 300) + (1 + 2 + 300)},
		{name: "mixed", seq: 100, ops: []op{set("a", "1"), del("b"), set("a", "2"), set("c", "")}, len: 12 + 5 + 3 + 5 + 4},
		{name: "max-seqnum", seq: base.MaxSeqNum - 1, ops: []op{set("a", "1"), del("a")}, len: 12 + 5 + 3},
		{name: "merges", seq: 3, ops: []op{mrg("a", "1"), set("a", "2"), mrg("a", ""), del("a"), mrg("b", "x")},
			len: 12 + 5 + 5 + 4 + 3 + 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := build(tc.seq, tc.ops...)
			require.Equal(t, uint32(len(tc.ops)), b.Count())
			require.Equal(t, len(tc.ops) == 0, b.Empty())
			require.Equal(t, tc.seq, b.SeqNum())
			require.Equal(t, tc.len, b.Len())
			require.Len(t, b.Repr(), tc.len)
			require.Equal(t, tc.ops, readAll(t, b))

			seq, count, err := DecodeHeader(b.Repr())
			require.NoError(t, err)
			require.Equal(t, tc.seq, seq)
			require.Equal(t, uint32(len(tc.ops)), count)

			// The encoding survives a trip through SetRepr.
			var c Batch
			require.NoError(t, c.SetRepr(bytes.Clone(b.Repr())))
			require.Equal(t, b.Repr(), c.Repr())
			require.Equal(t, tc.ops, readAll(t, &c))
		})
	}
}

// TestGolden pins the encoding byte for byte: it is part of the WAL format.
func TestGolden(t *testing.T) {
	b := build(0x0102030405,
		set("apple", "red"),
		del("banana"),
		set("", ""),
		set("cherry", strings.Repeat("c", 130)),
	)
	got := hex.Dump(b.Repr())
	path := filepath.Join("testdata", "batch.golden")
	if *rewrite {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), got)

	// Reading the golden bytes gives back the records.
	raw := goldenBytes(t, path)
	var c Batch
	require.NoError(t, c.SetRepr(raw))
	require.Equal(t, readAll(t, b), readAll(t, &c))
	require.Equal(t, base.SeqNum(0x0102030405), c.SeqNum())
}

// goldenBytes parses a hex.Dump file back into bytes.
func goldenBytes(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []byte
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		// "00000000  05 04 03 ... |ascii|": the hex sits between the offset
		// and the ASCII column.
		line = line[10:]
		if i := strings.Index(line, "|"); i >= 0 {
			line = line[:i]
		}
		b, err := hex.DecodeString(strings.Join(strings.Fields(line), ""))
		require.NoError(t, err)
		out = append(out, b...)
	}
	return out
}

func TestSetReprCorruption(t *testing.T) {
	header := func(seq base.SeqNum, count uint32) []byte {
		b := &Batch{}
		b.SetSeqNum(seq)
		b.data[8] = byte(count)
		b.data[9] = byte(count >> 8)
		b.data[10] = byte(count >> 16)
		b.data[11] = byte(count >> 24)
		return b.data
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, tc := range []struct {
		name string
		data []byte
		want string // a substring of the error
	}{
		{"nil", nil, "0 bytes is too short for the 12-byte header"},
		{"short-header", make([]byte, 11), "11 bytes is too short"},
		{"missing-records", header(1, 2), "header counts 2 records but the data ends after 0, at offset 12"},
		{"missing-second", cat(header(1, 2), []byte{0, 1, 'a'}), "counts 2 records but the data ends after 1, at offset 15"},
		{"trailing-bytes", cat(header(1, 1), []byte{0, 1, 'a', 9, 9}), "2 unexpected bytes at offset 15 after the last of 1 records"},
		{"trailing-after-empty", cat(header(1, 0), []byte{0}), "1 unexpected bytes at offset 12"},
		{"unknown-kind", cat(header(1, 1), []byte{3, 1, 'a'}), "record 0 at offset 12: unknown kind 3"},
		{"merge-no-operand", cat(header(1, 1), []byte{2, 1, 'a'}), "record 0: value length at offset 15: truncated varint"},
		{"kind-0xff", cat(header(1, 2), []byte{0, 1, 'a', 0xff}), "record 1 at offset 15: unknown kind 255"},
		{"no-key-length", cat(header(1, 1), []byte{1}), "record 0: key length at offset 13: truncated varint"},
		{"truncated-key-length", cat(header(1, 1), []byte{1, 0x80}), "key length at offset 13: truncated varint"},
		{"key-overrun", cat(header(1, 1), []byte{0, 5, 'a'}), "record 0: 5-byte key at offset 14 overruns the 15-byte batch"},
		{"key-length-overflow", cat(header(1, 1), []byte{0, 0xff, 0xff, 0xff, 0xff, 0x1f}), "key length at offset 13: varint overflows 32 bits"},
		{"key-length-six-bytes", cat(header(1, 1), []byte{0, 0x80, 0x80, 0x80, 0x80, 0x80, 0}), "varint overflows 32 bits"},
		{"huge-key-length", cat(header(1, 1), []byte{0, 0xff, 0xff, 0xff, 0xff, 0x0f}), "4294967295-byte key at offset 18 overruns"},
		{"no-value-length", cat(header(1, 1), []byte{1, 1, 'a'}), "record 0: value length at offset 15: truncated varint"},
		{"value-overrun", cat(header(1, 1), []byte{1, 1, 'a', 3, 'x'}), "record 0: 3-byte value at offset 16 overruns the 17-byte batch"},
		{"seqnum-too-big", header(base.MaxSeqNum+1, 0), "exceed the maximum"},
		{"seqnum-range-too-big", cat(header(base.MaxSeqNum, 2), []byte{0, 0, 0, 0}), "sequence numbers 72057594037927935+2 exceed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := build(5, set("keep", "me"))
			before := bytes.Clone(b.Repr())
			err := b.SetRepr(tc.data)
			require.Error(t, err)
			require.True(t, base.IsCorruption(err), "not marked corruption: %v", err)
			require.Contains(t, err.Error(), tc.want)
			require.Equal(t, before, b.Repr(), "a failed SetRepr changed the batch")

			// A Reader over the same unchecked bytes fails the same way (when
			// the header itself is readable and in range) and keeps failing.
			if len(tc.data) >= HeaderLen && !strings.Contains(tc.want, "exceed") {
				r := Reader{data: tc.data, off: HeaderLen, left: (&Batch{data: tc.data}).Count()}
				var rerr error
				for range 10 {
					_, _, _, ok, err := r.Next()
					if err != nil {
						rerr = err
						break
					}
					require.True(t, ok, "reader ended without the error")
				}
				require.True(t, base.IsCorruption(rerr), "not marked corruption: %v", rerr)
				require.Contains(t, rerr.Error(), tc.want)
				_, _, _, ok, again := r.Next()
				require.False(t, ok)
				require.Equal(t, rerr, again)
			}
		})
	}
}

func TestDecodeHeader(t *testing.T) {
	_, _, err := DecodeHeader([]byte{1, 2, 3})
	require.True(t, base.IsCorruption(err), "not marked corruption: %v", err)

	seq, count, err := DecodeHeader([]byte{1, 2, 0, 0, 0, 0, 0, 0, 3, 0, 0, 1, 0xff})
	require.NoError(t, err)
	require.Equal(t, base.SeqNum(0x0201), seq)
	require.Equal(t, uint32(0x01000003), count)
}

func TestZeroBatch(t *testing.T) {
	var b Batch
	require.True(t, b.Empty())
	require.Equal(t, uint32(0), b.Count())
	require.Equal(t, HeaderLen, b.Len())
	require.Equal(t, base.SeqNum(0), b.SeqNum())
	require.Equal(t, make([]byte, HeaderLen), b.Repr())
	require.Nil(t, b.data, "read-only methods must not give a zero batch a buffer")
	require.Empty(t, readAll(t, &b))
	b.Reset()
	require.True(t, b.Empty())

	b.Delete([]byte("k"))
	require.Equal(t, []op{del("k")}, readAll(t, &b))
}

func TestAppend(t *testing.T) {
	for _, tc := range []struct {
		name      string
		dst, src  []op
		appendDst bool // append dst to itself instead of src
	}{
		{name: "both-empty"},
		{name: "into-empty", src: []op{set("a", "1"), del("b")}},
		{name: "empty-source", dst: []op{set("a", "1")}},
		{name: "both", dst: []op{set("a", "1")}, src: []op{del("a"), set("b", "2")}},
		{name: "self", dst: []op{set("a", "1"), del("b")}, appendDst: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := build(9, tc.dst...)
			src := build(20, tc.src...)
			srcRepr := bytes.Clone(src.Repr())
			want := append(append([]op(nil), tc.dst...), tc.src...)
			if tc.appendDst {
				src = dst
				want = append(append([]op(nil), tc.dst...), tc.dst...)
			}
			dst.Append(src)
			require.Equal(t, base.SeqNum(9), dst.SeqNum(), "Append keeps the destination's seqnum")
			require.Equal(t, uint32(len(want)), dst.Count())
			if len(want) == 0 {
				want = nil
			}
			require.Equal(t, want, readAll(t, dst))
			if !tc.appendDst {
				require.Equal(t, srcRepr, src.Repr(), "Append modified its source")
			}
			var c Batch
			require.NoError(t, c.SetRepr(dst.Repr()), "an appended batch is a valid encoding")
		})
	}

	// A zero batch appended to and from.
	var z1, z2 Batch
	z1.Append(&z2)
	require.True(t, z1.Empty())
	z2.Set([]byte("k"), []byte("v"))
	z1.Append(&z2)
	require.Equal(t, []op{set("k", "v")}, readAll(t, &z1))
}

func TestReset(t *testing.T) {
	b := build(42, set("a", "1"), del("b"))
	gen := b.gen
	b.Reset()
	require.NotEqual(t, gen, b.gen)
	require.True(t, b.Empty())
	require.Equal(t, base.SeqNum(0), b.SeqNum())
	require.Equal(t, HeaderLen, b.Len())
	require.Equal(t, make([]byte, HeaderLen), b.Repr())
	b.Set([]byte("c"), []byte("3"))
	require.Equal(t, []op{set("c", "3")}, readAll(t, b))
}

func TestUvarint32(t *testing.T) {
	for _, tc := range []struct {
		in    []byte
		v     uint32
		width int
	}{
		{nil, 0, 0},
		{[]byte{0}, 0, 1},
		{[]byte{0x7f, 0xff}, 0x7f, 1},
		{[]byte{0x80}, 0, 0},
		{[]byte{0x80, 0x01}, 128, 2},
		{[]byte{0x80, 0x00}, 0, 2}, // not minimal, but LevelDB accepts it too
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, math.MaxUint32, 5},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x10}, 0, -1},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x8f, 0x00}, 0, -1},
		{[]byte{0xff, 0xff, 0xff, 0xff}, 0, 0},
	} {
		v, w := uvarint32(tc.in)
		require.Equal(t, tc.v, v, "% x", tc.in)
		require.Equal(t, tc.width, w, "% x", tc.in)
	}
}

func TestFieldTooLong(t *testing.T) {
	// Set and Delete check lengths with this before they write anything;
	// a real 4 GiB key is too big for a test.
	if math.MaxInt < math.MaxUint32 {
		t.Skip("a 32-bit int holds no length beyond the limit")
	}
	limit := uint64(math.MaxUint32) // a variable: the constant overflows a 32-bit int
	require.Panics(t, func() { checkFieldLen(int(limit + 1)) })
	require.NotPanics(t, func() { checkFieldLen(int(limit)) })
}

func TestReaderAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	b := build(1, set("a", "1"), del("b"), set("c", "3"))
	allocs := testing.AllocsPerRun(100, func() {
		r := b.Reader()
		for {
			if _, _, _, ok, _ := r.Next(); !ok {
				break
			}
		}
	})
	require.Zero(t, allocs)

	// Set into a batch whose buffer has room does not allocate either.
	b.Reset()
	key, value := []byte("key"), []byte("value")
	allocs = testing.AllocsPerRun(100, func() {
		b.Reset()
		b.Set(key, value)
		b.Delete(key)
	})
	require.Zero(t, allocs)
}
