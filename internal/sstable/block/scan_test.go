package block

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestScanTouch pins when an Iter touches a block's lines ahead of a walk:
// init does once a First or Last has made the Iter a scanning one, First and
// Last do when init did not, and a seek stops it, so that point reads (which
// seek into each block) never pay for it. Touching must not change any
// result: every block, well-formed or not, walks the same in an Iter that
// was scanning as in a fresh one.
func TestScanTouch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	kvs := genKVs(rng, 200)
	good := buildBlock(16, kvs)
	small := buildBlock(2, kvs[:3])
	le32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	blocks := map[string][]byte{
		"good":          good,
		"small":         small,
		"empty":         le32(0),
		"empty-restart": append(le32(0), le32(1)...),
		"short":         {1, 0},
		"bad-count":     append(slices.Clone(small[:len(small)-4]), le32(100)...),
		"truncated-key": append([]byte{0, 200}, small[2:]...),
	}
	for name, data := range blocks {
		t.Run(name, func(t *testing.T) {
			var fresh Iter
			freshErr := fresh.Init(bytes.Compare, data)
			wantOffs, wantKeys, wantVals, wantOK := walkForward(&fresh)

			var it Iter
			require.NoError(t, it.Init(bytes.Compare, good))
			require.True(t, it.First())
			require.True(t, it.touched, "First touches a block init did not")
			err := it.Init(bytes.Compare, data)
			require.Equal(t, errString(freshErr), errString(err))
			if err == nil || len(data) >= 4 {
				require.Equal(t, len(data) >= 4, it.touched, "init touches the block of a scanning Iter")
			}
			offs, keys, vals, ok := walkForward(&it)
			require.Equal(t, wantOffs, offs)
			require.Equal(t, wantKeys, keys)
			require.Equal(t, wantVals, vals)
			require.Equal(t, wantOK, ok)
			require.Equal(t, errString(fresh.Error()), errString(it.Error()))
		})
	}
	t.Run("seek-stops-scanning", func(t *testing.T) {
		var it Iter
		require.NoError(t, it.Init(bytes.Compare, good))
		require.True(t, it.Last())
		require.True(t, it.scanning)
		require.True(t, it.SeekGE(kvs[10].k))
		require.NoError(t, it.Init(bytes.Compare, good))
		require.False(t, it.touched, "a seeking Iter's init touches nothing")
		require.True(t, it.SeekLT(kvs[10].k))
		it.Reset()
		require.NoError(t, it.Init(bytes.Compare, good))
		require.False(t, it.touched)
		require.True(t, it.First())
		it.Reset()
		require.NoError(t, it.Init(bytes.Compare, good))
		require.True(t, it.touched, "Reset keeps the Iter scanning")
	})
}

// errString is err's message, "" for nil: errors carry the stack where
// they were made, which differs between the two Iters.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
