package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/stretchr/testify/require"
)

// Tests of sst dump on tables with a partitioned index and filters
// (sstable.FormatVersionPartitioned).

var (
	// topLineRe matches a top-level index line: partition, index handle,
	// filter handle (empty without a filter), last separator.
	topLineRe = regexp.MustCompile(
		`(?m)^  partition (\d+): index (\(\d+, \d+\))(?:  filter (\(\d+, \d+\)))?  last separator (.*)$`)
	// blockLineRe matches an index entry line: block number, separator.
	blockLineRe = regexp.MustCompile(`(?m)^  block (\d+): \(\d+, \d+\)  separator (.*)$`)
)

// section returns the lines of out from the one equal to header to the
// next empty line.
func section(t *testing.T, out, header string) string {
	t.Helper()
	i := strings.Index(out, "\n"+header+"\n")
	require.GreaterOrEqual(t, i, 0, "no %q section in:\n%s", header, out)
	s := out[i+1:]
	if j := strings.Index(s, "\n\n"); j >= 0 {
		s = s[:j+1]
	}
	return s
}

// checkPartitionedDump checks the structure of a partitioned table's dump:
// parts partitions, each with a filter partition when withFilter, data
// blocks numbered 0 to blocks-1 across partitions, and each top-level entry's
// last separator that of its partition's last data block. It returns the
// top-level lines' submatches.
func checkPartitionedDump(t *testing.T, out string, parts, blocks int, withFilter bool) [][]string {
	t.Helper()
	require.Regexp(t, `(?m)^  format version: +3$`, out)
	top := topLineRe.FindAllStringSubmatch(section(t, out, "top-level index"), -1)
	require.Len(t, top, parts, out)
	require.Contains(t, out, fmt.Sprintf("\n  (%d partitions)\n\n", parts))
	for p, m := range top {
		require.Equal(t, strconv.Itoa(p), m[1])
		require.Equal(t, withFilter, m[3] != "", "partition %d: filter handle %q", p, m[3])
	}

	if withFilter {
		filters := section(t, out, "filter partitions")
		for p, m := range top {
			require.Regexp(t, `(?m)^  partition `+strconv.Itoa(p)+`: `+regexp.QuoteMeta(m[3])+
				`  checksum ok, none, \d+ bytes, [1-9]\d* lines, [1-9]\d* probes$`, filters)
		}
	} else {
		require.NotContains(t, out, "filter partitions")
	}

	// The index section: each partition's line, then its blocks.
	index := section(t, out, "index")
	next, p := 0, -1
	var lastSep []string // of each partition's last block
	for _, line := range strings.Split(strings.TrimSuffix(index, "\n"), "\n")[1:] {
		if strings.HasPrefix(line, "  partition ") {
			p++
			require.Equal(t, fmt.Sprintf("  partition %d: %s", p, top[p][2]), line)
			lastSep = append(lastSep, "")
			continue
		}
		if m := blockLineRe.FindStringSubmatch(line); m != nil {
			require.Equal(t, strconv.Itoa(next), m[1], "blocks are numbered across partitions")
			require.GreaterOrEqual(t, p, 0, "a block before the first partition")
			lastSep[p] = m[2]
			next++
		}
	}
	require.Equal(t, blocks, next)
	require.Contains(t, index, fmt.Sprintf("\n  (%d data blocks)\n", blocks))
	require.Len(t, lastSep, parts)
	for p, m := range top {
		require.Equal(t, m[4], lastSep[p], "partition %d's last separator", p)
	}
	return top
}

// TestSSTDumpPartitioned dumps a table an engine wrote with
// PartitionIndexAndFilters, as a user would.
func TestSSTDumpPartitioned(t *testing.T) {
	dir := t.TempDir()
	const n = 3000
	makeDB(t, dir, dbSpec{tables: [][2]int{{0, n}}, partitioned: true})
	table := onlyTable(t, dir)

	r := runTool(t, "sst", "dump", table)
	require.Equal(t, exitOK, r.code, "%s", r)
	out := r.stdout
	parts, err := strconv.Atoi(fieldsOf(t, out, "  shale.index.partitions:")[1])
	require.NoError(t, err)
	require.GreaterOrEqual(t, parts, 3, "the test wants several partitions")
	blocks, err := strconv.Atoi(fieldsOf(t, out, "  shale.num.data.blocks:")[1])
	require.NoError(t, err)
	checkPartitionedDump(t, out, parts, blocks, true)
	require.Regexp(t, `(?m)^entries\n  "key000000"#1,SET -> "aaaa`, out)

	// Every entry, every block checked.
	r = runTool(t, "sst", "dump", "-blocks", "-keys", "-1", table)
	require.Equal(t, exitOK, r.code, "%s", r)
	checkPartitionedDump(t, r.stdout, parts, blocks, true)
	require.Len(t, regexp.MustCompile(`(?m)^ +checksum ok, \w+, \d+ bytes decoded, \d+ entries$`).FindAllString(r.stdout, -1), blocks)
	require.Len(t, regexp.MustCompile(`(?m)^  "key\d+"#\d+,SET -> `).FindAllString(r.stdout, -1), n)
}

// writeTable writes n entries (keys k000000..., every fifth a deletion) with
// opts, and returns the table.
func writeTable(t *testing.T, n int, opts sstable.WriterOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := sstable.NewWriter(&buf, opts)
	for i := range n {
		kind, value := base.KindSet, bytes.Repeat([]byte{byte('a' + i%26)}, 1+i%40)
		if i%5 == 4 {
			kind, value = base.KindDelete, nil
		}
		require.NoError(t, w.Add(base.MakeInternalKey([]byte(fmt.Sprintf("k%06d", i)), base.SeqNum(i+1), kind), value))
	}
	_, err := w.Close()
	require.NoError(t, err)
	return buf.Bytes()
}

// dumpBytes dumps data as a table file and returns the output.
func dumpBytes(t *testing.T, data []byte, blocks bool, keys int) (string, error) {
	t.Helper()
	var out bytes.Buffer
	d := sstDumper{w: &out}
	err := d.dump(context.Background(), writeMemFile(t, "t.sst", data), "t.sst", blocks, keys)
	return out.String(), err
}

// TestSSTDumpPartitionedMatchesUnpartitioned: a partitioned table holds the
// same data blocks and index entries as the unpartitioned table of the same
// entries, so its dump prints the same block lines (numbered across
// partitions, with -blocks the same checks) and entries.
func TestSSTDumpPartitionedMatchesUnpartitioned(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts sstable.WriterOptions
	}{
		{"bloom snappy", sstable.WriterOptions{BlockSize: 256, BloomBitsPerKey: 10, Compression: compress.Snappy, Checksum: checksum.XXHash64}},
		{"no filter", sstable.WriterOptions{BlockSize: 128, Compression: compress.None, Checksum: checksum.CRC32C}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 2000
			flat, err := dumpBytes(t, writeTable(t, n, tc.opts), true, -1)
			require.NoError(t, err)
			require.Regexp(t, `(?m)^  format version: +1$`, flat)
			require.NotContains(t, flat, "partition")

			popts := tc.opts
			popts.IndexPartitionSize = 256
			part, err := dumpBytes(t, writeTable(t, n, popts), true, -1)
			require.NoError(t, err)
			blocks := len(blockLineRe.FindAllString(flat, -1))
			parts, err := strconv.Atoi(fieldsOf(t, part, "  shale.index.partitions:")[1])
			require.NoError(t, err)
			require.GreaterOrEqual(t, parts, 3)
			checkPartitionedDump(t, part, parts, blocks, tc.opts.BloomBitsPerKey > 0)

			// The block lines with their checks, and the entries.
			blockLines := func(s string) string {
				var keep []string
				for _, l := range strings.Split(section(t, s, "index"), "\n") {
					if strings.HasPrefix(l, "  block ") || strings.HasPrefix(l, "           ") {
						keep = append(keep, l)
					}
				}
				return strings.Join(keep, "\n")
			}
			require.Equal(t, blockLines(flat), blockLines(part))
			require.Equal(t, section(t, flat, "entries"), section(t, part, "entries"))
		})
	}
}

// TestSSTDumpPartitionedDamage: a damaged partition is an error marked
// corruption that names it, whether the table reader meets it at open (as
// sst dump runs) or the dumper's own walk of the partitions does.
func TestSSTDumpPartitionedDamage(t *testing.T) {
	ctx := context.Background()
	orig := writeTable(t, 2000, sstable.WriterOptions{BlockSize: 256, BloomBitsPerKey: 10,
		Compression: compress.Snappy, Checksum: checksum.XXHash64, IndexPartitionSize: 256})
	out, err := dumpBytes(t, orig, false, 0)
	require.NoError(t, err)
	top := topLineRe.FindAllStringSubmatch(out, -1)
	require.GreaterOrEqual(t, len(top), 3)
	handle := func(s string) block.Handle {
		var h block.Handle
		_, err := fmt.Sscanf(s, "(%d, %d)", &h.Offset, &h.Length)
		require.NoError(t, err)
		return h
	}
	index1, filter2 := handle(top[1][2]), handle(top[2][3])
	flipped := func(off uint64) []byte {
		data := bytes.Clone(orig)
		data[off] ^= 0xff
		return data
	}

	// As the command runs: the reader verifies every partition at open.
	for _, tc := range []struct {
		name, want string
		data       []byte
	}{
		{"index partition", `index partition 1 block.*checksum mismatch`, flipped(index1.Offset + 3)},
		{"filter partition", `filter partition 2 block.*checksum mismatch`, flipped(filter2.Offset + 3)},
	} {
		t.Run("command/"+tc.name, func(t *testing.T) {
			path := t.TempDir() + "/t.sst"
			require.NoError(t, os.WriteFile(path, tc.data, 0o644))
			r := runTool(t, "sst", "dump", path)
			require.Equal(t, exitProblem, r.code, "%s", r)
			require.Regexp(t, `^shale sst dump: .*`+tc.want, r.stderr)
		})
	}

	// The dumper's own walk, given the file and a top-level index block.
	f, err := fileio.Open(writeMemFile(t, "t.sst", orig), "t.sst", fileio.Options{})
	require.NoError(t, err)
	footer, err := sstable.DecodeFooter(orig[len(orig)-sstable.FooterLen:], uint64(len(orig)))
	require.NoError(t, err)
	origTop, _, err := readBlock(ctx, f, footer, footer.Index, "t.sst")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	// editTop returns the top-level index with edit applied to each entry's
	// value (the index and filter handles); edit returns nil to drop it.
	editTop := func(edit func(p int, index, filter block.Handle) []byte) []byte {
		var it block.Iter
		require.NoError(t, it.Init(base.CompareEncoded, origTop))
		var b block.Builder
		b.Init(1)
		p := 0
		for ok := it.First(); ok; ok = it.Next() {
			ih, fh, hasFilter, err := sstable.DecodeTopIndexValue(it.Value())
			require.NoError(t, err)
			require.True(t, hasFilter)
			if v := edit(p, ih, fh); v != nil {
				b.Add(it.Key(), v)
			}
			p++
		}
		require.NoError(t, it.Error())
		return bytes.Clone(b.Finish())
	}
	both := func(ih, fh block.Handle) []byte { return fh.Append(ih.Append(nil)) }
	size := uint64(len(orig))
	for _, tc := range []struct {
		name, want string
		data, top  []byte
	}{
		{"damaged index partition", `^index partition 1 block: .*checksum mismatch`, flipped(index1.Offset + 3), origTop},
		{"damaged filter partition", `^filter partition 2 block: .*checksum mismatch`, flipped(filter2.Offset + 3), origTop},
		{"index partition beyond the file", `^index partition 1 block: block \(\d+, 10\) with its trailer ends beyond the file`, orig,
			editTop(func(p int, ih, fh block.Handle) []byte {
				if p == 1 {
					ih = block.Handle{Offset: size, Length: 10}
				}
				return both(ih, fh)
			})},
		{"index partition that is a data block", `^index partition 1 entry 0: `, orig,
			editTop(func(p int, ih, fh block.Handle) []byte {
				if p == 1 {
					ih = handle(regexp.MustCompile(`(?m)^  block 0: (\(\d+, \d+\))`).FindStringSubmatch(out)[1])
				}
				return both(ih, fh)
			})},
		{"trailing bytes", `^top-level index entry 2: `, orig,
			editTop(func(p int, ih, fh block.Handle) []byte {
				if p == 2 {
					return append(both(ih, fh), 7)
				}
				return both(ih, fh)
			})},
		{"filter handle missing", `^top-level index entry 1 has a filter handle: false, but entry 0 has one: true`, orig,
			editTop(func(p int, ih, fh block.Handle) []byte {
				if p == 1 {
					return ih.Append(nil)
				}
				return both(ih, fh)
			})},
		{"no partitions", `^top-level index has no partitions`, orig,
			editTop(func(int, block.Handle, block.Handle) []byte { return nil })},
	} {
		t.Run("walk/"+tc.name, func(t *testing.T) {
			f, err := fileio.Open(writeMemFile(t, "t.sst", tc.data), "t.sst", fileio.Options{})
			require.NoError(t, err)
			defer f.Close()
			var out bytes.Buffer
			d := sstDumper{w: &out}
			_, err = d.dumpPartitioned(ctx, f, footer, tc.top, "t.sst", false)
			require.Error(t, err)
			require.True(t, errors.Is(err, base.ErrCorruption), "not marked corruption: %v", err)
			require.Regexp(t, tc.want, err.Error())
		})
	}
}

// TestSSTDumpPartitionedFlips flips every byte of a small partitioned
// table's partitions, top-level index and footer: each dump ends cleanly or
// with an error marked corruption (the fuzz check, on the new layout).
func TestSSTDumpPartitionedFlips(t *testing.T) {
	orig := writeTable(t, 200, sstable.WriterOptions{BlockSize: 64, BloomBitsPerKey: 10,
		Compression: compress.Snappy, Checksum: checksum.XXHash64, IndexPartitionSize: 64})
	out, err := dumpBytes(t, orig, true, -1)
	require.NoError(t, err)
	top := topLineRe.FindAllStringSubmatch(out, -1)
	require.GreaterOrEqual(t, len(top), 3)
	var first uint64
	_, err = fmt.Sscanf(top[0][3], "(%d,", &first)
	require.NoError(t, err)
	for off := int(first); off < len(orig); off++ {
		data := bytes.Clone(orig)
		data[off] ^= 0x5a
		checkSSTDump(t, data)
	}
}
