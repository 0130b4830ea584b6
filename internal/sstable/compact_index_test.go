package sstable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/stretchr/testify/require"
)

// encodeIndexCompact decodes the index partition block data into the
// compact form, in a buffer from alloc (make when nil), and returns it, with
// a scratch of its own (the Reader passes its pooled one to
// encodeIndexCompactWith).
// Errors are as for newIndexTable. Keys that would reach 2 GiB, which the
// offsets cannot mark trailers in, get the wide partition form instead (see
// encodeIndexPartition), which viewIndexTable reads as well.
func encodeIndexCompact(data []byte, alloc func(n int) []byte) ([]byte, error) {
	var entries []indexEntry
	return encodeIndexCompactWith(data, alloc, &entries, true, sepTrailerStored)
}

// appendSep appends separator i, encoded, to dst, in any form: the
// compact form holds no separator in one piece.
func (x *indexTable) appendSep(dst []byte, i int) []byte {
	if !x.compact {
		return append(dst, x.sep(i)...)
	}
	s, t := x.entry(i)
	dst = append(append(dst, x.common...), s...)
	return binary.LittleEndian.AppendUint64(dst, t)
}

// compactForms are the compact flat forms of an index partition: as the
// cache holds it, and without elided trailers (for measuring what eliding
// them gains). They are apart from indexForms, whose tests read the
// separators whole (sep, keys).
var compactForms = []struct {
	name   string
	encode func([]byte, func(int) []byte) ([]byte, error)
	abbr   bool
}{
	{"compact", compactEncoder(true), false},
	{"compact-trailers", compactEncoder(false), false},
}

// compactEncoder returns encodeIndexCompactWith with a scratch of its own
// that every call reuses, as the Reader's pooled one is.
func compactEncoder(elide bool) func([]byte, func(int) []byte) ([]byte, error) {
	var entries []indexEntry
	return func(data []byte, alloc func(int) []byte) ([]byte, error) {
		return encodeIndexCompactWith(data, alloc, &entries, elide, sepTrailerStored)
	}
}

// allIndexForms returns indexForms and compactForms.
func allIndexForms() []struct {
	name   string
	encode func([]byte, func(int) []byte) ([]byte, error)
	abbr   bool
} {
	return slices.Concat(indexForms, compactForms)
}

// sepUserKey returns the user key of x's separator i, in any form.
func sepUserKey(x *indexTable, i int) []byte {
	s := x.appendSep(nil, i)
	return s[:len(s)-base.TrailerLen]
}

// partHandles returns x's handles, in any form.
func partHandles(x *indexTable) []block.Handle {
	hs := make([]block.Handle, x.len())
	for i := range hs {
		hs[i] = x.handle(i)
	}
	return hs
}

// indexBlockOf builds an index block of the separators seps and the
// handles hs.
func indexBlockOf(seps [][]byte, hs []block.Handle) []byte {
	var b block.Builder
	b.Init(metaRestartInterval)
	for i, s := range seps {
		b.Add(s, hs[i].Append(nil))
	}
	return bytes.Clone(b.Finish())
}

// checkCompactAgainstWide decodes data into the compact form and the wide
// partition form and checks that the compact one holds the same separators
// and handles, has narrow handles exactly when narrow, and that its
// searches and comparisons answer as the wide form's for every separator
// and every probe (user keys, at several sequence numbers).
func checkCompactAgainstWide(t *testing.T, data []byte, narrow bool, probes [][]byte) {
	t.Helper()
	wbuf, err := encodeIndexPartition(data, nil)
	require.NoError(t, err)
	w := viewIndexTable(wbuf)
	for _, form := range compactForms {
		buf, err := form.encode(data, func(n int) []byte { return make([]byte, n, n+5) })
		require.NoError(t, err, form.name)
		x := viewIndexTable(buf)
		require.True(t, x.compact, form.name)
		require.Equal(t, w.len(), x.len(), form.name)
		require.Equal(t, narrow && x.len() > 0, x.narrow != nil, form.name)
		require.Equal(t, w.common, x.common, form.name)
		for i := range x.len() {
			require.Equal(t, w.sep(i), x.appendSep(nil, i), "%s: separator %d", form.name, i)
			require.Equal(t, w.handle(i), x.handle(i), "%s: handle %d", form.name, i)
		}
		keys := slices.Clone(probes)
		for i := range w.len() {
			keys = append(keys, w.userKey(i))
		}
		for _, uk := range keys {
			for _, seq := range []base.SeqNum{0, 1, 5, 50, base.MaxSeqNum} {
				key := appendSearchKey(nil, uk, seq)
				require.Equal(t, w.seekGE(key), x.seekGE(key), "%s: seekGE(%s)", form.name, decoded(key))
				// Bound checks and MultiGet's shortcut compare with
				// single separators: the first, the last, and the
				// ones around the key.
				b := w.seekGE(key)
				for _, i := range []int{0, b - 1, b, w.len() - 1} {
					if i < 0 || i >= w.len() {
						continue
					}
					require.Equal(t, w.compareSep(i, key), x.compareSep(i, key), "%s: compareSep(%d, %s)", form.name, i, decoded(key))
					require.Equal(t, w.compareUserKey(i, uk), x.compareUserKey(i, uk), "%s: compareUserKey(%d, %q)", form.name, i, uk)
				}
			}
		}
	}
}

// TestCompactIndexMatchesWide checks the compact form against the wide
// partition form on separators with and without stored trailers, long
// common prefixes, one entry, none, and handles beyond the narrow form's
// reach (offsets spanning more than 4 GiB, a length of 4 GiB).
func TestCompactIndexMatchesWide(t *testing.T) {
	rng := rand.New(rand.NewPCG(151, 152))
	// randomSeps returns n sorted distinct separators: user keys of
	// prefix plus up to maxLen bytes of alphabet, a third of them with
	// the shortened separators' trailer.
	randomSeps := func(n int, prefix string, maxLen int, alphabet string) [][]byte {
		var out [][]byte
		for len(out) < n {
			uk := []byte(prefix)
			for range rng.IntN(maxLen + 1) {
				uk = append(uk, alphabet[rng.IntN(len(alphabet))])
			}
			seq := base.SeqNum(rng.IntN(100))
			if rng.IntN(3) == 0 {
				seq = base.MaxSeqNum
			}
			out = append(out, base.MakeInternalKey(uk, seq, base.KindMax).Append(nil))
		}
		slices.SortFunc(out, base.CompareEncoded)
		return slices.CompactFunc(out, func(a, b []byte) bool { return base.CompareEncoded(a, b) == 0 })
	}
	randomProbes := func(n int, prefix string, maxLen int, alphabet string) [][]byte {
		out := [][]byte{nil, []byte("\x00"), []byte("\xff\xff"), []byte(prefix), []byte(prefix + "\xff")}
		for range n {
			p := []byte(prefix[:rng.IntN(len(prefix)+1)])
			for range rng.IntN(maxLen + 2) {
				p = append(p, alphabet[rng.IntN(len(alphabet))])
			}
			out = append(out, p)
		}
		return out
	}
	// spaced returns n handles of blocks gap bytes apart from offset
	// start, each length long.
	spaced := func(n int, start, gap, length uint64) []block.Handle {
		hs := make([]block.Handle, n)
		for i := range hs {
			hs[i] = block.Handle{Offset: start + uint64(i)*gap, Length: length}
		}
		return hs
	}
	benchSeps := func(n int) [][]byte {
		var out [][]byte
		for k := range n {
			var uk [16]byte
			binary.BigEndian.PutUint32(uk[:], uint32(1_000_000+k*14))
			if k%3 == 0 {
				// A separator the Writer could not shorten: the
				// block's last key, with its own trailer.
				out = append(out, base.MakeInternalKey(uk[:], base.SeqNum(k+1), base.KindSet).Append(nil))
				continue
			}
			out = append(out, base.MakeInternalKey(uk[:3], base.MaxSeqNum, separatorKind).Append(nil))
		}
		slices.SortFunc(out, base.CompareEncoded)
		return out
	}
	for _, tc := range []struct {
		name   string
		seps   [][]byte
		hs     func(n int) []block.Handle
		narrow bool
		probes [][]byte
	}{
		{"empty", nil, nil, true, [][]byte{nil, []byte("a")}},
		{"one", [][]byte{encSep("m", 5)}, nil, true, [][]byte{nil, []byte("a"), []byte("m"), []byte("m\x00"), []byte("z")}},
		{"one elided", [][]byte{encSep("m", base.MaxSeqNum)}, nil, true, [][]byte{nil, []byte("l"), []byte("m"), []byte("z")}},
		{"empty user keys", [][]byte{encSep("", base.MaxSeqNum), encSep("", 3), encSep("a", base.MaxSeqNum)}, nil, true,
			[][]byte{nil, []byte("\x00"), []byte("a"), []byte("b")}},
		{"short keys", randomSeps(200, "", 3, "abc"), nil, true, randomProbes(200, "", 3, "abcd")},
		{"long common prefix", randomSeps(200, "user/0000/000000/", 4, "0123456789"), nil, true,
			randomProbes(200, "user/0000/000000/", 4, "0123456789")},
		{"long keys", randomSeps(200, "p", 20, "ab"), nil, true, randomProbes(200, "p", 20, "ab")},
		{"zero bytes", randomSeps(200, "", 10, "\x00\x01"), nil, true, randomProbes(200, "", 10, "\x00\x01\x02")},
		{"bench keys", benchSeps(150), nil, true, randomProbes(300, "\x00\x0f", 3, "\x00\x01\x42\x43\xff")},
		{"offsets up to 4 GiB", randomSeps(50, "k", 4, "abc"), func(n int) []block.Handle {
			hs := spaced(n, 1<<40, 4096, 4000)
			hs[n-1] = block.Handle{Offset: 1<<40 + math.MaxUint32, Length: math.MaxUint32}
			return hs
		}, true, randomProbes(50, "k", 4, "abc")},
		{"offsets over 4 GiB", randomSeps(50, "k", 4, "abc"), func(n int) []block.Handle {
			return spaced(n, 1<<33, math.MaxUint32/20, 4000)
		}, false, randomProbes(50, "k", 4, "abc")},
		{"length of 4 GiB", randomSeps(50, "k", 4, "abc"), func(n int) []block.Handle {
			hs := spaced(n, 0, 4096, 4000)
			hs[7].Length = 1 << 32
			return hs
		}, false, randomProbes(50, "k", 4, "abc")},
		{"offset below the first", randomSeps(50, "k", 4, "abc"), func(n int) []block.Handle {
			hs := spaced(n, 1<<20, 4096, 4000)
			hs[3].Offset = 0
			return hs
		}, false, randomProbes(50, "k", 4, "abc")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := spaced(len(tc.seps), 0, 100, 95)
			if tc.hs != nil {
				hs = tc.hs(len(tc.seps))
			}
			checkCompactAgainstWide(t, indexBlockOf(tc.seps, hs), tc.narrow, tc.probes)
		})
	}
}

// TestCompactIndexWideFallback checks that keys the offsets' flag bit
// cannot mark trailers in (2 GiB; here a lower limit) get the wide
// partition form, which searches as the compact one would.
func TestCompactIndexWideFallback(t *testing.T) {
	seps := [][]byte{encSep("a", base.MaxSeqNum), encSep("b", 4), encSep("c", base.MaxSeqNum)}
	data := indexBlock(seps)
	for _, tc := range []struct {
		maxKeys uint64
		compact bool
	}{
		// Stored: "a", "b" and its trailer, "c": 11 bytes.
		{12, true},
		{11, false},
	} {
		var entries []indexEntry
		buf, err := encodeIndexCompactWith(data, nil, &entries, true, tc.maxKeys)
		require.NoError(t, err)
		x := viewIndexTable(buf)
		require.Equal(t, tc.compact, x.compact, "maxKeys %d", tc.maxKeys)
		require.Nil(t, x.abbr)
		checkIndexSeeksOf(t, &x, seps, [][]byte{nil, []byte("a"), []byte("b"), []byte("bb"), []byte("d")})
	}
}

// TestCompactIndexSharedPrefixes checks that an index block whose keys
// share prefixes (restart interval 16, which the Writer does not use for
// an index) decodes into the wide partition form, which searches it right:
// the compact decode keeps each separator's place in the block, which such
// a key does not have.
func TestCompactIndexSharedPrefixes(t *testing.T) {
	var seps [][]byte
	var b block.Builder
	b.Init(16)
	for i := range 100 {
		seps = append(seps, encSep(fmt.Sprintf("user%06d", i*10), base.MaxSeqNum))
		b.Add(seps[i], block.Handle{Offset: uint64(100 * i), Length: 95}.Append(nil))
	}
	data := bytes.Clone(b.Finish())
	var probes [][]byte
	for i := range 1002 {
		probes = append(probes, fmt.Appendf(nil, "user%06d", i))
	}
	for _, form := range compactForms {
		buf, err := form.encode(data, nil)
		require.NoError(t, err, form.name)
		x := viewIndexTable(buf)
		require.False(t, x.compact, form.name)
		require.Equal(t, 100, x.len(), form.name)
		require.Equal(t, block.Handle{Offset: 9900, Length: 95}, x.handle(99), form.name)
		checkIndexSeeksOf(t, &x, seps, probes)
	}
}

// TestCompactIndexMemory pins what an entry of the compact form costs, on
// the bench's separators (a 3-byte shortened user key after a 1-byte common
// prefix, and the trailer the compact form elides) against the wide
// partition form's.
func TestCompactIndexMemory(t *testing.T) {
	var seps [][]byte
	for k := range 1000 {
		var uk [4]byte
		binary.BigEndian.PutUint32(uk[:], uint32(0x01000000|k*3<<8))
		seps = append(seps, encSep(string(uk[:3]), base.MaxSeqNum))
	}
	data := indexBlock(seps)
	wbuf, err := encodeIndexPartition(data, nil)
	require.NoError(t, err)
	w := viewIndexTable(wbuf)
	buf, err := encodeIndexCompact(data, nil)
	require.NoError(t, err)
	x := viewIndexTable(buf)
	require.Equal(t, []byte{0x01}, x.common)
	// Wide: 16 (handle) + 4 (offset) + 11 (separator).
	require.Equal(t, 31*1000+4+1, w.memSize())
	// Compact: 8 (narrow handle) + 4 (offset) + 2 (user key after
	// common), and the base offset.
	require.Equal(t, 14*1000+4+1+8, x.memSize())
	require.Equal(t, indexHeaderLen+x.memSize()+4, len(buf))
	require.Equal(t, compactFlatLen(1000, len(x.keys), len(x.common), true), len(buf))
}

// sharesPrefixes reports whether a key of the block data shares a prefix
// with its predecessor, which the compact decode leaves to the wide form.
func sharesPrefixes(data []byte) bool {
	var w block.Walker
	if w.Init(data) != nil {
		return false
	}
	for w.Next() {
		if !w.KeyInBlock() {
			return true
		}
	}
	return false
}

// FuzzIndexCompact decodes arbitrary bytes as an index partition block into
// the compact form (the wide one when its keys share prefixes): either a
// corruption error, or a view whose separators and handles are the block's
// entries, in order, and whose searches answer as the wide partition
// form's for keys around every separator.
func FuzzIndexCompact(f *testing.F) {
	f.Add(indexBlock([][]byte{encSep("a", 1), encSep("b", base.MaxSeqNum)}))
	f.Add(indexBlock([][]byte{encSep("user/001", 5), encSep("user/002", base.MaxSeqNum), encSep("user/0021", 9)}))
	f.Add(indexBlockOf([][]byte{encSep("a", base.MaxSeqNum), encSep("b", 2)},
		[]block.Handle{{Offset: 1 << 40, Length: 10}, {Offset: 1<<40 + 1<<33, Length: 10}}))
	f.Add(indexBlock(nil))
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, form := range compactForms {
			buf, err := form.encode(data, func(n int) []byte { return make([]byte, n, n+3) })
			if err != nil {
				requireCorruption(t, err)
				continue
			}
			x := viewIndexTable(buf)
			require.Equal(t, !sharesPrefixes(data), x.compact, "the compact form unless keys share prefixes")
			var it block.Iter
			require.NoError(t, it.Init(base.CompareEncoded, data))
			wbuf, err := encodeIndexPartition(data, nil)
			require.NoError(t, err)
			w := viewIndexTable(wbuf)
			i := 0
			for ok := it.First(); ok; ok = it.Next() {
				require.Less(t, i, x.len())
				require.Equal(t, it.Key(), x.appendSep(nil, i))
				h, err := decodeHandleExact(it.Value())
				require.NoError(t, err)
				require.Equal(t, h, x.handle(i))
				uk := it.Key()[:len(it.Key())-base.TrailerLen]
				for _, k := range [][]byte{uk, append(bytes.Clone(uk), 0), uk[:len(uk)/2]} {
					for _, seq := range []base.SeqNum{0, 7, base.MaxSeqNum} {
						key := appendSearchKey(nil, k, seq)
						require.Equal(t, w.seekGE(key), x.seekGE(key))
						require.Equal(t, w.compareSep(i, key), x.compareSep(i, key))
						require.Equal(t, w.compareUserKey(i, k), x.compareUserKey(i, k))
					}
				}
				i++
			}
			require.Equal(t, x.len(), i)
		}
	})
}
