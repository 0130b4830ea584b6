package sstable

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/stretchr/testify/require"
)

// TestComparerTable writes tables in reverse bytewise order with separators
// left whole, proposed wrongly (not between the keys: the writer must keep
// whole keys) and proposed rightly, unpartitioned and partitioned, and
// reads them back with the comparer: every key found by iteration both
// ways, seeks and Gets, and Check passes. Read without it, the table is
// refused.
func TestComparerTable(t *testing.T) {
	ctx := context.Background()
	rev := func(a, b []byte) int { return base.ReverseBytewiseComparer.Compare(a, b) }
	for _, sep := range []struct {
		name      string
		separator func(dst, a, b []byte) []byte
		shorter   bool
	}{
		{"whole keys", nil, false},
		{"wrong separator", func(dst, a, b []byte) []byte { return append(dst, 'z') }, false},
		// a's prefix one byte past the common one: a longer key above it
		// bytewise, so after it in reverse order, and still before b.
		{"right separator", func(dst, a, b []byte) []byte {
			n := 0
			for n < len(a) && n < len(b) && a[n] == b[n] {
				n++
			}
			return append(dst, a[:min(n+1, len(a))]...)
		}, true},
	} {
		for _, partition := range []int{0, 256} {
			t.Run(fmt.Sprintf("%s/partition=%d", sep.name, partition), func(t *testing.T) {
				cmp := &base.Comparer{Name: base.ReverseBytewiseName + ".test", Compare: rev, Separator: sep.separator}
				var keys [][]byte
				for i := range 300 {
					keys = append(keys, fmt.Appendf(nil, "key%05d-%s", i*7, bytes.Repeat([]byte("x"), i%20)))
				}
				slices.SortFunc(keys, rev)
				var es []entry
				for i, k := range keys {
					es = append(es, entry{base.MakeInternalKey(k, base.SeqNum(i+1), base.KindSet), k})
				}
				data := buildTable(t, WriterOptions{BlockSize: 256, Comparer: cmp, IndexPartitionSize: partition}, es)
				fs := memWith(t, data)
				open := func(c *base.Comparer) (*Reader, error) {
					f, err := fileio.Open(fs, testFile, fileio.Options{})
					require.NoError(t, err)
					return Open(ctx, f, verifyEnv, ReaderOptions{FileNum: 1, Comparer: c})
				}
				_, err := open(nil)
				require.ErrorIs(t, err, base.ErrInvalidArgument)
				require.ErrorContains(t, err, cmp.Name)
				f, err := fileio.Open(fs, testFile, fileio.Options{})
				require.NoError(t, err)
				_, err = Open(ctx, f, verifyEnv, ReaderOptions{FileNum: 1, BuiltinComparer: true})
				require.ErrorIs(t, err, base.ErrInvalidArgument, "not a built-in comparer")
				r, err := open(cmp)
				require.NoError(t, err)
				defer r.Close()
				require.Equal(t, cmp.Name, r.ComparerName())
				require.NoError(t, r.Check(ctx, verifyEnv))
				if sep.shorter && partition == 0 {
					longest := 0
					// The last block's separator is its whole last key: the
					// comparer has no Successor.
					for i := range r.index.len() - 1 {
						longest = max(longest, len(r.index.userKey(i)))
					}
					require.Less(t, longest, len("key00000-"), "the separators were shortened")
				}

				it, err := r.NewIter(ctx, verifyEnv, nil, nil)
				require.NoError(t, err)
				i := 0
				for kv := it.First(); kv != nil; kv = it.Next() {
					require.Equal(t, string(keys[i]), string(kv.K.UserKey))
					i++
				}
				require.Equal(t, len(keys), i)
				for kv := it.Last(); kv != nil; kv = it.Prev() {
					i--
					require.Equal(t, string(keys[i]), string(kv.K.UserKey))
				}
				for j, k := range keys {
					kv := it.SeekGE(k)
					require.NotNil(t, kv, "SeekGE(%q)", k)
					require.Equal(t, string(k), string(kv.K.UserKey))
					kv = it.SeekLT(k)
					if j == 0 {
						require.Nil(t, kv)
					} else {
						require.Equal(t, string(keys[j-1]), string(kv.K.UserKey), "SeekLT(%q)", k)
					}
					v, _, found, pin, err := r.Get(ctx, verifyEnv, k, base.MaxSeqNum)
					require.NoError(t, err)
					require.True(t, found, "Get(%q)", k)
					require.Equal(t, string(k), string(v))
					pin.Release()
				}
				require.NoError(t, it.Close())
			})
		}
	}
}

// TestBuiltinComparerOption: a tool's Reader (BuiltinComparer) reads a
// table of the built-in reverse order in it.
func TestBuiltinComparerOption(t *testing.T) {
	ctx := context.Background()
	keys := [][]byte{[]byte("c"), []byte("b"), []byte("a")}
	var es []entry
	for i, k := range keys {
		es = append(es, entry{base.MakeInternalKey(k, base.SeqNum(i+1), base.KindSet), k})
	}
	fs := memWith(t, buildTable(t, WriterOptions{Comparer: base.ReverseBytewiseComparer}, es))
	f, err := fileio.Open(fs, testFile, fileio.Options{})
	require.NoError(t, err)
	r, err := Open(ctx, f, verifyEnv, ReaderOptions{FileNum: 1, BuiltinComparer: true})
	require.NoError(t, err)
	defer r.Close()
	require.Equal(t, base.ReverseBytewiseName, r.ComparerName())
	it, err := r.NewIter(ctx, verifyEnv, nil, nil)
	require.NoError(t, err)
	kv := it.SeekGE([]byte("b"))
	require.NotNil(t, kv)
	require.Equal(t, "b", string(kv.K.UserKey))
	require.Equal(t, "a", string(it.Next().K.UserKey))
	require.NoError(t, it.Close())
}
