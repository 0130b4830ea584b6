package driver

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseDSN(t *testing.T) {
	for _, tc := range []struct {
		dsn    string
		path   string
		params []Param
		err    string // the whole message when not empty
		format string // FormatDSN of the result; dsn when empty
	}{
		{dsn: "/var/lib/app/db", path: "/var/lib/app/db"},
		{dsn: ":memory:", path: ":memory:"},
		{dsn: "rel/dir", path: "rel/dir"},
		{dsn: "/d?stats_level=all&block_cache_size=32MiB", path: "/d",
			params: []Param{{"stats_level", "all"}, {"block_cache_size", "32MiB"}}},
		{dsn: "/d?b=2&a=1", path: "/d", params: []Param{{"b", "2"}, {"a", "1"}}}, // order kept
		{dsn: "/my db/x+y", path: "/my db/x+y"},                                  // '+' and ' ' are literal in the path
		{dsn: "/p%25q%3Fr", path: "/p%q?r"},
		{dsn: "/p%41", path: "/pA", format: "/pA"},
		{dsn: "/d?k=a+b%26c%3Dd", path: "/d", params: []Param{{"k", "a b&c=d"}}},
		{dsn: "/d?k%20x=1", path: "/d", params: []Param{{"k x", "1"}}, format: "/d?k+x=1"},
		{dsn: "/d?flag", path: "/d", params: []Param{{"flag", ""}}, format: "/d?flag="},
		{dsn: "/d?a=&b=x=y", path: "/d", params: []Param{{"a", ""}, {"b", "x=y"}}, format: "/d?a=&b=x%3Dy"},
		{dsn: "/d?", path: "/d", format: "/d"},
		{dsn: "/d?&a=1&&", path: "/d", params: []Param{{"a", "1"}}, format: "/d?a=1"},
		{dsn: "/d?a=1;b=2", path: "/d", params: []Param{{"a", "1;b=2"}}, format: "/d?a=1%3Bb%3D2"},
		{dsn: "/d??a=1", path: "/d", params: []Param{{"?a", "1"}}, format: "/d?%3Fa=1"},

		{dsn: "", err: `driver: invalid DSN "": empty path`},
		{dsn: "?a=1", err: `driver: invalid DSN "?a=1": empty path`},
		{dsn: "/d?a=1&a=2", err: `driver: invalid DSN "/d?a=1&a=2": duplicate parameter "a"`},
		{dsn: "/d?a=1&%61=2", err: `driver: invalid DSN "/d?a=1&%61=2": duplicate parameter "a"`},
		{dsn: "/d?=1", err: `driver: invalid DSN "/d?=1": parameter "=1" has an empty key`},
		{dsn: "/d%zz", err: `driver: invalid DSN "/d%zz": path: invalid URL escape "%zz"`},
		{dsn: "/d?k=%", err: `driver: invalid DSN "/d?k=%": parameter "k": invalid URL escape "%"`},
		{dsn: "/d?%g=1", err: `driver: invalid DSN "/d?%g=1": parameter "%g": invalid URL escape "%g"`},
	} {
		t.Run(tc.dsn, func(t *testing.T) {
			d, err := ParseDSN(tc.dsn)
			if tc.err != "" {
				require.ErrorIs(t, err, ErrInvalidArgument)
				require.EqualError(t, err, tc.err)
				require.Nil(t, d)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.path, d.Path)
			require.Equal(t, tc.params, d.Params)
			want := tc.format
			if want == "" {
				want = tc.dsn
			}
			require.Equal(t, want, d.String())
			require.Equal(t, want, FormatDSN(d.Path, d.Params))
			d2, err := ParseDSN(d.String())
			require.NoError(t, err)
			require.Equal(t, d.Path, d2.Path)
			require.Equal(t, d.Params, d2.Params)
		})
	}
}

func TestFormatDSN(t *testing.T) {
	require.Equal(t, "/d", FormatDSN("/d", nil))
	require.Equal(t, "/a%3Fb%25c?k=v+w&x=%26", FormatDSN("/a?b%c", []Param{{"k", "v w"}, {"x", "&"}}))
	require.Equal(t, `C:\data\db?sync=true`, FormatDSN(`C:\data\db`, []Param{{"sync", "true"}}))
}

func TestDSNLookup(t *testing.T) {
	d, err := ParseDSN("/d?block_cache_size=32MiB&sync=yes&bogus=1&bad_size=12XB&bad_bool=maybe&typo_key=1")
	require.NoError(t, err)
	require.Equal(t, []string{"block_cache_size", "sync", "bogus", "bad_size", "bad_bool", "typo_key"}, d.Unused())

	n, ok, err := d.LookupSize("block_cache_size")
	require.NoError(t, err)
	require.True(t, ok)
	require.EqualValues(t, 32<<20, n)
	b, ok, err := d.LookupBool("sync")
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, b)
	_, ok, err = d.LookupSize("write_buffer_size")
	require.NoError(t, err)
	require.False(t, ok, "absent")
	_, ok, err = d.LookupBool("absent_bool")
	require.NoError(t, err)
	require.False(t, ok)

	_, ok, err = d.LookupSize("bad_size")
	require.True(t, ok)
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.EqualError(t, err, `driver: DSN parameter bad_size: invalid size "12XB": unknown unit "XB" (want B, KiB, MiB, GiB, TiB, PiB, EiB, KB, MB, GB, TB, PB or EB)`)
	_, ok, err = d.LookupBool("bad_bool")
	require.True(t, ok)
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.EqualError(t, err, `driver: DSN parameter bad_bool: invalid boolean "maybe": want true/false, 1/0, yes/no or on/off`)

	v, ok := d.Lookup("bogus")
	require.True(t, ok)
	require.Equal(t, "1", v)
	require.Equal(t, []string{"typo_key"}, d.Unused(), "only the keys nobody asked for")
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  string
	}{
		{in: "0", want: 0},
		{in: "4096", want: 4096},
		{in: "007", want: 7},
		{in: "12B", want: 12},
		{in: "64KiB", want: 64 << 10},
		{in: "64kib", want: 64 << 10},
		{in: "32MiB", want: 32 << 20},
		{in: "1GiB", want: 1 << 30},
		{in: "2TiB", want: 2 << 40},
		{in: "3PiB", want: 3 << 50},
		{in: "7EiB", want: 7 << 60},
		{in: "1KB", want: 1000},
		{in: "5MB", want: 5_000_000},
		{in: "1GB", want: 1_000_000_000},
		{in: "2tb", want: 2e12},
		{in: "9PB", want: 9e15},
		{in: "9EB", want: 9e18},
		{in: "9223372036854775807", want: math.MaxInt64},
		{in: "9223372036854775807B", want: math.MaxInt64},

		{in: "", err: `driver: invalid size "": want digits with an optional unit (B, KiB, MiB, GiB, TiB, PiB, EiB, KB, MB, GB, TB, PB, EB)`},
		{in: "-1", err: `driver: invalid size "-1": negative`},
		{in: "-1KiB", err: `driver: invalid size "-1KiB": negative`},
		{in: "+1", err: `driver: invalid size "+1": want digits with an optional unit (B, KiB, MiB, GiB, TiB, PiB, EiB, KB, MB, GB, TB, PB, EB)`},
		{in: "KiB", err: `driver: invalid size "KiB": want digits with an optional unit (B, KiB, MiB, GiB, TiB, PiB, EiB, KB, MB, GB, TB, PB, EB)`},
		{in: "1.5GiB", err: `driver: invalid size "1.5GiB": unknown unit ".5GiB" (want B, KiB, MiB, GiB, TiB, PiB, EiB, KB, MB, GB, TB, PB or EB)`},
		{in: "64 KiB", err: `driver: invalid size "64 KiB": unknown unit " KiB" (want B, KiB, MiB, GiB, TiB, PiB, EiB, KB, MB, GB, TB, PB or EB)`},
		{in: "64K", err: `driver: invalid size "64K": unknown unit "K" (want B, KiB, MiB, GiB, TiB, PiB, EiB, KB, MB, GB, TB, PB or EB)`},
		{in: "0x10", err: `driver: invalid size "0x10": unknown unit "x10" (want B, KiB, MiB, GiB, TiB, PiB, EiB, KB, MB, GB, TB, PB or EB)`},
		{in: "8EiB", err: `driver: invalid size "8EiB": overflows int64`},
		{in: "10EB", err: `driver: invalid size "10EB": overflows int64`},
		{in: "9223372036854775808", err: `driver: invalid size "9223372036854775808": overflows int64`},
		{in: "99999999999999999999999KiB", err: `driver: invalid size "99999999999999999999999KiB": overflows int64`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			n, err := ParseSize(tc.in)
			if tc.err != "" {
				require.ErrorIs(t, err, ErrInvalidArgument)
				require.EqualError(t, err, tc.err)
				require.Zero(t, n)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, n)
		})
	}
}

func TestFormatSize(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0"},
		{1, "1"},
		{1000, "1000"},
		{1023, "1023"},
		{1024, "1KiB"},
		{1536, "1536"},
		{4096, "4KiB"},
		{33554432, "32MiB"},
		{3 << 30, "3GiB"},
		{1 << 40, "1TiB"},
		{5 << 50, "5PiB"},
		{1 << 60, "1EiB"},
		{1<<60 + 1024, "1125899906842625KiB"},
		{math.MaxInt64, "9223372036854775807"},
		{-1024, "-1024"},
	} {
		require.Equal(t, tc.want, FormatSize(tc.n), "%d", tc.n)
		if tc.n >= 0 {
			back, err := ParseSize(tc.want)
			require.NoError(t, err)
			require.Equal(t, tc.n, back)
		}
	}
}

func TestParseBool(t *testing.T) {
	for in, want := range map[string]bool{
		"true": true, "TRUE": true, "True": true, "1": true, "yes": true, "YES": true, "on": true, "On": true,
		"false": false, "FALSE": false, "0": false, "no": false, "No": false, "off": false, "OFF": false,
	} {
		got, err := ParseBool(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "t", "f", "2", "y", "n", " true", "enabled"} {
		_, err := ParseBool(in)
		require.ErrorIs(t, err, ErrInvalidArgument, in)
		require.ErrorContains(t, err, "invalid boolean")
	}
}
