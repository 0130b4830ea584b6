package base

import (
	"context"
	stderrors "errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"
)

func TestMarkIsSeenByBothErrorPackages(t *testing.T) {
	cause := errors.Wrap(context.Canceled, "reading block")
	for _, err := range []error{
		Mark(cause, ErrCorruption),
		errors.Wrap(Mark(cause, ErrCorruption), "outer"),
		fmt.Errorf("std wrap: %w", Mark(cause, ErrCorruption)),
	} {
		require.True(t, stderrors.Is(err, ErrCorruption), "std errors.Is sees the mark: %v", err)
		require.True(t, errors.Is(err, ErrCorruption), "cockroachdb errors.Is sees the mark: %v", err)
		require.True(t, stderrors.Is(err, context.Canceled), "the cause chain still matches")
		require.False(t, stderrors.Is(err, ErrNotFound))
		require.Contains(t, err.Error(), "reading block: context canceled")
	}
	require.Nil(t, Mark(nil, ErrCorruption))
	require.True(t, stderrors.Is(CorruptionErrorf("bad %d", 1), ErrCorruption))
	require.EqualError(t, CorruptionErrorf("bad %d", 1), "bad 1")
	require.True(t, stderrors.Is(InvalidArgumentf("x"), ErrInvalidArgument))
	// %+v prints the cause's stack.
	require.Contains(t, fmt.Sprintf("%+v", CorruptionErrorf("bad")), "error_test.go")
}

func TestInternalKeyOrder(t *testing.T) {
	keys := []InternalKey{
		MakeInternalKey([]byte("a"), 9, KindSet),
		MakeInternalKey([]byte("a"), 5, KindDelete),
		MakeInternalKey([]byte("b"), MaxSeqNum, KindSet),
		MakeInternalKey([]byte("b"), 0, KindDelete),
	}
	for i := 1; i < len(keys); i++ {
		require.Negative(t, CompareInternal(keys[i-1], keys[i]), "%s < %s", keys[i-1], keys[i])
		require.Negative(t, CompareEncoded(keys[i-1].Append(nil), keys[i].Append(nil)))
	}
	k := MakeInternalKey([]byte("user"), 42, KindSet)
	dec, ok := DecodeInternalKey(k.Append(nil))
	require.True(t, ok)
	require.Equal(t, k.String(), dec.String())
	require.Equal(t, SeqNum(42), dec.SeqNum())
	require.Equal(t, KindSet, dec.Kind())
	_, ok = DecodeInternalKey([]byte("short"))
	require.False(t, ok)
	require.False(t, InternalKey{Trailer: 7}.Valid())
	require.Equal(t, "INVALID", InternalKey{Trailer: 7}.Kind().String())
	// The search key sorts before every entry of its user key at its seq.
	require.Negative(t, CompareInternal(MakeSearchKey([]byte("a"), 5), MakeInternalKey([]byte("a"), 5, KindDelete)))
}
