package errorfs

import (
	"strconv"
	"strings"

	"github.com/shaledb/shale/ioctx"
)

// OpKind is the kind of a filesystem operation.
type OpKind uint8

// The operations of vfs.FS and vfs.File.
const (
	OpCreate OpKind = iota
	OpOpen
	OpOpenDir
	OpRemove
	OpRename
	OpMkdirAll
	OpList
	OpStat
	OpLock
	OpFileRead  // ReadAt and ReadAtWithOptions
	OpFileWrite // Write
	OpFileSync  // Sync, of a file or of a directory handle
	OpFileClose // Close
	OpFileStat  // File.Stat
	OpFileMap   // Mappable.Map
	OpLink      // vfs.Linker's Link

	numOpKinds
)

var opKindNames = [numOpKinds]string{
	OpCreate:    "Create",
	OpOpen:      "Open",
	OpOpenDir:   "OpenDir",
	OpRemove:    "Remove",
	OpRename:    "Rename",
	OpMkdirAll:  "MkdirAll",
	OpList:      "List",
	OpStat:      "Stat",
	OpLock:      "Lock",
	OpFileRead:  "FileRead",
	OpFileWrite: "FileWrite",
	OpFileSync:  "FileSync",
	OpFileClose: "FileClose",
	OpFileStat:  "FileStat",
	OpFileMap:   "FileMap",
	OpLink:      "Link",
}

// String returns the kind's name without the Op prefix, such as "FileRead".
func (k OpKind) String() string {
	if k < numOpKinds {
		return opKindNames[k]
	}
	return "OpKind(" + strconv.Itoa(int(k)) + ")"
}

// IsRead reports whether operations of this kind only observe the
// filesystem: Open, OpenDir, List, Stat, FileRead, FileStat and FileMap.
//
// Every kind is a read or a write except FileClose, which is neither: it
// releases a handle, whether the handle read or wrote. Select it by kind
// (OnKind(OpFileClose)) to inject close errors.
func (k OpKind) IsRead() bool {
	switch k {
	case OpOpen, OpOpenDir, OpList, OpStat, OpFileRead, OpFileStat, OpFileMap:
		return true
	}
	return false
}

// IsWrite reports whether operations of this kind change the filesystem or
// make changes durable: Create, Remove, Rename, Link, MkdirAll, Lock (which
// creates the lock file), FileWrite and FileSync.
func (k OpKind) IsWrite() bool {
	switch k {
	case OpCreate, OpRemove, OpRename, OpLink, OpMkdirAll, OpLock, OpFileWrite, OpFileSync:
		return true
	}
	return false
}

// Op describes one filesystem operation, as an Injector sees it before the
// operation runs.
type Op struct {
	// Kind is the operation.
	Kind OpKind
	// Path is the name the operation is on, as given to the FS; for a file
	// operation, the name the file was opened with. For a rename, the old
	// name.
	Path string
	// NewPath is the new name of a rename; empty for other kinds.
	NewPath string
	// Offset is the file offset of a FileRead or FileWrite. A write's offset
	// is the number of bytes written through the handle before it.
	Offset int64
	// Len is the length of a FileRead or FileWrite.
	Len int
	// IO holds the options of a FileRead made through ReadAtWithOptions
	// (vfs.ReadAtOptions); it is zero for plain ReadAt and for other kinds.
	IO ioctx.IOOptions
}

// String describes the operation, for example
// "FileRead /db/000001.sst off=4096 len=512 activity=Get priority=User".
func (op Op) String() string {
	var b strings.Builder
	b.WriteString(op.Kind.String())
	b.WriteByte(' ')
	b.WriteString(op.Path)
	if op.Kind == OpRename || op.Kind == OpLink {
		b.WriteString(" -> ")
		b.WriteString(op.NewPath)
	}
	if op.Kind == OpFileRead || op.Kind == OpFileWrite {
		b.WriteString(" off=")
		b.WriteString(strconv.FormatInt(op.Offset, 10))
		b.WriteString(" len=")
		b.WriteString(strconv.Itoa(op.Len))
	}
	if op.IO != (ioctx.IOOptions{}) {
		b.WriteString(" activity=")
		b.WriteString(op.IO.Activity.String())
		b.WriteString(" priority=")
		b.WriteString(op.IO.RateLimiterPriority.String())
		if op.IO.Timeout != 0 {
			b.WriteString(" timeout=")
			b.WriteString(op.IO.Timeout.String())
		}
	}
	return b.String()
}
