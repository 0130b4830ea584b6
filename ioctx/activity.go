package ioctx

import "strconv"

// Activity says which operation a file read serves. It is RocksDB's
// Env::IOActivity: public reads are tagged with their API's activity, and
// flush, compaction and DB open tag their own reads, so latency can be broken
// down per activity and a filesystem can tell reads apart.
//
// The zero value is ActivityUnknown. Numeric values are shale's own (see the
// package doc); [Activity.RocksDBValue] gives RocksDB's.
type Activity uint8

// The activities of RocksDB at the newest main read (see the spec, §1.2), in
// RocksDB's order.
const (
	ActivityUnknown Activity = iota
	ActivityFlush
	ActivityCompaction
	ActivityDBOpen
	ActivityGet
	ActivityMultiGet
	ActivityDBIterator
	ActivityVerifyDBChecksum
	ActivityVerifyFileChecksums
	ActivityGetEntity
	ActivityMultiGetEntity
	ActivityGetFileChecksumsFromCurrentManifest
	ActivityLazyResolve

	// NumActivities bounds the named activities; arrays indexed by Activity
	// have this length.
	NumActivities
)

var activityNames = [NumActivities]string{
	ActivityUnknown:             "Unknown",
	ActivityFlush:               "Flush",
	ActivityCompaction:          "Compaction",
	ActivityDBOpen:              "DBOpen",
	ActivityGet:                 "Get",
	ActivityMultiGet:            "MultiGet",
	ActivityDBIterator:          "DBIterator",
	ActivityVerifyDBChecksum:    "VerifyDBChecksum",
	ActivityVerifyFileChecksums: "VerifyFileChecksums",
	ActivityGetEntity:           "GetEntity",
	ActivityMultiGetEntity:      "MultiGetEntity",
	ActivityGetFileChecksumsFromCurrentManifest: "GetFileChecksumsFromCurrentManifest",
	ActivityLazyResolve:                         "LazyResolve",
}

// String returns RocksDB's name for the activity (Env::IOActivityToString),
// for example "Get", "VerifyDBChecksum" or "Unknown"; "Invalid" for a value
// that names no activity.
func (a Activity) String() string {
	if a < NumActivities {
		return activityNames[a]
	}
	return "Invalid"
}

// EnvName returns the activity as RocksDB's C++ enumerator is spelled in its
// error messages, for example "Env::IOActivity::kGet".
func (a Activity) EnvName() string {
	return "Env::IOActivity::k" + a.String()
}

// RocksDBValue returns the activity's value in RocksDB's enum at its newest
// main (kFlush=0 … kLazyResolve=11, kUnknown=0xFF), for tools that compare
// shale's output with RocksDB's.
func (a Activity) RocksDBValue() uint8 {
	if a == ActivityUnknown || a >= NumActivities {
		return 0xFF
	}
	return uint8(a - 1)
}

// Priority is the rate-limiter priority a read is charged at (RocksDB's
// Env::IOPriority). The zero value is PriorityTotal, which means "not
// charged" for a read and "the sum over all priorities" for a query.
type Priority uint8

// Priorities. The limiter serves PriorityUser first, then High, Mid and Low
// with RocksDB's fairness rule.
const (
	PriorityTotal Priority = iota
	PriorityLow
	PriorityMid
	PriorityHigh
	PriorityUser

	// NumPriorities bounds the priorities; arrays indexed by Priority have
	// this length.
	NumPriorities
)

var priorityNames = [NumPriorities]string{
	PriorityTotal: "Total",
	PriorityLow:   "Low",
	PriorityMid:   "Mid",
	PriorityHigh:  "High",
	PriorityUser:  "User",
}

// String returns the priority's name, "Low", "Mid", "High", "User" or
// "Total".
func (p Priority) String() string {
	if p < NumPriorities {
		return priorityNames[p]
	}
	return "Priority(" + strconv.Itoa(int(p)) + ")"
}

// Charged reports whether a read at this priority is charged to a rate
// limiter: every priority but Total is.
func (p Priority) Charged() bool { return p != PriorityTotal && p < NumPriorities }
