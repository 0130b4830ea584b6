package compact

import (
	"fmt"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/stretchr/testify/require"
)

func rdTomb(start, end string, seq base.SeqNum) rangedel.Tombstone {
	return rangedel.Tombstone{Start: []byte(start), End: []byte(end), Seq: seq}
}

func pt(k string, seq base.SeqNum) base.InternalKV {
	return base.InternalKV{K: base.MakeInternalKey([]byte(k), seq, base.KindSet), V: []byte("v")}
}

// TestIterRangeDelsStripes: a point a tombstone covers is dropped only when
// no snapshot lies between them.
func TestIterRangeDelsStripes(t *testing.T) {
	dels := rangedel.New([]rangedel.Tombstone{rdTomb("b", "e", 10)})
	in := []base.InternalKV{pt("a", 5), pt("b", 12), pt("b", 4), pt("c", 8), pt("d", 3), pt("e", 1)}
	for _, tc := range []struct {
		snapshots []base.SeqNum
		want      []string
	}{
		{nil, []string{"a#5", "b#12", "e#1"}},
		{[]base.SeqNum{6}, []string{"a#5", "b#12", "b#4", "d#3", "e#1"}},        // a snapshot at 6 sees b#4 and d#3
		{[]base.SeqNum{9}, []string{"a#5", "b#12", "b#4", "c#8", "d#3", "e#1"}}, // a snapshot at 9 does not see the tombstone
		{[]base.SeqNum{10}, []string{"a#5", "b#12", "e#1"}},                     // one at 10 does
	} {
		it := NewIter(newSliceIter(in), tc.snapshots, nil)
		it.SetRangeDels(dels)
		var got []string
		for kv := it.First(); kv != nil; kv = it.Next() {
			got = append(got, fmt.Sprintf("%s#%d", kv.K.UserKey, kv.K.SeqNum()))
		}
		require.NoError(t, it.Close())
		require.Equal(t, tc.want, got, "snapshots %v", tc.snapshots)
	}
}

func fragStrings(fs []rangedel.Fragment) []string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("[%s,%s)%v", f.Start, f.End, f.Seqs))
	}
	return out
}

// TestRangeDelSplitter: fragments are cut at output boundaries, keep the
// highest seq per stripe, and lose the oldest stripe at the bottom.
func TestRangeDelSplitter(t *testing.T) {
	dels := rangedel.New([]rangedel.Tombstone{rdTomb("a", "m", 9), rdTomb("c", "f", 7), rdTomb("c", "f", 3), rdTomb("p", "s", 2)})
	s := NewRangeDelSplitter(dels, []base.SeqNum{5}, false)
	limit := []byte("d")
	first := s.Take(limit)
	limit[0] = 'x' // Take copied the limit
	require.Equal(t, []string{"[a,c)[9]", "[c,d)[9 3]"}, fragStrings(first))
	require.Equal(t, []string{"[d,f)[9 3]", "[f,m)[9]"}, fragStrings(s.Take([]byte("p"))))
	require.Equal(t, []string{"[p,s)[2]"}, fragStrings(s.Take(nil)))
	require.True(t, s.Empty())

	bottom := NewRangeDelSplitter(dels, []base.SeqNum{5}, true)
	require.Equal(t, []string{"[a,c)[9]", "[c,f)[9]", "[f,m)[9]"}, fragStrings(bottom.Take(nil)),
		"the oldest stripe's seqs go at the bottom")
	none := NewRangeDelSplitter(dels, nil, true)
	require.True(t, none.Empty(), "no snapshot: everything is elided at the bottom")
}
