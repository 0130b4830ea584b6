package rangedel

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/stretchr/testify/require"
)

func ts(start, end string, seq base.SeqNum) Tombstone {
	return Tombstone{Start: []byte(start), End: []byte(end), Seq: seq}
}

// modelCovering is Covering by brute force over the raw tombstones.
func modelCovering(tss []Tombstone, key []byte, readSeq base.SeqNum) base.SeqNum {
	var best base.SeqNum
	for _, t := range tss {
		if t.Seq <= readSeq && bytes.Compare(t.Start, key) <= 0 && (len(t.End) == 0 || bytes.Compare(key, t.End) < 0) {
			best = max(best, t.Seq)
		}
	}
	return best
}

func TestFragment(t *testing.T) {
	s := New([]Tombstone{ts("a", "e", 3), ts("c", "g", 5), ts("x", "x", 9), ts("z", "y", 9)})
	var got []string
	for _, f := range s.Fragments() {
		got = append(got, fmt.Sprintf("[%s,%s)%v", f.Start, f.End, f.Seqs))
	}
	require.Equal(t, []string{"[a,c)[3]", "[c,e)[5 3]", "[e,g)[5]"}, got)

	for _, tc := range []struct {
		key     string
		readSeq base.SeqNum
		want    base.SeqNum
		end     string
	}{
		{"a", 10, 3, "c"}, {"b", 2, 0, ""}, {"c", 4, 3, "e"}, {"d", 10, 5, "e"},
		{"f", 10, 5, "g"}, {"g", 10, 0, ""}, {"0", 10, 0, ""}, {"x", 10, 0, ""},
	} {
		seq, f := s.Covering([]byte(tc.key), tc.readSeq)
		require.Equal(t, tc.want, seq, tc.key)
		if tc.want != 0 {
			require.Equal(t, tc.end, string(f.End), tc.key)
		} else {
			require.Nil(t, f)
		}
	}
	require.Nil(t, New([]Tombstone{ts("b", "a", 1)}), "inverted ranges delete nothing")
	var none *Set
	seq, f := none.Covering([]byte("a"), 10)
	require.Zero(t, seq)
	require.Nil(t, f)
	require.True(t, none.Empty())
}

// TestFragmentAdjacentMerge checks that touching tombstones of the same
// sequence number become one fragment, so an iterator skips them in one seek.
func TestFragmentAdjacentMerge(t *testing.T) {
	s := New([]Tombstone{ts("a", "c", 4), ts("c", "e", 4)})
	require.Equal(t, 1, s.Len())
	require.Equal(t, "e", string(s.Fragments()[0].End))
}

func TestFragmentModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	key := func() []byte { return fmt.Appendf(nil, "%02d", rng.IntN(30)) }
	for range 300 {
		var tss []Tombstone
		for i := range rng.IntN(8) {
			end := key()
			if rng.IntN(5) == 0 {
				end = nil // unbounded
			}
			tss = append(tss, Tombstone{Start: key(), End: end, Seq: base.SeqNum(i + 1)})
		}
		checkSet(t, tss, New(tss))
	}
}

// checkSet checks s, the fragments of tss, against a brute-force model and
// that it survives an encode/decode round trip.
func checkSet(t testing.TB, tss []Tombstone, s *Set) {
	frags := s.Fragments()
	for i := range frags {
		f := &frags[i]
		if !Before(f.Start, f.End) || len(f.Seqs) == 0 {
			t.Fatalf("bad fragment %q %q %v", f.Start, f.End, f.Seqs)
		}
		if f.Unbounded() && i != len(frags)-1 {
			t.Fatalf("unbounded fragment %d of %d is not the last", i, len(frags))
		}
		if i > 0 && bytes.Compare(frags[i-1].End, f.Start) > 0 {
			t.Fatalf("fragments overlap")
		}
		for j := 1; j < len(f.Seqs); j++ {
			if f.Seqs[j] >= f.Seqs[j-1] {
				t.Fatalf("seqs not decreasing: %v", f.Seqs)
			}
		}
	}
	var decoded []Fragment
	for i := range frags {
		f, err := DecodeFragment(frags[i].Start, AppendValue(nil, &frags[i]))
		if frags[i].Unbounded() {
			// Never stored: a table holds clamped tombstones only.
			if !base.IsCorruption(err) {
				t.Fatalf("an unbounded fragment decoded: %v", err)
			}
			f = frags[i]
		} else if err != nil {
			t.Fatal(err)
		}
		decoded = append(decoded, f)
	}
	d, err := FromFragments(decoded)
	if err != nil {
		t.Fatal(err)
	}
	var keys [][]byte
	for _, x := range tss {
		keys = append(keys, x.Start, x.End, append(bytes.Clone(x.Start), 0), append(bytes.Clone(x.End), 0xff))
	}
	for _, k := range keys {
		if _, _, inGap := s.Gap(k); inGap != (modelCovering(tss, k, base.MaxSeqNum) == 0) {
			t.Fatalf("Gap(%q) = %v, but the model covers it: %v", k, inGap, !inGap)
		}
		for _, rs := range []base.SeqNum{0, 1, 3, 5, base.MaxSeqNum} {
			want := modelCovering(tss, k, rs)
			for _, set := range []*Set{s, d} {
				got, f := set.Covering(k, rs)
				if got != want {
					t.Fatalf("Covering(%q, %d) = %d, want %d", k, rs, got, want)
				}
				if got != 0 && !f.Contains(k) {
					t.Fatalf("Covering(%q) gave fragment [%q, %q)", k, f.Start, f.End)
				}
			}
		}
	}
	if r := New(s.Tombstones(nil)); r.Len() != s.Len() {
		t.Fatalf("refragmenting gave %d fragments, want %d", r.Len(), s.Len())
	}
	checkClamp(t, tss, s, keys)
}

// checkClamp checks that s clamped just above every key of keys (as a flush
// clamps above every key of the tree) covers each of them as s does, and is
// bounded.
func checkClamp(t testing.TB, tss []Tombstone, s *Set, keys [][]byte) {
	var largest string
	for _, k := range keys {
		largest = max(largest, string(k)) // string order is bytewise
	}
	end := append([]byte(largest), 0)
	c := s.ClampEnd(end)
	if c.Unbounded() {
		t.Fatalf("clamped set is unbounded")
	}
	if !s.Unbounded() && c != s {
		t.Fatalf("clamping a bounded set changed it")
	}
	for _, f := range c.Fragments() {
		if len(f.End) == 0 || bytes.Compare(f.Start, f.End) >= 0 {
			t.Fatalf("clamped fragment [%q, %q)", f.Start, f.End)
		}
	}
	for _, k := range keys {
		for _, rs := range []base.SeqNum{1, 5, base.MaxSeqNum} {
			if got, _ := c.Covering(k, rs); got != modelCovering(tss, k, rs) {
				t.Fatalf("clamped at %q: Covering(%q, %d) = %d, want %d", end, k, rs, got, modelCovering(tss, k, rs))
			}
		}
	}
}

func TestOverlapping(t *testing.T) {
	s := New([]Tombstone{ts("a", "c", 1), ts("e", "g", 2), ts("i", "k", 3)})
	str := func(fs []Fragment) (out []string) {
		for _, f := range fs {
			out = append(out, string(f.Start))
		}
		return out
	}
	require.Equal(t, []string{"a", "e", "i"}, str(s.Overlapping(nil, nil)))
	require.Equal(t, []string{"e"}, str(s.Overlapping([]byte("c"), []byte("f"))))
	require.Equal(t, []string{"a", "e"}, str(s.Overlapping([]byte("b"), []byte("e1"))))
	require.Nil(t, s.Overlapping([]byte("c"), []byte("e")))
}

func TestDecodeFragmentCorrupt(t *testing.T) {
	good := AppendValue(nil, &Fragment{Start: []byte("a"), End: []byte("b"), Seqs: []base.SeqNum{5, 2}})
	for name, v := range map[string][]byte{
		"empty":      {},
		"truncated":  good[:len(good)-1],
		"trailing":   append(bytes.Clone(good), 0),
		"no seqs":    {1, 'b', 0},
		"increasing": {1, 'b', 2, 2, 5},
	} {
		_, err := DecodeFragment([]byte("a"), v)
		require.True(t, base.IsCorruption(err), "%s: %v", name, err)
	}
	_, err := DecodeFragment([]byte("b"), good)
	require.True(t, base.IsCorruption(err), "an empty range is corruption")
}

// FuzzDecodeFragment: any value either decodes to a well-formed fragment
// that re-encodes to the same bytes or gives a corruption error.
func FuzzDecodeFragment(f *testing.F) {
	f.Add([]byte("a"), AppendValue(nil, &Fragment{End: []byte("b"), Seqs: []base.SeqNum{9, 1}}))
	f.Add([]byte(""), []byte{0, 1, 1})
	// An unbounded fragment: never stored, so corruption.
	f.Add([]byte("a"), AppendValue(nil, &Fragment{Start: []byte("a"), Seqs: []base.SeqNum{7}}))
	f.Fuzz(func(t *testing.T, start, value []byte) {
		fr, err := DecodeFragment(start, value)
		if err != nil {
			if !base.IsCorruption(err) {
				t.Fatalf("unmarked error %v", err)
			}
			return
		}
		if _, err := FromFragments([]Fragment{fr}); err != nil {
			t.Fatalf("decoded fragment rejected: %v", err)
		}
		if re := AppendValue(nil, &fr); len(re) > len(value) {
			t.Fatalf("re-encoding grew")
		}
	})
}

// FuzzFragmenter fragments tombstones decoded from data and checks the
// result against the brute-force model.
func FuzzFragmenter(f *testing.F) {
	f.Add([]byte{1, 5, 3, 9, 2, 7, 0, 0, 1})
	// With unbounded tombstones (an end byte of 0xf0 or more).
	f.Add([]byte{1, 5, 3, 4, 0xff, 5, 9, 0xf0, 2, 2, 7, 7})
	f.Fuzz(func(t *testing.T, data []byte) {
		var tss []Tombstone
		for i := 0; i+2 < len(data) && len(tss) < 64; i += 3 {
			end := []byte{data[i+1] % 16}
			if data[i+1] >= 0xf0 {
				end = nil
			}
			tss = append(tss, Tombstone{
				Start: []byte{data[i] % 16}, End: end, Seq: base.SeqNum(data[i+2]%8) + 1,
			})
		}
		checkSet(t, tss, New(tss))
	})
}

func TestGap(t *testing.T) {
	s := New([]Tombstone{ts("c", "e", 1), ts("g", "i", 2)})
	for _, tc := range []struct {
		key, lo, hi string
		ok          bool
	}{
		{"a", "", "c", true}, {"c", "", "", false}, {"d", "", "", false}, {"e", "e", "g", true},
		{"f", "e", "g", true}, {"h", "", "", false}, {"i", "i", "", true}, {"z", "i", "", true},
	} {
		lo, hi, ok := s.Gap([]byte(tc.key))
		require.Equal(t, tc.ok, ok, tc.key)
		require.Equal(t, tc.lo, string(lo), tc.key)
		require.Equal(t, tc.hi, string(hi), tc.key)
		if ok {
			seq, _ := s.Covering([]byte(tc.key), base.MaxSeqNum)
			require.Zero(t, seq)
		}
	}
	lo, hi, ok := (*Set)(nil).Gap([]byte("a"))
	require.True(t, ok)
	require.Nil(t, lo)
	require.Nil(t, hi)
}

// frags renders a Set's fragments, "inf" for an unbounded end.
func frags(s *Set) (out []string) {
	for _, f := range s.Fragments() {
		end := string(f.End)
		if f.Unbounded() {
			end = "inf"
		}
		out = append(out, fmt.Sprintf("[%s,%s)%v", f.Start, end, f.Seqs))
	}
	return out
}

// TestUnbounded checks tombstones with an empty (nil or not) End, which
// delete every key from Start on.
func TestUnbounded(t *testing.T) {
	open := func(start string, seq base.SeqNum) Tombstone {
		return Tombstone{Start: []byte(start), Seq: seq}
	}
	for _, tc := range []struct {
		name string
		in   []Tombstone
		want []string
	}{
		{"alone", []Tombstone{open("c", 4)}, []string{"[c,inf)[4]"}},
		{"empty start", []Tombstone{open("", 4)}, []string{"[,inf)[4]"}},
		{"non-nil empty end", []Tombstone{{Start: []byte("c"), End: []byte{}, Seq: 2}}, []string{"[c,inf)[2]"}},
		{"bounded inside", []Tombstone{open("c", 4), ts("d", "f", 6)},
			[]string{"[c,d)[4]", "[d,f)[6 4]", "[f,inf)[4]"}},
		{"bounded before, touching", []Tombstone{ts("a", "c", 4), open("c", 4)}, []string{"[a,inf)[4]"}},
		{"bounded before, apart", []Tombstone{ts("a", "b", 4), open("c", 5)}, []string{"[a,b)[4]", "[c,inf)[5]"}},
		{"bounded across the start", []Tombstone{ts("a", "e", 3), open("c", 5)},
			[]string{"[a,c)[3]", "[c,e)[5 3]", "[e,inf)[5]"}},
		{"two unbounded", []Tombstone{open("e", 2), open("c", 7)}, []string{"[c,e)[7]", "[e,inf)[7 2]"}},
		{"same seq twice", []Tombstone{open("e", 7), open("c", 7)}, []string{"[c,inf)[7]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(tc.in)
			require.Equal(t, tc.want, frags(s))
			require.True(t, s.Unbounded())
			keys := [][]byte{{}, []byte("a"), []byte("c"), []byte("d"), []byte("e"), []byte("z"), []byte("zzzz\xff\xff")}
			for _, k := range keys {
				for _, rs := range []base.SeqNum{1, 4, 6, base.MaxSeqNum} {
					got, f := s.Covering(k, rs)
					require.Equal(t, modelCovering(tc.in, k, rs), got, "Covering(%q, %d)", k, rs)
					if got != 0 {
						require.True(t, f.Contains(k))
					}
				}
				_, _, inGap := s.Gap(k)
				got, _ := s.Covering(k, base.MaxSeqNum)
				require.Equal(t, got == 0, inGap, "Gap(%q)", k)
			}
			// Past every bound: only the unbounded fragment overlaps.
			last := s.Fragments()[s.Len()-1:]
			require.Equal(t, last, s.Overlapping([]byte("y"), nil))
			require.Equal(t, last, s.Overlapping([]byte("y"), []byte("z")))
			require.Equal(t, s.Fragments(), s.Overlapping(nil, nil))
			r, err := FromFragments(s.Fragments())
			require.NoError(t, err)
			require.Equal(t, tc.want, frags(r))
			require.Equal(t, tc.want, frags(New(s.Tombstones(nil))), "refragmented")
			checkSet(t, tc.in, s)
		})
	}
}

func TestClampEnd(t *testing.T) {
	open := func(start string, seq base.SeqNum) Tombstone {
		return Tombstone{Start: []byte(start), Seq: seq}
	}
	for _, tc := range []struct {
		name string
		in   []Tombstone
		end  string
		want []string
	}{
		{"bounded unchanged", []Tombstone{ts("a", "c", 1)}, "b", []string{"[a,c)[1]"}},
		{"cut", []Tombstone{open("c", 4)}, "m\x00", []string{"[c,m\x00)[4]"}},
		{"at the start: nothing left", []Tombstone{open("c", 4)}, "c", nil},
		{"below the start: nothing left", []Tombstone{open("c", 4)}, "b", nil},
		{"only the last fragment", []Tombstone{open("c", 4), ts("d", "f", 6)}, "x",
			[]string{"[c,d)[4]", "[d,f)[6 4]", "[f,x)[4]"}},
		{"last fragment dropped", []Tombstone{open("c", 4), ts("d", "f", 6)}, "e",
			[]string{"[c,d)[4]", "[d,f)[6 4]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(tc.in)
			before := frags(s)
			c := s.ClampEnd([]byte(tc.end))
			require.Equal(t, tc.want, frags(c))
			require.False(t, c.Unbounded())
			require.Equal(t, before, frags(s), "the Set clamped is unchanged")
		})
	}
	require.Nil(t, (*Set)(nil).ClampEnd([]byte("a")))
}
