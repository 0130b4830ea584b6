package sstable

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/ioctx"
	"github.com/stretchr/testify/require"
)

// fixed6 is a fixed:6 prefix extractor: genEntries' keys are "key%06d", so
// its prefix "keyNNN" groups 1000 keys.
func fixed6(k []byte) []byte {
	if len(k) < 6 {
		return nil
	}
	return k[:6]
}

// TestPrefixFilter: a table written with a prefix extractor records its
// name, its filter answers PrefixMayMatch for every prefix of its keys and
// rules out nearly every other, whole keys stay in the filter (Get and
// MayContain answer as without prefixes, which is all a reader that knows
// nothing of prefixes asks), a partitioned table answers from the filter
// partitions of the prefix's range, and another extractor's name or a table
// without prefixes give no answer (checked false).
func TestPrefixFilter(t *testing.T) {
	ctx := context.Background()
	es := genEntries(rand.New(rand.NewPCG(1, 2)), 3000, 10)
	opts := WriterOptions{BlockSize: 512, BloomBitsPerKey: 10, Compression: compress.Snappy,
		Checksum: checksum.CRC32C, PrefixExtractor: fixed6, PrefixExtractorName: "fixed:6"}
	data := buildTable(t, opts, es)
	present := map[string]bool{}
	for _, e := range es {
		present[string(fixed6(e.key.UserKey))] = true
	}
	for _, cfg := range []openConfig{{}, {cache: cache.New(1 << 20), cacheMeta: true}} {
		t.Run(cfg.String(), func(t *testing.T) {
			r := openTable(t, data, cfg)
			require.Equal(t, "fixed:6", r.Properties().PrefixExtractorName)
			for _, e := range es {
				require.True(t, r.MayContain(bloom.Hash(e.key.UserKey)), "whole key %s", e.key)
			}
			falsePos := 0
			for i := range 1000 {
				p := fmt.Appendf(nil, "k%05d", i)
				if i < 10 {
					p = fmt.Appendf(nil, "key%03d", i)
				}
				checked, may, err := r.PrefixMayMatch(ctx, testIO(), "fixed:6", p, bloom.Hash(p))
				require.NoError(t, err)
				require.True(t, checked)
				if present[string(p)] {
					require.True(t, may, "prefix %q of the table", p)
				} else if may {
					falsePos++
				}
			}
			require.Less(t, falsePos, 50, "false positives among ~990 absent prefixes")
			checked, may, err := r.PrefixMayMatch(ctx, testIO(), "fixed:5", []byte("key00"), bloom.Hash([]byte("key00")))
			require.NoError(t, err)
			require.False(t, checked, "another extractor's filter is not asked")
			require.True(t, may)
		})
	}

	t.Run("no extractor", func(t *testing.T) {
		o := opts
		o.PrefixExtractor, o.PrefixExtractorName = nil, ""
		r := openTable(t, buildTable(t, o, es), openConfig{})
		require.Empty(t, r.Properties().PrefixExtractorName)
		checked, _, err := r.PrefixMayMatch(ctx, testIO(), "fixed:6", []byte("key000"), bloom.Hash([]byte("key000")))
		require.NoError(t, err)
		require.False(t, checked)
	})
	t.Run("partitioned", func(t *testing.T) {
		o := partOpts
		o.PrefixExtractor, o.PrefixExtractorName = fixed6, "fixed:6"
		d := buildTable(t, o, es)
		requirePartitioned(t, d, 5)
		for _, cfg := range []openConfig{{}, {cache: cache.New(1 << 20), cacheMeta: true}} {
			r := openTable(t, d, cfg)
			require.Equal(t, "fixed:6", r.Properties().PrefixExtractorName)
			for _, e := range es {
				require.True(t, r.MayContainKey(e.key.UserKey, bloom.Hash(e.key.UserKey)), "whole key %s", e.key)
			}
			falsePos := 0
			for i := range 1000 {
				// Prefixes of the table (each spans partitions: 1000 keys
				// each, ~5 partitions in all), absent ones between and
				// around them, and ones above and below every key.
				p := fmt.Appendf(nil, "k%05d", i)
				switch {
				case i < 5:
					p = fmt.Appendf(nil, "key%03d", i)
				case i == 5:
					p = []byte("zzzzzz")
				case i == 6:
					p = []byte("aaaaaa")
				case i == 7:
					p = []byte("\xff\xff\xff\xff\xff\xff")
				case i < 20:
					p = fmt.Appendf(nil, "key%03d", i*10)
				}
				checked, may, err := r.PrefixMayMatch(ctx, testIO(), "fixed:6", p, bloom.Hash(p))
				require.NoError(t, err)
				require.True(t, checked, "a partitioned filter answers")
				if present[string(p)] {
					require.True(t, may, "prefix %q of the table", p)
				} else if may {
					falsePos++
				}
			}
			require.Less(t, falsePos, 50, "false positives among ~995 absent prefixes")
		}
	})
}

func testIO() ioctx.IOOptions { return ioctx.IOOptions{Activity: ioctx.ActivityDBIterator} }
