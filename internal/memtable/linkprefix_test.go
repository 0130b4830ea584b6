package memtable

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/batch"
	"github.com/stretchr/testify/require"
)

// lengthFirst orders keys by length, then bytewise: a valid order (the
// empty key first) under which the bytewise link prefixes would misorder
// keys, so a memtable that used them with a comparer set fails the model.
func lengthFirst(a, b []byte) int {
	if c := cmp.Compare(len(a), len(b)); c != 0 {
		return c
	}
	return bytes.Compare(a, b)
}

// prefixKeyShapes generate user keys that exercise the link prefixes (see
// link): keys shorter than the 4-byte prefix, keys that are prefixes of
// others, keys equal but for zero padding ("ab" and "ab\x00"), keys whose
// prefixes tie and differ only later, and keys whose prefixes differ.
var prefixKeyShapes = []struct {
	name string
	key  func(rng *rand.Rand) []byte
}{
	{"short", func(rng *rand.Rand) []byte {
		// Bytes 0x00, 0x01, 0x7f and 0xff, lengths 0-6: many keys are
		// prefixes of others and many differ only by trailing zeros.
		k := make([]byte, rng.IntN(7))
		for i := range k {
			k[i] = []byte{0x00, 0x01, 0x7f, 0xff}[rng.IntN(4)]
		}
		return k
	}},
	{"tied-prefix", func(rng *rand.Rand) []byte {
		// Four prefixes, so most comparisons tie on the prefix and go on
		// to the whole key.
		k := make([]byte, 4+rng.IntN(8))
		binary.BigEndian.PutUint32(k, uint32(rng.IntN(4))<<24)
		for i := 4; i < len(k); i++ {
			k[i] = byte(rng.IntN(4))
		}
		return k
	}},
	{"random", func(rng *rand.Rand) []byte {
		k := make([]byte, 8+rng.IntN(24))
		binary.BigEndian.PutUint32(k, rng.Uint32()>>20) // some prefixes repeat
		for i := 4; i < len(k); i++ {
			k[i] = byte(rng.Uint32())
		}
		return k
	}},
}

// TestLinkPrefixModel checks the skiplist against a sorted model for keys
// of every shape in prefixKeyShapes, bytewise and under a comparer (where
// links carry no prefix), inserted in random, ascending and descending
// order, one by one (Add, one-record Apply) and in batches small and large
// (Apply links a large one in key order from splice hints), with several
// versions of each key and readers checking order and Gets while the
// inserts run. Afterwards the whole list, Gets at every sequence number
// boundary, and seeks with steps either way must match the model.
func TestLinkPrefixModel(t *testing.T) {
	for _, shape := range prefixKeyShapes {
		for _, c := range []struct {
			name string
			cmp  base.Compare
		}{{"bytewise", nil}, {"comparer", lengthFirst}} {
			for _, order := range []string{"random", "ascending", "descending"} {
				t.Run(shape.name+"/"+c.name+"/"+order, func(t *testing.T) {
					testLinkPrefixModel(t, shape.key, c.cmp, order)
				})
			}
		}
	}
}

func testLinkPrefixModel(t *testing.T, genKey func(*rand.Rand) []byte, ucmp base.Compare, order string) {
	n := 3000
	if testing.Short() {
		n = 1200
	}
	rng := rand.New(rand.NewPCG(uint64(n), uint64(len(order))))
	userCmp := func(a, b []byte) int { return base.CompareUser(ucmp, a, b) }
	// Distinct user keys, about three versions each.
	var keys [][]byte
	seen := map[string]bool{}
	for len(keys) < n/3 {
		k := genKey(rng)
		if len(seen) >= 4*n || !seen[string(k)] { // "short" has few distinct keys
			seen[string(k)] = true
			keys = append(keys, k)
		}
	}
	model := make([]entry, n)
	for i := range model {
		model[i] = entry{key: string(keys[rng.IntN(len(keys))]), seq: base.SeqNum(i + 1), kind: base.KindSet}
		if rng.IntN(5) == 0 {
			model[i].kind = base.KindDelete
		} else {
			model[i].value = string(rune('a' + i%26))
		}
	}
	sortModel := func(es []entry) {
		slices.SortFunc(es, func(a, b entry) int {
			return base.CompareInternalWith(ucmp, a.ikey(), b.ikey())
		})
	}
	ins := slices.Clone(model)
	switch order {
	case "random":
		rng.Shuffle(len(ins), func(i, j int) { ins[i], ins[j] = ins[j], ins[i] })
	case "ascending":
		sortModel(ins)
	case "descending":
		sortModel(ins)
		slices.Reverse(ins)
	}

	m := New(8 << 20)
	defer m.Free()
	m.SetCompare(ucmp)
	var done atomic.Bool
	var readers sync.WaitGroup
	for r := range 2 {
		readers.Go(func() {
			rrng := rand.New(rand.NewPCG(uint64(r), 5))
			for !done.Load() {
				checkOrderedCmp(t, m, ucmp, keys[rrng.IntN(len(keys))])
				// A Get never returns a version above the sequence number
				// asked for, nor another key's.
				k := keys[rrng.IntN(len(keys))]
				seq := base.SeqNum(rrng.IntN(n + 1))
				if _, _, s, ok := m.GetEntry(k, seq); ok && s > seq {
					t.Errorf("GetEntry(%x, %d) returned seq %d", k, seq, s)
				}
			}
		})
	}
	for i := 0; i < len(ins); {
		var err error
		switch w := rng.IntN(10); {
		case w < 4: // Add
			e := ins[i]
			err = m.Add(e.seq, e.kind, []byte(e.key), []byte(e.value))
			i++
		case w < 9: // a batch of 1 to 8 records, sequence numbers consecutive in ins
			j := i + 1
			for j < len(ins) && j-i < 1+rng.IntN(8) && ins[j].seq == ins[j-1].seq+1 {
				j++
			}
			err = m.Apply(modelBatch(ins[i:j]), ins[i].seq)
			i = j
		default: // a large batch: the run of consecutive sequence numbers from i
			j := i + 1
			for j < len(ins) && ins[j].seq == ins[j-1].seq+1 {
				j++
			}
			err = m.Apply(modelBatch(ins[i:j]), ins[i].seq)
			i = j
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// The same internal key again is refused, whatever its shape.
	e := ins[rng.IntN(len(ins))]
	require.ErrorIs(t, m.Add(e.seq, e.kind, []byte(e.key), nil), ErrRecordExists)
	done.Store(true)
	readers.Wait()
	if t.Failed() {
		return
	}

	sortModel(model)
	require.Equal(t, len(model), m.Count())
	require.Equal(t, model, scanBoth(t, m.NewIter(nil, nil)))

	// Gets of every key (and some absent ones) at sequence numbers around
	// their versions.
	probe := func() []byte {
		if rng.IntN(4) == 0 {
			return genKey(rng)
		}
		return keys[rng.IntN(len(keys))]
	}
	modelGetCmp := func(key []byte, seq base.SeqNum) (entry, bool) {
		sk := base.MakeSearchKey(key, seq)
		i := sort.Search(len(model), func(i int) bool {
			return base.CompareInternalWith(ucmp, model[i].ikey(), sk) >= 0
		})
		if i < len(model) && model[i].key == string(key) {
			return model[i], true
		}
		return entry{}, false
	}
	for range 2000 {
		k := probe()
		seq := base.SeqNum(rng.IntN(n + 2))
		want, ok := modelGetCmp(k, seq)
		v, kind, found := m.Get(k, seq)
		require.Equal(t, ok, found, "Get(%x, %d)", k, seq)
		if ok {
			require.Equal(t, want.kind, kind, "Get(%x, %d)", k, seq)
			require.Equal(t, want.value, string(v), "Get(%x, %d)", k, seq)
		}
	}

	// Seeks, then steps either way.
	it := m.NewIter(nil, nil)
	defer it.Close()
	for range 500 {
		k := probe()
		i := sort.Search(len(model), func(i int) bool { return userCmp([]byte(model[i].key), k) >= 0 })
		var kv *base.InternalKV
		if rng.IntN(2) == 0 {
			kv = it.SeekGE(k)
		} else {
			kv = it.SeekLT(k)
			i--
		}
		for step := range 6 {
			if i < 0 || i >= len(model) {
				require.Nil(t, kv, "step %d from %x", step, k)
				break
			}
			require.NotNil(t, kv, "step %d from %x", step, k)
			require.Equal(t, model[i], kvEntry(kv), "step %d from %x", step, k)
			if rng.IntN(2) == 0 {
				kv, i = it.Next(), i+1
			} else {
				kv, i = it.Prev(), i-1
			}
		}
	}
}

// modelBatch encodes es, whose sequence numbers are consecutive, as a batch.
func modelBatch(es []entry) *batch.Batch {
	b := batch.New()
	for _, e := range es {
		if e.kind == base.KindDelete {
			b.Delete([]byte(e.key))
		} else {
			b.Set([]byte(e.key), []byte(e.value))
		}
	}
	return b
}

// checkOrderedCmp is checkOrdered under the memtable's comparer ucmp.
func checkOrderedCmp(t *testing.T, m *MemTable, ucmp base.Compare, from []byte) {
	it := m.NewIter(nil, nil)
	defer it.Close()
	var prev base.InternalKey
	n := 0
	for kv := it.SeekGE(from); kv != nil && n < 100; kv = it.Next() {
		if n > 0 && base.CompareInternalWith(ucmp, prev, kv.K) >= 0 {
			t.Errorf("forward: %s then %s", prev, kv.K)
			return
		}
		prev = kv.K.Clone()
		n++
	}
	n = 0
	for kv := it.SeekLT(from); kv != nil && n < 100; kv = it.Prev() {
		if n > 0 && base.CompareInternalWith(ucmp, prev, kv.K) <= 0 {
			t.Errorf("backward: %s then %s", prev, kv.K)
			return
		}
		prev = kv.K.Clone()
		n++
	}
}

// TestKeyPrefix32 pins the property the links' prefixes rest on: under the
// bytewise order, a smaller prefix means a smaller key and a smaller key
// never has a larger prefix.
func TestKeyPrefix32(t *testing.T) {
	m := New(0)
	defer m.Free()
	rng := rand.New(rand.NewPCG(3, 3))
	for range 20000 {
		a, b := prefixKeyShapes[0].key(rng), prefixKeyShapes[rng.IntN(3)].key(rng)
		pa, pb := m.keyPrefix32(a), m.keyPrefix32(b)
		c := bytes.Compare(a, b)
		if pa != pb {
			require.Equal(t, cmp.Compare(pa, pb), c, "%x %x", a, b)
		}
	}
	m.SetCompare(lengthFirst)
	require.Zero(t, m.keyPrefix32([]byte("abcdef")), "no prefix under a comparer")
}
