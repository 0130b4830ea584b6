package cache

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// collisionCases are the shard counts and hash masks that the randomised
// tests run with: the real hashes, and masks that put every key of a shard
// on a few index chains.
var collisionCases = []struct {
	name   string
	shards int
	mask   uint64
}{
	{name: "shards=1", shards: 1, mask: ^uint64(0)},
	{name: "shards=4", shards: 4, mask: ^uint64(0)},
	{name: "shards=1/mask=3", shards: 1, mask: 3},
	{name: "shards=4/mask=1", shards: 4, mask: 1},
}

// TestIndexChains adds entries that share one hash and removes them in
// every order: each removal (the head, the middle, the tail, the last one)
// must leave exactly the others findable, with the chain flags right.
func TestIndexChains(t *testing.T) {
	const n = 4
	const h = 7
	perms := [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}, {2, 0, 3, 1}}
	for _, perm := range perms {
		t.Run(fmt.Sprint(perm), func(t *testing.T) {
			x := make(index)
			var es [n]*entry
			for i := range es {
				es[i] = &entry{key: Key{1, 1, uint64(i)}}
				x.add(h, es[i], x[h])
			}
			present := map[int]bool{0: true, 1: true, 2: true, 3: true}
			check := func() {
				t.Helper()
				for i, e := range es {
					if present[i] {
						require.Same(t, e, x.find(h, e.key), "entry %d", i)
					} else {
						require.Nil(t, x.find(h, e.key), "removed entry %d", i)
					}
				}
				// Only the head is unchained; chain length matches.
				var l int
				for e := x[h]; e != nil; e = e.hashNext {
					require.Equal(t, l > 0, e.chained, "chained flag at position %d", l)
					l++
				}
				require.Equal(t, len(present), l)
				_, ok := x[h]
				require.Equal(t, len(present) > 0, ok, "map slot kept for an empty chain")
			}
			check()
			for _, i := range perm {
				x.remove(h, es[i])
				require.Nil(t, es[i].hashNext)
				require.False(t, es[i].chained)
				delete(present, i)
				check()
			}
		})
	}
}
