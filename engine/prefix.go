package engine

import (
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
)

// PrefixExtractorKind is the kind of a [PrefixExtractor].
type PrefixExtractorKind uint8

// The prefix extractor kinds, RocksDB's built-in ones.
const (
	// PrefixNone: no prefix extractor (the default). Filters hold whole
	// keys only, and IterOptions.Prefix is applied by bounds alone.
	PrefixNone PrefixExtractorKind = iota
	// PrefixFixed is RocksDB's NewFixedPrefixTransform: a key's prefix is
	// its first Len bytes; a key shorter than Len has none.
	PrefixFixed
	// PrefixCapped is RocksDB's NewCappedPrefixTransform: a key's prefix is
	// its first Len bytes, or the whole key when it is shorter.
	PrefixCapped
)

// prefixExtractorLenBound bounds PrefixExtractor.Len.
var prefixExtractorLenBound = bound{1, 255, false}

// PrefixExtractor is the database's prefix extractor (RocksDB's
// prefix_extractor; DSN key prefix_extractor, written "fixed:8" or
// "capped:8"). With one set and a bloom filter, each new table's filter
// holds the prefixes of its keys besides the keys themselves, and the
// table records the extractor's String in its properties
// (shale.prefix.extractor.name). An iterator whose driver.IterOptions.Prefix
// is at least Len bytes long — so that every key it can show has the same
// extractor prefix, Prefix[:Len] — asks the filter of each table it would
// read and leaves out the tables whose filter rules that prefix out
// (statistics BloomFilterPrefixChecked and BloomFilterPrefixUseful). A
// shorter Prefix, or none, reads as without an extractor.
//
// The extractor may change between opens, as in RocksDB: tables written
// with another extractor (or none) are read as before, their filters
// consulted for whole keys only. With partitioned filters
// (PartitionIndexAndFilters) each partition holds the prefixes of its keys,
// and the check asks the partitions of the prefix's range.
//
// The zero value is no extractor.
type PrefixExtractor struct {
	Kind PrefixExtractorKind
	// Len is the prefix length in bytes, 1 to 255, for PrefixFixed and
	// PrefixCapped.
	Len int
}

// String returns the extractor in DSN form: "none", "fixed:N" or
// "capped:N". It is also the name tables record.
func (p PrefixExtractor) String() string {
	switch p.Kind {
	case PrefixNone:
		return "none"
	case PrefixFixed:
		return "fixed:" + strconv.Itoa(p.Len)
	case PrefixCapped:
		return "capped:" + strconv.Itoa(p.Len)
	}
	return "PrefixExtractorKind(" + strconv.Itoa(int(p.Kind)) + "):" + strconv.Itoa(p.Len)
}

// ParsePrefixExtractor parses the DSN form String writes ("none",
// "fixed:N", "capped:N" with N from 1 to 255).
func ParsePrefixExtractor(s string) (PrefixExtractor, error) {
	if s == "none" {
		return PrefixExtractor{}, nil
	}
	kind, n, ok := strings.Cut(s, ":")
	var p PrefixExtractor
	switch kind {
	case "fixed":
		p.Kind = PrefixFixed
	case "capped":
		p.Kind = PrefixCapped
	default:
		ok = false
	}
	if !ok {
		return PrefixExtractor{}, errors.Newf("%q is not none, fixed:N or capped:N", s)
	}
	l, err := strconv.Atoi(n)
	if err != nil || !prefixExtractorLenBound.holds(int64(l)) {
		return PrefixExtractor{}, errors.Newf("%q: the length %q is not within %s", s, n, prefixExtractorLenBound.String())
	}
	p.Len = l
	return p, nil
}

// validate reports an extractor of no known kind or with a length out of
// bounds.
func (p PrefixExtractor) validate() error {
	switch p.Kind {
	case PrefixNone:
		return nil
	case PrefixFixed, PrefixCapped:
		if !prefixExtractorLenBound.holds(int64(p.Len)) {
			return errors.Newf("prefix_extractor %s (PrefixExtractor.Len) is not within %s", p, prefixExtractorLenBound.String())
		}
		return nil
	}
	return errors.Newf("prefix_extractor %s (PrefixExtractor.Kind) is not one of the PrefixExtractorKind values", p)
}

// prefix returns key's prefix (aliasing key), or nil when key has none.
func (p PrefixExtractor) prefix(key []byte) []byte {
	switch p.Kind {
	case PrefixFixed:
		if len(key) < p.Len {
			return nil
		}
		return key[:p.Len]
	case PrefixCapped:
		return key[:min(len(key), p.Len)]
	}
	return nil
}

// filterPrefix returns the extractor prefix shared by every key that starts
// with iterPrefix, or nil when those keys have several (or none): for both
// kinds that is iterPrefix[:Len] when iterPrefix is at least Len long. A
// shorter capped prefix is not enough: "ab" covers "ab" (prefix "ab") and
// "abc..." (prefix "abc" with Len 3).
func (p PrefixExtractor) filterPrefix(iterPrefix []byte) []byte {
	if p.Kind == PrefixNone || iterPrefix == nil || len(iterPrefix) < p.Len {
		return nil
	}
	return iterPrefix[:p.Len]
}
