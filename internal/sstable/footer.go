package sstable

import (
	"encoding/binary"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/sstable/block"
)

// Footer is the decoded footer of a table file (see the package doc for its
// layout). It is a plain value, safe to copy and share.
type Footer struct {
	// Checksum is the checksum type of every block trailer in the file.
	Checksum checksum.Type
	// MetaIndex and Index locate the metaindex and index blocks.
	MetaIndex, Index block.Handle
	// FormatVersion is the table format version: FormatVersion,
	// FormatVersionRangeDel or FormatVersionPartitioned.
	FormatVersion uint32
}

// Encode appends the FooterLen-byte encoding of f to dst and returns the
// extended slice, which belongs to the caller.
func (f Footer) Encode(dst []byte) []byte {
	start := len(dst)
	dst = append(dst, byte(f.Checksum))
	dst = f.MetaIndex.Append(dst)
	dst = f.Index.Append(dst)
	for len(dst)-start < footerVersionOffset {
		dst = append(dst, 0)
	}
	dst = binary.LittleEndian.AppendUint32(dst, f.FormatVersion)
	return binary.LittleEndian.AppendUint64(dst, Magic)
}

// DecodeFooter decodes the footer of a table file of fileSize bytes. b holds
// the end of the file; its last FooterLen bytes are decoded. Anything wrong
// (a short file, a bad magic number, an unknown format version or checksum
// type, a malformed handle, non-zero padding, a block beyond the end of the
// file) is an error marked base.ErrCorruption that names it, as
// "sstable: footer: ...". b is not retained.
func DecodeFooter(b []byte, fileSize uint64) (Footer, error) {
	f, err := decodeFooter(b, fileSize)
	if err != nil {
		return Footer{}, errors.Wrap(err, "sstable: footer")
	}
	return f, nil
}

// decodeFooter is DecodeFooter with errors that say only what is wrong, for
// the caller to prefix with where: DecodeFooter's "sstable: footer", the
// Reader's "sstable: FILE: footer". A prefix of its own would be said twice
// once the Reader names the file.
func decodeFooter(b []byte, fileSize uint64) (Footer, error) {
	if fileSize < FooterLen {
		return Footer{}, base.CorruptionErrorf("file of %d bytes is too short for a %d-byte footer",
			fileSize, FooterLen)
	}
	if len(b) < FooterLen {
		return Footer{}, base.CorruptionErrorf("needs %d bytes, %d given", FooterLen, len(b))
	}
	b = b[len(b)-FooterLen:]
	if magic := binary.LittleEndian.Uint64(b[FooterLen-8:]); magic != Magic {
		return Footer{}, base.CorruptionErrorf("bad magic number %#016x, want %#016x (not a shale table?)", magic, Magic)
	}
	var f Footer
	f.FormatVersion = binary.LittleEndian.Uint32(b[footerVersionOffset:])
	if f.FormatVersion < FormatVersion || f.FormatVersion > FormatVersionPartitioned {
		return Footer{}, base.CorruptionErrorf("unsupported format version %d, want %d to %d",
			f.FormatVersion, FormatVersion, FormatVersionPartitioned)
	}
	f.Checksum = checksum.Type(b[0])
	if !f.Checksum.Supported() {
		return Footer{}, base.CorruptionErrorf("unsupported block checksum type %s (%d)", f.Checksum, b[0])
	}
	handles := b[1:footerVersionOffset]
	var n int
	var err error
	if f.MetaIndex, n, err = block.DecodeHandle(handles); err != nil {
		return Footer{}, errors.Wrap(err, "metaindex handle")
	}
	handles = handles[n:]
	if f.Index, n, err = block.DecodeHandle(handles); err != nil {
		return Footer{}, errors.Wrap(err, "index handle")
	}
	for _, c := range handles[n:] {
		if c != 0 {
			// Non-zero bytes here are as often a handle damaged into a
			// shorter varint as damaged padding: name both handles as read.
			return Footer{}, base.CorruptionErrorf("the %d bytes after metaindex handle %s and index handle %s are not zero padding (a damaged handle or padding): % x",
				len(handles[n:]), f.MetaIndex, f.Index, handles[n:])
		}
	}
	limit := fileSize - FooterLen
	for _, h := range [...]struct {
		name string
		h    block.Handle
	}{{"metaindex", f.MetaIndex}, {"index", f.Index}} {
		if !blockWithin(h.h, limit) {
			return Footer{}, base.CorruptionErrorf("%s block %s with its %d-byte trailer ends beyond the footer at %d",
				h.name, h.h, block.TrailerLen, limit)
		}
	}
	return f, nil
}

// blockWithin reports whether the block h, with its trailer, ends at or
// before limit, without overflowing.
func blockWithin(h block.Handle, limit uint64) bool {
	return h.Offset <= limit && h.Length <= limit-h.Offset && block.TrailerLen <= limit-h.Offset-h.Length
}
