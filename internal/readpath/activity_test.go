package readpath

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// ioRecorder records the IO options of every file read it observes.
type ioRecorder struct {
	mu    sync.Mutex
	reads []errorfs.Op
}

func (r *ioRecorder) observe(op errorfs.Op) {
	if op.Kind != errorfs.OpFileRead {
		return
	}
	r.mu.Lock()
	r.reads = append(r.reads, op)
	r.mu.Unlock()
}

// take returns the reads observed since the last take.
func (r *ioRecorder) take() []errorfs.Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	reads := r.reads
	r.reads = nil
	return reads
}

// TestEveryReadCarriesTheCallersIO checks that every ReadAt made by each API
// carries exactly the caller's activity and priority: table opens made on
// the call's behalf, block reads, readahead, MultiReads, verification reads.
func TestEveryReadCarriesTheCallersIO(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	cfg := defaultLSMConfig()
	db := buildLSM(t, rng, cfg)
	rec := &ioRecorder{}
	fs := errorfs.WrapObserver(db.fs, rec.observe)
	env := &Env{FS: fs, Dir: testDir, Stats: db.stats}

	apis := []struct {
		activity ioctx.Activity
		run      func(t *testing.T, v *View, renv sstable.ReadEnv)
	}{
		{ioctx.ActivityGet, func(t *testing.T, v *View, renv sstable.ReadEnv) {
			for _, k := range db.keys {
				val, err := Get(context.Background(), v, renv, []byte(k), db.maxSeq, nil)
				if err == nil {
					val.Release()
				}
			}
		}},
		{ioctx.ActivityMultiGet, func(t *testing.T, v *View, renv sstable.ReadEnv) {
			keys := make([][]byte, len(db.keys))
			for i, k := range db.keys {
				keys[i] = []byte(k)
			}
			out := make([]Result, len(keys))
			require.NoError(t, MultiGet(context.Background(), v, renv, keys, db.maxSeq, out))
			releaseAll(out)
		}},
		{ioctx.ActivityDBIterator, func(t *testing.T, v *View, renv sstable.ReadEnv) {
			it := NewIterator(context.Background(), v, renv, db.maxSeq, IterOptions{})
			for ok := it.First(); ok; ok = it.Next() {
			}
			for ok := it.Last(); ok; ok = it.Prev() {
			}
			require.NoError(t, it.Close())
		}},
		{ioctx.ActivityVerifyDBChecksum, func(t *testing.T, v *View, renv sstable.ReadEnv) {
			require.NoError(t, VerifyChecksum(context.Background(), env, v, renv))
		}},
		{ioctx.ActivityVerifyFileChecksums, func(t *testing.T, v *View, renv sstable.ReadEnv) {
			require.NoError(t, VerifyFileChecksums(context.Background(), env, v, renv))
		}},
	}
	for _, api := range apis {
		for _, pri := range []ioctx.Priority{ioctx.PriorityUser, ioctx.PriorityLow} {
			for _, async := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/async=%t", api.activity, pri, async), func(t *testing.T) {
					// A fresh table source without a cache: the tables are
					// opened, and every block read, on the API's behalf.
					v := *db.view
					v.Tables = newTestSource(t, fs, nil, db.stats)
					renv := readEnv()
					renv.IO = ioctx.IOOptions{Activity: api.activity, RateLimiterPriority: pri}
					renv.AsyncIO = async
					rec.take()
					api.run(t, &v, renv)
					reads := rec.take()
					require.NotEmpty(t, reads)
					for _, op := range reads {
						require.Equal(t, renv.IO, op.IO, "%s", op)
					}
					v.Tables.(*testSource).closeAll()
				})
			}
		}
	}
}

// TestRateLimiterRequestCounts pins the request counts RocksDB's
// DBRateLimiterOnReadTest observes (§9.1 of the IO-activity spec): three
// tables of one key each in L1, opened beforehand uncharged, read at
// PriorityUser.
func TestRateLimiterRequestCounts(t *testing.T) {
	for _, withCache := range []bool{true, false} {
		t.Run(fmt.Sprintf("cache=%t", withCache), func(t *testing.T) {
			fs := vfs.NewMem()
			files := []testFile{
				{level: 1, kvs: []string{"k0@1=val"}},
				{level: 1, kvs: []string{"k1@2=val"}},
				{level: 1, kvs: []string{"k2@3=val"}},
			}
			v, src := buildHandLSM(t, fs, files, nil, rocksLikeOpts)
			lim := newTestLimiter()
			src.fileOps.Limiter = lim
			if withCache {
				src.cache = cache.New(1 << 20)
				src.cacheID = src.cache.NewID()
			}
			// cold empties the cache and reopens every table uncharged, as
			// the engine opens them at DB open.
			cold := func() {
				src.closeAll()
				if withCache {
					src.cache = cache.New(1 << 20)
				}
				for _, f := range v.Version.Levels[1] {
					ref, err := src.Acquire(context.Background(), readEnv(), f, 1)
					require.NoError(t, err)
					ref.Release()
				}
			}
			cold()
			user := readEnv()
			user.IO.RateLimiterPriority = ioctx.PriorityUser
			requests := func() int64 { return lim.TotalRequests(ioctx.PriorityUser) }
			keys := [][]byte{[]byte("k0"), []byte("k1"), []byte("k2")}

			// Get: 1 per file; again 1 only without a block cache.
			for i, k := range keys {
				before := requests()
				val, err := Get(context.Background(), v, user, k, 100, nil)
				require.NoError(t, err)
				val.Release()
				require.EqualValues(t, 1, requests()-before, "first Get of key %d", i)
				before = requests()
				val, err = Get(context.Background(), v, user, k, 100, nil)
				require.NoError(t, err)
				val.Release()
				require.EqualValues(t, boolInt(!withCache), requests()-before, "second Get of key %d", i)
			}

			// MultiGet: one MultiRead, so one request, per table.
			cold()
			before := requests()
			out := make([]Result, 3)
			require.NoError(t, MultiGet(context.Background(), v, user, keys, 100, out))
			releaseAll(out)
			require.EqualValues(t, 3, requests()-before)

			// Iterator: a forward scan reads one block, so one request, per
			// step; a reverse scan after it reads them again only without
			// a cache, except the block the forward scan ended in, which
			// the iterator still holds (RocksDB reads it again: 3).
			cold()
			before = requests()
			it := NewIterator(context.Background(), v, user, 100, IterOptions{})
			n := 0
			for ok := it.First(); ok; ok = it.Next() {
				n++
				require.EqualValues(t, n, requests()-before, "after step %d", n)
			}
			require.Equal(t, 3, n)
			before = requests()
			for ok := it.Last(); ok; ok = it.Prev() {
			}
			require.EqualValues(t, 2*boolInt(!withCache), requests()-before)
			require.NoError(t, it.Close())

			// Verification: every table opened anew, then verified
			// (RocksDB derives 7 per table, 21 in all).
			env := &Env{FS: fs, Dir: testDir, Limiter: lim}
			vfc := readEnv()
			vfc.IO.RateLimiterPriority = ioctx.PriorityUser
			before = requests()
			require.NoError(t, VerifyChecksum(context.Background(), env, v, vfc))
			require.EqualValues(t, 3*verifyChecksumReadsPerSmallTable, requests()-before)
			before = requests()
			require.NoError(t, VerifyFileChecksums(context.Background(), env, v, vfc))
			require.EqualValues(t, 3, requests()-before)
		})
	}
}

// verifyChecksumReadsPerSmallTable is the number of reads VerifyChecksum
// makes of a table with a filter and one data block: Open's 5 and
// VerifyChecksums' 4 + 1 (see sstable.Reader).
const verifyChecksumReadsPerSmallTable = 5 + 5

// rocksLikeOpts are the engine's default table options.
var rocksLikeOpts = sstable.WriterOptions{BloomBitsPerKey: 10, Compression: compress.Snappy, Checksum: checksum.XXHash64}

// newTestLimiter is DBRateLimiterOnReadTest's limiter: 1 MiB/s, 100 ms
// refills, all IO charged.
func newTestLimiter() *ratelimit.Generic {
	return ratelimit.NewGeneric(1<<20, 0, 0, ratelimit.ModeAll)
}
