// Package compact decides what to compact and what a compaction keeps: the
// leveled compaction picker and the compaction iterator. The engine does the
// IO (reading the inputs through a merging iterator, writing the outputs,
// applying the edit); this package holds the rules.
//
// # Leveled compaction
//
// L0 holds flushed memtables, newest first, and its files may overlap. L1
// to L6 each hold files with disjoint user-key ranges, and level n+1 is
// meant to be LevelMultiplier times the size of level n, starting from
// MaxBytesForLevelBase for L1 (static level targets, as LevelDB and RocksDB
// without level_compaction_dynamic_level_bytes).
//
// Each level has a score (Scores): L0's is its number of files over
// L0CompactionTrigger, Ln's its size over its target. Pick compacts the
// level with the highest score of at least 1 into the next one: for L0 an
// old file with every L0 file overlapping it, for Ln the file overlapping
// the fewest bytes of Ln+1 for its size; plus every overlapping file of the
// output level. Outputs are cut at TargetFileSize, and early when an output
// would overlap too much of the level below its own (ShouldStopBefore). A
// single file with nothing under it moves down by a manifest edit alone
// (TrivialMove).
//
// # Using a Compaction
//
// Under its mutex, the engine calls Pick, or PickManual for its Compact
// (one level at a time from L0 down), and marks every file of c.Inputs
// CompactionInProgress. The marks are what keeps the compaction's view
// valid: no other compaction picks a marked file, so the inputs stay in
// every version until this compaction's own edit replaces them, and of the
// other files the Compaction reads only metadata. Then, without the mutex:
//
//	if c.TrivialMove {
//		vs.LogAndApply(c.Edit(c.Inputs[0]))
//	} else {
//		it := compact.NewIter(merged inputs, snapshots, c.KeyNotExistsBeyondOutputLevel)
//		for kv := it.First(); kv != nil; kv = it.Next() {
//			if the user key changed and an output is open {
//				if c.ShouldStopBefore(key) { close the output }
//				else if output size >= c.TargetFileSize() { close it; c.FinishOutput() }
//			}
//			add kv to the output (opening one if needed)
//		}
//		check it.Error(); close the last output and it; vs.LogAndApply(c.Edit(outputs))
//	}
//
// and finally, under the mutex, clears the marks. Outputs must be cut only
// where the user key changes, so that no user key spans two files of a
// level (CheckConsistency of the next version requires it).
//
// # What a compaction drops
//
// The Iter keeps, for each user key, the newest entry, and for each open
// snapshot the newest entry at or below it; everything else is invisible to
// every reader and is dropped. A tombstone is dropped too when no snapshot
// separates it from the oldest data and no level below the output holds its
// key (at the bottommost level, always), along with the older entries it
// hides. See Iter for the precise rule.
package compact
