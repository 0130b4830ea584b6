package manifest

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// FileNum numbers the files of a database directory: tables, WALs, MANIFESTs
// and temporary files share one counter (VersionSet.NewFileNum), so a number
// names at most one file of each kind and numbers grow with creation time.
type FileNum uint64

// String formats the number as file names do: at least six digits, zero
// padded ("000042").
func (n FileNum) String() string { return fmt.Sprintf("%06d", uint64(n)) }

// FileKind is the kind of a file in a database directory, as told by its
// name.
type FileKind uint8

const (
	// FileKindUnknown is not a kind: ParseFileName returns it with ok=false.
	FileKindUnknown FileKind = iota
	// FileKindTable is a table: NNNNNN.sst.
	FileKindTable
	// FileKindLog is a write-ahead log: NNNNNN.log.
	FileKindLog
	// FileKindManifest is a MANIFEST: MANIFEST-NNNNNN.
	FileKindManifest
	// FileKindCurrent is the CURRENT file naming the live MANIFEST.
	FileKindCurrent
	// FileKindLock is the LOCK file that keeps a second open out.
	FileKindLock
	// FileKindTemp is a temporary file (NNNNNN.dbtmp) that becomes CURRENT
	// by a rename; one left behind by a crash is garbage.
	FileKindTemp
)

// String returns the kind's name in lower case ("table", "log", ...).
func (k FileKind) String() string {
	switch k {
	case FileKindTable:
		return "table"
	case FileKindLog:
		return "log"
	case FileKindManifest:
		return "manifest"
	case FileKindCurrent:
		return "current"
	case FileKindLock:
		return "lock"
	case FileKindTemp:
		return "temp"
	default:
		return fmt.Sprintf("FileKind(%d)", uint8(k))
	}
}

// The names below are part of the on-disk format (LevelDB's and RocksDB's,
// except that tables are .sst as in RocksDB); do not change them.
const (
	tableSuffix    = ".sst"
	logSuffix      = ".log"
	tempSuffix     = ".dbtmp"
	manifestPrefix = "MANIFEST-"
	currentName    = "CURRENT"
	lockName       = "LOCK"
)

// TableFileName returns dir/NNNNNN.sst.
func TableFileName(dir string, n FileNum) string { return filepath.Join(dir, n.String()+tableSuffix) }

// LogFileName returns dir/NNNNNN.log, the name of WAL n.
func LogFileName(dir string, n FileNum) string { return filepath.Join(dir, n.String()+logSuffix) }

// ManifestFileName returns dir/MANIFEST-NNNNNN.
func ManifestFileName(dir string, n FileNum) string {
	return filepath.Join(dir, manifestPrefix+n.String())
}

// CurrentFileName returns dir/CURRENT.
func CurrentFileName(dir string) string { return filepath.Join(dir, currentName) }

// LockFileName returns dir/LOCK.
func LockFileName(dir string) string { return filepath.Join(dir, lockName) }

// TempFileName returns dir/NNNNNN.dbtmp, the temporary file that is renamed
// over CURRENT.
func TempFileName(dir string, n FileNum) string { return filepath.Join(dir, n.String()+tempSuffix) }

// ParseFileName tells the kind and number of a file from its base name (no
// directory). ok is false for names shale did not create; the engine leaves
// those files alone. Numbers are decimal digits of any length that fit in a
// uint64; CURRENT and LOCK have number 0.
func ParseFileName(base string) (kind FileKind, num FileNum, ok bool) {
	switch {
	case base == currentName:
		return FileKindCurrent, 0, true
	case base == lockName:
		return FileKindLock, 0, true
	case strings.HasPrefix(base, manifestPrefix):
		if n, ok := parseNum(base[len(manifestPrefix):]); ok {
			return FileKindManifest, n, true
		}
		return FileKindUnknown, 0, false
	}
	dot := strings.IndexByte(base, '.')
	if dot < 0 {
		return FileKindUnknown, 0, false
	}
	n, ok := parseNum(base[:dot])
	if !ok {
		return FileKindUnknown, 0, false
	}
	switch base[dot:] {
	case tableSuffix:
		return FileKindTable, n, true
	case logSuffix:
		return FileKindLog, n, true
	case tempSuffix:
		return FileKindTemp, n, true
	}
	return FileKindUnknown, 0, false
}

// parseNum parses a non-empty string of decimal digits (base 10
// ParseUint accepts no sign, prefix or underscore).
func parseNum(s string) (FileNum, bool) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false
	}
	return FileNum(n), true
}
