package statistics

// FileReadHistogram returns the histogram that breaks SSTReadMicros down
// for the file reads of one IO activity, as RocksDB's GetFileReadHistograms
// does: Flush, Compaction and DBOpen map to their own histograms, the five
// user reads (Get, MultiGet, DBIterator, VerifyDBChecksum,
// VerifyFileChecksums) to theirs, and every other activity (Unknown,
// GetEntity, ...) to HistogramNone, so those reads count only in the
// aggregate. The statistics level gates the user-read histograms: at or
// below LevelExceptDetailedTimers a sample for them is not recorded.
//
// The activity is its value in RocksDB's Env::IOActivity (kFlush 0,
// kCompaction 1, kDBOpen 2, kGet 3, kMultiGet 4, kDBIterator 5,
// kVerifyDBChecksum 6, kVerifyFileChecksums 7, kUnknown 0xFF), which
// ioctx.Activity.RocksDBValue returns: callers pass a.RocksDBValue(). This
// package imports nothing of the module, so that every layer can import it,
// and RocksDB's numbering is the key both packages already share. It is
// public so that a driver timing its own reads records them as the engine's
// file reader does.
func FileReadHistogram(ioActivity uint8) Histogram {
	if int(ioActivity) < len(fileReadHistograms) {
		return fileReadHistograms[ioActivity]
	}
	return HistogramNone
}

// fileReadHistograms is indexed by RocksDB's Env::IOActivity value.
var fileReadHistograms = [...]Histogram{
	0: FileReadFlushMicros,
	1: FileReadCompactionMicros,
	2: FileReadDBOpenMicros,
	3: FileReadGetMicros,
	4: FileReadMultiGetMicros,
	5: FileReadDBIteratorMicros,
	6: FileReadVerifyDBChecksumMicros,
	7: FileReadVerifyFileChecksumsMicros,
}
