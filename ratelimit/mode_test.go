package ratelimit

import (
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/errclass"
	"github.com/stretchr/testify/require"
)

func TestModeString(t *testing.T) {
	for _, tc := range []struct {
		m    Mode
		want string
	}{
		{ModeReads, "reads"},
		{ModeWrites, "writes"},
		{ModeAll, "all"},
		{Mode(3), "Mode(3)"},
		{Mode(255), "Mode(255)"},
	} {
		require.Equal(t, tc.want, tc.m.String())
	}
	require.Equal(t, "read", OpRead.String())
	require.Equal(t, "write", OpWrite.String())
	require.Equal(t, "OpType(2)", OpType(2).String())
}

func TestParseMode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Mode
		err  bool
	}{
		{in: "reads", want: ModeReads},
		{in: "writes", want: ModeWrites},
		{in: "all", want: ModeAll},
		{in: "", err: true},
		{in: "Reads", err: true},
		{in: "read", err: true},
		{in: "kAllIo", err: true},
		{in: "all ", err: true},
	} {
		t.Run("in="+tc.in, func(t *testing.T) {
			m, err := ParseMode(tc.in)
			if tc.err {
				require.Error(t, err)
				require.True(t, errors.Is(err, errclass.ErrInvalidArgument), "%v", err)
				require.Contains(t, err.Error(), `"`+tc.in+`"`)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, m)
			require.Equal(t, tc.in, m.String())
		})
	}
}

// FuzzParseMode checks that ParseMode accepts exactly the three spellings
// String produces and never panics.
func FuzzParseMode(f *testing.F) {
	for _, s := range []string{"reads", "writes", "all", "", "ALL", "Mode(3)", "reads\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMode(s)
		if err != nil {
			if !errors.Is(err, errclass.ErrInvalidArgument) {
				t.Fatalf("ParseMode(%q): error not marked ErrInvalidArgument: %v", s, err)
			}
			if s == "reads" || s == "writes" || s == "all" {
				t.Fatalf("ParseMode(%q) rejected a valid mode: %v", s, err)
			}
			return
		}
		if m >= numModes || m.String() != s {
			t.Fatalf("ParseMode(%q) = %d, which prints as %q", s, m, m.String())
		}
	})
}
