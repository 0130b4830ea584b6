package sstable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/stretchr/testify/require"
)

// indexBlock builds an index block (restart interval 1, as the Writer's)
// over the encoded separators seps, block i at offset 100*i.
func indexBlock(seps [][]byte) []byte {
	var b block.Builder
	b.Init(metaRestartInterval)
	for i, s := range seps {
		b.Add(s, block.Handle{Offset: uint64(100 * i), Length: 95}.Append(nil))
	}
	return bytes.Clone(b.Finish())
}

// indexForms are the two flat forms of an index block: the whole index's,
// with abbreviations, and an index partition's, without.
var indexForms = []struct {
	name   string
	encode func([]byte, func(int) []byte) ([]byte, error)
	abbr   bool
}{
	{"whole", encodeIndexTable, true},
	{"partition", encodeIndexPartition, false},
}

// checkIndexSeeks compares indexTable.seekGE, in every flat form, with a
// seek in the index block itself, the reference, for every separator and
// every probe (user keys, searched at several sequence numbers).
func checkIndexSeeks(t testing.TB, seps [][]byte, probes [][]byte) {
	t.Helper()
	for _, form := range allIndexForms() {
		buf, err := form.encode(indexBlock(seps), nil)
		require.NoError(t, err, form.name)
		x := viewIndexTable(buf)
		require.Equal(t, form.abbr && len(seps) > 0, x.abbr != nil, form.name)
		checkIndexSeeksOf(t, &x, seps, probes)
	}
}

func checkIndexSeeksOf(t testing.TB, x *indexTable, seps [][]byte, probes [][]byte) {
	t.Helper()
	data := indexBlock(seps)
	require.Equal(t, len(seps), x.len())
	for i := range seps {
		require.Equal(t, seps[i], x.appendSep(nil, i))
		require.Equal(t, block.Handle{Offset: uint64(100 * i), Length: 95}, x.handle(i))
	}
	var ref block.Iter
	require.NoError(t, ref.Init(base.CompareEncoded, data))
	check := func(key []byte) {
		want := len(seps)
		if ref.SeekGE(key) {
			h, err := decodeHandleExact(ref.Value())
			require.NoError(t, err)
			want = int(h.Offset / 100)
		}
		require.NoError(t, ref.Error())
		if got := x.seekGE(key); got != want {
			t.Fatalf("seekGE(%s) = %d, want %d (common %q, abbreviated %t)", decoded(key), got, want, x.common, x.abbr != nil)
		}
	}
	for _, s := range seps {
		check(s)
		uk := s[:len(s)-base.TrailerLen]
		check(appendSearchKey(nil, uk, base.MaxSeqNum))
		check(appendSearchKey(nil, uk, 0))
	}
	for _, p := range probes {
		for _, seq := range []base.SeqNum{0, 1, 5, 50, base.MaxSeqNum} {
			check(appendSearchKey(nil, p, seq))
		}
	}
}

func encSep(uk string, seq base.SeqNum) []byte {
	return base.MakeInternalKey([]byte(uk), seq, base.KindSet).Append(nil)
}

func TestIndexSeekGE(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	// randomSeps returns n sorted, distinct separators: user keys of
	// prefix plus 1..maxLen random bytes from alphabet, each at one or
	// more sequence numbers.
	randomSeps := func(n int, prefix string, maxLen int, alphabet string) [][]byte {
		var out [][]byte
		for len(out) < n {
			uk := []byte(prefix)
			for range 1 + rng.IntN(maxLen) {
				uk = append(uk, alphabet[rng.IntN(len(alphabet))])
			}
			for range 1 + rng.IntN(3) {
				out = append(out, encSep(string(uk), base.SeqNum(rng.IntN(100))))
			}
		}
		slices.SortFunc(out, base.CompareEncoded)
		return slices.CompactFunc(out, func(a, b []byte) bool { return base.CompareEncoded(a, b) == 0 })
	}
	randomProbes := func(n int, prefix string, maxLen int, alphabet string) [][]byte {
		var out [][]byte
		for range n {
			p := []byte(prefix[:rng.IntN(len(prefix)+1)])
			for range rng.IntN(maxLen + 2) {
				p = append(p, alphabet[rng.IntN(len(alphabet))])
			}
			out = append(out, p)
		}
		return append(out, nil, []byte("\x00"), []byte("\xff\xff"), []byte(prefix), []byte(prefix+"\xff"))
	}
	versions := func(uk string, n int) [][]byte {
		var out [][]byte
		for seq := n; seq > 0; seq-- {
			out = append(out, encSep(uk, base.SeqNum(seq)))
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		seps   [][]byte
		probes [][]byte
	}{
		{"empty", nil, [][]byte{nil, []byte("a")}},
		{"one", [][]byte{encSep("m", 5)}, [][]byte{nil, []byte("a"), []byte("m"), []byte("z")}},
		{"empty user key", [][]byte{encSep("", 9), encSep("", 3), encSep("a", 1)},
			[][]byte{nil, []byte("\x00"), []byte("a"), []byte("b")}},
		{"short keys", randomSeps(300, "", 3, "abc"), randomProbes(300, "", 3, "abcd")},
		{"common prefix", randomSeps(300, "user/0000", 4, "0123456789"), randomProbes(300, "user/0000", 4, "0123456789")},
		// Keys that differ only after the 8 bytes past the common
		// prefix: every abbreviation ties.
		{"long keys", randomSeps(300, "p", 20, "ab"), randomProbes(300, "p", 20, "ab")},
		{"zero bytes", randomSeps(300, "", 10, "\x00\x01"), randomProbes(300, "", 10, "\x00\x01\x02")},
		{"many versions of one key", slices.Concat([][]byte{encSep("a", 1)}, versions("k", 200), [][]byte{encSep("z", 1)}),
			[][]byte{[]byte("k"), []byte("j"), []byte("l"), []byte("k\x00")}},
		{"bench keys", func() [][]byte {
			var out [][]byte
			for k := range 500 {
				var uk [16]byte
				binary.BigEndian.PutUint32(uk[:], uint32(k*3))
				out = append(out, encSep(string(uk[:4]), base.MaxSeqNum))
			}
			return out
		}(), func() [][]byte {
			var out [][]byte
			for k := range 1600 {
				var uk [16]byte
				binary.BigEndian.PutUint32(uk[:], uint32(k))
				out = append(out, uk[:])
			}
			return out
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkIndexSeeks(t, tc.seps, tc.probes)
		})
	}
}

// TestIndexTableMemory pins the memory the index takes per data block.
func TestIndexTableMemory(t *testing.T) {
	var seps [][]byte
	for k := range 1000 {
		var uk [4]byte
		binary.BigEndian.PutUint32(uk[:], uint32(k*3))
		seps = append(seps, encSep(string(uk[:]), base.MaxSeqNum))
	}
	x, err := newIndexTable(indexBlock(seps))
	require.NoError(t, err)
	// 8 (abbreviation) + 4 (offset) + 16 (handle) + 12 (separator).
	require.Equal(t, 40*1000+4+len(x.common), x.memSize())
	// A partition's form has no abbreviations, and its flat buffer (what
	// the cache is charged) is that plus the header and offs padding.
	buf, err := encodeIndexPartition(indexBlock(seps), nil)
	require.NoError(t, err)
	p := viewIndexTable(buf)
	require.Equal(t, 32*1000+4+len(p.common), p.memSize())
	require.Equal(t, indexHeaderLen+p.memSize()+4, len(buf))
}

// TestIndexFormsRandom checks both flat forms against the index block
// search on random tables: keys of random lengths over a small alphabet
// (long shared prefixes, ties beyond 8 bytes), many versions of one key
// spanning blocks, and probes between and beyond them.
func TestIndexFormsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for range 200 {
		n := 1 + rng.IntN(300)
		prefix := bytes.Repeat([]byte{'p'}, rng.IntN(12))
		var seps [][]byte
		randKey := func() []byte {
			uk := append([]byte(nil), prefix...)
			for range rng.IntN(14) {
				uk = append(uk, "abc\x00\xff"[rng.IntN(5)])
			}
			return uk
		}
		for range n {
			seps = append(seps, base.MakeInternalKey(randKey(), base.SeqNum(rng.IntN(4)), base.KindSet).Append(nil))
		}
		slices.SortFunc(seps, base.CompareEncoded)
		seps = slices.CompactFunc(seps, func(a, b []byte) bool { return base.CompareEncoded(a, b) == 0 })
		var probes [][]byte
		for range 50 {
			probes = append(probes, randKey())
		}
		checkIndexSeeks(t, seps, probes)
	}
}

func TestIndexSeekGEAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	var seps [][]byte
	for i := range 100 {
		seps = append(seps, encSep(fmt.Sprintf("key%04d", i), 1))
	}
	key := appendSearchKey(nil, []byte("key0042"), base.MaxSeqNum)
	for _, form := range allIndexForms() {
		buf, err := form.encode(indexBlock(seps), nil)
		require.NoError(t, err)
		x := viewIndexTable(buf)
		require.Zero(t, testing.AllocsPerRun(100, func() { x.seekGE(key) }), form.name)
	}
}

// FuzzIndexSeekGE builds an index from separators taken from the input and
// compares every search with a search of the index block.
func FuzzIndexSeekGE(f *testing.F) {
	f.Add([]byte("a\x00b\x00c"), []byte("b"))
	f.Add([]byte("user/001\x00user/002\x00user/0021"), []byte("user/0020"))
	f.Add([]byte("aaaaaaaaaaaaaaaaaaa1\x00aaaaaaaaaaaaaaaaaaa2"), []byte("aaaaaaaaaaaaaaaaaaa15"))
	f.Add([]byte("\x00\x00\x00"), []byte{})
	f.Fuzz(func(t *testing.T, in, probe []byte) {
		var seps [][]byte
		for i, uk := range bytes.Split(in, []byte{0xff}) {
			if len(seps) >= 64 {
				break
			}
			seps = append(seps, base.MakeInternalKey(uk, base.SeqNum(i%3), base.KindSet).Append(nil))
		}
		slices.SortFunc(seps, base.CompareEncoded)
		seps = slices.CompactFunc(seps, func(a, b []byte) bool { return base.CompareEncoded(a, b) == 0 })
		probes := [][]byte{probe}
		for i := range probe {
			probes = append(probes, probe[:i])
		}
		checkIndexSeeks(t, seps, probes)
	})
}
