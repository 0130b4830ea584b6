package batch

import (
	"bytes"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/stretchr/testify/require"
)

// TestRetainCopyOnWrite: after Retain, every change to the batch moves it to
// a new buffer and leaves the retained bytes as they were, while the batch
// itself reads as if it had been changed in place.
func TestRetainCopyOnWrite(t *testing.T) {
	other := New()
	other.Set([]byte("o"), []byte("ov"))
	for _, tc := range []struct {
		name   string
		change func(b *Batch)
		want   []string // the batch's records after the change
	}{
		{"Set", func(b *Batch) { b.Set([]byte("c"), []byte("3")) }, []string{"a=1", "del b", "c=3"}},
		{"Delete", func(b *Batch) { b.Delete([]byte("c")) }, []string{"a=1", "del b", "del c"}},
		{"DeleteRange", func(b *Batch) { b.DeleteRange([]byte("c"), []byte("d")) }, []string{"a=1", "del b", "delrange c-d"}},
		{"Append", func(b *Batch) { b.Append(other) }, []string{"a=1", "del b", "o=ov"}},
		{"AppendSelf", func(b *Batch) { b.Append(b) }, []string{"a=1", "del b", "a=1", "del b"}},
		{"Grow", func(b *Batch) { b.Grow(100); b.Set([]byte("c"), nil) }, []string{"a=1", "del b", "c="}},
		{"SetSeqNum", func(b *Batch) { b.SetSeqNum(99) }, []string{"a=1", "del b"}},
		{"Reset", func(b *Batch) { b.Reset(); b.Set([]byte("z"), []byte("9")) }, []string{"z=9"}},
		{"SetRepr", func(b *Batch) {
			n := New()
			n.Set([]byte("n"), []byte("1"))
			require.NoError(t, b.SetRepr(n.Repr()))
		}, []string{"n=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New()
			b.Grow(1 << 10) // room to spare: an in-place append would fit
			b.Set([]byte("a"), []byte("1"))
			b.Delete([]byte("b"))
			b.SetSeqNum(7)
			kept := b.Retain()
			before := bytes.Clone(kept)
			tc.change(b)
			require.Equal(t, before, kept, "the retained encoding changed")
			require.Equal(t, tc.want, records(t, b))
			if tc.name != "Reset" && tc.name != "SetRepr" {
				require.Equal(t, uint32(len(tc.want)), b.Count())
			}
			// A change after the move needs no further copy.
			p := &b.Repr()[0]
			b.SetSeqNum(b.SeqNum() + 1)
			require.Same(t, p, &b.Repr()[0], "once moved, the batch owns its buffer")
		})
	}
}

// TestRetainSameSeqNumNoCopy: the engine sets the sequence number of a batch
// it is about to retain; setting it again to the same value changes nothing
// and so copies nothing.
func TestRetainSameSeqNumNoCopy(t *testing.T) {
	b := New()
	b.Set([]byte("a"), []byte("1"))
	b.SetSeqNum(5)
	kept := b.Retain()
	b.SetSeqNum(5)
	require.Same(t, &kept[0], &b.Repr()[0])
	require.Equal(t, base.SeqNum(5), b.SeqNum())
}

// TestRetainZeroBatch: a zero batch retains a header of its own.
func TestRetainZeroBatch(t *testing.T) {
	var b Batch
	kept := b.Retain()
	require.Len(t, kept, HeaderLen)
	b.Set([]byte("a"), nil)
	require.Equal(t, make([]byte, HeaderLen), kept)
	require.Equal(t, uint32(1), b.Count())
}

// TestDecodeAt: decoding at the offsets a Reader reports gives the records
// the Reader returns, including lengths that take more than one varint byte.
func TestDecodeAt(t *testing.T) {
	b := New()
	long := bytes.Repeat([]byte("k"), 300)
	b.Set([]byte("a"), []byte("1"))
	b.Set(long, bytes.Repeat([]byte("v"), 20000))
	b.Delete(long)
	b.DeleteRange([]byte("s"), long)
	b.Set(nil, nil)
	r := b.Reader()
	for {
		off := r.Offset()
		kind, key, value, ok, err := r.Next()
		require.NoError(t, err)
		if !ok {
			require.Equal(t, b.Len(), off, "Offset at the end is the length")
			break
		}
		k2, key2, value2 := DecodeAt(b.Repr(), uint32(off))
		require.Equal(t, kind, k2)
		require.Equal(t, key, key2)
		require.Equal(t, value, value2)
		require.Equal(t, value == nil, value2 == nil)
		require.Equal(t, key, KeyAt(b.Repr(), uint32(off)))
	}
}

// records renders the batch's records for comparison.
func records(t *testing.T, b *Batch) []string {
	t.Helper()
	var out []string
	r := b.Reader()
	for {
		kind, key, value, ok, err := r.Next()
		require.NoError(t, err)
		if !ok {
			return out
		}
		switch kind {
		case base.KindSet:
			out = append(out, string(key)+"="+string(value))
		case base.KindDelete:
			out = append(out, "del "+string(key))
		default:
			out = append(out, "delrange "+string(key)+"-"+string(value))
		}
	}
}
