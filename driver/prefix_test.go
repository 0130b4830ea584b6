package driver

import (
	"bytes"
	"context"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCopyIterOptionsPrefix(t *testing.T) {
	b := func(s string) []byte { return []byte(s) }
	for _, tc := range []struct {
		name                       string
		in                         IterOptions
		wantLower, wantUpper       []byte
		wantLowerNil, wantUpperNil bool
	}{
		{"prefix alone", IterOptions{Prefix: b("ab")}, b("ab"), b("ac"), false, false},
		{"trailing 0xff", IterOptions{Prefix: b("a\xff\xff")}, b("a\xff\xff"), b("b"), false, false},
		{"all 0xff: no successor", IterOptions{Prefix: b("\xff\xff")}, b("\xff\xff"), nil, false, true},
		{"empty prefix: every key", IterOptions{Prefix: b("")}, b(""), nil, false, true},
		{"lower inside", IterOptions{Prefix: b("ab"), LowerBound: b("abc")}, b("abc"), b("ac"), false, false},
		{"lower below", IterOptions{Prefix: b("ab"), LowerBound: b("a")}, b("ab"), b("ac"), false, false},
		{"upper inside", IterOptions{Prefix: b("ab"), UpperBound: b("abc")}, b("ab"), b("abc"), false, false},
		{"upper above", IterOptions{Prefix: b("ab"), UpperBound: b("b")}, b("ab"), b("ac"), false, false},
		{"upper for all 0xff", IterOptions{Prefix: b("\xff"), UpperBound: b("\xff\x10")}, b("\xff"), b("\xff\x10"), false, false},
		{"disjoint above", IterOptions{Prefix: b("ab"), LowerBound: b("b")}, b("b"), b("b"), false, false},
		{"disjoint below", IterOptions{Prefix: b("ab"), UpperBound: b("a")}, b("ab"), b("ab"), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			c := copyIterOptions(&in)
			require.Equal(t, tc.wantLower, c.LowerBound)
			require.Equal(t, tc.wantLowerNil, c.LowerBound == nil)
			require.Equal(t, tc.wantUpperNil, c.UpperBound == nil)
			if !tc.wantUpperNil {
				require.Equal(t, tc.wantUpper, c.UpperBound)
			}
			require.NotNil(t, c.Prefix, "the driver receives the prefix")
			require.Equal(t, in.Prefix, c.Prefix)
			// Copies: the caller's slices may be reused.
			for _, s := range [][]byte{in.Prefix, in.LowerBound, in.UpperBound} {
				for i := range s {
					s[i] ^= 0x55
				}
			}
			require.Equal(t, tc.wantLower, c.LowerBound, "a copy")
		})
	}
	require.Nil(t, copyIterOptions(&IterOptions{}).Prefix, "a nil prefix stays nil")
}

// TestIteratorPrefix checks IterOptions.Prefix through the façade over the
// fake driver, which knows nothing of prefixes: the façade's bounds alone
// give the semantics.
func TestIteratorPrefix(t *testing.T) {
	conn := newFullConn()
	keys := []string{"", "a", "ab", "ab\x00", "ab\xff", "abc", "ac", "b", "\xff", "\xff\xff", "\xff\xff\x00", "\xff\xff\xff"}
	for _, k := range keys {
		conn.data[k] = []byte(strings.ToUpper(k))
	}
	db := openFake(t, conn)
	ctx := context.Background()
	sort.Strings(keys)
	scan := func(o *IterOptions, reverse bool) []string {
		t.Helper()
		it, err := db.NewIterator(ctx, o)
		require.NoError(t, err)
		defer func() { require.NoError(t, it.Close()) }()
		var out []string
		if reverse {
			for ok := it.Last(); ok; ok = it.Prev() {
				out = append(out, string(it.Key()))
			}
		} else {
			for ok := it.First(); ok; ok = it.Next() {
				out = append(out, string(it.Key()))
			}
		}
		require.NoError(t, it.Error())
		return out
	}
	want := func(prefix, lower, upper []byte) []string {
		var out []string
		for _, k := range keys {
			kb := []byte(k)
			if bytes.HasPrefix(kb, prefix) && (lower == nil || bytes.Compare(kb, lower) >= 0) &&
				(upper == nil || bytes.Compare(kb, upper) < 0) {
				out = append(out, k)
			}
		}
		return out
	}
	reversed := func(s []string) []string {
		var r []string
		if len(s) > 0 {
			r = make([]string, len(s))
		}
		for i := range s {
			r[len(s)-1-i] = s[i]
		}
		return r
	}
	require.Equal(t, []string{"ab", "ab\x00", "abc", "ab\xff"}, scan(&IterOptions{Prefix: []byte("ab")}, false))
	require.Equal(t, []string{"\xff\xff", "\xff\xff\x00", "\xff\xff\xff"}, scan(&IterOptions{Prefix: []byte("\xff\xff")}, false))
	require.Equal(t, keys, scan(&IterOptions{Prefix: []byte{}}, false), "an empty prefix: every key")

	rng := rand.New(rand.NewPCG(1, 2))
	pick := func() []byte {
		if rng.IntN(4) == 0 {
			return nil
		}
		k := []byte(keys[rng.IntN(len(keys))])
		if len(k) > 0 && rng.IntN(2) == 0 {
			k = k[:rng.IntN(len(k))]
		}
		return k
	}
	for range 500 {
		p, lo, hi := pick(), pick(), pick()
		if p == nil {
			p = []byte{}
		}
		o := &IterOptions{Prefix: p, LowerBound: lo, UpperBound: hi}
		w := want(p, lo, hi)
		require.Equal(t, w, scan(o, false), "prefix %q [%q, %q)", p, lo, hi)
		require.Equal(t, reversed(w), scan(o, true), "prefix %q [%q, %q) backwards", p, lo, hi)
		// Seeks outside the prefix land inside it or nowhere.
		it, err := db.NewIterator(ctx, o)
		require.NoError(t, err)
		if len(w) > 0 {
			require.True(t, it.SeekGE(nil))
			require.Equal(t, w[0], string(it.Key()))
			require.True(t, it.SeekLT([]byte("\xff\xff\xff\xff")))
			require.Equal(t, w[len(w)-1], string(it.Key()))
		} else {
			require.False(t, it.SeekGE(nil))
		}
		require.NoError(t, it.Close())
	}
}
