package engine

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/ioctx"
)

// PropertyPrefix starts the name of every property of the engine: RocksDB's
// property names with "shale." for "rocksdb.".
const PropertyPrefix = "shale."

// The engine's properties (driver.DB.Property), each with the meaning of
// RocksDB's property of the same suffix (db/internal_stats.cc). Values are
// decimal integers unless said otherwise.
const (
	// PropEstimateNumKeys estimates the keys in the database: the entries
	// of the memtables plus, over the tables, their entries less twice
	// their deletions (a deletion hides one older entry), floored at 0.
	// Overwrites and the memtables' deletions are counted as keys, as in
	// RocksDB (shale's memtables do not count their deletions apart).
	PropEstimateNumKeys = "shale.estimate-num-keys"
	// PropNumFilesAtLevelPrefix followed by a level number (0 to 6) is
	// the number of tables at that level.
	PropNumFilesAtLevelPrefix = "shale.num-files-at-level"
	// PropTotalSSTFilesSize is the bytes of the tables of every live
	// version: the current one and those that readers still hold.
	PropTotalSSTFilesSize = "shale.total-sst-files-size"
	// PropLiveSSTFilesSize is the bytes of the current version's tables.
	PropLiveSSTFilesSize = "shale.live-sst-files-size"
	// PropEstimateLiveDataSize estimates the bytes of live data: the
	// tables of a maximal set whose key ranges do not overlap, taken from
	// the last level up (RocksDB's EstimateLiveDataSize).
	PropEstimateLiveDataSize = "shale.estimate-live-data-size"
	// PropCurSizeAllMemTables is the bytes of the mutable and immutable
	// memtables not yet flushed.
	PropCurSizeAllMemTables = "shale.cur-size-all-mem-tables"
	// PropSizeAllMemTables is RocksDB's figure with the flushed memtables
	// that readers still pin; shale does not track those apart (an arena
	// is recycled once its last reader lets go), so it equals
	// PropCurSizeAllMemTables.
	PropSizeAllMemTables = "shale.size-all-mem-tables"
	// PropNumEntriesActiveMemTable is the entries of the mutable memtable.
	PropNumEntriesActiveMemTable = "shale.num-entries-active-mem-table"
	// PropNumEntriesImmMemTables is the entries of the immutable memtables.
	PropNumEntriesImmMemTables = "shale.num-entries-imm-mem-tables"
	// PropEstimatePendingCompactionBytes is the bytes compactions have yet
	// to move down (driver.CompactionMetrics.PendingBytes).
	PropEstimatePendingCompactionBytes = "shale.estimate-pending-compaction-bytes"
	// PropNumRunningCompactions and PropNumRunningFlushes are the
	// compactions and flushes running now.
	PropNumRunningCompactions = "shale.num-running-compactions"
	PropNumRunningFlushes     = "shale.num-running-flushes"
	// PropBackgroundErrors is the number of background errors since open.
	PropBackgroundErrors = "shale.background-errors"
	// PropLevelStats is a text table of each level's tables and size in
	// MB, RocksDB's "Level Files Size(MB)" format.
	PropLevelStats = "shale.levelstats"
	// PropStats is the text of driver.Metrics.String.
	PropStats = "shale.stats"
)

// PropertyNames returns the names of every property the engine answers, in
// a fixed order: the per-level names spelled out for each level.
func PropertyNames() []string {
	names := []string{PropEstimateNumKeys}
	for level := range manifest.NumLevels {
		names = append(names, PropNumFilesAtLevelPrefix+strconv.Itoa(level))
	}
	return append(names,
		PropTotalSSTFilesSize, PropLiveSSTFilesSize, PropEstimateLiveDataSize,
		PropCurSizeAllMemTables, PropSizeAllMemTables,
		PropNumEntriesActiveMemTable, PropNumEntriesImmMemTables,
		PropEstimatePendingCompactionBytes, PropNumRunningCompactions, PropNumRunningFlushes,
		PropBackgroundErrors, PropLevelStats, PropStats)
}

// Property returns the named property (see PropertyNames); an unknown name
// is an error matching ErrNotFound, as RocksDB's GetProperty returns false.
func (d *database) Property(ctx context.Context, name string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if err := d.checkOpen(); err != nil {
		return "", err
	}
	u := func(n uint64) (string, error) { return strconv.FormatUint(n, 10), nil }
	switch name {
	case PropEstimateNumKeys:
		return d.estimateNumKeys(ctx)
	case PropTotalSSTFilesSize:
		return d.totalSSTFilesSize()
	case PropLiveSSTFilesSize, PropEstimateLiveDataSize, PropLevelStats:
		rs, err := d.loadReadState()
		if err != nil {
			return "", err
		}
		defer rs.unref()
		v := rs.current
		switch name {
		case PropLiveSSTFilesSize:
			var n uint64
			for level := range manifest.NumLevels {
				n += v.LevelSize(level)
			}
			return u(n)
		case PropEstimateLiveDataSize:
			return u(estimateLiveDataSize(v, v.Cmp))
		default:
			return levelStats(v), nil
		}
	case PropCurSizeAllMemTables, PropSizeAllMemTables, PropNumEntriesActiveMemTable, PropNumEntriesImmMemTables:
		var active, imm, size uint64
		d.mu.Lock()
		if d.mu.mem != nil {
			active = uint64(d.mu.mem.Count())
			size += uint64(d.mu.mem.ApproximateSize())
		}
		for _, m := range d.mu.imm {
			imm += uint64(m.Count())
			size += uint64(m.ApproximateSize())
		}
		d.mu.Unlock()
		switch name {
		case PropNumEntriesActiveMemTable:
			return u(active)
		case PropNumEntriesImmMemTables:
			return u(imm)
		}
		return u(size)
	case PropEstimatePendingCompactionBytes, PropNumRunningCompactions, PropStats:
		m, err := d.Metrics(ctx)
		if err != nil {
			return "", err
		}
		switch name {
		case PropEstimatePendingCompactionBytes:
			return u(m.Compactions.PendingBytes)
		case PropNumRunningCompactions:
			return u(uint64(m.Compactions.InProgress))
		}
		return m.String(), nil
	case PropNumRunningFlushes:
		return u(uint64(d.obs().flushesRunning.Load()))
	case PropBackgroundErrors:
		return u(d.obs().bgErrors.Load())
	}
	if rest, ok := strings.CutPrefix(name, PropNumFilesAtLevelPrefix); ok {
		level, err := strconv.Atoi(rest)
		if err == nil && level >= 0 && level < manifest.NumLevels && rest == strconv.Itoa(level) {
			rs, err := d.loadReadState()
			if err != nil {
				return "", err
			}
			defer rs.unref()
			return strconv.Itoa(rs.current.NumFiles(level)), nil
		}
	}
	return "", base.Mark(errors.Newf("engine: no property %q (see engine.PropertyNames)", name), ErrNotFound)
}

// estimateNumKeys is PropEstimateNumKeys. It opens the tables it has not
// opened yet, to read their properties (a Get would open them too).
func (d *database) estimateNumKeys(ctx context.Context) (string, error) {
	req, err := ioctx.ResolveRead(ctx, nil, "Property", ioctx.ActivityUnknown)
	if err != nil {
		return "", err
	}
	rs, err := d.loadReadState()
	if err != nil {
		return "", err
	}
	defer rs.unref()
	var n int64
	for _, m := range rs.mems {
		n += int64(m.Count())
	}
	for level := range manifest.NumLevels {
		for _, f := range rs.current.Levels[level] {
			t, err := d.tables.Acquire(ctx, req, f, level)
			if err != nil {
				return "", err
			}
			p := t.Reader.Properties()
			n += int64(p.NumEntries) - 2*int64(p.NumDeletions)
			t.Release()
		}
	}
	return strconv.FormatInt(max(n, 0), 10), nil
}

// totalSSTFilesSize is PropTotalSSTFilesSize: the current version's tables
// by their recorded sizes, and the tables only older live versions hold by
// their files' sizes.
func (d *database) totalSSTFilesSize() (string, error) {
	rs, err := d.loadReadState()
	if err != nil {
		return "", err
	}
	defer rs.unref()
	var n uint64
	current := map[manifest.FileNum]bool{}
	for level := range manifest.NumLevels {
		for _, f := range rs.current.Levels[level] {
			current[f.FileNum] = true
			n += f.Size
		}
	}
	for num := range d.vs.LiveFileNums() {
		if current[num] {
			continue
		}
		if info, err := d.fs.Stat(manifest.TableFileName(d.dirname, num)); err == nil {
			n += uint64(info.Size())
		}
	}
	return strconv.FormatUint(n, 10), nil
}

// estimateLiveDataSize is RocksDB's VersionStorageInfo::EstimateLiveDataSize:
// from the last level up, a table counts when its key range overlaps no
// table counted before, which (lower levels holding the older data) keeps
// the most compacted copy of each range.
func estimateLiveDataSize(v *manifest.Version, cmp base.Compare) uint64 {
	// counted holds the counted tables' user-key ranges, sorted and
	// disjoint.
	type span struct{ lo, hi []byte }
	var counted []span
	var n uint64
	for level := manifest.NumLevels - 1; level >= 0; level-- {
		for _, f := range v.Levels[level] {
			lo, hi := f.Smallest.UserKey, f.Largest.UserKey
			// The first counted span ending at or after lo.
			i, _ := slices.BinarySearchFunc(counted, lo, func(s span, k []byte) int { return base.CompareUser(cmp, s.hi, k) })
			if i < len(counted) && base.CompareUser(cmp, counted[i].lo, hi) <= 0 {
				continue // overlaps a counted table
			}
			counted = slices.Insert(counted, i, span{lo, hi})
			n += f.Size
		}
	}
	return n
}

// levelStats is PropLevelStats, in RocksDB's format.
func levelStats(v *manifest.Version) string {
	var b strings.Builder
	b.WriteString("Level Files Size(MB)\n--------------------\n")
	for level := range manifest.NumLevels {
		fmt.Fprintf(&b, "%3d %8d %8.0f\n", level, v.NumFiles(level), float64(v.LevelSize(level))/(1<<20))
	}
	return b.String()
}

// Property makes the engine's connection a driver.PropertyReader (see
// PropertyNames).
func (c *conn) Property(ctx context.Context, name string) (string, error) {
	return c.db.Property(ctx, name)
}

var _ driver.PropertyReader = (*conn)(nil)
