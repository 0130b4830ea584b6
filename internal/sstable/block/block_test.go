package block

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/cpubench"
	"github.com/shaledb/shale/internal/crc"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/stretchr/testify/require"
)

type kv struct{ k, v []byte }

// genKVs returns n entries with distinct, sorted keys that share prefixes of
// varying length, and values of varying length (some empty).
func genKVs(rng *rand.Rand, n int) []kv {
	seen := map[string]bool{}
	var kvs []kv
	for len(kvs) < n {
		k := fmt.Appendf(nil, "%s%04d", []string{"a", "ab", "abc/", "b", "user/"}[rng.IntN(5)], rng.IntN(10000))
		for range rng.IntN(4) {
			k = append(k, byte(rng.IntN(256)))
		}
		if seen[string(k)] {
			continue
		}
		seen[string(k)] = true
		v := make([]byte, rng.IntN(40))
		for i := range v {
			v[i] = byte('a' + rng.IntN(26))
		}
		kvs = append(kvs, kv{k, v})
	}
	slices.SortFunc(kvs, func(a, b kv) int { return bytes.Compare(a.k, b.k) })
	return kvs
}

func buildBlock(restartInterval int, kvs []kv) []byte {
	b := newBuilder(restartInterval)
	for _, e := range kvs {
		b.Add(e.k, e.v)
	}
	return append([]byte(nil), b.Finish()...)
}

func TestBuilderEncoding(t *testing.T) {
	b := newBuilder(2)
	require.True(t, b.Empty())
	b.Add([]byte("apple"), []byte("1"))
	b.Add([]byte("apricot"), []byte("2"))
	b.Add([]byte("banana"), []byte("3"))
	require.False(t, b.Empty())
	require.Equal(t, 3, b.NumEntries())
	require.Equal(t, []byte("banana"), b.LastKey())
	est := b.EstimatedSize()
	got := b.Finish()
	require.Equal(t, est, len(got))
	want := "" +
		"000501" + hex.EncodeToString([]byte("apple1")) + // offset 0, restart
		"020501" + hex.EncodeToString([]byte("ricot2")) + // offset 9, shares "ap"
		"000601" + hex.EncodeToString([]byte("banana3")) + // offset 18, restart
		"00000000" + "12000000" + // restart points 0 and 18
		"02000000" // two restart points
	require.Equal(t, want, hex.EncodeToString(got))
	require.Equal(t, got, b.Finish(), "Finish is idempotent")
	require.Panics(t, func() { b.Add([]byte("c"), nil) })

	b.Reset()
	require.True(t, b.Empty())
	require.Equal(t, "0000000001000000", hex.EncodeToString(b.Finish()), "empty block")
}

func TestEstimatedSize(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ri := range []int{0, 1, 3, 16} {
		b := newBuilder(ri)
		for _, e := range genKVs(rng, 50) {
			b.Add(e.k, e.v)
		}
		est := b.EstimatedSize()
		require.Equal(t, est, len(b.Finish()), "restart interval %d", ri)
	}
}

// refSeekGE returns the index of the first key >= k.
func refSeekGE(kvs []kv, k []byte) int {
	return sort.Search(len(kvs), func(i int) bool { return bytes.Compare(kvs[i].k, k) >= 0 })
}

func requireAt(t *testing.T, it *Iter, kvs []kv, idx int, ok bool, what string) {
	t.Helper()
	require.NoError(t, it.Error(), what)
	if idx < 0 || idx >= len(kvs) {
		require.False(t, ok, what)
		require.False(t, it.Valid(), what)
		require.Nil(t, it.Key(), what)
		return
	}
	require.True(t, ok, what)
	require.True(t, it.Valid(), what)
	require.Equal(t, kvs[idx].k, it.Key(), what)
	require.Equal(t, kvs[idx].v, it.Value(), what)
}

func TestIter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ri := range []int{1, 2, 16, 100} {
		for _, n := range []int{0, 1, 2, 17, 300} {
			t.Run(fmt.Sprintf("restart_interval=%d/n=%d", ri, n), func(t *testing.T) {
				kvs := genKVs(rng, n)
				data := buildBlock(ri, kvs)
				var it Iter
				require.NoError(t, it.Init(bytes.Compare, data))
				require.False(t, it.Valid())

				i := 0
				for ok := it.First(); ok; ok = it.Next() {
					requireAt(t, &it, kvs, i, true, "forward")
					i++
				}
				require.Equal(t, n, i)
				require.False(t, it.Next(), "exhausted stays exhausted")
				require.False(t, it.Prev(), "exhausted stays exhausted")

				i = n - 1
				for ok := it.Last(); ok; ok = it.Prev() {
					requireAt(t, &it, kvs, i, true, "backward")
					i--
				}
				require.Equal(t, -1, i)

				// Seek to every key, and to keys just before and after each.
				var targets [][]byte
				targets = append(targets, []byte{}, []byte("zzzz"))
				for _, e := range kvs {
					targets = append(targets, e.k, append(slices.Clone(e.k), 0), e.k[:len(e.k)-1])
				}
				for _, target := range targets {
					ge := refSeekGE(kvs, target)
					requireAt(t, &it, kvs, ge, it.SeekGE(target), fmt.Sprintf("SeekGE(%q)", target))
					requireAt(t, &it, kvs, ge-1, it.SeekLT(target), fmt.Sprintf("SeekLT(%q)", target))
				}
			})
		}
	}
}

// TestIterRandomWalk mixes moves and checks each against a model.
func TestIterRandomWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, ri := range []int{1, 4, 16} {
		kvs := genKVs(rng, 200)
		var it Iter
		require.NoError(t, it.Init(bytes.Compare, buildBlock(ri, kvs)))
		pos := -1 // model position; -1 or len(kvs) means unpositioned
		for step := range 5000 {
			var ok bool
			var op string
			switch r := rng.IntN(10); {
			case r < 3:
				op, ok = "Next", it.Next()
				if pos >= 0 && pos < len(kvs) {
					pos++
				}
			case r < 6:
				op, ok = "Prev", it.Prev()
				if pos >= 0 && pos < len(kvs) {
					pos--
				}
			case r == 6:
				op, ok, pos = "First", it.First(), 0
			case r == 7:
				op, ok, pos = "Last", it.Last(), len(kvs)-1
			case r == 8:
				target := kvs[rng.IntN(len(kvs))].k[:rng.IntN(6)]
				op, ok, pos = fmt.Sprintf("SeekGE(%q)", target), it.SeekGE(target), refSeekGE(kvs, target)
			default:
				target := kvs[rng.IntN(len(kvs))].k
				op, ok, pos = fmt.Sprintf("SeekLT(%q)", target), it.SeekLT(target), refSeekGE(kvs, target)-1
			}
			requireAt(t, &it, kvs, pos, ok, fmt.Sprintf("restart interval %d, step %d: %s", ri, step, op))
		}
	}
}

func TestIterInternalKeys(t *testing.T) {
	// Several versions of one user key across restart points: SeekGE with a
	// search key finds the newest visible version.
	var kvs []kv
	for _, uk := range []string{"a", "b", "c"} {
		for seq := base.SeqNum(30); seq >= 1; seq-- {
			k := base.MakeInternalKey([]byte(uk), seq, base.KindSet).Append(nil)
			kvs = append(kvs, kv{k, []byte(fmt.Sprint(seq))})
		}
	}
	var it Iter
	require.NoError(t, it.Init(base.CompareEncoded, buildBlock(4, kvs)))
	for _, tc := range []struct {
		uk      string
		seq     base.SeqNum
		wantSeq string
	}{{"a", 100, "30"}, {"b", 17, "17"}, {"c", 1, "1"}} {
		require.True(t, it.SeekGE(base.MakeSearchKey([]byte(tc.uk), tc.seq).Append(nil)))
		k, ok := base.DecodeInternalKey(it.Key())
		require.True(t, ok)
		require.Equal(t, tc.uk, string(k.UserKey))
		require.Equal(t, tc.wantSeq, string(it.Value()))
	}
	require.False(t, it.SeekGE(base.MakeSearchKey([]byte("c"), 0).Append(nil)))
}

// TestInitInternalSameAsCompareEncoded checks that seeks of an Iter made
// by InitInternal, which compare internal keys inline, land exactly where
// those of Init(base.CompareEncoded) do: user keys shorter and longer than
// 8 bytes, equal in their first 8 bytes, with many versions, across restart
// intervals, and targets between, at and around them.
func TestInitInternalSameAsCompareEncoded(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	var kvs []kv
	var uks [][]byte
	for range 400 {
		uk := []byte("prefix01")[:rng.IntN(9)]
		for range rng.IntN(12) {
			uk = append(uk, "ab\x00\xff"[rng.IntN(4)])
		}
		uks = append(uks, uk)
	}
	slices.SortFunc(uks, bytes.Compare)
	uks = slices.CompactFunc(uks, bytes.Equal)
	for _, uk := range uks {
		for seq := base.SeqNum(1 + rng.IntN(3)); seq > 0; seq-- {
			k := base.MakeInternalKey(uk, seq*10, base.KindSet).Append(nil)
			kvs = append(kvs, kv{k, []byte(fmt.Sprint(seq))})
		}
	}
	var targets [][]byte
	for _, uk := range uks {
		for _, seq := range []base.SeqNum{0, 5, 10, 25, base.MaxSeqNum} {
			targets = append(targets, base.MakeSearchKey(uk, seq).Append(nil))
			targets = append(targets, base.MakeSearchKey(append(bytes.Clone(uk), 0), seq).Append(nil))
		}
	}
	// Keys too short for a trailer take CompareEncoded's fallback.
	targets = append(targets, nil, []byte("a"), []byte("prefix0"))
	for _, ri := range []int{1, 3, 16, 64} {
		data := buildBlock(ri, kvs)
		var generic, internal Iter
		require.NoError(t, generic.Init(base.CompareEncoded, data))
		require.NoError(t, internal.InitInternal(data))
		for _, target := range targets {
			for _, seek := range []string{"SeekGE", "SeekLT"} {
				var g, in bool
				if seek == "SeekGE" {
					g, in = generic.SeekGE(target), internal.SeekGE(target)
				} else {
					g, in = generic.SeekLT(target), internal.SeekLT(target)
				}
				what := fmt.Sprintf("restart interval %d: %s(%q)", ri, seek, target)
				require.Equal(t, g, in, what)
				require.Equal(t, generic.Key(), internal.Key(), what)
				require.Equal(t, generic.Value(), internal.Value(), what)
				// The position is the same: so are the neighbours.
				require.Equal(t, generic.Next(), internal.Next(), what)
				require.Equal(t, generic.Key(), internal.Key(), what)
			}
		}
		require.NoError(t, internal.Error())
	}
}

func TestZeroIter(t *testing.T) {
	var it Iter
	require.False(t, it.First())
	require.False(t, it.Last())
	require.False(t, it.SeekGE([]byte("a")))
	require.False(t, it.SeekLT([]byte("a")))
	require.False(t, it.Next())
	require.False(t, it.Prev())
	require.NoError(t, it.Error())

	require.NoError(t, it.Init(bytes.Compare, buildBlock(16, []kv{{[]byte("a"), []byte("1")}})))
	require.True(t, it.First())
	it.Reset()
	require.False(t, it.Valid())
	require.False(t, it.First())
}

// corruptible returns a small well-formed block and a function returning a
// copy of it with bytes patched at an offset: good has entries at 0, 9 and
// 18 (ending at 28), restarts 0 and 18, and a count of 2.
func corruptible() (good []byte, patch func(off int, b ...byte) []byte) {
	good = buildBlock(2, []kv{
		{[]byte("apple"), []byte("1")}, {[]byte("apricot"), []byte("2")}, {[]byte("banana"), []byte("3")},
	})
	return good, func(off int, b ...byte) []byte {
		out := slices.Clone(good)
		copy(out[off:], b)
		return out
	}
}

func TestIterCorrupt(t *testing.T) {
	good, patch := corruptible()
	le32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	for _, tc := range []struct {
		name    string
		data    []byte
		initErr bool
		want    string
		op      func(it *Iter) bool
	}{
		{name: "empty", data: nil, initErr: true, want: "too short"},
		{name: "short", data: []byte{1, 0, 0}, initErr: true, want: "too short"},
		{name: "restart-count-too-big", data: patch(36, le32(100)...), initErr: true, want: "do not fit"},
		{name: "restart-count-max", data: patch(36, le32(math.MaxUint32)...), initErr: true, want: "do not fit"},
		{name: "no-restarts", data: append(slices.Clone(good[:28]), le32(0)...), initErr: true, want: "no restart point"},
		{name: "first-restart-not-zero", data: patch(28, le32(9)...), initErr: true, want: "first restart point is 9"},
		{name: "last-restart-beyond", data: patch(32, le32(28)...), initErr: true, want: "beyond the entries"},
		{name: "empty-block-bad-restart", data: append(le32(5), le32(1)...), initErr: true, want: "empty block"},
		{name: "truncated-key", data: patch(1, 200), want: "offset 0", op: (*Iter).First},
		{name: "shared-too-long", data: patch(9, 9), want: "offset 9", op: func(it *Iter) bool { it.First(); return it.Next() }},
		{name: "restart-entry-shares", data: patch(18, 1), want: "offset 18", op: (*Iter).Last},
		{name: "value-too-long", data: patch(20, 60), want: "value runs past", op: (*Iter).Last},
		{name: "bad-varint", data: patch(18, 0x80, 0x80, 0x80, 0x80, 0x80), want: "offset 18", op: (*Iter).Last},
		{name: "varint-over-32-bits", data: patch(18, 0x80, 0x80, 0x80, 0x80, 0x10), want: "offset 18", op: (*Iter).Last},
		// Restart 1 points into the first entry's value, whose bytes decode as
		// an entry that runs past the second entry's start.
		{name: "restart-mid-entry-prev", data: mustHex("000104610000057800010062000100630000000004000000" + "02000000"),
			want: "restart points and entries disagree", op: func(it *Iter) bool { it.First(); it.Next(); return it.Prev() }},
		{name: "restart-mid-entry-seek", data: patch(32, le32(12)...), want: "offset 12",
			op: func(it *Iter) bool { return it.SeekGE([]byte("b")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var it Iter
			err := it.Init(bytes.Compare, tc.data)
			if tc.initErr {
				require.True(t, base.IsCorruption(err), "%v", err)
				require.Contains(t, err.Error(), tc.want)
				require.Equal(t, err, it.Error())
				require.False(t, it.First())
				return
			}
			require.NoError(t, err)
			require.False(t, tc.op(&it))
			require.False(t, it.Valid())
			err = it.Error()
			require.True(t, base.IsCorruption(err), "%v", err)
			require.Contains(t, err.Error(), tc.want)
			// The error sticks until the next Init.
			require.False(t, it.First())
			require.Equal(t, err, it.Error())
			require.NoError(t, it.Init(bytes.Compare, good))
			require.True(t, it.First())
		})
	}
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func TestInitChecksAllRestartsUnderInvariants(t *testing.T) {
	if !invariants.Enabled {
		t.Skip("only invariants builds check every restart point in Init")
	}
	kvs := []kv{{[]byte("a"), nil}, {[]byte("b"), nil}, {[]byte("c"), nil}, {[]byte("d"), nil}}
	data := buildBlock(1, kvs) // entries at 0, 4, 8, 12
	binary.LittleEndian.PutUint32(data[len(data)-4-4*3:], 8)
	var it Iter
	require.True(t, base.IsCorruption(it.Init(bytes.Compare, data)))
}

func TestIterAllocs(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	kvs := genKVs(rng, 300)
	data := buildBlock(16, kvs)
	var it Iter
	require.NoError(t, it.Init(bytes.Compare, data))
	// Warm the key buffers up once.
	for ok := it.First(); ok; ok = it.Next() {
	}
	for ok := it.Last(); ok; ok = it.Prev() {
	}
	i := 0
	for name, op := range map[string]func(){
		"SeekGE": func() { it.SeekGE(kvs[i%len(kvs)].k); i += 7 },
		"SeekLT": func() { it.SeekLT(kvs[i%len(kvs)].k); i += 7 },
		"First":  func() { it.First() },
		"Last":   func() { it.Last() },
		"Next": func() {
			if !it.Next() {
				it.First()
			}
		},
		"Prev": func() {
			if !it.Prev() {
				it.Last()
			}
		},
		"Init": func() { _ = it.Init(bytes.Compare, data) },
	} {
		require.Zero(t, testing.AllocsPerRun(1000, op), name)
	}
}

func TestHandle(t *testing.T) {
	for _, h := range []Handle{{0, 0}, {1, 2}, {4096, 4000}, {math.MaxUint64, math.MaxUint64}} {
		enc := h.Append([]byte("x"))[1:]
		require.LessOrEqual(t, len(enc), MaxHandleLen)
		got, n, err := DecodeHandle(append(enc, 0xaa))
		require.NoError(t, err)
		require.Equal(t, len(enc), n)
		require.Equal(t, h, got)
	}
	require.Len(t, Handle{math.MaxUint64, math.MaxUint64}.Append(nil), MaxHandleLen)
	require.Equal(t, "(4096, 12)", Handle{4096, 12}.String())

	for _, tc := range []struct {
		name, want string
		b          []byte
	}{
		{"empty", "truncated handle offset", nil},
		{"no-length", "truncated handle length", []byte{5}},
		{"truncated-offset", "truncated handle offset", []byte{0x80}},
		{"overflow", "overflows", bytes.Repeat([]byte{0xff}, 11)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := DecodeHandle(tc.b)
			require.True(t, base.IsCorruption(err), "%v", err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestTrailer(t *testing.T) {
	payload := []byte("some block bytes")
	for _, ct := range []checksum.Type{checksum.None, checksum.CRC32C, checksum.XXHash64} {
		for _, comp := range []compress.Type{compress.None, compress.Snappy, compress.Zstd} {
			t.Run(fmt.Sprintf("checksum=%s/compression=%s", ct, comp), func(t *testing.T) {
				raw := AppendTrailer(slices.Clone(payload), ct, comp, payload)
				require.Len(t, raw, len(payload)+TrailerLen)
				require.NoError(t, ValidateChecksum(ct, raw, "000001.sst", 0))
				got, gotComp, err := SplitTrailer(raw)
				require.NoError(t, err)
				require.Equal(t, payload, got)
				require.Equal(t, comp, gotComp)
				require.Equal(t, checksum.Compute(ct, raw[:len(raw)-4]), binary.LittleEndian.Uint32(raw[len(raw)-4:]))
				if ct == checksum.None {
					return
				}
				// Every flipped bit, in the block, the type byte or the
				// checksum, is detected.
				for i := range raw {
					bad := slices.Clone(raw)
					bad[i] ^= 0x04
					err := ValidateChecksum(ct, bad, "000001.sst", 0)
					require.True(t, base.IsCorruption(err), "byte %d: %v", i, err)
				}
			})
		}
	}
}

func TestChecksumMismatchMessage(t *testing.T) {
	payload := []byte("block")
	for _, tc := range []struct {
		ct checksum.Type
		// printed returns how a stored/computed value is printed.
		printed func(v uint32) uint32
	}{
		{checksum.CRC32C, crc.Unmask},
		{checksum.XXHash64, func(v uint32) uint32 { return v }},
	} {
		raw := AppendTrailer(slices.Clone(payload), tc.ct, compress.None, payload)
		stored := binary.LittleEndian.Uint32(raw[len(raw)-4:])
		raw[0] ^= 1
		computed := checksum.Compute(tc.ct, raw[:len(raw)-4])
		err := ValidateChecksum(tc.ct, raw, "/db/000007.sst", 8192)
		require.True(t, base.IsCorruption(err))
		want := fmt.Sprintf("block checksum mismatch: stored = %d, computed = %d, type = %d  in /db/000007.sst offset 8192 size 5",
			tc.printed(stored), tc.printed(computed), uint8(tc.ct))
		require.Equal(t, want, err.Error())
	}
	// CRC32C values print unmasked: the raw CRC-32C of the covered bytes.
	raw := AppendTrailer([]byte("block"), checksum.CRC32C, compress.None, []byte("block"))
	raw[len(raw)-1] ^= 0xff
	err := ValidateChecksum(checksum.CRC32C, raw, "f", 0)
	require.Contains(t, err.Error(), fmt.Sprintf("computed = %d,", crc.Value(raw[:len(raw)-4])))
}

func TestValidateChecksumErrors(t *testing.T) {
	err := ValidateChecksum(checksum.CRC32C, []byte{1, 2, 3, 4}, "f.sst", 10)
	require.True(t, base.IsCorruption(err))
	require.Contains(t, err.Error(), "too short")
	require.Contains(t, err.Error(), "f.sst offset 10")

	err = ValidateChecksum(checksum.XXH3, []byte{1, 2, 3, 4, 5, 6}, "f.sst", 10)
	require.True(t, base.IsCorruption(err))
	require.Contains(t, err.Error(), "xxh3")

	_, _, err = SplitTrailer([]byte{1})
	require.True(t, base.IsCorruption(err))

	// None verifies nothing.
	require.NoError(t, ValidateChecksum(checksum.None, []byte{1, 2, 3, 4, 5, 6}, "f.sst", 10))
}

// entryOffsets walks the block forwards from its start, returning each entry's
// offset, key and value, or false if the walk hit corruption.
func walkForward(it *Iter) (offs []int, keys, vals [][]byte, ok bool) {
	for valid := it.First(); valid; valid = it.Next() {
		offs = append(offs, it.offset)
		keys = append(keys, slices.Clone(it.Key()))
		vals = append(vals, it.Value())
	}
	return offs, keys, vals, it.Error() == nil
}

// FuzzBlockDecode runs an Iter over arbitrary bytes. Nothing may panic or
// loop, every error must be marked corruption, and when the bytes are a
// well-formed block (entries decode, restart points fall on entries that
// share no prefix, keys ascend) every move must agree with a model of the
// entries. Keys compare
// bytewise when target has even length and as encoded internal keys (as in
// data and index blocks) when it is odd.
func FuzzBlockDecode(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ri := range []int{1, 3, 16} {
		for _, n := range []int{0, 1, 5, 40} {
			data := buildBlock(ri, genKVs(rng, n))
			f.Add(data, []byte("ab"))
			if len(data) > 12 {
				bad := slices.Clone(data)
				bad[len(bad)/2] ^= 0x5a
				f.Add(bad, []byte("user/"))
			}
		}
	}
	f.Add([]byte{0, 0, 0, 0}, []byte{})
	f.Fuzz(func(t *testing.T, data, target []byte) {
		cmp := bytes.Compare
		if len(target)%2 == 1 {
			cmp = base.CompareEncoded
		}
		var it Iter
		if err := it.Init(cmp, data); err != nil {
			if !base.IsCorruption(err) {
				t.Fatalf("Init error not marked corruption: %v", err)
			}
			return
		}
		offs, keys, vals, fwdOK := walkForward(&it)
		checkErr := func(what string) {
			if err := it.Error(); err != nil && !base.IsCorruption(err) {
				t.Fatalf("%s: error not marked corruption: %v", what, err)
			}
		}
		checkErr("forward")
		if len(offs) > len(data) {
			t.Fatalf("%d entries from %d bytes", len(offs), len(data))
		}
		_ = it.Init(cmp, data)
		var back [][]byte
		for valid := it.Last(); valid && len(back) <= len(data); valid = it.Prev() {
			back = append(back, slices.Clone(it.Key()))
		}
		checkErr("backward")
		backOK := it.Error() == nil
		_ = it.Init(cmp, data)
		geOK := it.SeekGE(target)
		checkErr("SeekGE")
		geKey := slices.Clone(it.Key())
		_ = it.Init(cmp, data)
		ltOK := it.SeekLT(target)
		checkErr("SeekLT")
		ltKey := slices.Clone(it.Key())
		if len(target)%2 == 1 {
			// InitInternal seeks exactly as Init(base.CompareEncoded)
			// does, on any bytes.
			var in Iter
			_ = in.InitInternal(data)
			if ok := in.SeekGE(target); ok != geOK || !bytes.Equal(in.Key(), geKey) {
				t.Fatalf("internal SeekGE(%q) = %v %q, generic %v %q", target, ok, in.Key(), geOK, geKey)
			}
			_ = in.InitInternal(data)
			if ok := in.SeekLT(target); ok != ltOK || !bytes.Equal(in.Key(), ltKey) {
				t.Fatalf("internal SeekLT(%q) = %v %q, generic %v %q", target, ok, in.Key(), ltOK, ltKey)
			}
		}

		// The model applies only to well-formed blocks.
		if !fwdOK {
			return
		}
		for j := 0; j < it.numRestarts; j++ {
			off := it.restartOffset(j)
			if _, found := slices.BinarySearch(offs, off); !found {
				return
			}
			if shared, _, _ := uvarint32(data, off, it.restarts); shared != 0 {
				return // a restart point's key must not share a prefix
			}
		}
		if len(target)%2 == 1 {
			// CompareEncoded is a total order only over keys long
			// enough to hold a trailer.
			if len(target) < base.TrailerLen {
				return
			}
			for _, k := range keys {
				if len(k) < base.TrailerLen {
					return
				}
			}
		}
		for j := 1; j < len(keys); j++ {
			if cmp(keys[j-1], keys[j]) >= 0 {
				return
			}
		}
		if !backOK || len(back) != len(keys) {
			t.Fatalf("backward walk: %d entries, ok=%v; forward: %d", len(back), backOK, len(keys))
		}
		for j := range back {
			if !bytes.Equal(back[j], keys[len(keys)-1-j]) {
				t.Fatalf("backward entry %d = %q, forward has %q", j, back[j], keys[len(keys)-1-j])
			}
		}
		ge := sort.Search(len(keys), func(j int) bool { return cmp(keys[j], target) >= 0 })
		if geOK != (ge < len(keys)) || (geOK && !bytes.Equal(geKey, keys[ge])) {
			t.Fatalf("SeekGE(%q) = %v %q, model says index %d of %d", target, geOK, geKey, ge, len(keys))
		}
		if ltOK != (ge > 0) || (ltOK && !bytes.Equal(ltKey, keys[ge-1])) {
			t.Fatalf("SeekLT(%q) = %v %q, model says index %d", target, ltOK, ltKey, ge-1)
		}
		// Seek to (a sample of) the keys themselves, and step both ways.
		for j := 0; j < len(keys); j += 1 + len(keys)/32 {
			if !it.SeekGE(keys[j]) || !bytes.Equal(it.Key(), keys[j]) || !bytes.Equal(it.Value(), vals[j]) {
				t.Fatalf("SeekGE(key %d = %q) = %q", j, keys[j], it.Key())
			}
			if ok := it.Prev(); ok != (j > 0) || (ok && !bytes.Equal(it.Key(), keys[j-1])) {
				t.Fatalf("Prev from key %d = %v %q", j, ok, it.Key())
			}
			if ok := it.SeekLT(keys[j]); ok != (j > 0) || (ok && !bytes.Equal(it.Key(), keys[j-1])) {
				t.Fatalf("SeekLT(key %d = %q) = %v %q", j, keys[j], ok, it.Key())
			}
			if j > 0 && (!it.Next() || !bytes.Equal(it.Key(), keys[j])) {
				t.Fatalf("Next after SeekLT(key %d) = %q", j, it.Key())
			}
		}
		if it.Error() != nil {
			t.Fatalf("error on a well-formed block: %v", it.Error())
		}
	})
}

// FuzzDecodeHandle decodes arbitrary bytes as a handle; a decoded handle
// re-encodes to the bytes it came from.
func FuzzDecodeHandle(f *testing.F) {
	f.Add(Handle{4096, 100}.Append(nil))
	f.Add(Handle{math.MaxUint64, 0}.Append(nil))
	f.Add([]byte{0x80, 0x00, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := DecodeHandle(b)
		if err != nil {
			if !base.IsCorruption(err) {
				t.Fatalf("not corruption: %v", err)
			}
			return
		}
		if n > MaxHandleLen || n > len(b) {
			t.Fatalf("consumed %d of %d bytes", n, len(b))
		}
		// Varints with redundant continuation bytes decode too, so compare
		// values, not bytes.
		h2, _, err := DecodeHandle(h.Append(nil))
		if err != nil || h2 != h {
			t.Fatalf("round trip %v -> %v, %v", h, h2, err)
		}
	})
}

// benchBlock builds a ~4 KiB data block of encoded internal keys.
func benchBlock(restartInterval int) ([]byte, [][]byte) {
	var b Builder
	b.Init(restartInterval)
	var keys [][]byte
	for i := 0; b.EstimatedSize() < 4096; i++ {
		k := base.MakeInternalKey(fmt.Appendf(nil, "user%08d", i*7), base.SeqNum(i+1), base.KindSet).Append(nil)
		b.Add(k, []byte("value-0123456789"))
		keys = append(keys, k)
	}
	return append([]byte(nil), b.Finish()...), keys
}

func BenchmarkBlockSeek(b *testing.B) {
	for _, ri := range []int{1, 4, 16, 32} {
		data, keys := benchBlock(ri)
		rng := rand.New(rand.NewPCG(1, 2))
		order := rng.Perm(len(keys))
		b.Run(fmt.Sprintf("restart_interval=%d", ri), func(b *testing.B) {
			var it Iter
			if err := it.Init(base.CompareEncoded, data); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			defer cpubench.Start(b)()
			i := 0
			for b.Loop() {
				if !it.SeekGE(keys[order[i%len(order)]]) {
					b.Fatal("not found")
				}
				i++
			}
		})
	}
}

func BenchmarkBlockNext(b *testing.B) {
	for _, ri := range []int{1, 16} {
		data, _ := benchBlock(ri)
		b.Run(fmt.Sprintf("restart_interval=%d", ri), func(b *testing.B) {
			var it Iter
			if err := it.Init(base.CompareEncoded, data); err != nil {
				b.Fatal(err)
			}
			it.First()
			b.ReportAllocs()
			defer cpubench.Start(b)()
			for b.Loop() {
				if !it.Next() {
					it.First()
				}
			}
		})
	}
}

func BenchmarkBlockPrev(b *testing.B) {
	for _, ri := range []int{1, 16} {
		data, _ := benchBlock(ri)
		b.Run(fmt.Sprintf("restart_interval=%d", ri), func(b *testing.B) {
			var it Iter
			if err := it.Init(base.CompareEncoded, data); err != nil {
				b.Fatal(err)
			}
			it.Last()
			b.ReportAllocs()
			defer cpubench.Start(b)()
			for b.Loop() {
				if !it.Prev() {
					it.Last()
				}
			}
		})
	}
}

func BenchmarkBlockBuild(b *testing.B) {
	_, keys := benchBlock(16)
	value := []byte("value-0123456789")
	var bb Builder
	bb.Init(16)
	b.Run("restart_interval=16/size=4KiB", func(b *testing.B) {
		b.ReportAllocs()
		defer cpubench.Start(b)()
		for b.Loop() {
			bb.Reset()
			for _, k := range keys {
				bb.Add(k, value)
			}
			bb.Finish()
		}
	})
}

// BenchmarkBlockSeekLarge seeks in a 4 KiB block shaped like the engine
// benchmark's: 16-byte keys (big-endian k*3, zero-filled), 256-byte values,
// restart interval 16, so about 14 entries and one restart point. Searches
// are for present user keys at the maximum sequence number, as a Get's.
func BenchmarkBlockSeekLarge(b *testing.B) {
	var bb Builder
	bb.Init(16)
	value := bytes.Repeat([]byte{'v'}, 256)
	var searches [][]byte
	for k := 0; bb.EstimatedSize() < 4096; k++ {
		uk := make([]byte, 16)
		binary.BigEndian.PutUint32(uk, uint32(k*3))
		bb.Add(base.MakeInternalKey(uk, base.SeqNum(k+1), base.KindSet).Append(nil), value)
		searches = append(searches, base.MakeInternalKey(uk, base.MaxSeqNum, base.KindMax).Append(nil))
	}
	data := bytes.Clone(bb.Finish())
	rng := rand.New(rand.NewPCG(1, 2))
	order := rng.Perm(len(searches))
	for _, internal := range []bool{false, true} {
		b.Run(fmt.Sprintf("entries=%d/internal=%t", len(searches), internal), func(b *testing.B) {
			var it Iter
			b.ReportAllocs()
			defer cpubench.Start(b)()
			i := 0
			for b.Loop() {
				var err error
				if internal {
					err = it.InitInternal(data)
				} else {
					err = it.Init(base.CompareEncoded, data)
				}
				if err != nil {
					b.Fatal(err)
				}
				if !it.SeekGE(searches[order[i%len(order)]]) {
					b.Fatal("not found")
				}
				i++
			}
		})
	}
}

// newBuilder returns an initialised Builder.
func newBuilder(restartInterval int) *Builder {
	b := new(Builder)
	b.Init(restartInterval)
	return b
}
