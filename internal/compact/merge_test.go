package compact

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/merge"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/stretchr/testify/require"
)

// parseMergeKVs parses "key#seq,KIND" entries (SET, DEL or MERGE); a SET's
// value is "v<seq>", a MERGE's operand "m<seq>".
func parseMergeKVs(t testing.TB, s string) []base.InternalKV {
	var kvs []base.InternalKV
	for _, tok := range strings.Fields(s) {
		key, rest, _ := strings.Cut(tok, "#")
		seqStr, kindStr, _ := strings.Cut(rest, ",")
		seq, err := strconv.ParseUint(seqStr, 10, 64)
		require.NoError(t, err, tok)
		kv := base.InternalKV{}
		switch kindStr {
		case "SET":
			kv = base.InternalKV{K: base.MakeInternalKey([]byte(key), base.SeqNum(seq), base.KindSet), V: []byte("v" + seqStr)}
		case "MERGE":
			kv = base.InternalKV{K: base.MakeInternalKey([]byte(key), base.SeqNum(seq), base.KindMerge), V: []byte("m" + seqStr)}
		case "DEL":
			kv = base.InternalKV{K: base.MakeInternalKey([]byte(key), base.SeqNum(seq), base.KindDelete)}
		default:
			t.Fatalf("bad kind in %q", tok)
		}
		kvs = append(kvs, kv)
	}
	return kvs
}

// TestMergeIterRules pins what MergeIter makes of runs of operands: full
// merges over a base, a tombstone or nothing below the output (elide),
// partial merges otherwise, and nothing across a snapshot or a range
// tombstone.
func TestMergeIterRules(t *testing.T) {
	elideAll := func([]byte) bool { return true }
	op := merge.StringAppend{Delim: ","}
	for _, tc := range []struct {
		name      string
		input     string
		snapshots []base.SeqNum
		elide     func([]byte) bool
		dels      []rangedel.Tombstone
		flush     bool // the Iter does not drop what the tombstones cover, as in a flush
		want      string
	}{
		{"over a base", "a#5,MERGE a#4,MERGE a#3,SET a#2,SET", nil, nil, nil, false, "a#5,SET=v3,m4,m5"},
		{"over a tombstone", "a#5,MERGE a#4,DEL a#3,SET", nil, nil, nil, false, "a#5,SET=m5"},
		{"partial without a base", "a#5,MERGE a#4,MERGE b#3,SET", nil, nil, nil, false, "a#5,MERGE=m4,m5 b#3,SET=v3"},
		{"one operand stays", "a#5,MERGE b#3,SET", nil, nil, nil, false, "a#5,MERGE=m5 b#3,SET=v3"},
		{"full at the bottom", "a#5,MERGE a#4,MERGE b#3,MERGE", nil, elideAll, nil, false, "a#5,SET=m4,m5 b#3,SET=m3"},
		{"snapshot splits the run", "a#6,MERGE a#5,MERGE a#4,MERGE a#3,SET", []base.SeqNum{4}, nil, nil, false,
			"a#6,MERGE=m5,m6 a#4,SET=v3,m4"},
		{"snapshot above a base", "a#6,MERGE a#3,SET", []base.SeqNum{4}, nil, nil, false, "a#6,MERGE=m6 a#3,SET=v3"},
		{"snapshot, then the bottom", "a#6,MERGE a#3,MERGE", []base.SeqNum{4}, elideAll, nil, false,
			"a#6,MERGE=m6 a#3,SET=m3"},
		{"a range tombstone inside the run, compaction", "a#6,MERGE a#4,MERGE a#3,SET", nil, nil,
			[]rangedel.Tombstone{{Start: []byte("a"), End: []byte("b"), Seq: 5}}, false, "a#6,MERGE=m6"},
		{"a range tombstone inside the run, flush", "a#6,MERGE a#4,MERGE a#3,SET", nil, nil,
			[]rangedel.Tombstone{{Start: []byte("a"), End: []byte("b"), Seq: 5}}, true,
			"a#6,MERGE=m6 a#4,MERGE=m4 a#3,SET=v3"},
		{"a range tombstone below the base, flush", "a#6,MERGE a#4,MERGE a#3,SET", nil, nil,
			[]rangedel.Tombstone{{Start: []byte("a"), End: []byte("b"), Seq: 2}}, true, "a#6,SET=v3,m4,m6"},
		{"a range tombstone below the run", "a#6,MERGE a#4,MERGE a#2,SET", nil, nil,
			[]rangedel.Tombstone{{Start: []byte("a"), End: []byte("b"), Seq: 3}}, false, "a#6,MERGE=m4,m6"},
		{"a range tombstone of another key", "a#6,MERGE a#4,MERGE a#2,SET", nil, nil,
			[]rangedel.Tombstone{{Start: []byte("b"), End: []byte("c"), Seq: 5}}, true, "a#6,SET=v2,m4,m6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := NewIter(newSliceIter(parseMergeKVs(t, tc.input)), tc.snapshots, tc.elide)
			var dels *rangedel.Set
			if tc.dels != nil {
				dels = rangedel.New(tc.dels)
				if !tc.flush {
					it.SetRangeDels(dels)
				}
			}
			m := NewMergeIter(it, op, nil, dels)
			var got []string
			for kv := m.First(); kv != nil; kv = m.Next() {
				got = append(got, fmt.Sprintf("%s#%d,%s=%s", kv.K.UserKey, kv.K.SeqNum(), kv.K.Kind(), kv.V))
			}
			require.NoError(t, m.Error())
			require.Equal(t, tc.want, strings.Join(got, " "))
			require.NoError(t, m.Close())
		})
	}
}
