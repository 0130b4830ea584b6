package memtable

import (
	"fmt"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/stretchr/testify/require"
)

// TestCompareMatchesCompareInternal checks the memtable's node comparison,
// whose fast path orders keys of 8 bytes or more by their first 8 bytes as
// integers, against base.CompareInternal on keys around that path's edges:
// shorter keys, keys that are prefixes of others, equal first 8 bytes, a
// difference in the 8th byte only, and bytes of 0x80 and above (an integer
// comparison must be unsigned to order them as bytes.Compare does).
func TestCompareMatchesCompareInternal(t *testing.T) {
	keys := [][]byte{
		{},
		{0x00},
		{0x7f},
		{0x80},
		{0xff},
		[]byte("abcdefg"),
		[]byte("abcdefgh"),
		[]byte("abcdefgi"),
		[]byte("abcdefgh\x00"),
		[]byte("abcdefgh\xff"),
		[]byte("abcdefghij"),
		[]byte("abcdefg\x80"),
		[]byte("abcdefg\x7f"),
		{0x80, 0, 0, 0, 0, 0, 0, 0},
		{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
	}
	trailers := []uint64{base.MakeTrailer(5, base.KindSet), base.MakeTrailer(7, base.KindDelete)}
	m := New(1 << 20)
	defer m.Free()
	type node struct {
		key base.InternalKey
		off uint32
	}
	var nodes []node
	for _, k := range keys {
		for _, tr := range trailers {
			h := 1
			off, ok := m.arena.alloc(entrySize(h, len(k), 0))
			require.True(t, ok)
			m.initNode(off, h, tr, k, nil)
			nodes = append(nodes, node{base.InternalKey{UserKey: k, Trailer: tr}, off})
		}
	}
	for _, a := range nodes {
		for _, b := range nodes {
			t.Run(fmt.Sprintf("%x#%d/%x#%d", a.key.UserKey, a.key.Trailer, b.key.UserKey, b.key.Trailer), func(t *testing.T) {
				require.Equal(t, base.CompareInternal(a.key, b.key), m.compare(a.key, b.off))
			})
		}
	}
}
