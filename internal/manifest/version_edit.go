package manifest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
)

// Tags of the VersionEdit encoding; see the package doc for the layout of
// each field. Part of the file format; do not change. 2, 3, 4 and 6 are
// LevelDB's numbers for the same fields; 100 is shale's own new-file record,
// which carries what LevelDB's (7) lacks: sequence numbers and the whole-file
// checksum.
const (
	// tagComparator is LevelDB's kComparator: the name of the database's
	// key order, in the first edit of a MANIFEST; absent means bytewise.
	tagComparator     = 1
	tagLogNumber      = 2
	tagNextFileNumber = 3
	tagLastSeqNum     = 4
	tagDeletedFile    = 6
	tagNewFile        = 100
	// tagNewFileRangeDels is tagNewFile for a table with range tombstones
	// (FileMetadata.HasRangeDels); same layout.
	tagNewFileRangeDels = 101
	// tagNewFileGlobalSeqNum is tagNewFile for an ingested table, whose
	// entries all take FileMetadata.GlobalSeqNum: the layout of 100, then
	// a varint of flags (bit 0: HasRangeDels; the others must be 0) and the
	// varint global sequence number (not 0).
	tagNewFileGlobalSeqNum = 102
)

// newFileFlagRangeDels is the flag of tagNewFileGlobalSeqNum for a table
// with range tombstones. Part of the file format; do not change.
const newFileFlagRangeDels = 1

// maxChecksumLen bounds FileMetadata.FileChecksum, and maxChecksumFuncLen
// FileMetadata.FileChecksumFunc, so a corrupt length cannot make Decode keep
// a large allocation. Part of the file format; do not change.
const (
	maxChecksumLen     = 64
	maxChecksumFuncLen = 64
	// maxComparerNameLen bounds VersionEdit.ComparerName.
	maxComparerNameLen = 256
)

// DeletedFileEntry names a file an edit removes from a level. A plain value,
// safe to copy and share.
type DeletedFileEntry struct {
	Level   int
	FileNum FileNum
}

// NewFileEntry is a file an edit adds to a level. A plain value; Meta
// follows FileMetadata's rules.
type NewFileEntry struct {
	Level int
	Meta  *FileMetadata
}

// VersionEdit is the difference between two versions: files deleted and
// added, and updates of the VersionSet's counters. The MANIFEST is a log of
// encoded edits. Within an edit, deletions apply before additions, so an edit
// can move a file between levels (a trivial move) by deleting it from one and
// adding it to another.
//
// A VersionEdit is not safe for concurrent use.
type VersionEdit struct {
	// ComparerName, when not empty, names the database's key order
	// (tagComparator). Only a MANIFEST's first edit carries it, and only for
	// a non-bytewise order.
	ComparerName string
	// LogNumber, when HasLogNumber: WALs numbered below it are obsolete,
	// their data being in tables.
	LogNumber    FileNum
	HasLogNumber bool
	// NextFileNumber, when HasNextFileNumber: the next file number to
	// allocate. Every number below it may be in use.
	NextFileNumber    FileNum
	HasNextFileNumber bool
	// LastSeqNum, when HasLastSeqNum: the last sequence number assigned.
	LastSeqNum    base.SeqNum
	HasLastSeqNum bool

	// DeletedFiles lists the files removed, by level. Only the keys matter
	// (the values are true); a map so an entry cannot repeat.
	DeletedFiles map[DeletedFileEntry]bool
	// NewFiles lists the files added. Once the edit is applied the
	// FileMetadata belong to the versions holding them and must not be
	// modified (except CompactionInProgress, see FileMetadata).
	NewFiles []NewFileEntry
}

// SetLogNumber sets LogNumber and HasLogNumber.
func (e *VersionEdit) SetLogNumber(n FileNum) { e.LogNumber, e.HasLogNumber = n, true }

// SetNextFileNumber sets NextFileNumber and HasNextFileNumber.
func (e *VersionEdit) SetNextFileNumber(n FileNum) { e.NextFileNumber, e.HasNextFileNumber = n, true }

// SetLastSeqNum sets LastSeqNum and HasLastSeqNum.
func (e *VersionEdit) SetLastSeqNum(s base.SeqNum) { e.LastSeqNum, e.HasLastSeqNum = s, true }

// DeleteFile records the removal of file n from level.
func (e *VersionEdit) DeleteFile(level int, n FileNum) {
	if e.DeletedFiles == nil {
		e.DeletedFiles = make(map[DeletedFileEntry]bool)
	}
	e.DeletedFiles[DeletedFileEntry{Level: level, FileNum: n}] = true
}

// AddFile records the addition of f to level.
func (e *VersionEdit) AddFile(level int, f *FileMetadata) {
	e.NewFiles = append(e.NewFiles, NewFileEntry{Level: level, Meta: f})
}

// sortedDeletions returns DeletedFiles ordered by level, then file number,
// so the encoding of an edit does not depend on map iteration order.
func (e *VersionEdit) sortedDeletions() []DeletedFileEntry {
	return slices.SortedFunc(maps.Keys(e.DeletedFiles), func(a, b DeletedFileEntry) int {
		if a.Level != b.Level {
			return a.Level - b.Level
		}
		return compareFileNum(a.FileNum, b.FileNum)
	})
}

// Encode appends the edit's encoding (see the package doc) to dst and
// returns the extended slice, which belongs to the caller. Deleted files are encoded in (level, file
// number) order, new files in the order of NewFiles, so equal edits encode
// to equal bytes. Encode does not validate the edit; VersionSet.LogAndApply
// does before it writes one.
func (e *VersionEdit) Encode(dst []byte) []byte {
	if e.ComparerName != "" {
		dst = binary.AppendUvarint(dst, tagComparator)
		dst = binary.AppendUvarint(dst, uint64(len(e.ComparerName)))
		dst = append(dst, e.ComparerName...)
	}
	if e.HasLogNumber {
		dst = binary.AppendUvarint(dst, tagLogNumber)
		dst = binary.AppendUvarint(dst, uint64(e.LogNumber))
	}
	if e.HasNextFileNumber {
		dst = binary.AppendUvarint(dst, tagNextFileNumber)
		dst = binary.AppendUvarint(dst, uint64(e.NextFileNumber))
	}
	if e.HasLastSeqNum {
		dst = binary.AppendUvarint(dst, tagLastSeqNum)
		dst = binary.AppendUvarint(dst, uint64(e.LastSeqNum))
	}
	for _, d := range e.sortedDeletions() {
		dst = binary.AppendUvarint(dst, tagDeletedFile)
		dst = binary.AppendUvarint(dst, uint64(d.Level))
		dst = binary.AppendUvarint(dst, uint64(d.FileNum))
	}
	for _, nf := range e.NewFiles {
		f := nf.Meta
		if f.GlobalSeqNum != 0 {
			dst = binary.AppendUvarint(dst, tagNewFileGlobalSeqNum)
		} else if f.HasRangeDels {
			dst = binary.AppendUvarint(dst, tagNewFileRangeDels)
		} else {
			dst = binary.AppendUvarint(dst, tagNewFile)
		}
		dst = binary.AppendUvarint(dst, uint64(nf.Level))
		dst = binary.AppendUvarint(dst, uint64(f.FileNum))
		dst = binary.AppendUvarint(dst, f.Size)
		dst = binary.AppendUvarint(dst, uint64(f.Smallest.Size()))
		dst = f.Smallest.Append(dst)
		dst = binary.AppendUvarint(dst, uint64(f.Largest.Size()))
		dst = f.Largest.Append(dst)
		dst = binary.AppendUvarint(dst, uint64(f.SmallestSeqNum))
		dst = binary.AppendUvarint(dst, uint64(f.LargestSeqNum))
		dst = binary.AppendUvarint(dst, uint64(len(f.FileChecksum)))
		dst = append(dst, f.FileChecksum...)
		dst = binary.AppendUvarint(dst, uint64(len(f.FileChecksumFunc)))
		dst = append(dst, f.FileChecksumFunc...)
		if f.GlobalSeqNum != 0 {
			var flags uint64
			if f.HasRangeDels {
				flags |= newFileFlagRangeDels
			}
			dst = binary.AppendUvarint(dst, flags)
			dst = binary.AppendUvarint(dst, uint64(f.GlobalSeqNum))
		}
	}
	return dst
}

// Decode replaces e with the edit encoded in data. Every byte of data must
// belong to a field: an unknown tag, a field cut short, a value out of range
// (a level >= NumLevels, a sequence number above base.MaxSeqNum, a malformed
// key) or a field that repeats gives an error marked base.ErrCorruption that
// names the problem and its byte offset in data. Decode copies what it keeps:
// data may be reused once it returns.
func (e *VersionEdit) Decode(data []byte) error {
	*e = VersionEdit{}
	d := decoder{data: data}
	for len(d.data) > d.off {
		start := d.off
		tag, err := d.uvarint("tag")
		if err != nil {
			return err
		}
		switch tag {
		case tagComparator:
			name, err := d.bytes("comparator name", maxComparerNameLen)
			if err != nil {
				return err
			}
			if e.ComparerName != "" {
				return d.errorf(start, "repeated comparator name")
			}
			if len(name) == 0 {
				return d.errorf(start, "empty comparator name")
			}
			e.ComparerName = string(name)
		case tagLogNumber, tagNextFileNumber, tagLastSeqNum:
			v, err := d.uvarint(tagName(tag))
			if err != nil {
				return err
			}
			var has *bool
			switch tag {
			case tagLogNumber:
				e.LogNumber, has = FileNum(v), &e.HasLogNumber
			case tagNextFileNumber:
				e.NextFileNumber, has = FileNum(v), &e.HasNextFileNumber
			case tagLastSeqNum:
				if v > uint64(base.MaxSeqNum) {
					return d.errorf(start, "last seqnum %d above the maximum %d", v, base.MaxSeqNum)
				}
				e.LastSeqNum, has = base.SeqNum(v), &e.HasLastSeqNum
			}
			if *has {
				return d.errorf(start, "repeated %s", tagName(tag))
			}
			*has = true
		case tagDeletedFile:
			level, err := d.level()
			if err != nil {
				return err
			}
			n, err := d.uvarint("deleted file number")
			if err != nil {
				return err
			}
			df := DeletedFileEntry{Level: level, FileNum: FileNum(n)}
			if e.DeletedFiles[df] {
				return d.errorf(start, "file %s deleted from L%d twice", df.FileNum, level)
			}
			e.DeleteFile(level, df.FileNum)
		case tagNewFile, tagNewFileRangeDels:
			nf, err := d.newFile(start)
			if err != nil {
				return err
			}
			nf.Meta.HasRangeDels = tag == tagNewFileRangeDels
			e.NewFiles = append(e.NewFiles, nf)
		case tagNewFileGlobalSeqNum:
			nf, err := d.newFile(start)
			if err != nil {
				return err
			}
			if err := d.globalSeqNum(start, nf.Meta); err != nil {
				return err
			}
			e.NewFiles = append(e.NewFiles, nf)
		default:
			return d.errorf(start, "unknown tag %d", tag)
		}
	}
	return nil
}

func tagName(tag uint64) string {
	switch tag {
	case tagLogNumber:
		return "log number"
	case tagNextFileNumber:
		return "next file number"
	case tagLastSeqNum:
		return "last seqnum"
	case tagDeletedFile:
		return "deleted file"
	case tagNewFile:
		return "new file"
	case tagNewFileGlobalSeqNum:
		return "new ingested file"
	}
	return fmt.Sprintf("tag %d", tag)
}

// decoder reads the fields of an encoded edit. Its errors are marked
// base.ErrCorruption.
type decoder struct {
	data []byte
	off  int
}

func (d *decoder) errorf(off int, format string, args ...any) error {
	return base.CorruptionErrorf("manifest: version edit: %s at offset %d", fmt.Sprintf(format, args...), off)
}

func (d *decoder) uvarint(what string) (uint64, error) {
	v, n := binary.Uvarint(d.data[d.off:])
	switch {
	case n == 0:
		return 0, d.errorf(d.off, "truncated %s", what)
	case n < 0:
		return 0, d.errorf(d.off, "%s overflows 64 bits", what)
	}
	d.off += n
	return v, nil
}

func (d *decoder) level() (int, error) {
	off := d.off
	v, err := d.uvarint("level")
	if err != nil {
		return 0, err
	}
	if v >= NumLevels {
		return 0, d.errorf(off, "level %d out of range (levels 0-%d)", v, NumLevels-1)
	}
	return int(v), nil
}

func (d *decoder) seqNum(what string) (base.SeqNum, error) {
	off := d.off
	v, err := d.uvarint(what)
	if err != nil {
		return 0, err
	}
	if v > uint64(base.MaxSeqNum) {
		return 0, d.errorf(off, "%s %d above the maximum %d", what, v, base.MaxSeqNum)
	}
	return base.SeqNum(v), nil
}

// bytes reads a length-prefixed byte string of at most max bytes; the result
// aliases d.data.
func (d *decoder) bytes(what string, max uint64) ([]byte, error) {
	off := d.off
	n, err := d.uvarint(what + " length")
	if err != nil {
		return nil, err
	}
	if n > max {
		return nil, d.errorf(off, "%s length %d above the maximum %d", what, n, max)
	}
	if n > uint64(len(d.data)-d.off) {
		return nil, d.errorf(off, "truncated %s: length %d, %d bytes left", what, n, len(d.data)-d.off)
	}
	b := d.data[d.off : d.off+int(n)]
	d.off += int(n)
	return b, nil
}

func (d *decoder) key(what string) (base.InternalKey, error) {
	off := d.off
	b, err := d.bytes(what, math.MaxUint64)
	if err != nil {
		return base.InternalKey{}, err
	}
	k, ok := base.DecodeInternalKey(b)
	if !ok {
		return base.InternalKey{}, d.errorf(off, "%s of %d bytes is shorter than a key trailer", what, len(b))
	}
	// A table's bounds may be range tombstone keys (see package sstable).
	if !k.Valid() && k.Kind() != base.KindRangeDelete {
		return base.InternalKey{}, d.errorf(off, "%s has unknown kind %d", what, k.Trailer&0xff)
	}
	return k.Clone(), nil
}

func (d *decoder) newFile(start int) (NewFileEntry, error) {
	level, err := d.level()
	if err != nil {
		return NewFileEntry{}, err
	}
	f := &FileMetadata{}
	n, err := d.uvarint("file number")
	if err != nil {
		return NewFileEntry{}, err
	}
	if n == 0 {
		return NewFileEntry{}, d.errorf(start, "new file with number 0")
	}
	f.FileNum = FileNum(n)
	if f.Size, err = d.uvarint("file size"); err != nil {
		return NewFileEntry{}, err
	}
	if f.Smallest, err = d.key("smallest key"); err != nil {
		return NewFileEntry{}, err
	}
	if f.Largest, err = d.key("largest key"); err != nil {
		return NewFileEntry{}, err
	}
	if f.SmallestSeqNum, err = d.seqNum("smallest seqnum"); err != nil {
		return NewFileEntry{}, err
	}
	if f.LargestSeqNum, err = d.seqNum("largest seqnum"); err != nil {
		return NewFileEntry{}, err
	}
	sum, err := d.bytes("file checksum", maxChecksumLen)
	if err != nil {
		return NewFileEntry{}, err
	}
	fn, err := d.bytes("file checksum function", maxChecksumFuncLen)
	if err != nil {
		return NewFileEntry{}, err
	}
	switch {
	case len(fn) == 0 && len(sum) != 0:
		return NewFileEntry{}, d.errorf(start, "file %s has a %d-byte checksum but no checksum function", f.FileNum, len(sum))
	case string(fn) == ChecksumFuncCRC32C && len(sum) != 4:
		return NewFileEntry{}, d.errorf(start, "file %s has a %d-byte %s checksum, want 4 bytes", f.FileNum, len(sum), fn)
	}
	if len(sum) > 0 {
		f.FileChecksum = bytes.Clone(sum)
	}
	f.FileChecksumFunc = string(fn)
	if err := checkFileSeqs(f); err != nil {
		return NewFileEntry{}, d.errorf(start, "%s", err)
	}
	return NewFileEntry{Level: level, Meta: f}, nil
}

// globalSeqNum reads the fields tagNewFileGlobalSeqNum adds to a new file's:
// its flags and its global sequence number, which every entry of the file
// takes, so the file's sequence number range must be that one number.
func (d *decoder) globalSeqNum(start int, f *FileMetadata) error {
	off := d.off
	flags, err := d.uvarint("new file flags")
	if err != nil {
		return err
	}
	if flags&^newFileFlagRangeDels != 0 {
		return d.errorf(off, "file %s has unknown flags %#x", f.FileNum, flags&^newFileFlagRangeDels)
	}
	f.HasRangeDels = flags&newFileFlagRangeDels != 0
	if f.GlobalSeqNum, err = d.seqNum("global seqnum"); err != nil {
		return err
	}
	switch {
	case f.GlobalSeqNum == 0:
		return d.errorf(start, "ingested file %s has global seqnum 0", f.FileNum)
	case f.SmallestSeqNum != f.GlobalSeqNum || f.LargestSeqNum != f.GlobalSeqNum:
		return d.errorf(start, "ingested file %s has seqnums %d-%d, but its global seqnum is %d",
			f.FileNum, f.SmallestSeqNum, f.LargestSeqNum, f.GlobalSeqNum)
	}
	return nil
}

// String describes the edit, one field or file a line, for tests and
// debugging.
func (e *VersionEdit) String() string {
	var b strings.Builder
	if e.ComparerName != "" {
		fmt.Fprintf(&b, "comparator: %s\n", e.ComparerName)
	}
	if e.HasLogNumber {
		fmt.Fprintf(&b, "log-number: %s\n", e.LogNumber)
	}
	if e.HasNextFileNumber {
		fmt.Fprintf(&b, "next-file-number: %s\n", e.NextFileNumber)
	}
	if e.HasLastSeqNum {
		fmt.Fprintf(&b, "last-seqnum: %d\n", e.LastSeqNum)
	}
	for _, d := range e.sortedDeletions() {
		fmt.Fprintf(&b, "deleted: L%d %s\n", d.Level, d.FileNum)
	}
	for _, nf := range e.NewFiles {
		f := nf.Meta
		fmt.Fprintf(&b, "added: L%d %s size=%d [%s-%s] seqs=%d-%d", nf.Level, f.FileNum, f.Size,
			f.Smallest, f.Largest, f.SmallestSeqNum, f.LargestSeqNum)
		if f.FileChecksumFunc != "" {
			fmt.Fprintf(&b, " %s=%x", f.FileChecksumFunc, f.FileChecksum)
		}
		if f.GlobalSeqNum != 0 {
			fmt.Fprintf(&b, " global-seqnum=%d range-dels=%t", f.GlobalSeqNum, f.HasRangeDels)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// versionBuilder accumulates edits on top of a base version and builds the
// result once, so replaying a long MANIFEST costs one sort per level rather
// than one version per edit. Not safe for concurrent use.
type versionBuilder struct {
	base    *Version
	baseSet [NumLevels]map[FileNum]bool // file numbers of base's levels, built on demand
	deleted [NumLevels]map[FileNum]bool // files of base deleted
	added   [NumLevels]map[FileNum]*FileMetadata
}

func newVersionBuilder(base *Version) *versionBuilder { return &versionBuilder{base: base} }

func (b *versionBuilder) inBase(level int, n FileNum) bool {
	if b.baseSet[level] == nil {
		b.baseSet[level] = make(map[FileNum]bool, len(b.base.Levels[level]))
		for _, f := range b.base.Levels[level] {
			b.baseSet[level][f.FileNum] = true
		}
	}
	return b.baseSet[level][n] && !b.deleted[level][n]
}

// apply adds e's changes: deletions first, then additions. It fails, leaving
// b partly changed, when e deletes a file that is not in its level, adds one
// that already is, or names a level out of range; callers then discard b.
func (b *versionBuilder) apply(e *VersionEdit) error {
	for _, d := range e.sortedDeletions() {
		if d.Level < 0 || d.Level >= NumLevels {
			return errors.Newf("manifest: edit deletes file %s from level %d, out of range", d.FileNum, d.Level)
		}
		switch {
		case b.added[d.Level][d.FileNum] != nil:
			delete(b.added[d.Level], d.FileNum)
		case b.inBase(d.Level, d.FileNum):
			if b.deleted[d.Level] == nil {
				b.deleted[d.Level] = make(map[FileNum]bool)
			}
			b.deleted[d.Level][d.FileNum] = true
		default:
			return errors.Newf("manifest: edit deletes file %s from L%d, which does not hold it", d.FileNum, d.Level)
		}
	}
	for _, nf := range e.NewFiles {
		if nf.Level < 0 || nf.Level >= NumLevels {
			return errors.Newf("manifest: edit adds a file to level %d, out of range", nf.Level)
		}
		f := nf.Meta
		if f == nil {
			return errors.Newf("manifest: edit adds a nil file to L%d", nf.Level)
		}
		if b.added[nf.Level][f.FileNum] != nil || b.inBase(nf.Level, f.FileNum) {
			return errors.Newf("manifest: edit adds file %s to L%d, which already holds it", f.FileNum, nf.Level)
		}
		if b.added[nf.Level] == nil {
			b.added[nf.Level] = make(map[FileNum]*FileMetadata)
		}
		b.added[nf.Level][f.FileNum] = f
	}
	return nil
}

// build returns the new version (with no references) and which levels
// differ from the base's. Unchanged levels share the base's slices.
func (b *versionBuilder) build() (v *Version, changed [NumLevels]bool) {
	v = &Version{Cmp: b.base.Cmp}
	for level := range v.Levels {
		baseFiles := b.base.Levels[level]
		if len(b.deleted[level]) == 0 && len(b.added[level]) == 0 {
			v.Levels[level] = baseFiles
			continue
		}
		changed[level] = true
		files := make([]*FileMetadata, 0, len(baseFiles)-len(b.deleted[level])+len(b.added[level]))
		for _, f := range baseFiles {
			if !b.deleted[level][f.FileNum] {
				files = append(files, f)
			}
		}
		for _, f := range b.added[level] {
			files = append(files, f)
		}
		sortLevel(v.Cmp, level, files)
		if len(files) == 0 {
			files = nil
		}
		v.Levels[level] = files
	}
	return v, changed
}

// checkChanged checks the consistency of v's changed levels, and that no
// file of a changed level appears in any other level: what CheckConsistency
// would find wrong with v, given that its unchanged levels were consistent.
func checkChanged(v *Version, changed [NumLevels]bool) error {
	seen := make(map[FileNum]int)
	for level := range v.Levels {
		if changed[level] {
			if err := checkLevel(v.Cmp, level, v.Levels[level], seen); err != nil {
				return err
			}
		}
	}
	if len(seen) == 0 {
		return nil
	}
	for level := range v.Levels {
		if changed[level] {
			continue
		}
		for _, f := range v.Levels[level] {
			if l, ok := seen[f.FileNum]; ok {
				return errors.Newf("manifest: file %s is in L%d and in L%d", f.FileNum, l, level)
			}
		}
	}
	return nil
}
