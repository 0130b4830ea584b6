package sstable

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/stretchr/testify/require"
)

// TestCheck hand-builds tables whose checksums are right but whose contents
// break a rule of the format: Check must find each, naming the block and
// keys, while VerifyChecksums passes.
func TestCheck(t *testing.T) {
	ik := func(uk string, seq base.SeqNum) base.InternalKey {
		return base.MakeInternalKey([]byte(uk), seq, base.KindSet)
	}
	e := func(uk string, seq base.SeqNum) entry { return entry{ik(uk, seq), []byte("v-" + uk)} }
	good := [][]entry{{e("a", 9), e("b", 8), e("c", 7)}, {e("d", 6), e("e", 5)}, {e("f", 4), e("g", 3)}}
	enc := func(k base.InternalKey) []byte { return k.Append(nil) }
	tests := []struct {
		name string
		spec craftSpec
		want string // "" means Check passes
	}{
		{"good", craftSpec{blocks: good}, ""},
		{"shortened separators", craftSpec{blocks: good, seps: [][]byte{
			enc(base.MakeInternalKey([]byte("c0"), base.MaxSeqNum, base.KindMax)), nil, enc(ik("zz", 1)),
		}}, ""},
		{"keys out of order in a block", craftSpec{blocks: [][]entry{{e("a", 9), e("c", 8), e("b", 7)}}},
			`key "b"#7,SET follows "c"#8,SET`},
		{"same key twice", craftSpec{blocks: [][]entry{{e("a", 9), e("a", 9)}}},
			`key "a"#9,SET follows "a"#9,SET`},
		{"keys out of order across blocks", craftSpec{blocks: [][]entry{{e("a", 9), e("c", 8)}, {e("b", 7)}},
			seps: [][]byte{nil, enc(ik("d", 1))}},
			`key "b"#7,SET begins the block after "c"#8,SET`},
		{"separator below the block's last key", craftSpec{blocks: good, seps: [][]byte{enc(ik("b", 1)), nil, nil}},
			`last key "c"#7,SET is above the block's index separator "b"#1,SET`},
		{"separator not below the next block", craftSpec{blocks: good, seps: [][]byte{enc(ik("d", 6)), nil, nil}},
			`first key "d"#6,SET is not above the previous block's separator "d"#6,SET`},
		{"separators not increasing", craftSpec{blocks: [][]entry{{e("a", 9)}, {e("b", 8)}},
			seps: [][]byte{enc(ik("x", 1)), enc(ik("c", 1))}},
			`index separator "c"#1,SET is not above the previous one, "x"#1,SET`},
		{"empty block", craftSpec{blocks: [][]entry{good[0], {}, good[2]}, seps: [][]byte{nil, enc(ik("e", 1)), nil}},
			"block is empty"},
		{"gap between blocks", craftSpec{blocks: good, padAfter: map[int]int{0: 3}},
			"starts at 61, but the previous data block ends at 58"},
		{"bad kind", craftSpec{blocks: [][]entry{{{base.InternalKey{UserKey: []byte("a"), Trailer: 9<<8 | 7}, nil}}},
			seps: [][]byte{enc(ik("a", 1))}},
			`has unknown kind 7`},
		{"entry count", craftSpec{blocks: good, props: func(p *Properties) { p.NumEntries++ }},
			"property shale.num.entries is 8, but the file has 7"},
		{"deletions", craftSpec{blocks: good, props: func(p *Properties) { p.NumDeletions = 1 }},
			"shale.num.deletions is 1, but the file has 0"},
		{"data blocks", craftSpec{blocks: good, props: func(p *Properties) { p.NumDataBlocks = 2 }},
			"shale.num.data.blocks is 2, but the file has 3"},
		{"data size", craftSpec{blocks: good, props: func(p *Properties) { p.DataSize-- }},
			"shale.data.size"},
		{"raw key size", craftSpec{blocks: good, props: func(p *Properties) { p.RawKeySize = 0 }},
			"shale.raw.key.size"},
		{"raw value size", craftSpec{blocks: good, props: func(p *Properties) { p.RawValueSize = 0 }},
			"shale.raw.value.size"},
		{"smallest seqno", craftSpec{blocks: good, props: func(p *Properties) { p.SmallestSeqNum = 0 }},
			"shale.smallest.seqno is 0, but the file has 3"},
		{"largest seqno", craftSpec{blocks: good, props: func(p *Properties) { p.LargestSeqNum = 100 }},
			"shale.largest.seqno is 100, but the file has 9"},
		{"index size", craftSpec{blocks: good, props: func(p *Properties) { p.IndexSize = 1 }},
			"shale.index.size"},
		{"filter size", craftSpec{blocks: good, props: func(p *Properties) { p.FilterSize = 10 }},
			"shale.filter.size is 10, but the file has 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := openTable(t, craftTable(t, tc.spec), openConfig{})
			ctx := context.Background()
			require.NoError(t, r.VerifyChecksums(ctx, verifyEnv))
			err := r.Check(ctx, verifyEnv)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.True(t, base.IsCorruption(err), "%v", err)
			require.Contains(t, err.Error(), tc.want)
			require.Contains(t, err.Error(), testFile)
		})
	}
}

// TestCheckWriterTables runs Check over tables of every writer option
// combination.
func TestCheckWriterTables(t *testing.T) {
	for i, opts := range writerCombos() {
		es := genEntries(rand.New(rand.NewPCG(51, uint64(i))), 300, 80)
		r := openTable(t, buildTable(t, opts, es), openConfig{})
		require.NoError(t, r.Check(context.Background(), verifyEnv), "%+v", opts)
	}
}
