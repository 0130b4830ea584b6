// Package merging merges several base.InternalIterators into one, for the
// read path (memtables over levels) and for compaction.
//
// # Contract
//
// The merged iterator yields every entry of every child, in
// base.CompareInternal order. Nothing is dropped or deduplicated: shadowed
// versions and tombstones pass through for the layer above to resolve.
// Entries with equal internal keys in different children (which the engine
// never produces, as sequence numbers are unique) come in child order going
// forward, the earlier child in the argument list first, and in reverse
// child order going backward, so that Next and Prev traverse one sequence.
//
// Bounds belong to the children: the merged iterator has none of its own.
//
// The first error a child reports (a positioning call returning nil with a
// non-nil Error) stops the merged iterator for good: that call and every
// later positioning call return nil, Error returns the error, and Close
// returns it after closing every child.
//
// Once Next or Prev has run off either end, or a seek found nothing, the
// merged iterator is exhausted: Next and Prev return nil until it is
// positioned again with a seek, First or Last. The merged iterator never
// calls Next or Prev on an exhausted child, so it works with children
// whether they restart or stay exhausted there.
//
// # Algorithm
//
// A binary heap of the children that have an entry, ordered by their
// current entries: a min-heap while moving forward and a max-heap while
// moving backward, as in LevelDB's MergingIterator and pebble's mergingIter.
// Next advances the child at the top and sifts it down: O(log k) for k
// children. Two common cases cost less: a heap of one child is not ordered
// at all (one level after a full compaction, the memtables empty or
// exhausted), and a top child that stays on top (consecutive entries from the
// largest level) costs one comparison, against the first of the root's two
// children, which is remembered from the previous step as only the top
// moved. Changing direction re-positions every child other than the one at
// the top on the other side of the current entry — one Next or Prev for a
// child with an entry, First or Last for an exhausted one (all of whose
// entries are then on the other side) — and rebuilds the heap, O(k).
//
// Positioning allocates nothing; Init reuses the iterator's memory for a new
// set of children.
package merging
