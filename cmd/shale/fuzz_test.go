package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/batch"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// The dumpers decode whatever file they are given: arbitrary bytes must
// give output and an error marked corruption, never a panic, a hang, a
// huge allocation, or another kind of error.

// writeMemFile stores data as name in a new in-memory filesystem.
func writeMemFile(t testing.TB, name string, data []byte) vfs.FS {
	fs := vfs.NewMem()
	f, err := fs.Create(name)
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return fs
}

// The seeds are small (hundreds of bytes): the fuzzer minimizes every new
// interesting input with a number of executions that grows with the square
// of its length, and a seed of many kilobytes stalled it for a minute at a
// time. Small seeds still reach every section of a file.

// seedTable returns a table of n entries (every third a deletion, values
// of 1 to 8 bytes) written with opts.
func seedTable(t testing.TB, n int, opts sstable.WriterOptions) []byte {
	var buf bytes.Buffer
	w := sstable.NewWriter(&buf, opts)
	for i := range n {
		kind := base.KindSet
		var value []byte
		if i%3 == 2 {
			kind = base.KindDelete
		} else {
			value = bytes.Repeat([]byte{byte('a' + i%26)}, 1+i%8)
		}
		require.NoError(t, w.Add(base.MakeInternalKey([]byte(fmt.Sprintf("k%d", i)), base.SeqNum(i+1), kind), value))
	}
	_, err := w.Close()
	require.NoError(t, err)
	return buf.Bytes()
}

// sstSeeds returns a table with a bloom filter and snappy blocks, one of
// several data blocks with restarts every other key, one of one entry, and
// a partitioned one (format version 3: two data blocks, each with its index
// and filter partition).
func sstSeeds(t testing.TB) [][]byte {
	return [][]byte{
		seedTable(t, 3, sstable.WriterOptions{BloomBitsPerKey: 10, Compression: compress.Snappy, Checksum: checksum.XXHash64}),
		seedTable(t, 8, sstable.WriterOptions{BlockSize: 24, BlockRestartInterval: 2, Compression: compress.None, Checksum: checksum.CRC32C}),
		seedTable(t, 1, sstable.WriterOptions{Checksum: checksum.XXHash64}),
		seedTable(t, 2, sstable.WriterOptions{BlockSize: 1, IndexPartitionSize: 1, BloomBitsPerKey: 10,
			Compression: compress.None, Checksum: checksum.CRC32C}),
	}
}

func TestSSTSeedsDump(t *testing.T) {
	// The seeds are valid tables: the dumper must accept them, so the
	// fuzzer starts from inputs that reach every section.
	for i, seed := range sstSeeds(t) {
		fs := writeMemFile(t, "t.sst", seed)
		var out bytes.Buffer
		d := sstDumper{w: &out}
		require.NoError(t, d.dump(context.Background(), fs, "t.sst", true, -1), "seed %d", i)
		require.Contains(t, out.String(), "entries\n")
		if i == 3 {
			require.Contains(t, out.String(), "partition 1", "the partitioned seed has two partitions")
		}
	}
}

// FuzzSSTDump dumps a seed table with patch written over it at off, less
// cut bytes at the end. Every file can still be expressed (off 0, the file
// as patch, cut what remains of the seed), but the fuzzer now minimizes
// only the patch: minimizing takes executions that grow with the square of
// the length of the input's bytes, and a whole table is at least 550 bytes
// (most of them the properties block), which stalled the fuzzer for up to a
// minute per new interesting input.
func FuzzSSTDump(f *testing.F) {
	seeds := sstSeeds(f)
	for i, seed := range seeds {
		f.Add(uint8(i), uint16(0), uint16(0), []byte(nil))
		// The footer's checksum type, the last block's trailer, a cut.
		f.Add(uint8(i), uint16(len(seed)-sstable.FooterLen), uint16(0), []byte{9})
		f.Add(uint8(i), uint16(len(seed)-sstable.FooterLen-2), uint16(0), []byte{0x5a})
		f.Add(uint8(i), uint16(0), uint16(sstable.FooterLen+1), []byte(nil))
	}
	f.Fuzz(func(t *testing.T, seed uint8, off, cut uint16, patch []byte) {
		checkSSTDump(t, patchFile(seeds[int(seed)%len(seeds)], int(off), int(cut), patch))
	})
}

// patchFile returns orig with patch written over it at off (modulo
// len(orig)+1; the file grows if the patch runs past its end), less cut
// bytes at the end (modulo its length+1).
func patchFile(orig []byte, off, cut int, patch []byte) []byte {
	off %= len(orig) + 1
	data := make([]byte, max(len(orig), off+len(patch)))
	copy(data, orig)
	copy(data[off:], patch)
	return data[:len(data)-cut%(len(data)+1)]
}

func TestPatchFile(t *testing.T) {
	orig := []byte("abcdef")
	for _, tc := range []struct {
		off, cut int
		patch    string
		want     string
	}{
		{0, 0, "", "abcdef"},
		{2, 0, "XY", "abXYef"},
		{5, 0, "XYZ", "abcdeXYZ"},
		{6, 0, "X", "abcdefX"},
		{7, 0, "X", "Xbcdef"}, // off modulo 7
		{0, 2, "", "abcd"},
		{0, 6, "", ""},
		{0, 0, "a file longer than the seed", "a file longer than the seed"},
		{0, 3, "XYZ", "XYZ"}, // any shorter file: the rest cut
	} {
		require.Equal(t, tc.want, string(patchFile(orig, tc.off, tc.cut, []byte(tc.patch))), "%+v", tc)
	}
}

func checkSSTDump(t *testing.T, data []byte) {
	fs := writeMemFile(t, "t.sst", data)
	d := sstDumper{w: io.Discard}
	err := d.dump(context.Background(), fs, "t.sst", true, -1)
	if err != nil && !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("a damaged table gave an error not marked corruption: %v", err)
	}
}

// seedLog returns a log of n batches of one to four small entries, every
// third a deletion. How the log format spans blocks is the wal package's
// to fuzz (FuzzWALRecord); the dumper's own work is per record.
func seedLog(t testing.TB, n int) []byte {
	var buf bytes.Buffer
	w := wal.NewWriter(&buf)
	seq := base.SeqNum(1)
	for i := range n {
		b := batch.New()
		for j := range i%4 + 1 {
			key := []byte(fmt.Sprintf("k%d.%d", i, j))
			if j == 2 {
				b.Delete(key)
			} else {
				b.Set(key, bytes.Repeat([]byte{'v'}, 1+(i*j*7)%10))
			}
		}
		b.SetSeqNum(seq)
		seq += base.SeqNum(b.Count())
		_, err := w.WriteRecord(b.Repr())
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func walSeeds(t testing.TB) [][]byte {
	return [][]byte{seedLog(t, 1), seedLog(t, 4), {}}
}

func TestWALSeedsDump(t *testing.T) {
	for i, seed := range walSeeds(t) {
		fs := writeMemFile(t, "t.log", seed)
		var out bytes.Buffer
		d := walDumper{w: &out}
		require.NoError(t, d.dump(fs, "t.log"), "seed %d", i)
		require.Contains(t, out.String(), "the log ends cleanly")
	}
}

// maxWALDumpInput bounds FuzzWALDump's inputs. The fuzzer's mutations grow
// inputs by up to a kilobyte at a time, and minimizing an input takes
// executions that grow with the square of its length: 3 KB inputs stalled
// a 5-minute run for a minute at a time. 512 bytes hold dozens of records;
// logs that span blocks are FuzzWALRecord's.
const maxWALDumpInput = 512

func FuzzWALDump(f *testing.F) {
	for _, seed := range walSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxWALDumpInput {
			return
		}
		checkWALDump(t, data)
	})
}

func checkWALDump(t *testing.T, data []byte) {
	fs := writeMemFile(t, "t.log", data)
	d := walDumper{w: io.Discard, values: true}
	err := d.dump(fs, "t.log")
	if err != nil && !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("a damaged log gave an error not marked corruption: %v", err)
	}
}

// TestDumpRegressions runs the fuzz checks on the large inputs the fuzzers
// once kept, moved out of testdata/fuzz so that the fuzzers do not spend
// their time minimizing mutations of them.
func TestDumpRegressions(t *testing.T) {
	for dir, check := range map[string]func(*testing.T, []byte){"sst": checkSSTDump, "wal": checkWALDump} {
		paths, err := filepath.Glob(filepath.Join("testdata", "dump-regressions", dir, "*"))
		require.NoError(t, err)
		require.NotEmpty(t, paths)
		for _, p := range paths {
			t.Run(dir+"/"+filepath.Base(p), func(t *testing.T) {
				data, err := os.ReadFile(p)
				require.NoError(t, err)
				check(t, data)
			})
		}
	}
}
