package base

// InternalKV is one entry of an internal iterator: an internal key and its
// value. Both point into memory the iterator owns and are valid only until the
// iterator is next positioned or closed; copy them to keep them.
type InternalKV struct {
	K InternalKey
	V []byte
}

// InternalIterator iterates over internal keys in CompareInternal order: every
// version of every user key, tombstones included. Memtables, tables, levels
// and merging iterators implement it; the DB iterator builds snapshot
// visibility on top.
//
// Each positioning method returns the entry it moved to, or nil when the
// iterator is exhausted or an error occurred; Error tells which. An iterator
// is not safe for concurrent use.
type InternalIterator interface {
	// SeekGE moves to the first entry whose user key is >= key.
	SeekGE(key []byte) *InternalKV
	// SeekLT moves to the last entry whose user key is < key.
	SeekLT(key []byte) *InternalKV
	// First moves to the first entry.
	First() *InternalKV
	// Last moves to the last entry.
	Last() *InternalKV
	// Next moves to the following entry. It may be called after SeekLT or
	// Last as well as after a forward move; calling it on an exhausted
	// iterator returns nil.
	Next() *InternalKV
	// Prev moves to the preceding entry.
	Prev() *InternalKV
	// Error returns the error that stopped the iterator, if any.
	Error() error
	// Close releases the iterator's resources and returns its error. The
	// iterator must not be used afterwards.
	Close() error
}
