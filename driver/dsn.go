package driver

import (
	"net/url"
	"strconv"
	"strings"
)

// DSN is a parsed data source name: a path and URL-style parameters,
//
//	<path>[?key=value[&key=value...]]
//
// for example "/var/lib/app/db?stats_level=all&block_cache_size=32MiB". The
// path is a directory, or whatever else the driver names with it (":memory:"
// is a valid path). The keys are the driver's; this type only parses them.
//
// A DSN records which keys its Lookup methods were asked for, so a driver can
// reject the rest with [DSN.Unused]. It is not safe for concurrent use.
type DSN struct {
	// Path is the part before the first '?', percent-decoded.
	Path string
	// Params are the parameters in the order written. Keys are unique.
	Params []Param

	used map[string]bool
}

// Param is one key=value parameter of a DSN, both decoded.
type Param struct {
	Key, Value string
}

// ParseDSN parses "<path>[?k=v&k=v]". The path is percent-decoded (so a
// literal '%' is written "%25" and a '?' "%3F"); keys and values use URL
// query escaping ('+' is a space). Empty parameters ("a=1&&b=2") are
// skipped and a parameter without '=' has an empty value. It returns an error
// matching ErrInvalidArgument, naming the problem, for an empty path, a
// malformed escape, an empty key or a duplicate key.
func ParseDSN(dsn string) (*DSN, error) {
	rawPath, query, _ := strings.Cut(dsn, "?")
	path, err := url.PathUnescape(rawPath)
	if err != nil {
		return nil, dsnError(dsn, "path: "+err.Error())
	}
	if path == "" {
		return nil, dsnError(dsn, "empty path")
	}
	d := &DSN{Path: path}
	for seg := range strings.SplitSeq(query, "&") {
		if seg == "" {
			continue
		}
		rawKey, rawValue, _ := strings.Cut(seg, "=")
		key, err := url.QueryUnescape(rawKey)
		if err != nil {
			return nil, dsnError(dsn, "parameter "+strconv.Quote(rawKey)+": "+err.Error())
		}
		value, err := url.QueryUnescape(rawValue)
		if err != nil {
			return nil, dsnError(dsn, "parameter "+strconv.Quote(key)+": "+err.Error())
		}
		if key == "" {
			return nil, dsnError(dsn, "parameter "+strconv.Quote(seg)+" has an empty key")
		}
		for _, p := range d.Params {
			if p.Key == key {
				return nil, dsnError(dsn, "duplicate parameter "+strconv.Quote(key))
			}
		}
		d.Params = append(d.Params, Param{Key: key, Value: value})
	}
	return d, nil
}

func dsnError(dsn, msg string) error {
	return invalidArgument("driver: invalid DSN " + strconv.Quote(dsn) + ": " + msg)
}

// FormatDSN is the inverse of ParseDSN: ParseDSN(FormatDSN(path, params))
// returns path and params when path is not empty and the keys are unique
// and not empty. Only '%' and '?' of the path are escaped, so paths stay
// readable; keys and values are escaped with url.QueryEscape.
func FormatDSN(path string, params []Param) string {
	var sb strings.Builder
	for i := 0; i < len(path); i++ {
		switch c := path[i]; c {
		case '%':
			sb.WriteString("%25")
		case '?':
			sb.WriteString("%3F")
		default:
			sb.WriteByte(c)
		}
	}
	for i, p := range params {
		if i == 0 {
			sb.WriteByte('?')
		} else {
			sb.WriteByte('&')
		}
		sb.WriteString(url.QueryEscape(p.Key))
		sb.WriteByte('=')
		sb.WriteString(url.QueryEscape(p.Value))
	}
	return sb.String()
}

// String returns FormatDSN(d.Path, d.Params).
func (d *DSN) String() string { return FormatDSN(d.Path, d.Params) }

// Lookup returns the value of key and whether the DSN has it, and records
// that key was asked for.
func (d *DSN) Lookup(key string) (string, bool) {
	if d.used == nil {
		d.used = make(map[string]bool)
	}
	d.used[key] = true
	for _, p := range d.Params {
		if p.Key == key {
			return p.Value, true
		}
	}
	return "", false
}

// LookupSize is Lookup followed by ParseSize. ok is false when the key is
// absent; err names the key and the value when the value is not a size.
func (d *DSN) LookupSize(key string) (n int64, ok bool, err error) {
	v, ok := d.Lookup(key)
	if !ok {
		return 0, false, nil
	}
	n, err = ParseSize(v)
	if err != nil {
		return 0, true, paramError(key, err)
	}
	return n, true, nil
}

// LookupBool is Lookup followed by ParseBool. ok is false when the key is
// absent; err names the key and the value when the value is not a boolean.
func (d *DSN) LookupBool(key string) (b, ok bool, err error) {
	v, ok := d.Lookup(key)
	if !ok {
		return false, false, nil
	}
	b, err = ParseBool(v)
	if err != nil {
		return false, true, paramError(key, err)
	}
	return b, true, nil
}

func paramError(key string, err error) error {
	return invalidArgument("driver: DSN parameter " + key + ": " + strings.TrimPrefix(err.Error(), "driver: "))
}

// Unused returns the keys no Lookup asked for, in the DSN's order, so a
// driver can reject unknown keys after reading the ones it knows.
func (d *DSN) Unused() []string {
	var keys []string
	for _, p := range d.Params {
		if !d.used[p.Key] {
			keys = append(keys, p.Key)
		}
	}
	return keys
}

// sizeUnits are the units ParseSize accepts (case-insensitively) and
// FormatSize prints. Binary units are powers of 1024; the decimal ones,
// KB to EB, are powers of 1000 as their SI prefixes say, not the
// powers of 1024 some tools mean by them.
var sizeUnits = []struct {
	name string
	mult int64
}{
	{"EiB", 1 << 60}, {"PiB", 1 << 50}, {"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"EB", 1e18}, {"PB", 1e15}, {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3},
	{"B", 1},
}

// ParseSize parses a byte size: decimal digits, optionally followed with no
// space by a unit: B, KiB, MiB, GiB, TiB, PiB, EiB (powers of 1024) or KB,
// MB, GB, TB, PB, EB (powers of 1000), in any letter case. "4096",
// "64KiB", "32MiB" and "1GB" (10⁹) are sizes. A sign, a fraction, a space,
// another unit, an empty string or a size beyond int64 is an error matching
// ErrInvalidArgument that names the value.
func ParseSize(s string) (int64, error) {
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	digits, unit := s[:i], s[i:]
	if digits == "" {
		if strings.HasPrefix(s, "-") {
			return 0, sizeError(s, "negative")
		}
		return 0, sizeError(s, "want digits with an optional unit (B, KiB, MiB, GiB, TiB, PiB, EiB, KB, MB, GB, TB, PB, EB)")
	}
	mult := int64(1)
	if unit != "" {
		mult = 0
		for _, u := range sizeUnits {
			if strings.EqualFold(unit, u.name) {
				mult = u.mult
				break
			}
		}
		if mult == 0 {
			return 0, sizeError(s, "unknown unit "+strconv.Quote(unit)+" (want B, KiB, MiB, GiB, TiB, PiB, EiB, KB, MB, GB, TB, PB or EB)")
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n > (1<<63-1)/mult {
		return 0, sizeError(s, "overflows int64")
	}
	return n * mult, nil
}

func sizeError(s, msg string) error {
	return invalidArgument("driver: invalid size " + strconv.Quote(s) + ": " + msg)
}

// FormatSize formats n in the largest binary unit that divides it exactly:
// 33554432 is "32MiB", 1024 is "1KiB", 1000 is "1000", 0 is "0". ParseSize
// reads back every result for n >= 0. A negative n, which is no size, is
// printed as a plain number.
func FormatSize(n int64) string {
	if n > 0 {
		for _, u := range sizeUnits[:6] {
			if n%u.mult == 0 {
				return strconv.FormatInt(n/u.mult, 10) + u.name
			}
		}
	}
	return strconv.FormatInt(n, 10)
}

// ParseBool parses true/false, 1/0, yes/no and on/off in any letter case.
// Anything else is an error matching ErrInvalidArgument that names the value.
func ParseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "true", "1", "yes", "on":
		return true, nil
	case "false", "0", "no", "off":
		return false, nil
	}
	return false, invalidArgument("driver: invalid boolean " + strconv.Quote(s) + ": want true/false, 1/0, yes/no or on/off")
}
