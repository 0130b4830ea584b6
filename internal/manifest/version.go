package manifest

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
)

// NumLevels is the number of levels of the LSM tree, L0 to L6. Part of the
// file format (a MANIFEST names levels by number); do not change.
const NumLevels = 7

// ChecksumFuncCRC32C is FileMetadata.FileChecksumFunc for a whole-file
// CRC-32C, RocksDB's name for its built-in file checksum. Part of the file
// format; do not change.
const ChecksumFuncCRC32C = "FileChecksumCrc32c"

// FileMetadata describes one table file. Apart from CompactionInProgress it
// is immutable once it is in a Version: versions share FileMetadata values,
// so a change would show in every version holding the file.
//
// Safe for concurrent reads of the immutable fields;
// CompactionInProgress is guarded by the engine's mutex.
type FileMetadata struct {
	// FileNum names the table file (TableFileName).
	FileNum FileNum
	// Size is the file's length in bytes.
	Size uint64
	// Smallest and Largest are the file's first and last internal keys. The
	// FileMetadata owns their user keys (decoding copies them), and nothing
	// may modify them.
	Smallest, Largest base.InternalKey
	// SmallestSeqNum and LargestSeqNum bound the sequence numbers of the
	// file's entries.
	SmallestSeqNum, LargestSeqNum base.SeqNum
	// FileChecksum is the whole-file checksum, as FileChecksumFunc computes
	// it; for ChecksumFuncCRC32C it is the raw (unmasked) CRC-32C in 4 bytes,
	// big-endian, as RocksDB stores it. Owned by the FileMetadata.
	FileChecksum []byte
	// FileChecksumFunc names the checksum function; "" means unknown, and
	// verification skips the file.
	FileChecksumFunc string
	// HasRangeDels records that the table has a range deletion block, so
	// that readers learn which tables' tombstones to load without opening
	// every table. Encoded as the new-file tag (101 instead of 100).
	HasRangeDels bool
	// GlobalSeqNum, when not 0, is the sequence number of every entry of
	// the file, whatever the file itself holds: an ingested table (written
	// outside the database with sequence number 0) takes one sequence number
	// when it is ingested, and its readers substitute it for every key's
	// and tombstone's (RocksDB's global seqno). Encoded as tag 102.
	GlobalSeqNum base.SeqNum

	// CompactionInProgress is runtime state, never encoded: whether a
	// compaction has the file among its inputs. It is guarded by the
	// engine's mutex; the compaction picker reads it and the engine sets it
	// from picking a compaction until its edit is applied or abandoned.
	CompactionInProgress bool

	// TableCache is runtime state, never encoded, that belongs to the
	// engine's table cache: when the cache keeps every table open, it
	// holds the file's open table, which a reader holding a version that
	// lists the file uses without looking it up or referencing it (as
	// RocksDB keeps table readers in FileMetaData with max_open_files=-1).
	TableCache atomic.Value
}

// String formats the file as "000042:[a#5,SET-c#3,SET]".
func (f *FileMetadata) String() string {
	return fmt.Sprintf("%s:[%s-%s]", f.FileNum, f.Smallest, f.Largest)
}

// Overlaps reports whether the file's user-key range [Smallest.UserKey,
// Largest.UserKey] intersects [smallest, largest]. A nil bound is
// unbounded. The bounds are only read during the call.
func (f *FileMetadata) Overlaps(smallest, largest []byte) bool {
	return f.OverlapsCmp(nil, smallest, largest)
}

// OverlapsCmp is Overlaps with user keys ordered by cmp (bytewise when
// nil).
func (f *FileMetadata) OverlapsCmp(cmp base.Compare, smallest, largest []byte) bool {
	return (largest == nil || base.CompareUser(cmp, f.Smallest.UserKey, largest) <= 0) &&
		(smallest == nil || base.CompareUser(cmp, f.Largest.UserKey, smallest) >= 0)
}

// Version is the set of live tables at one point: the result of applying
// every edit of the MANIFEST so far. A Version is immutable, and readers Ref
// it to keep its files alive while they read, so they never wait for writers:
// a new edit makes a new Version.
//
// Ref and Unref are safe for concurrent use; everything else only reads
// immutable state and is safe for concurrent use too.
type Version struct {
	// Levels holds the files of each level. L0 is ordered newest first (by
	// LargestSeqNum descending, then FileNum descending), and its files may
	// overlap. L1 and below are sorted by Smallest, and their files' user-key
	// ranges do not overlap (no user key is in two files of a level). The
	// slices are shared between versions: never modify them.
	Levels [NumLevels][]*FileMetadata
	// Cmp orders user keys; nil is bytewise. A VersionSet gives its
	// versions its comparer's.
	Cmp base.Compare

	refs atomic.Int32
	// rangeDels caches HasRangeDels: 0 not computed, 1 no, 2 yes.
	rangeDels atomic.Uint32

	// vs is the VersionSet whose live list holds the version, or nil for a
	// version built by hand (tests). prev and next link the live list and are
	// guarded by vs.mu.
	vs         *VersionSet
	prev, next *Version
}

// Ref adds a reference. The version's files stay live (see
// VersionSet.LiveFileNums) until every reference is dropped. On a version of
// a VersionSet, Ref is only valid while the caller holds a reference (as it
// does for one from Current): a version whose last reference was dropped has
// left the live list and cannot be revived. A version built by hand starts
// with no references.
func (v *Version) Ref() {
	if n := v.refs.Add(1); n <= 1 && v.vs != nil {
		// Reviving an unreferenced version would let its files be deleted
		// under a reader.
		_ = base.AssertionFailedf("manifest: Ref of unreferenced version (refs now %d)", n)
	}
}

// Unref drops a reference. Dropping the last one removes the version from
// its VersionSet's live list, so its files may become obsolete.
func (v *Version) Unref() {
	n := v.refs.Add(-1)
	switch {
	case n < 0:
		_ = base.AssertionFailedf("manifest: Unref of unreferenced version (refs now %d)", n)
	case n == 0 && v.vs != nil:
		v.vs.unlinkVersion(v)
	}
}

// Refs returns the number of references, for tests and debugging.
func (v *Version) Refs() int32 { return v.refs.Load() }

// HasRangeDels reports whether any file of the version has range
// tombstones (FileMetadata.HasRangeDels). It scans the files once and caches
// the answer, so a reader's "no tombstones here" check is one atomic load.
func (v *Version) HasRangeDels() bool {
	switch v.rangeDels.Load() {
	case 1:
		return false
	case 2:
		return true
	}
	has := false
	for _, files := range v.Levels {
		for _, f := range files {
			has = has || f.HasRangeDels
		}
	}
	if has {
		v.rangeDels.Store(2)
	} else {
		v.rangeDels.Store(1)
	}
	return has
}

// NumFiles returns the number of files in level.
func (v *Version) NumFiles(level int) int { return len(v.Levels[level]) }

// LevelSize returns the total size in bytes of the files in level.
func (v *Version) LevelSize(level int) uint64 {
	var n uint64
	for _, f := range v.Levels[level] {
		n += f.Size
	}
	return n
}

// Overlaps returns the files of level whose user-key ranges intersect the
// inclusive range [smallest, largest]. A nil bound is unbounded (use a
// non-nil empty slice for the empty key); the bounds are not retained. The
// result is a new slice, owned by the caller, in the level's order; the
// files are the version's.
//
// For L0, whose files overlap one another, the range grows to cover every
// file found and the search repeats until it stops growing, as LevelDB does:
// the result then holds every L0 file that overlaps another one it holds, so
// moving them down together never leaves an older version of a key above a
// newer one.
func (v *Version) Overlaps(level int, smallest, largest []byte) []*FileMetadata {
	files := v.Levels[level]
	if level == 0 {
		return overlapsL0(v.Cmp, files, smallest, largest)
	}
	// The files are sorted and disjoint, so the ones that overlap are
	// consecutive: from the first whose Largest is >= smallest up to the last
	// whose Smallest is <= largest.
	i := 0
	if smallest != nil {
		i, _ = slices.BinarySearchFunc(files, smallest, func(f *FileMetadata, k []byte) int {
			if base.CompareUser(v.Cmp, f.Largest.UserKey, k) < 0 {
				return -1
			}
			return 1
		})
	}
	j := i
	for j < len(files) && (largest == nil || base.CompareUser(v.Cmp, files[j].Smallest.UserKey, largest) <= 0) {
		j++
	}
	if i == j {
		return nil
	}
	return slices.Clone(files[i:j])
}

func overlapsL0(cmp base.Compare, files []*FileMetadata, smallest, largest []byte) []*FileMetadata {
	var out []*FileMetadata
	for i := 0; i < len(files); {
		f := files[i]
		i++
		if !f.OverlapsCmp(cmp, smallest, largest) {
			continue
		}
		grew := false
		if smallest != nil && base.CompareUser(cmp, f.Smallest.UserKey, smallest) < 0 {
			smallest, grew = f.Smallest.UserKey, true
		}
		if largest != nil && base.CompareUser(cmp, f.Largest.UserKey, largest) > 0 {
			largest, grew = f.Largest.UserKey, true
		}
		if grew {
			// Files skipped so far may overlap the grown range.
			out, i = out[:0], 0
			continue
		}
		out = append(out, f)
	}
	return out
}

// CheckConsistency checks the invariants of the version's levels: every
// file's Smallest <= Largest and SmallestSeqNum <= LargestSeqNum with both
// keys' sequence numbers in that range; L0 ordered newest first; L1 and below
// sorted with disjoint user-key ranges; no file number in two places. It
// returns an error describing the first violation.
func (v *Version) CheckConsistency() error {
	seen := make(map[FileNum]int)
	for level := range v.Levels {
		if err := checkLevel(v.Cmp, level, v.Levels[level], seen); err != nil {
			return err
		}
	}
	return nil
}

// checkLevel checks one level; seen maps file numbers to the level they were
// found in, across calls.
func checkLevel(cmp base.Compare, level int, files []*FileMetadata, seen map[FileNum]int) error {
	for i, f := range files {
		if f == nil {
			return errors.Newf("manifest: L%d: nil file at index %d", level, i)
		}
		if prev, ok := seen[f.FileNum]; ok {
			return errors.Newf("manifest: file %s is in L%d and in L%d", f.FileNum, prev, level)
		}
		seen[f.FileNum] = level
		if err := checkFile(cmp, f); err != nil {
			return errors.Wrapf(err, "manifest: L%d", level)
		}
		if i == 0 {
			continue
		}
		prev := files[i-1]
		if level == 0 {
			if !l0Less(prev, f) {
				return errors.Newf("manifest: L0 out of order: %s (seqs %d-%d) before %s (seqs %d-%d); want newest first",
					prev, prev.SmallestSeqNum, prev.LargestSeqNum, f, f.SmallestSeqNum, f.LargestSeqNum)
			}
			continue
		}
		// A range-deletion sentinel excludes its user key: a table whose
		// tombstones end at k may precede one that starts at k.
		if c := base.CompareUser(cmp, prev.Largest.UserKey, f.Smallest.UserKey); c > 0 || (c == 0 && !prev.Largest.IsExclusiveSentinel()) {
			return errors.Newf("manifest: L%d files overlap or are out of order: %s before %s", level, prev, f)
		}
	}
	return nil
}

func checkFile(cmp base.Compare, f *FileMetadata) error {
	if base.CompareInternalWith(cmp, f.Smallest, f.Largest) > 0 {
		return errors.Newf("file %s: smallest key after largest", f)
	}
	return checkFileSeqs(f)
}

// checkFileSeqs is checkFile without the order of the keys, which only the
// database's comparer knows: what VersionEdit.Decode can check.
func checkFileSeqs(f *FileMetadata) error {
	if f.SmallestSeqNum > f.LargestSeqNum {
		return errors.Newf("file %s: smallest seqnum %d > largest seqnum %d", f, f.SmallestSeqNum, f.LargestSeqNum)
	}
	for _, k := range [2]base.InternalKey{f.Smallest, f.Largest} {
		if k.IsExclusiveSentinel() {
			// Bounds a range tombstone's end; its sequence number is none
			// of the file's.
			continue
		}
		if s := k.SeqNum(); s < f.SmallestSeqNum || s > f.LargestSeqNum {
			return errors.Newf("file %s: key %s outside seqnum range %d-%d", f, k, f.SmallestSeqNum, f.LargestSeqNum)
		}
	}
	return nil
}

// l0Less is L0's order: newest (highest LargestSeqNum) first, ties broken by
// the higher file number, the later flush.
func l0Less(a, b *FileMetadata) bool {
	if a.LargestSeqNum != b.LargestSeqNum {
		return a.LargestSeqNum > b.LargestSeqNum
	}
	return a.FileNum > b.FileNum
}

// sortLevel sorts a level's files into its order (see Version.Levels).
func sortLevel(cmp base.Compare, level int, files []*FileMetadata) {
	if level == 0 {
		slices.SortFunc(files, func(a, b *FileMetadata) int {
			switch {
			case l0Less(a, b):
				return -1
			case l0Less(b, a):
				return 1
			}
			return 0
		})
		return
	}
	slices.SortFunc(files, func(a, b *FileMetadata) int {
		if c := base.CompareInternalWith(cmp, a.Smallest, b.Smallest); c != 0 {
			return c
		}
		return compareFileNum(a.FileNum, b.FileNum)
	})
}

func compareFileNum(a, b FileNum) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// String lists the files, one per line, level by level:
//
//	L0 000012 size=1024 ["a"#12,SET-"m"#11,SET] seqs=11-12
func (v *Version) String() string {
	var b strings.Builder
	for level, files := range v.Levels {
		for _, f := range files {
			fmt.Fprintf(&b, "L%d %s size=%d [%s-%s] seqs=%d-%d\n",
				level, f.FileNum, f.Size, f.Smallest, f.Largest, f.SmallestSeqNum, f.LargestSeqNum)
		}
	}
	return b.String()
}
