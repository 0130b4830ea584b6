package compact

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
)

// grandparentOverlapFactor times the output's target file size is how many
// bytes of grandparents an output file may overlap before ShouldStopBefore
// cuts it, and the most a trivial move may overlap (LevelDB's
// MaxGrandParentOverlapBytes).
const grandparentOverlapFactor = 10

// Compaction is one compaction: input files from Level and OutputLevel,
// merged and written as new files into OutputLevel.
//
// A Compaction refers to the files of the version it was picked from: its
// inputs, which the engine marks CompactionInProgress so that they stay in
// every version until the compaction's edit, and, for their metadata only,
// the files below. The exported fields are read-only after Pick.
// ShouldStopBefore and FinishOutput keep state: a Compaction is not safe for
// concurrent use.
type Compaction struct {
	// Level is the input level; OutputLevel is Level+1, except for a
	// manual compaction (PickManual), which skips levels empty in its range
	// and compacts the last level into itself.
	Level, OutputLevel int
	// Inputs are the files of Level (Inputs[0]) and of OutputLevel
	// (Inputs[1]) that the compaction reads and replaces.
	Inputs [2][]*manifest.FileMetadata
	// Grandparents are the files of OutputLevel+1 that overlap the
	// compaction's range; ShouldStopBefore cuts outputs by them.
	Grandparents []*manifest.FileMetadata
	// Smallest and Largest bound the user keys of the inputs (inclusive).
	// They alias the input files' keys.
	Smallest, Largest []byte
	// Score is the score of Level when the compaction was picked.
	Score float64
	// Manual is set for a compaction from PickManual.
	Manual bool
	// TrivialMove is set when the compaction can move its single input file
	// to OutputLevel with a manifest edit alone: nothing in OutputLevel
	// overlaps it, and it overlaps few enough grandparents that the move
	// does not make a later compaction expensive. Manual compactions are
	// never trivial moves: they are asked to rewrite data.
	TrivialMove bool
	// Bottommost is set when no file below OutputLevel overlaps the range,
	// so every key not in the inputs exists nowhere below.
	Bottommost bool

	version               *manifest.Version
	targetFileSize        uint64
	maxGrandparentOverlap uint64

	// ShouldStopBefore's state: the first grandparent that may still
	// overlap the current output, the grandparent bytes the current output
	// overlaps, and whether any key was seen.
	gpIndex    int
	overlapped uint64
	seenKey    bool
}

// Scores returns the compaction score of each level: for L0 the number of
// files divided by L0CompactionTrigger, for L1 to L5 the total size divided
// by MaxBytesForLevel. The last level is never compacted into another and
// scores 0. A level with score >= 1 needs compacting. Files already being
// compacted (CompactionInProgress) do not count, as in RocksDB, so that a
// running compaction is not picked again for the same excess; read them
// under the engine's mutex.
func Scores(v *manifest.Version, opts Options) [manifest.NumLevels]float64 {
	opts = opts.WithDefaults()
	var s [manifest.NumLevels]float64
	for level := 0; level < manifest.NumLevels-1; level++ {
		var n int
		var size uint64
		for _, f := range v.Levels[level] {
			if !f.CompactionInProgress {
				n++
				size += f.Size
			}
		}
		if level == 0 {
			s[level] = float64(n) / float64(opts.L0CompactionTrigger)
		} else {
			s[level] = float64(size) / float64(opts.MaxBytesForLevel(level))
		}
	}
	return s
}

// Pick chooses the next compaction, or returns nil when no level needs one
// or every level that does is blocked by running compactions. It tries the
// levels with score >= 1 from the highest score down, and in each the seeds
// in order: for L0 the oldest file first, taking with it every L0 file that
// overlaps it (transitively, see Version.Overlaps); for L1 and below the
// file that overlaps the fewest bytes in the next level relative to its own
// size (pebble's min-overlapping-ratio, which keeps write amplification
// low). The inputs then take every overlapping file of the output level,
// and grow within the input level when that adds no output-level file and
// stays under MaxCompactionBytes (LevelDB's expansion).
//
// A compaction is never picked if any file it would read is
// CompactionInProgress. Because inputs always include whole overlapping
// files, the key range of a picked compaction holds no output-level file
// that is not one of its inputs; so two compactions picked while the engine
// keeps their files marked have disjoint inputs and disjoint output ranges,
// and may run at the same time. The engine marks every input file
// CompactionInProgress (under its mutex, before releasing it) and clears
// the marks when the compaction's edit is applied or abandoned.
func Pick(v *manifest.Version, opts Options) *Compaction {
	opts = opts.WithDefaults()
	scores := Scores(v, opts)
	levels := make([]int, manifest.NumLevels-1)
	for i := range levels {
		levels[i] = i
	}
	slices.SortStableFunc(levels, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
	for _, level := range levels {
		if scores[level] < 1 {
			break
		}
		for _, seed := range seeds(v, level) {
			var inputs []*manifest.FileMetadata
			if level == 0 {
				inputs = v.Overlaps(0, bound(seed.Smallest.UserKey), bound(seed.Largest.UserKey))
			} else {
				inputs = []*manifest.FileMetadata{seed}
			}
			if c := newCompaction(v, opts, level, level+1, inputs, false); c != nil {
				c.Score = scores[level]
				return c
			}
		}
	}
	return nil
}

// seeds returns the files of level a compaction may start from, best
// first. Files being compacted are left out.
func seeds(v *manifest.Version, level int) []*manifest.FileMetadata {
	var out []*manifest.FileMetadata
	files := v.Levels[level]
	if level == 0 {
		for i := len(files) - 1; i >= 0; i-- { // oldest first
			if !files[i].CompactionInProgress {
				out = append(out, files[i])
			}
		}
		return out
	}
	type scored struct {
		f     *manifest.FileMetadata
		ratio float64
	}
	var ss []scored
	for _, f := range files {
		if f.CompactionInProgress {
			continue
		}
		overlap := totalSize(v.Overlaps(level+1, bound(f.Smallest.UserKey), bound(f.Largest.UserKey)))
		ss = append(ss, scored{f, float64(overlap) / float64(max(f.Size, 1))})
	}
	// Stable: among equal ratios, the level's key order.
	slices.SortStableFunc(ss, func(a, b scored) int { return cmp.Compare(a.ratio, b.ratio) })
	for _, s := range ss {
		out = append(out, s.f)
	}
	return out
}

// PickManual returns a compaction of the files of level that overlap the
// user-key range [start, end] (nil bounds are unbounded: nil, nil is the
// whole level), for compacting the range through the whole tree, as the
// engine's Compact does one level at a time from L0 down. Its output level
// is the first level below level that holds data in the inputs' key range,
// or the last level when none does (and the last level compacts into
// itself, to drop deleted and overwritten data there). The levels in
// between are empty in that range, so skipping them keeps the tree ordered
// and saves rewriting the data once per empty level: a full compaction of a
// freshly loaded L0 goes straight to the bottom.
//
// The compaction includes every file of level in the range (for L0,
// transitively) and every overlapping file of the output level, with Pick's
// expansion; its size is not bounded, and it is never a trivial move. It
// returns nil when level has no file in [start, end], and otherwise only
// when a file it needs is being compacted: one of the inputs, or a file of
// the output level anywhere in the inputs' key range, which can reach well
// beyond [start, end]. The engine tells the cases apart with
// Version.Overlaps, and in the second waits for running compactions and
// asks again. level must be in [0, NumLevels); start and end are not
// retained.
func PickManual(v *manifest.Version, opts Options, level int, start, end []byte) *Compaction {
	if level < 0 || level >= manifest.NumLevels {
		return nil
	}
	opts = opts.WithDefaults()
	inputs := v.Overlaps(level, start, end)
	if len(inputs) == 0 {
		return nil
	}
	out := level
	if level < manifest.NumLevels-1 {
		smallest, largest := keyRange(v.Cmp, inputs, nil)
		for out = level + 1; out < manifest.NumLevels-1 && len(v.Overlaps(out, smallest, largest)) == 0; out++ {
		}
	}
	c := newCompaction(v, opts, level, out, inputs, true)
	if c != nil {
		c.Score = Scores(v, opts)[level]
	}
	return c
}

// newCompaction completes a compaction of inputs (files of level), or
// returns nil if a file it needs is being compacted.
func newCompaction(v *manifest.Version, opts Options, level, out int, inputs []*manifest.FileMetadata, manual bool) *Compaction {
	if inProgress(inputs) {
		return nil
	}
	smallest, largest := keyRange(v.Cmp, inputs, nil)
	var outInputs []*manifest.FileMetadata
	if out != level {
		outInputs = v.Overlaps(out, smallest, largest)
		if inProgress(outInputs) {
			return nil
		}
	}
	if len(outInputs) > 0 {
		// Take more of level when that adds no file of the output level: the
		// extra input costs little, as its output-level overlap is read
		// anyway.
		s, l := keyRange(v.Cmp, inputs, outInputs)
		grown := v.Overlaps(level, s, l)
		if len(grown) > len(inputs) && !inProgress(grown) &&
			totalSize(grown)+totalSize(outInputs) <= opts.MaxCompactionBytes {
			gs, gl := keyRange(v.Cmp, grown, nil)
			if len(v.Overlaps(out, gs, gl)) == len(outInputs) {
				inputs = grown
			}
		}
	}
	c := &Compaction{
		Level:          level,
		OutputLevel:    out,
		Inputs:         [2][]*manifest.FileMetadata{inputs, outInputs},
		Manual:         manual,
		version:        v,
		targetFileSize: opts.TargetFileSize(out),
	}
	c.maxGrandparentOverlap = satMul(c.targetFileSize, grandparentOverlapFactor)
	c.Smallest, c.Largest = keyRange(v.Cmp, inputs, outInputs)
	if out+1 < manifest.NumLevels {
		c.Grandparents = v.Overlaps(out+1, c.Smallest, c.Largest)
	}
	// Bottommost when no level below the output overlaps; Grandparents is
	// the first of them.
	c.Bottommost = len(c.Grandparents) == 0
	for l := out + 2; l < manifest.NumLevels && c.Bottommost; l++ {
		c.Bottommost = len(v.Overlaps(l, c.Smallest, c.Largest)) == 0
	}
	c.TrivialMove = !manual && out != level && len(inputs) == 1 && len(outInputs) == 0 &&
		totalSize(c.Grandparents) <= c.maxGrandparentOverlap
	return c
}

func inProgress(files []*manifest.FileMetadata) bool {
	for _, f := range files {
		if f.CompactionInProgress {
			return true
		}
	}
	return false
}

func totalSize(files []*manifest.FileMetadata) uint64 {
	var n uint64
	for _, f := range files {
		n += f.Size
	}
	return n
}

// keyRange returns the smallest and largest user keys of the files in a and
// b; nil, nil when there are none.
func keyRange(cmp base.Compare, a, b []*manifest.FileMetadata) (smallest, largest []byte) {
	first := true
	for _, files := range [2][]*manifest.FileMetadata{a, b} {
		for _, f := range files {
			if first || base.CompareUser(cmp, f.Smallest.UserKey, smallest) < 0 {
				smallest = bound(f.Smallest.UserKey)
			}
			if first || base.CompareUser(cmp, f.Largest.UserKey, largest) > 0 {
				largest = bound(f.Largest.UserKey)
			}
			first = false
		}
	}
	return smallest, largest
}

// bound returns a user key for use as a range bound: never nil, since a nil
// bound means unbounded to Version.Overlaps, while a nil user key is the
// empty key.
func bound(userKey []byte) []byte {
	if userKey == nil {
		return []byte{}
	}
	return userKey
}

// TargetFileSize returns the size at which the engine closes an output file
// (at the next change of user key) and starts another.
func (c *Compaction) TargetFileSize() uint64 { return c.targetFileSize }

// ShouldStopBefore reports whether the engine should close the current
// output file before adding key, because the output already overlaps more
// than 10 times TargetFileSize bytes of grandparents (LevelDB's rule): a
// later compaction of such a file into OutputLevel+1 would rewrite all of
// them. key is only read during the call. Call it with each new user key
// in ascending order before adding it
// (and cut only where the user key changes, so that no user key spans two
// files of a level). When it returns true, key starts the next output; when
// the engine closes an output for another reason, it calls FinishOutput.
func (c *Compaction) ShouldStopBefore(key []byte) bool {
	for c.gpIndex < len(c.Grandparents) && base.CompareUser(c.version.Cmp, key, c.Grandparents[c.gpIndex].Largest.UserKey) > 0 {
		if c.seenKey {
			c.overlapped += c.Grandparents[c.gpIndex].Size
		}
		c.gpIndex++
	}
	c.seenKey = true
	if c.overlapped > c.maxGrandparentOverlap {
		c.overlapped = 0
		return true
	}
	return false
}

// FinishOutput tells the compaction that the engine closed the current
// output for a reason of its own (its size reached TargetFileSize), so the
// grandparent overlap counts afresh for the next one. The key last passed
// to ShouldStopBefore counts as the first of the next output.
func (c *Compaction) FinishOutput() { c.overlapped = 0 }

// KeyNotExistsBeyondOutputLevel reports whether no file below OutputLevel
// can hold userKey: then a tombstone for it that no snapshot needs can be
// dropped, since there is nothing left for it to delete. It is always true
// for a Bottommost compaction. userKey is only read during the call. It
// reads only the version's immutable files, so unlike ShouldStopBefore it
// is safe for concurrent use.
func (c *Compaction) KeyNotExistsBeyondOutputLevel(userKey []byte) bool {
	if c.Bottommost {
		return true
	}
	for level := c.OutputLevel + 1; level < manifest.NumLevels; level++ {
		files := c.version.Levels[level]
		i, _ := slices.BinarySearchFunc(files, userKey, func(f *manifest.FileMetadata, k []byte) int {
			if base.CompareUser(c.version.Cmp, f.Largest.UserKey, k) < 0 {
				return -1
			}
			return 1
		})
		if i < len(files) && base.CompareUser(c.version.Cmp, files[i].Smallest.UserKey, userKey) <= 0 {
			return false
		}
	}
	return true
}

// Edit returns the version edit that installs the compaction's result:
// every input file deleted, and outputs added to OutputLevel. For a trivial
// move, pass c.Inputs[0] as outputs: the file is then moved, unchanged. The
// FileMetadata in outputs become the new version's.
func (c *Compaction) Edit(outputs []*manifest.FileMetadata) *manifest.VersionEdit {
	e := &manifest.VersionEdit{}
	for _, f := range c.Inputs[0] {
		e.DeleteFile(c.Level, f.FileNum)
	}
	for _, f := range c.Inputs[1] {
		e.DeleteFile(c.OutputLevel, f.FileNum)
	}
	for _, f := range outputs {
		e.AddFile(c.OutputLevel, f)
	}
	return e
}

// String describes the compaction for logs and tests:
//
//	L0->L1 [000012 000011] + [000004] score=1.25 trivial bottommost
func (c *Compaction) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "L%d->L%d [", c.Level, c.OutputLevel)
	for i, files := range c.Inputs {
		if i == 1 {
			b.WriteString("] + [")
		}
		for j, f := range files {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(f.FileNum.String())
		}
	}
	fmt.Fprintf(&b, "] score=%.2f", c.Score)
	if c.Manual {
		b.WriteString(" manual")
	}
	if c.TrivialMove {
		b.WriteString(" trivial")
	}
	if c.Bottommost {
		b.WriteString(" bottommost")
	}
	return b.String()
}
