package driver

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzParseDSN checks that ParseDSN never panics, that every error matches
// ErrInvalidArgument, and that whatever it accepts survives FormatDSN and a
// second ParseDSN unchanged, with FormatDSN's output stable.
func FuzzParseDSN(f *testing.F) {
	for _, s := range []string{
		"/var/lib/app/db",
		":memory:",
		"/d?stats_level=all&block_cache_size=32MiB&rate_limit=8MiB",
		"/p%25q%3Fr?k=a+b%26c%3Dd",
		"/d?flag&&x=",
		"/d??a=1",
		"/d?a=1&a=2",
		"/d%zz",
		"?",
		"",
		"/d?%=1",
		"C:\\data\\db?sync=on",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDSN(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("ParseDSN(%q): error %v does not match ErrInvalidArgument", s, err)
			}
			return
		}
		if d.Path == "" {
			t.Fatalf("ParseDSN(%q) accepted an empty path", s)
		}
		seen := map[string]bool{}
		for _, p := range d.Params {
			if p.Key == "" || seen[p.Key] {
				t.Fatalf("ParseDSN(%q): empty or duplicate key %q", s, p.Key)
			}
			seen[p.Key] = true
		}
		formatted := d.String()
		d2, err := ParseDSN(formatted)
		if err != nil {
			t.Fatalf("ParseDSN(%q) = %+v, but its FormatDSN %q does not parse: %v", s, d, formatted, err)
		}
		if d2.Path != d.Path || !reflect.DeepEqual(d2.Params, d.Params) {
			t.Fatalf("round trip of %q through %q: got %+v, want %+v", s, formatted, d2, d)
		}
		if again := d2.String(); again != formatted {
			t.Fatalf("FormatDSN is not stable: %q then %q", formatted, again)
		}
	})
}

// FuzzFormatDSN checks the other direction: any non-empty path and unique,
// non-empty keys survive FormatDSN then ParseDSN.
func FuzzFormatDSN(f *testing.F) {
	f.Add("/d", "k", "v", "k2", "v2")
	f.Add("/a?b%c", "a b", "&=?", "+", "%")
	f.Add(":memory:", "x", "", "y", " ")
	f.Fuzz(func(t *testing.T, path, k1, v1, k2, v2 string) {
		if path == "" || k1 == "" || k2 == "" || k1 == k2 {
			return
		}
		params := []Param{{k1, v1}, {k2, v2}}
		s := FormatDSN(path, params)
		d, err := ParseDSN(s)
		if err != nil {
			t.Fatalf("FormatDSN(%q, %q) = %q does not parse: %v", path, params, s, err)
		}
		if d.Path != path || !reflect.DeepEqual(d.Params, params) {
			t.Fatalf("FormatDSN(%q, %q) = %q parses as %+v", path, params, s, d)
		}
	})
}

// FuzzParseSize checks that ParseSize never panics, rejects with
// ErrInvalidArgument, accepts only non-negative sizes, and that FormatSize
// prints every accepted size back as a string ParseSize reads to the same
// number.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"0", "4096", "64KiB", "32MiB", "1GB", "7EiB", "8EiB", "-1", "1.5GiB", "", "9223372036854775807", "12xb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "invalid size") {
				t.Fatalf("ParseSize(%q): bad error %v", s, err)
			}
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
		back, err := ParseSize(FormatSize(n))
		if err != nil || back != n {
			t.Fatalf("ParseSize(FormatSize(%d) = %q) = %d, %v", n, FormatSize(n), back, err)
		}
	})
}

// FuzzBatch checks the batch's encoding: the writes a script of bytes
// describes read back in order, exactly as they were appended (a nil range
// end as a nil Value, a nil start as an empty Key, empty and inverted
// ranges dropped), through Reader and through a Replay into another batch,
// across chunk boundaries. The script is a sequence of (kind, key length,
// value length) triples whose bytes come from the script's tail.
func FuzzBatch(f *testing.F) {
	f.Add([]byte{0, 1, 1, 'a', 'b'})
	f.Add([]byte{2, 1, 0xff, 'b'})            // DeleteRange("b", nil)
	f.Add([]byte{2, 0xff, 0xff})              // DeleteRange(nil, nil)
	f.Add([]byte{2, 0xff, 1, 'a', 2, 1, 0})   // DeleteRange(nil, "a"), DeleteRange(x, "") dropped
	f.Add([]byte{2, 1, 1, 'c', 'b', 1, 1, 0}) // inverted, then a Delete
	f.Add(bytes.Repeat([]byte{0, 200, 200}, 40))
	f.Add([]byte{3, 1, 1, 'k', '1', 3, 1, 0, 'k', 0, 1, 1, 'k', '2'}) // Merge, an empty Merge, Put
	f.Add(bytes.Repeat([]byte{3, 200, 200}, 20))
	f.Fuzz(func(t *testing.T, script []byte) {
		if len(script) > 4096 {
			return
		}
		var b Batch
		var want []Op
		tail := script
		take := func(n byte) []byte {
			if n == 0xff {
				return nil
			}
			m := int(n) % 64 * 37 // lengths up to a few KiB, to cross chunks
			if m > len(tail) {
				m = len(tail)
			}
			s := append([]byte{}, tail[:m]...)
			tail = tail[m:]
			return s
		}
		for i := 0; i+2 < len(script) && len(want) < 300; i += 3 {
			k, v := take(script[i+1]), take(script[i+2])
			switch script[i] % 4 {
			case 0:
				b.Put(k, v)
				want = append(want, Op{Kind: OpPut, Key: nonNil(k), Value: nonNil(v)})
			case 1:
				b.Delete(k)
				want = append(want, Op{Kind: OpDelete, Key: nonNil(k)})
			case 2:
				b.DeleteRange(k, v)
				if v == nil || bytes.Compare(k, v) < 0 {
					want = append(want, Op{Kind: OpDeleteRange, Key: nonNil(k), Value: v})
				}
			case 3:
				b.Merge(k, v)
				want = append(want, Op{Kind: OpMerge, Key: nonNil(k), Value: nonNil(v)})
			}
		}
		check := func(b *Batch, how string) {
			if b.Len() != len(want) {
				t.Fatalf("%s: Len %d; want %d", how, b.Len(), len(want))
			}
			r := b.Reader()
			for i := 0; ; i++ {
				op, ok := r.Next()
				if !ok {
					if i != len(want) {
						t.Fatalf("%s: %d writes read back; want %d", how, i, len(want))
					}
					return
				}
				w := want[i]
				if op.Kind != w.Kind || !bytes.Equal(op.Key, w.Key) || op.Key == nil ||
					!bytes.Equal(op.Value, w.Value) || (op.Value == nil) != (w.Value == nil) && w.Kind != OpDelete {
					t.Fatalf("%s: write %d = %+v; want %+v", how, i, op, w)
				}
			}
		}
		check(&b, "Reader")
		var c Batch
		b.Replay(&c)
		check(&c, "Replay into a batch")
		if c.Size() != b.Size() {
			t.Fatalf("a replayed batch has Size %d; want %d", c.Size(), b.Size())
		}
	})
}

// nonNil returns b, or an empty slice for nil: what a batch reads back for
// a key or a put's value.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
