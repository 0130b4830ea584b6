package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// TestTableReservationEndsOnEveryPath fails each step of writing and
// installing the tables of a flush and of a compaction (for a compaction,
// in its first output and in its second, when the first is finished). However
// the work fails, no file number stays reserved, and no table is left on disk
// that the version does not hold, unless a MANIFEST edit failed: then the
// MANIFEST may name the new tables, and they stay for the reopen.
func TestTableReservationEndsOnEveryPath(t *testing.T) {
	steps := []struct {
		name string
		kind errorfs.OpKind
		// file is which file the step is on: "table" (a table written since
		// the failure was armed), "dir" (the database directory, once such a
		// table exists) or "MANIFEST".
		file string
	}{
		{"create table", errorfs.OpCreate, "table"},
		{"write table", errorfs.OpFileWrite, "table"},
		{"sync table", errorfs.OpFileSync, "table"},
		{"close table", errorfs.OpFileClose, "table"},
		{"read table back", errorfs.OpFileRead, "table"},
		{"sync directory", errorfs.OpFileSync, "dir"},
		{"write MANIFEST", errorfs.OpFileWrite, "MANIFEST"},
	}
	type variant struct {
		work   string
		output int // which new table the step fails on, counting from 0
	}
	ctx := context.Background()
	for _, step := range steps {
		for _, v := range []variant{{"flush", 0}, {"compaction", 0}, {"compaction", 1}} {
			if v.output > 0 && step.file != "table" {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s/output=%d", v.work, step.name, v.output), func(t *testing.T) {
				var armed, injected atomic.Bool
				var mu sync.Mutex
				created := map[string]int{} // tables created since armed, in order
				inj := errorfs.InjectError(syscall.EIO, errorfs.PredicateFunc(step.name, func(op errorfs.Op) bool {
					if !armed.Load() || injected.Load() {
						return false
					}
					mu.Lock()
					defer mu.Unlock()
					if _, ok := created[op.Path]; !ok && op.Kind == errorfs.OpCreate && strings.HasSuffix(op.Path, ".sst") {
						created[op.Path] = len(created)
					}
					if op.Kind != step.kind {
						return false
					}
					var hit bool
					switch step.file {
					case "table":
						n, ok := created[op.Path]
						hit = ok && n == v.output
					case "dir":
						hit = op.Path == "/db" && len(created) > 0
					case "MANIFEST":
						hit = strings.HasPrefix(filepath.Base(op.Path), "MANIFEST")
					}
					return hit && injected.CompareAndSwap(false, true)
				}))
				f := openFullDiskDB(t, &Options{
					WriteBufferSize:        1 << 20,
					TargetFileSizeBase:     4 << 10,
					DisableAutoCompactions: true,
					ParanoidFileChecks:     true,
				}, inj)
				fill := func(round int) {
					for i := range 100 {
						require.NoError(t, f.put(fmt.Sprintf("k%04d", i*(round+1)), 100, false))
					}
				}
				fill(0)
				var err error
				if v.work == "flush" {
					armed.Store(true)
					err = f.db.Flush(ctx)
				} else {
					require.NoError(t, f.db.Flush(ctx))
					fill(1)
					require.NoError(t, f.db.Flush(ctx))
					armed.Store(true)
					err = f.db.Compact(ctx, nil, nil)
				}
				require.True(t, injected.Load(), "the step was not reached")
				require.ErrorIs(t, err, syscall.EIO)

				f.db.mu.Lock()
				pending := len(f.db.mu.pendingOutputs)
				manifestFailed := f.db.mu.manifestFailed
				f.db.mu.Unlock()
				require.Zero(t, pending, "file numbers still reserved")
				onDisk := tablesOnDisk(t, f)
				live := f.db.vs.LiveFileNums()
				for n := range live {
					require.Contains(t, onDisk, n, "a live table is missing")
				}
				if !manifestFailed {
					for _, n := range onDisk {
						require.Contains(t, live, n, "table %s is on disk, but no version holds it", n)
					}
				} else {
					require.Greater(t, len(onDisk), len(live), "after a failed MANIFEST edit the new tables stay")
				}
				f.reopen()
			})
		}
	}
}

func tablesOnDisk(t *testing.T, f *fullDiskDB) []manifest.FileNum {
	names, err := f.mem.List("/db")
	require.NoError(t, err)
	var nums []manifest.FileNum
	for _, name := range names {
		if kind, num, ok := manifest.ParseFileName(name); ok && kind == manifest.FileKindTable {
			nums = append(nums, num)
		}
	}
	return nums
}
