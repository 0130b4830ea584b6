package manifest

import (
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// testEdits are edits covering every field, alone and together.
func testEdits() map[string]*VersionEdit {
	edits := map[string]*VersionEdit{
		"empty":            {},
		"log-number":       {LogNumber: 7, HasLogNumber: true},
		"comparator":       {ComparerName: base.ReverseBytewiseName, LogNumber: 1, HasLogNumber: true},
		"log-number-zero":  {HasLogNumber: true},
		"next-file-number": {NextFileNumber: 1 << 40, HasNextFileNumber: true},
		"last-seqnum":      {LastSeqNum: base.MaxSeqNum, HasLastSeqNum: true},
		"deleted":          {DeletedFiles: map[DeletedFileEntry]bool{{Level: 6, FileNum: 3}: true, {Level: 0, FileNum: 9}: true}},
		"new-file":         {NewFiles: []NewFileEntry{{Level: 3, Meta: file(12, "a", "z", 1, 100)}}},
		"new-file-no-checksum": {NewFiles: []NewFileEntry{{Level: 0, Meta: &FileMetadata{
			FileNum: 1, Size: 0,
			Smallest: base.MakeInternalKey([]byte{}, 5, base.KindDelete),
			Largest:  base.MakeInternalKey([]byte{}, 5, base.KindDelete), SmallestSeqNum: 5, LargestSeqNum: 5,
		}}}},
		"new-file-other-checksum": {NewFiles: []NewFileEntry{{Level: 1, Meta: &FileMetadata{
			FileNum: 2, Size: 1 << 50,
			Smallest:       base.MakeInternalKey([]byte("\x00\xff"), base.MaxSeqNum, base.KindSet),
			Largest:        base.MakeInternalKey([]byte("\xff\xff\xff"), 0, base.KindDelete),
			SmallestSeqNum: 0, LargestSeqNum: base.MaxSeqNum,
			FileChecksum: []byte("0123456789abcdef0123456789abcdef"), FileChecksumFunc: "xxh3",
		}}}},
	}
	all := &VersionEdit{}
	all.SetLogNumber(11)
	all.SetNextFileNumber(20)
	all.SetLastSeqNum(1000)
	all.DeleteFile(1, 4)
	all.DeleteFile(1, 5)
	all.DeleteFile(2, 6)
	all.AddFile(2, file(14, "c", "f", 30, 40))
	all.AddFile(2, file(13, "a", "b", 20, 25))
	all.AddFile(0, file(19, "k", "l", 999, 1000))
	edits["all"] = all
	edits["ingested"] = ingestEdit()
	return edits
}

// ingestEdit adds two ingested tables (tag 102), one with range tombstones.
func ingestEdit() *VersionEdit {
	e := &VersionEdit{}
	e.SetLastSeqNum(77)
	plain := file(21, "a", "c", 77, 77)
	plain.GlobalSeqNum = 77
	e.AddFile(6, plain)
	dels := file(22, "d", "f", 77, 77)
	dels.Largest = base.MakeRangeDeleteSentinel([]byte("g"))
	dels.HasRangeDels = true
	dels.GlobalSeqNum = 77
	e.AddFile(0, dels)
	return e
}

// TestVersionEditIngestGolden pins the encoding of tag 102 (ingested
// tables) in testdata/version_edit_ingest.bin and its decoding in
// version_edit_ingest.txt. Run with -update to rewrite both.
func TestVersionEditIngestGolden(t *testing.T) {
	e := checkEditGolden(t, "version_edit_ingest", ingestEdit())
	require.Equal(t, base.SeqNum(77), e.NewFiles[0].Meta.GlobalSeqNum)
	require.False(t, e.NewFiles[0].Meta.HasRangeDels)
	require.True(t, e.NewFiles[1].Meta.HasRangeDels)
}

// TestVersionEditIngestDecodeErrors checks that tag 102's own fields are
// validated: unknown flags, a global seqnum of 0, or one that is not the
// file's sequence number range.
func TestVersionEditIngestDecodeErrors(t *testing.T) {
	f := file(5, "a", "b", 9, 9)
	f.GlobalSeqNum = 9
	enc := (&VersionEdit{NewFiles: []NewFileEntry{{Level: 1, Meta: f}}}).Encode(nil)
	n := len(enc)
	require.Equal(t, []byte{0, 9}, enc[n-2:])
	for _, tc := range []struct {
		tail []byte
		msg  string
	}{
		{[]byte{2, 9}, "unknown flags 0x2"},
		{[]byte{0, 0}, "global seqnum 0"},
		{[]byte{0, 8}, "has seqnums 9-9, but its global seqnum is 8"},
		{[]byte{0}, "truncated global seqnum"},
	} {
		data := append(append([]byte(nil), enc[:n-2]...), tc.tail...)
		var e VersionEdit
		err := e.Decode(data)
		require.True(t, base.IsCorruption(err), "%v", err)
		require.ErrorContains(t, err, tc.msg)
	}
}

func TestVersionEditRoundTrip(t *testing.T) {
	for name, e := range testEdits() {
		t.Run(name, func(t *testing.T) {
			enc := e.Encode(nil)
			var got VersionEdit
			require.NoError(t, got.Decode(enc))
			require.Equal(t, e.String(), got.String())
			require.Equal(t, e.HasLogNumber, got.HasLogNumber)
			require.Equal(t, e.LogNumber, got.LogNumber)
			require.Equal(t, e.HasNextFileNumber, got.HasNextFileNumber)
			require.Equal(t, e.NextFileNumber, got.NextFileNumber)
			require.Equal(t, e.HasLastSeqNum, got.HasLastSeqNum)
			require.Equal(t, e.LastSeqNum, got.LastSeqNum)
			require.Equal(t, len(e.DeletedFiles), len(got.DeletedFiles))
			for d := range e.DeletedFiles {
				require.True(t, got.DeletedFiles[d], "%v", d)
			}
			require.Len(t, got.NewFiles, len(e.NewFiles))
			for i, nf := range e.NewFiles {
				g := got.NewFiles[i]
				require.Equal(t, nf.Level, g.Level)
				require.Equal(t, nf.Meta.FileNum, g.Meta.FileNum)
				require.Equal(t, nf.Meta.Size, g.Meta.Size)
				require.Zero(t, base.CompareInternal(nf.Meta.Smallest, g.Meta.Smallest))
				require.Zero(t, base.CompareInternal(nf.Meta.Largest, g.Meta.Largest))
				require.Equal(t, nf.Meta.SmallestSeqNum, g.Meta.SmallestSeqNum)
				require.Equal(t, nf.Meta.LargestSeqNum, g.Meta.LargestSeqNum)
				require.Equal(t, string(nf.Meta.FileChecksum), string(g.Meta.FileChecksum))
				require.Equal(t, nf.Meta.FileChecksumFunc, g.Meta.FileChecksumFunc)
			}
			// The encoding is canonical and Decode does not alias its input.
			require.Equal(t, enc, got.Encode(nil))
			for i := range enc {
				enc[i] = 0xee
			}
			require.Equal(t, e.String(), got.String())
		})
	}
}

// TestVersionEditComparatorEncoding pins the comparator field: LevelDB's
// kComparator tag (1), then the name, length-prefixed, before the other
// fields.
func TestVersionEditComparatorEncoding(t *testing.T) {
	e := &VersionEdit{ComparerName: "rev"}
	e.SetLogNumber(3)
	want, err := hex.DecodeString("0103726576" + "0203")
	require.NoError(t, err)
	require.Equal(t, want, e.Encode(nil))
	var got VersionEdit
	require.NoError(t, got.Decode(want))
	require.Equal(t, "rev", got.ComparerName)
	require.Equal(t, "comparator: rev\nlog-number: 000003\n", got.String())
}

// TestVersionEditDocExample pins the example in the package doc.
func TestVersionEditDocExample(t *testing.T) {
	e := &VersionEdit{}
	e.SetLogNumber(3)
	e.SetNextFileNumber(5)
	e.SetLastSeqNum(9)
	e.DeleteFile(1, 4)
	e.AddFile(2, &FileMetadata{
		FileNum: 4, Size: 100,
		Smallest: base.MakeInternalKey([]byte("a"), 8, base.KindSet),
		Largest:  base.MakeInternalKey([]byte("b"), 9, base.KindSet), SmallestSeqNum: 8, LargestSeqNum: 9,
	})
	want := "02 03  03 05  04 09  06 01 04" +
		"64 02 04 64  09 61 01 08 00 00 00 00 00 00  09 62 01 09 00 00 00 00 00 00" +
		"08 09  00  00"
	wantBytes, err := hex.DecodeString(strings.ReplaceAll(want, " ", ""))
	require.NoError(t, err)
	require.Equal(t, wantBytes, e.Encode(nil))
}

// TestVersionEditGolden checks the encoding of the "all" edit against
// testdata/version_edit.bin, and its decoding against version_edit.txt: a
// format change shows up here. Run with -update to rewrite both.
func TestVersionEditGolden(t *testing.T) {
	checkEditGolden(t, "version_edit", testEdits()["all"])
}

// checkEditGolden checks edit's encoding against testdata/name.bin and
// that file's decoding against testdata/name.txt (with -update, it first
// rewrites both), and returns the decoded golden edit for further checks.
func checkEditGolden(t *testing.T, name string, edit *VersionEdit) *VersionEdit {
	t.Helper()
	binPath := filepath.Join("testdata", name+".bin")
	txtPath := filepath.Join("testdata", name+".txt")
	enc := edit.Encode(nil)
	if *update {
		require.NoError(t, os.WriteFile(binPath, enc, 0o644))
		var e VersionEdit
		require.NoError(t, e.Decode(enc))
		require.NoError(t, os.WriteFile(txtPath, []byte(e.String()), 0o644))
	}
	golden, err := os.ReadFile(binPath)
	require.NoError(t, err)
	require.Equal(t, golden, enc, "encoding changed; the MANIFEST format is frozen")
	wantTxt, err := os.ReadFile(txtPath)
	require.NoError(t, err)
	var e VersionEdit
	require.NoError(t, e.Decode(golden))
	require.Equal(t, string(wantTxt), e.String())
	return &e
}

func TestVersionEditDecodeErrors(t *testing.T) {
	uv := func(vs ...uint64) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.AppendUvarint(b, v)
		}
		return b
	}
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	key := func(k string, seq uint64, kind byte) []byte {
		b := append([]byte(k), 0, 0, 0, 0, 0, 0, 0, 0)
		binary.LittleEndian.PutUint64(b[len(k):], seq<<8|uint64(kind))
		return append(uv(uint64(len(b))), b...)
	}
	// newFile encodes a new-file field with the given pieces after the level
	// and number.
	newFile := func(level, num uint64, rest ...[]byte) []byte {
		return cat(append([][]byte{uv(tagNewFile, level, num)}, rest...)...)
	}
	goodTail := cat(uv(10), key("a", 1, 1), key("b", 2, 1), uv(1, 2), uv(0), uv(0))
	good := newFile(1, 5, goodTail)
	var ok VersionEdit
	require.NoError(t, ok.Decode(good), "the base case must decode")

	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"unknown tag", uv(7, 1), "unknown tag 7 at offset 0"},
		{"unknown tag after field", cat(uv(tagLogNumber, 1), uv(5)), "unknown tag 5 at offset 2"},
		{"empty comparator name", uv(tagComparator, 0), "empty comparator name at offset 0"},
		{"repeated comparator name", cat(uv(tagComparator, 1), []byte("x"), uv(tagComparator, 1), []byte("y")), "repeated comparator name at offset 3"},
		{"comparator name too long", uv(tagComparator, maxComparerNameLen+1), "above the maximum 256"},
		{"truncated comparator name", cat(uv(tagComparator, 4), []byte("ab")), "truncated comparator name"},
		{"truncated tag", []byte{0x80}, "truncated tag at offset 0"},
		{"overflowing tag", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, "tag overflows"},
		{"truncated log number", uv(tagLogNumber), "truncated log number at offset 1"},
		{"truncated next file", cat(uv(tagNextFileNumber), []byte{0x81}), "truncated next file number at offset 1"},
		{"repeated log number", uv(tagLogNumber, 1, tagLogNumber, 2), "repeated log number at offset 2"},
		{"repeated last seqnum", uv(tagLastSeqNum, 1, tagLastSeqNum, 1), "repeated last seqnum"},
		{"last seqnum too big", uv(tagLastSeqNum, uint64(base.MaxSeqNum)+1), "above the maximum"},
		{"deleted level out of range", uv(tagDeletedFile, NumLevels, 1), "level 7 out of range"},
		{"deleted truncated", uv(tagDeletedFile, 1), "truncated deleted file number at offset 2"},
		{"deleted twice", uv(tagDeletedFile, 1, 3, tagDeletedFile, 1, 3), "file 000003 deleted from L1 twice at offset 3"},
		{"new file level", newFile(9, 5, goodTail), "level 9 out of range"},
		{"new file number 0", newFile(1, 0, goodTail), "new file with number 0"},
		{"new file truncated size", newFile(1, 5), "truncated file size"},
		{"new file key too short", newFile(1, 5, uv(10, 3), []byte("abc")), "smallest key of 3 bytes is shorter than a key trailer"},
		{"new file key truncated", newFile(1, 5, uv(10, 9), []byte("abc")), "truncated smallest key: length 9, 3 bytes left"},
		{"new file key bad kind", newFile(1, 5, uv(10), key("a", 1, 7)), "smallest key has unknown kind 7"},
		{"new file seqs reversed", newFile(1, 5, uv(10), key("a", 1, 1), key("b", 2, 1), uv(2, 1, 0, 0)), "smallest seqnum 2 > largest seqnum 1"},
		{"new file key outside seqs", newFile(1, 5, uv(10), key("a", 1, 1), key("b", 9, 1), uv(1, 2, 0, 0)), "outside seqnum range"},
		{"new file seq too big", newFile(1, 5, uv(10), key("a", 1, 1), key("b", 2, 1), uv(1, uint64(base.MaxSeqNum)+1)), "largest seqnum"},
		{"new file checksum too long", newFile(1, 5, uv(10), key("a", 1, 1), key("b", 2, 1), uv(1, 2, 65)), "file checksum length 65 above the maximum 64"},
		{"new file checksum truncated", newFile(1, 5, uv(10), key("a", 1, 1), key("b", 2, 1), uv(1, 2, 4), []byte{1}), "truncated file checksum"},
		{"new file checksum without func", newFile(1, 5, uv(10), key("a", 1, 1), key("b", 2, 1), uv(1, 2, 1), []byte{1}, uv(0)), "checksum but no checksum function"},
		{"new file crc32c wrong length", newFile(1, 5, uv(10), key("a", 1, 1), key("b", 2, 1), uv(1, 2, 2), []byte{1, 2}, uv(uint64(len(ChecksumFuncCRC32C))), []byte(ChecksumFuncCRC32C)), "want 4 bytes"},
		{"new file func truncated", newFile(1, 5, uv(10), key("a", 1, 1), key("b", 2, 1), uv(1, 2, 0, 5), []byte("ab")), "truncated file checksum function"},
		{"good then junk", cat(good, []byte{0}), "unknown tag 0 at offset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e VersionEdit
			err := e.Decode(tc.data)
			require.Error(t, err)
			require.True(t, base.IsCorruption(err), "%v", err)
			require.Contains(t, err.Error(), tc.want)
		})
	}

	// Every proper prefix of a valid encoding is an error (or a shorter valid
	// edit that ends on a field boundary), never a panic.
	enc := testEdits()["all"].Encode(nil)
	for i := range enc {
		var e VersionEdit
		if err := e.Decode(enc[:i]); err != nil {
			require.True(t, base.IsCorruption(err), "prefix %d: %v", i, err)
		}
	}
}

func TestVersionEditDecodeResets(t *testing.T) {
	e := testEdits()["all"]
	require.NoError(t, e.Decode(testEdits()["log-number"].Encode(nil)))
	require.Equal(t, "log-number: 000007\n", e.String())
	require.Nil(t, e.DeletedFiles)
	require.Nil(t, e.NewFiles)
}

func BenchmarkVersionEdit(b *testing.B) {
	e := &VersionEdit{}
	e.SetLogNumber(5)
	e.SetNextFileNumber(1000)
	e.SetLastSeqNum(1 << 30)
	for i := range 20 {
		e.DeleteFile(1, FileNum(i+1))
		e.AddFile(2, file(FileNum(100+i), fmt.Sprintf("key%06d", 2*i), fmt.Sprintf("key%06d", 2*i+1), 1, 2))
	}
	enc := e.Encode(nil)
	b.Run("op=encode/files=40", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(enc)))
		var buf []byte
		for b.Loop() {
			buf = e.Encode(buf[:0])
		}
	})
	b.Run("op=decode/files=40", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(enc)))
		var d VersionEdit
		for b.Loop() {
			if err := d.Decode(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
