package engine

import (
	"bytes"
	"testing"

	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/internal/readpath"
	"github.com/stretchr/testify/require"
)

func TestCopyValues(t *testing.T) {
	found := func(n int, b byte) readpath.Result {
		return readpath.Result{Found: true, Value: readpath.Value{Data: bytes.Repeat([]byte{b}, n)}}
	}
	many := func(count, n int) []readpath.Result {
		var rs []readpath.Result
		for i := range count {
			rs = append(rs, found(n, byte(i)))
		}
		return rs
	}
	for _, tc := range []struct {
		name    string
		results []readpath.Result
	}{
		{"none found", []readpath.Result{{}, {}}},
		{"empty and absent", []readpath.Result{found(0, 0), {}, found(3, 1)}},
		{"small", many(16, 256)},
		{"a large value among small ones", []readpath.Result{found(10, 1), found(sharedValueMax+1, 2), found(10, 3)}},
		{"exactly the limit", []readpath.Result{found(sharedValueMax, 1), found(sharedValueMax, 2)}},
		{"over a chunk", many(40, 4000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := make([][]byte, len(tc.results))
			copyValues(tc.results, out)
			for i, r := range tc.results {
				if !r.Found {
					require.Nil(t, out[i], "%d", i)
					continue
				}
				require.NotNil(t, out[i], "%d: a found value is never nil", i)
				require.Equal(t, r.Value.Data, out[i], "%d", i)
				require.Equal(t, len(out[i]), cap(out[i]), "%d: appending must not reach the next value", i)
				if len(out[i]) > 0 {
					require.NotSame(t, &r.Value.Data[0], &out[i][0], "%d: a copy", i)
				}
			}
			// Appending to each value in turn leaves the others whole.
			for i := range out {
				if out[i] != nil {
					out[i] = append(out[i], 0xee)
				}
			}
			for i, r := range tc.results {
				if r.Found {
					require.Equal(t, append(bytes.Clone(r.Value.Data), 0xee), out[i], "%d", i)
				}
			}
		})
	}
}

// TestCopyValuesAllocations: a batch of small values is one allocation a
// 64 KiB chunk; a large value has its own.
func TestCopyValuesAllocations(t *testing.T) {
	if invariants.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	results := make([]readpath.Result, 16)
	for i := range results {
		results[i] = readpath.Result{Found: true, Value: readpath.Value{Data: make([]byte, 256)}}
	}
	out := make([][]byte, len(results))
	require.Equal(t, 1.0, testing.AllocsPerRun(100, func() { copyValues(results, out) }))

	results = append(results, readpath.Result{Found: true, Value: readpath.Value{Data: make([]byte, sharedValueMax+1)}})
	for range 300 { // 300 × 256 B: two chunks
		results = append(results, readpath.Result{Found: true, Value: readpath.Value{Data: make([]byte, 256)}})
	}
	out = make([][]byte, len(results))
	require.Equal(t, 3.0, testing.AllocsPerRun(100, func() { copyValues(results, out) }))
}
