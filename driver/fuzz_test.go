package driver

import (
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
