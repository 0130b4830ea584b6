package merge

import (
	"encoding/binary"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

func u64(n uint64) []byte { return binary.LittleEndian.AppendUint64(nil, n) }

func TestBuiltin(t *testing.T) {
	for _, tc := range []struct {
		name     string
		existing []byte
		has      bool
		operands [][]byte
		want     []byte
		partial  []byte // of the first two operands, nil when PartialMerge refuses
	}{
		{"stringappend", []byte("a"), true, [][]byte{[]byte("b"), []byte("c")}, []byte("a,b,c"), []byte("b,c")},
		{"stringappend", nil, false, [][]byte{[]byte("b"), []byte("c")}, []byte("b,c"), []byte("b,c")},
		{"stringappend", []byte{}, true, [][]byte{[]byte("b")}, []byte(",b"), nil},
		{"stringappend:", nil, false, [][]byte{[]byte("b"), []byte("c")}, []byte("bc"), []byte("bc")},
		{"stringappend:||", []byte("a"), true, [][]byte{[]byte("b")}, []byte("a||b"), nil},
		{"uint64add", u64(1), true, [][]byte{u64(2), u64(3)}, u64(6), u64(5)},
		{"uint64add", nil, false, [][]byte{u64(1<<64 - 1), u64(2)}, u64(1), u64(1)},
		{"max", []byte("b"), true, [][]byte{[]byte("a"), []byte("c")}, []byte("c"), []byte("c")},
		{"max", nil, false, [][]byte{[]byte(""), []byte("")}, []byte(""), []byte("")},
	} {
		op, ok := Builtin(tc.name)
		require.True(t, ok, tc.name)
		require.Equal(t, tc.name, op.Name())
		got, err := Full(op, nil, []byte("k"), tc.existing, tc.has, tc.operands)
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, got, tc.name)
		if len(tc.operands) >= 2 {
			p, ok := op.PartialMerge([]byte("k"), tc.operands[0], tc.operands[1])
			require.Equal(t, tc.partial != nil, ok, tc.name)
			if ok {
				require.Equal(t, tc.partial, p, tc.name)
			}
		}
	}
	for _, name := range []string{"", "none", "StringAppendOperator", "uint64add:x", "Max"} {
		_, ok := Builtin(name)
		require.False(t, ok, name)
	}
}

// TestUInt64AddRefuses: malformed operands are refused at the write
// (CheckOperand) and malformed values at the merge, naming the key; the
// failure is counted.
func TestUInt64AddRefuses(t *testing.T) {
	st := statistics.New(statistics.LevelAll)
	op := UInt64Add{}
	require.NoError(t, op.CheckOperand(u64(1)))
	require.ErrorIs(t, op.CheckOperand([]byte("1")), base.ErrInvalidArgument)
	_, err := Full(op, st, []byte("counter"), []byte("x"), true, [][]byte{u64(1)})
	require.ErrorIs(t, err, base.ErrInvalidArgument)
	require.ErrorContains(t, err, `"counter"`)
	require.ErrorContains(t, err, "uint64add")
	require.EqualValues(t, 1, st.TickerCount(statistics.NumberMergeFailures))
	_, ok := op.PartialMerge(nil, []byte("x"), u64(1))
	require.False(t, ok)
}

// FuzzUInt64Add decodes arbitrary bytes as uint64add's operands and
// existing value: FullMerge never panics, fails exactly when a piece is not
// 8 bytes long, and otherwise adds with wrap-around, as pairwise
// PartialMerges do.
func FuzzUInt64Add(f *testing.F) {
	f.Add([]byte{}, []byte{8, 8})
	f.Add(u64(7), []byte{8, 3, 8})
	f.Add(append(u64(1<<63), u64(1<<63)...), []byte{8, 8})
	f.Add([]byte("not eight"), []byte{9})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		var pieces [][]byte
		rest := data
		for _, c := range cuts {
			n := min(int(c)%17, len(rest))
			pieces = append(pieces, rest[:n])
			rest = rest[n:]
		}
		if len(pieces) == 0 {
			return
		}
		op := UInt64Add{}
		existing, operands := pieces[0], pieces[1:]
		has := len(operands) > 0
		if !has {
			operands = pieces
		}
		got, err := Full(op, nil, []byte("k"), existing, has, operands)
		var sum uint64
		valid := true
		check := func(p []byte) {
			if len(p) != 8 {
				valid = false
				return
			}
			sum += binary.LittleEndian.Uint64(p)
		}
		if has {
			check(existing)
		}
		for _, o := range operands {
			check(o)
			if (op.CheckOperand(o) == nil) != (len(o) == 8) {
				t.Fatalf("CheckOperand(%d bytes) disagrees with the length rule", len(o))
			}
		}
		if !valid {
			if err == nil {
				t.Fatalf("FullMerge of malformed pieces %x = %x; want an error", pieces, got)
			}
			return
		}
		if err != nil || binary.LittleEndian.Uint64(got) != sum || len(got) != 8 {
			t.Fatalf("FullMerge(%x) = %x, %v; want %d", pieces, got, err, sum)
		}
		acc := operands[0]
		for _, o := range operands[1:] {
			p, ok := op.PartialMerge(nil, acc, o)
			if !ok {
				t.Fatalf("PartialMerge of 8-byte operands refused")
			}
			acc = p
		}
		back, err := Full(op, nil, []byte("k"), existing, has, [][]byte{acc})
		if err != nil || binary.LittleEndian.Uint64(back) != sum {
			t.Fatalf("FullMerge over the partial merge = %x, %v; want %d", back, err, sum)
		}
	})
}
