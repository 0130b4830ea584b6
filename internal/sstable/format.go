package sstable

// Magic ends every table file: "SHALESST" as a big-endian uint64, stored
// little-endian. Part of the file format; do not change.
const Magic uint64 = 0x5348414c45535354

// FooterLen is the length of the footer at the end of every table file. Part
// of the file format; do not change.
const FooterLen = 53

// FormatVersion is the table format version of a table without range
// tombstones, which this package writes (byte for byte as before range
// deletions existed) and reads. Part of the file format; do not change.
const FormatVersion = 1

// FormatVersionRangeDel is the format version of a table with a range
// deletion block (MetaRangeDelName). A reader that knows only FormatVersion
// rejects such a table instead of reading it without its tombstones. Part of
// the file format; do not change.
const FormatVersionRangeDel = 2

// FormatVersionPartitioned is the format version of a table whose index is
// partitioned: the footer's index handle points at a top-level index whose
// entries name index partitions (and filter partitions), not data blocks
// (see "Partitioned index and filters" in the package doc). A reader that
// knows only the versions before it would take the top-level entries for
// data block handles, so it must refuse such a table. A reader of this
// version reads every earlier one too, and a partitioned table may have a
// range deletion block (the metaindex says so, as for version 2): the
// version names the newest feature a reader needs, and the features
// themselves are found in the table. Part of the file format; do not change.
const FormatVersionPartitioned = 3

// footerVersionOffset is where the format version starts in the footer; the
// bytes between the handles and it are zero. Part of the file format.
const footerVersionOffset = 41

// Meta block names, the keys of the metaindex block. Part of the file format;
// do not change.
const (
	MetaFilterName     = "shale.filter.bloom"
	MetaPropertiesName = "shale.properties"
	MetaRangeDelName   = "shale.rangedel"
)

// Restart intervals. Every index, metaindex and properties entry is a
// restart point, so seeks in them are pure binary searches.
const (
	defaultBlockSize       = 4096
	defaultRestartInterval = 16
	metaRestartInterval    = 1
)
