package manifest

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/shaledb/shale/internal/base"
)

// file returns a table's metadata with user keys smallest and largest at
// sequence numbers seqLo (smallest) and seqHi (largest), swapped when the
// user keys are equal so that Smallest sorts first, and a CRC-32C checksum
// derived from the number so that round trips carry one.
func file(num FileNum, smallest, largest string, seqLo, seqHi base.SeqNum) *FileMetadata {
	seqS, seqL := seqLo, seqHi
	if smallest == largest {
		seqS, seqL = seqHi, seqLo
	}
	sum := binary.BigEndian.AppendUint32(nil, crc32.Checksum([]byte(num.String()), crc32.MakeTable(crc32.Castagnoli)))
	return &FileMetadata{
		FileNum:          num,
		Size:             uint64(num) * 100,
		Smallest:         base.MakeInternalKey([]byte(smallest), seqS, base.KindSet),
		Largest:          base.MakeInternalKey([]byte(largest), seqL, base.KindSet),
		SmallestSeqNum:   seqLo,
		LargestSeqNum:    seqHi,
		FileChecksum:     sum,
		FileChecksumFunc: ChecksumFuncCRC32C,
	}
}

// version builds a version from files per level, sorting each level.
func version(levels map[int][]*FileMetadata) *Version {
	v := &Version{}
	for level, files := range levels {
		v.Levels[level] = append([]*FileMetadata(nil), files...)
		sortLevel(nil, level, v.Levels[level])
	}
	return v
}

// fileNums returns the numbers of files, in order.
func fileNums(files []*FileMetadata) []FileNum {
	var out []FileNum
	for _, f := range files {
		out = append(out, f.FileNum)
	}
	return out
}
