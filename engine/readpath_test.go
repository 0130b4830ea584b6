package engine

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/errclass"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// userReadHists maps each public read API to its file-read histogram.
var userReadHists = map[string]statistics.Histogram{
	"Get":                 statistics.FileReadGetMicros,
	"MultiGet":            statistics.FileReadMultiGetMicros,
	"Iterator":            statistics.FileReadDBIteratorMicros,
	"VerifyChecksum":      statistics.FileReadVerifyDBChecksumMicros,
	"VerifyFileChecksums": statistics.FileReadVerifyFileChecksumsMicros,
}

// runUserRead performs one read of the named API over keys 0..n-1.
func runUserRead(t *testing.T, ctx context.Context, db *database, api string, n int) {
	t.Helper()
	switch api {
	case "Get":
		for i := 0; i < n; i += 7 {
			_, err := db.Get(ctx, key(i))
			require.NoError(t, err)
		}
	case "MultiGet":
		var keys [][]byte
		for i := 0; i < n; i += 5 {
			keys = append(keys, key(i))
		}
		vals, err := db.MultiGet(ctx, keys)
		require.NoError(t, err)
		for _, v := range vals {
			require.NotNil(t, v)
		}
	case "Iterator":
		it, err := db.NewIterator(ctx, nil)
		require.NoError(t, err)
		count := 0
		for ok := it.First(); ok; ok = it.Next() {
			count++
		}
		require.NoError(t, it.Close())
		require.Equal(t, n, count)
	case "VerifyChecksum":
		require.NoError(t, db.VerifyChecksum(ctx))
	case "VerifyFileChecksums":
		require.NoError(t, db.VerifyFileChecksums(ctx))
	}
}

// TestPerActivityHistograms checks the heart of the read path: with
// statistics at LevelAll and no block cache, each API's reads grow only its
// own file-read histogram, and sst.read.micros by exactly the same count;
// at the default level the five user-read histograms stay empty while the
// flush, compaction and DB-open ones fill.
func TestPerActivityHistograms(t *testing.T) {
	ctx := context.Background()
	const n = 2000
	load := func(t *testing.T, level statistics.Level) (*database, *statistics.Statistics, vfs.FS) {
		stats := statistics.New(level)
		opts := smallOptions(nil)
		opts.BlockCacheSize = -1
		opts.Statistics = stats
		opts.DisableAutoCompactions = true
		db, fs := openTestDB(t, opts)
		rng := rand.New(rand.NewPCG(1, 1))
		for i := range n {
			require.NoError(t, db.Put(ctx, key(i), value(rng, 100)))
		}
		require.NoError(t, db.Flush(ctx))
		require.NoError(t, db.Compact(ctx, nil, nil))
		return db, stats, fs
	}

	t.Run("level=all", func(t *testing.T) {
		db, stats, _ := load(t, statistics.LevelAll)
		for _, api := range []string{"Get", "MultiGet", "Iterator", "VerifyChecksum", "VerifyFileChecksums"} {
			before := stats.Snapshot()
			runUserRead(t, ctx, db, api, n)
			after := stats.Snapshot()
			own := after.CountDelta(before, userReadHists[api])
			require.Positive(t, own, "%s recorded no file reads", api)
			for other, h := range userReadHists {
				if other != api {
					require.Zero(t, after.CountDelta(before, h), "%s grew the %s histogram", api, other)
				}
			}
			require.Equal(t, own, after.CountDelta(before, statistics.SSTReadMicros),
				"%s: sst.read.micros must grow by exactly the API's own count", api)
			for _, h := range []statistics.Histogram{statistics.FileReadFlushMicros,
				statistics.FileReadCompactionMicros, statistics.FileReadDBOpenMicros} {
				require.Zero(t, after.CountDelta(before, h), "%s grew %s", api, h)
			}
		}
	})

	t.Run("level=default", func(t *testing.T) {
		db, stats, fs := load(t, statistics.DefaultLevel)
		require.Positive(t, stats.HistogramData(statistics.FileReadFlushMicros).Count, "flush reads recorded")
		require.Positive(t, stats.HistogramData(statistics.FileReadCompactionMicros).Count, "compaction reads recorded")
		for _, api := range []string{"Get", "MultiGet", "Iterator", "VerifyChecksum", "VerifyFileChecksums"} {
			runUserRead(t, ctx, db, api, n)
		}
		for api, h := range userReadHists {
			require.Zero(t, stats.HistogramData(h).Count, "%s histogram must stay empty at the default level", api)
		}
		require.Positive(t, stats.HistogramData(statistics.SSTReadMicros).Count)
		// Reopen: the table opens are DBOpen reads.
		require.NoError(t, db.Close())
		stats2 := statistics.New(statistics.DefaultLevel)
		opts := smallOptions(fs)
		opts.Statistics = stats2
		db2, err := openDatabase("/db", opts)
		require.NoError(t, err)
		checkDB(t, db2)
		require.Positive(t, stats2.HistogramData(statistics.FileReadDBOpenMicros).Count, "open reads recorded")
		require.Equal(t, stats2.HistogramData(statistics.FileReadDBOpenMicros).Count,
			stats2.HistogramData(statistics.SSTReadMicros).Count, "at open every table read is a DBOpen read")
	})

	t.Run("level=except_timers", func(t *testing.T) {
		db, stats, _ := load(t, statistics.LevelExceptTimers)
		runUserRead(t, ctx, db, "Get", n)
		require.Zero(t, stats.HistogramData(statistics.SSTReadMicros).Count, "no timers below except_detailed_timers")
		require.Zero(t, stats.HistogramData(statistics.FileReadFlushMicros).Count)
		require.Positive(t, stats.TickerCount(statistics.NonLastLevelReadCount)+stats.TickerCount(statistics.LastLevelReadCount),
			"tickers still count")
	})
}

// TestRateLimiterOnRead ports RocksDB's DBRateLimiterOnReadTest: three
// tables of one key each, reads at PriorityUser, and the request counts that
// shale's table layout implies. Setup reads (flush, open) are not charged.
func TestRateLimiterOnRead(t *testing.T) {
	for _, cached := range []bool{true, false} {
		t.Run(fmt.Sprintf("cache=%v", cached), func(t *testing.T) {
			ctx := context.Background()
			limiter := ratelimit.NewGeneric(1<<20, 100*time.Millisecond, 10, ratelimit.ModeAll)
			defer limiter.Close()
			opts := smallOptions(nil)
			opts.RateLimiter = limiter
			// Each flushed one-key table moves down to L1 as is (a trivial
			// move), so L1 ends up with three tables, RocksDB's layout.
			opts.Level0FileNumCompactionTrigger = 1
			if !cached {
				opts.BlockCacheSize = -1
			}
			db, _ := openTestDB(t, opts)
			const numFiles = 3
			for i := range numFiles {
				require.NoError(t, db.Put(ctx, key(i), []byte("val")))
				require.NoError(t, db.Flush(ctx))
				waitForLevel(t, db, 1, i+1)
			}
			// Writes are charged at High (flush) and Low (compaction); reads at
			// the default priority are not charged at all.
			require.Zero(t, limiter.TotalRequests(ioctx.PriorityUser), "setup charged nothing at User")
			require.Zero(t, limiter.TotalRequests(ioctx.PriorityTotal)-limiter.TotalRequests(ioctx.PriorityHigh)-
				limiter.TotalRequests(ioctx.PriorityLow), "only flush (High) and compaction (Low) writes are charged")
			for i := range numFiles {
				_, err := db.Get(ctx, key(i))
				require.NoError(t, err)
			}
			base := limiter.TotalRequests(ioctx.PriorityTotal)
			for i := range numFiles {
				_, err := db.Get(ctx, key(i))
				require.NoError(t, err)
			}
			require.Equal(t, base, limiter.TotalRequests(ioctx.PriorityTotal), "default-priority Gets charge nothing")

			user := ioctx.WithReadOptions(ctx, ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityUser})
			count := func() int64 { return limiter.TotalRequests(ioctx.PriorityUser) }

			// Get: one request for each block read; a cached block reads
			// nothing the second time.
			before := count()
			for i := range numFiles {
				_, err := db.Get(user, key(i))
				require.NoError(t, err)
				want := int64(1)
				if cached {
					want = 0 // the default-priority Gets above cached the blocks
				}
				require.Equal(t, before+want*int64(i+1), count(), "Get %d", i)
			}

			db2 := reopenWith(t, db, opts) // cold cache for the rest
			before = limiter.TotalRequests(ioctx.PriorityUser)
			keys := [][]byte{key(0), key(1), key(2)}
			_, err := db2.MultiGet(user, keys)
			require.NoError(t, err)
			require.Equal(t, before+numFiles, limiter.TotalRequests(ioctx.PriorityUser),
				"MultiGet: one MultiRead (one request) per table")

			db3 := reopenWith(t, db2, opts)
			before = limiter.TotalRequests(ioctx.PriorityUser)
			it, err := db3.NewIterator(user, nil)
			require.NoError(t, err)
			steps := int64(0)
			for ok := it.First(); ok; ok = it.Next() {
				steps++
				require.Equal(t, before+steps, limiter.TotalRequests(ioctx.PriorityUser),
					"forward scan: one request per step (each step reads a new table's block)")
			}
			require.NoError(t, it.Close())
			require.Equal(t, int64(numFiles), steps)

			// VerifyChecksum opens each table anew with the caller's options:
			// footer, metaindex, properties, filter and index (5 reads), then
			// metaindex, the two meta blocks, the index and the data (5
			// reads): 10 per table.
			before = limiter.TotalRequests(ioctx.PriorityUser)
			require.NoError(t, db3.VerifyChecksum(user))
			require.Equal(t, before+10*numFiles, limiter.TotalRequests(ioctx.PriorityUser), "VerifyChecksum")

			// VerifyFileChecksums reads each small table in one chunk.
			before = limiter.TotalRequests(ioctx.PriorityUser)
			require.NoError(t, db3.VerifyFileChecksums(user))
			require.Equal(t, before+numFiles, limiter.TotalRequests(ioctx.PriorityUser), "VerifyFileChecksums")
		})
	}
}

// waitForLevel waits until background compactions leave level with n
// tables and every level above it empty.
func waitForLevel(t *testing.T, db *database, level, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		rs := mustReadState(t, db)
		defer rs.unref()
		for l := 0; l < level; l++ {
			if rs.current.NumFiles(l) > 0 {
				return false
			}
		}
		return rs.current.NumFiles(level) == n
	}, 2*time.Minute, time.Millisecond)
}

// reopenWith closes db and opens the same directory again.
func reopenWith(t *testing.T, db *database, opts *Options) *database {
	t.Helper()
	require.NoError(t, db.Close())
	db2, err := openDatabase("/db", opts)
	require.NoError(t, err)
	checkDB(t, db2)
	return db2
}

// TestEveryReadCarriesItsActivity watches every read of a table file at the
// filesystem and checks its activity tag in each phase: open, flush,
// compaction, Get, MultiGet, iteration, both verifications and a
// transaction's MultiGet (whose reads are MultiGet reads all the way down).
func TestEveryReadCarriesItsActivity(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewMem()
	var mu sync.Mutex
	allowed := map[ioctx.Activity]bool{}
	var phase string
	var bad []string
	var reads atomic.Int64
	fs := errorfs.WrapObserver(mem, func(op errorfs.Op) {
		if op.Kind != errorfs.OpFileRead || !strings.HasSuffix(op.Path, ".sst") {
			return
		}
		reads.Add(1)
		mu.Lock()
		defer mu.Unlock()
		if !allowed[op.IO.Activity] {
			bad = append(bad, fmt.Sprintf("%s: read of %s at %d tagged %s", phase, op.Path, op.Offset, op.IO.Activity))
		}
	})
	expect := func(p string, acts ...ioctx.Activity) {
		mu.Lock()
		defer mu.Unlock()
		phase = p
		clear(allowed)
		for _, a := range acts {
			allowed[a] = true
		}
		reads.Store(0)
	}
	opts := smallOptions(fs)
	opts.BlockCacheSize = -1 // every read goes to the file
	opts.DisableAutoCompactions = true

	expect("open", ioctx.ActivityDBOpen)
	db, err := openDatabase("/db", opts)
	require.NoError(t, err)
	expect("flush", ioctx.ActivityFlush)
	for i := range 3000 {
		require.NoError(t, db.Put(ctx, key(i), []byte("value")))
	}
	require.NoError(t, db.Flush(ctx))
	require.Positive(t, reads.Load(), "a flushed table is read back")
	expect("compaction", ioctx.ActivityFlush, ioctx.ActivityCompaction)
	require.NoError(t, db.Put(ctx, key(1), []byte("x")))
	require.NoError(t, db.Compact(ctx, nil, nil))
	require.Positive(t, reads.Load())

	for _, tc := range []struct {
		api string
		act ioctx.Activity
	}{
		{"Get", ioctx.ActivityGet},
		{"MultiGet", ioctx.ActivityMultiGet},
		{"Iterator", ioctx.ActivityDBIterator},
		{"VerifyChecksum", ioctx.ActivityVerifyDBChecksum},
		{"VerifyFileChecksums", ioctx.ActivityVerifyFileChecksums},
	} {
		expect(tc.api, tc.act)
		runUserRead(t, ctx, db, tc.api, 3000)
		require.Positive(t, reads.Load(), "%s read no table", tc.api)
	}
	expect("tx MultiGet", ioctx.ActivityMultiGet)
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, tx.Put(ctx, key(5), []byte("mine")))
	vals, err := tx.MultiGet(ctx, [][]byte{key(5), key(6), key(2999)})
	require.NoError(t, err)
	require.Equal(t, "mine", string(vals[0]))
	require.Positive(t, reads.Load())
	require.NoError(t, tx.Rollback())

	expect("reopen", ioctx.ActivityDBOpen)
	require.NoError(t, db.Close())
	db, err = openDatabase("/db", opts)
	require.NoError(t, err)
	require.Positive(t, reads.Load())
	expect("close", ioctx.ActivityUnknown)
	require.NoError(t, db.Close())

	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, bad)
}

var flipAll = flag.Bool("flipall", false,
	"TestFlippedBitNeverReturnedAsData flips a bit in every byte of the table, not a sample")

// flipSeed seeds the random part of TestFlippedBitNeverReturnedAsData's
// sample; every failure message prints it.
const flipSeed = 2

// TestFlippedBitNeverReturnedAsData flips single bits in a table file: both
// verifications catch it and reads either return the right value or a
// corruption error.
//
// Each flip costs a reopen, so flipping every byte took over a minute (and
// ten under -race). The test flips a sample instead that reaches every kind
// of region of the file: the first, a middle and the last byte of every
// block (data, filter, properties, metaindex, index), every byte of every
// block trailer (compression type and checksum), every byte of the footer,
// and a fixed-seed random sample of the rest. -short keeps of each trailer
// its type byte and last checksum byte, and a smaller random sample;
// -flipall flips every byte as before.
func TestFlippedBitNeverReturnedAsData(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewMem()
	opts := smallOptions(mem)
	opts.DisableAutoCompactions = true
	db, err := openDatabase("/db", opts)
	require.NoError(t, err)
	m := model{}
	rng := rand.New(rand.NewPCG(2, 2))
	for i := range 300 {
		v := value(rng, 40)
		require.NoError(t, db.Put(ctx, key(i), v))
		m[string(key(i))] = string(v)
	}
	require.NoError(t, db.Compact(ctx, nil, nil))
	require.NoError(t, db.Close())
	rs := mustSingleTable(t, mem)
	orig := readAll(t, mem, rs)
	offsets := flipOffsets(t, orig, *flipAll, testing.Short())
	t.Logf("flipping %d of %d bytes (seed %d)", len(offsets), len(orig), flipSeed)
	for _, off := range offsets {
		data := append([]byte(nil), orig...)
		data[off.at] ^= 1 << (off.at % 8)
		writeAll(t, mem, rs, data)
		where := fmt.Sprintf("offset %d (%s; sample seed %d)", off.at, off.region, flipSeed)
		o := smallOptions(mem)
		o.BlockCacheSize = -1
		o.DisableAutoCompactions = true
		db, err := openDatabase("/db", o)
		if err != nil {
			require.True(t, errors.Is(err, ErrCorruption), "%s: open failed without a corruption error: %v", where, err)
			continue
		}
		require.ErrorIs(t, db.VerifyFileChecksums(ctx), ErrCorruption, "%s", where)
		require.ErrorIs(t, db.VerifyChecksum(ctx), ErrCorruption, "%s", where)
		for k, v := range m {
			got, err := db.Get(ctx, []byte(k))
			if err != nil {
				require.True(t, errors.Is(err, ErrCorruption), "%s: Get %s: %v", where, k, err)
				continue
			}
			require.Equal(t, v, string(got), "%s: Get %s returned wrong data", where, k)
		}
		require.NoError(t, db.Close())
	}
	writeAll(t, mem, rs, orig)
}

// tableRegion is a span [start, end) of a table file and what it holds.
type tableRegion struct {
	kind       string
	start, end int
}

// tableLayout splits table data into its blocks, their trailers and the
// footer, read with the format's own decoders (footer, index and metaindex
// handles). The regions tile the file: every byte is in exactly one.
func tableLayout(t *testing.T, data []byte) []tableRegion {
	footer, err := sstable.DecodeFooter(data, uint64(len(data)))
	require.NoError(t, err)
	var regions []tableRegion
	// addBlock records the block at h and its trailer, and returns its
	// decompressed contents.
	addBlock := func(kind string, h block.Handle) []byte {
		end := int(h.Offset + h.Length)
		regions = append(regions, tableRegion{kind + " block", int(h.Offset), end},
			tableRegion{kind + " trailer", end, end + block.TrailerLen})
		stored, comp, err := block.SplitTrailer(data[h.Offset : end+block.TrailerLen])
		require.NoError(t, err)
		n, err := compress.DecodedLen(comp, stored)
		require.NoError(t, err)
		contents, err := compress.DecompressInto(comp, make([]byte, n), stored)
		require.NoError(t, err)
		return contents
	}
	// eachHandle calls fn with the key and decoded handle of every entry of
	// an index or metaindex block.
	eachHandle := func(contents []byte, fn func(key []byte, h block.Handle)) {
		var it block.Iter
		require.NoError(t, it.Init(bytes.Compare, contents))
		for ok := it.First(); ok; ok = it.Next() {
			h, _, err := block.DecodeHandle(it.Value())
			require.NoError(t, err)
			fn(it.Key(), h)
		}
		require.NoError(t, it.Error())
	}
	eachHandle(addBlock("index", footer.Index), func(_ []byte, h block.Handle) { addBlock("data", h) })
	eachHandle(addBlock("metaindex", footer.MetaIndex), func(name []byte, h block.Handle) { addBlock(string(name), h) })
	regions = append(regions, tableRegion{"footer", len(data) - sstable.FooterLen, len(data)})
	slices.SortFunc(regions, func(a, b tableRegion) int { return a.start - b.start })
	next := 0
	for _, r := range regions {
		require.Equal(t, next, r.start, "region %s", r.kind)
		require.Less(t, r.start, r.end, "region %s", r.kind)
		next = r.end
	}
	require.Equal(t, len(data), next)
	return regions
}

// flipOffset is a byte to flip and the region it is in.
type flipOffset struct {
	at     int
	region string
}

// flipOffsets returns the sorted offsets TestFlippedBitNeverReturnedAsData
// flips in table data: every byte when all, else a sample that includes
// every kind of region (see the test).
func flipOffsets(t *testing.T, data []byte, all, short bool) []flipOffset {
	regions := tableLayout(t, data)
	kinds := map[string]bool{}
	picked := map[int]bool{}
	var out []flipOffset
	pick := func(at int, r tableRegion) {
		if !picked[at] {
			picked[at] = true
			kinds[r.kind] = true
			out = append(out, flipOffset{at, r.kind})
		}
	}
	randomN := 200
	if short {
		randomN = 40
	}
	rng := rand.New(rand.NewPCG(flipSeed, 0))
	randoms := map[int]bool{}
	for range randomN {
		randoms[rng.IntN(len(data))] = true
	}
	for _, r := range regions {
		for at := r.start; at < r.end; at++ {
			trailer := strings.HasSuffix(r.kind, " trailer")
			switch {
			case all, randoms[at], r.kind == "footer":
			case at == r.start, at == r.end-1, at == (r.start+r.end)/2 && !trailer:
			case trailer && !short:
			default:
				continue
			}
			pick(at, r)
		}
	}
	for _, r := range regions {
		require.True(t, kinds[r.kind], "no flip in a %s", r.kind)
	}
	for _, want := range []string{"data block", "data trailer", "index block", "index trailer", "metaindex block",
		"metaindex trailer", sstable.MetaFilterName + " block", sstable.MetaPropertiesName + " block", "footer"} {
		require.True(t, kinds[want], "the table has no %s", want)
	}
	return out
}

func mustSingleTable(t *testing.T, fs vfs.FS) string {
	names, err := fs.List("/db")
	require.NoError(t, err)
	var tables []string
	for _, n := range names {
		if strings.HasSuffix(n, ".sst") {
			tables = append(tables, "/db/"+n)
		}
	}
	require.Len(t, tables, 1)
	return tables[0]
}

func TestMmapReads(t *testing.T) {
	ctx := context.Background()
	stats := statistics.New(statistics.LevelAll)
	opts := smallOptions(nil)
	opts.MmapReads = true
	opts.Compression = CompressionNone
	opts.BlockCacheSize = -1
	opts.Statistics = stats
	db, _ := openTestDB(t, opts)
	for i := range 2000 {
		require.NoError(t, db.Put(ctx, key(i), []byte(fmt.Sprint(i))))
	}
	require.NoError(t, db.Compact(ctx, nil, nil))
	before := stats.Snapshot()
	for i := 0; i < 2000; i += 3 {
		v, err := db.Get(ctx, key(i))
		require.NoError(t, err)
		require.Equal(t, fmt.Sprint(i), string(v))
	}
	after := stats.Snapshot()
	require.Positive(t, after.CountDelta(before, statistics.FileReadGetMicros), "mapped reads are still timed and tagged")
	runUserRead(t, ctx, db, "Iterator", 2000)
	require.NoError(t, db.VerifyChecksum(ctx))
	require.NoError(t, db.VerifyFileChecksums(ctx))
}

func TestDeadlinesAndCancellation(t *testing.T) {
	ctx := context.Background()
	opts := smallOptions(nil)
	opts.BlockCacheSize = -1
	db, _ := openTestDB(t, opts)
	for i := range 3000 {
		require.NoError(t, db.Put(ctx, key(i), []byte("v")))
	}
	require.NoError(t, db.Flush(ctx))

	past := ioctx.WithReadOptions(ctx, ioctx.ReadOptions{Deadline: time.Now().Add(-time.Second)})
	_, err := db.Get(past, key(1))
	require.ErrorIs(t, err, errclass.ErrTimedOut)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, "Operation timed out: Deadline exceeded", err.Error())
	require.ErrorIs(t, db.VerifyChecksum(past), context.DeadlineExceeded)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = db.Get(cancelled, key(1))
	require.ErrorIs(t, err, context.Canceled)
	_, err = db.MultiGet(cancelled, [][]byte{key(1)})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, db.VerifyFileChecksums(cancelled), context.Canceled)

	// A scan stops when its context is cancelled part way.
	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	it, err := db.NewIterator(sctx, nil)
	require.NoError(t, err)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if n++; n == 100 {
			scancel()
		}
	}
	require.ErrorIs(t, it.Error(), context.Canceled)
	require.Less(t, n, 3000)
	require.ErrorIs(t, it.Close(), context.Canceled)

	// A deadline in ReadOptions bounds a long scan too.
	dctx := ioctx.WithReadOptions(ctx, ioctx.ReadOptions{Deadline: time.Now().Add(50 * time.Millisecond)})
	it, err = db.NewIterator(dctx, nil)
	require.NoError(t, err)
	time.Sleep(60 * time.Millisecond)
	for ok := it.First(); ok; ok = it.Next() {
	}
	require.ErrorIs(t, it.Error(), context.DeadlineExceeded)
	_ = it.Close()
}

// TestMaxOpenFiles bounds the table cache: tables are closed and reopened on
// demand, reads stay correct, and a reopen's reads carry the tag of the read
// that needed the table (RocksDB: with max_open_files != -1 the first Get of
// a file opens it, and those reads are tagged Get).
func TestMaxOpenFiles(t *testing.T) {
	ctx := context.Background()
	stats := statistics.New(statistics.LevelAll)
	opts := smallOptions(nil)
	opts.MaxOpenFiles = 8
	opts.TargetFileSizeBase = 4 << 10
	opts.Statistics = stats
	opts.DisableAutoCompactions = true
	db, _ := openTestDB(t, opts)
	rng := rand.New(rand.NewPCG(4, 4))
	m := model{}
	for i := range 4000 {
		k, v := key(i), value(rng, 60)
		require.NoError(t, db.Put(ctx, k, v))
		m[string(k)] = string(v)
	}
	require.NoError(t, db.Compact(ctx, nil, nil))
	rs := mustReadState(t, db)
	tables := 0
	for _, files := range rs.current.Levels {
		tables += len(files)
	}
	rs.unref()
	require.Greater(t, tables, 3*opts.MaxOpenFiles, "the test needs many more tables than the bound")

	opensBefore := stats.TickerCount(statistics.NoFileOpens)
	getBefore := stats.Snapshot()
	for range 2000 {
		k := key(rng.IntN(4000))
		v, err := db.Get(ctx, k)
		require.NoError(t, err)
		require.Equal(t, m[string(k)], string(v))
	}
	require.Greater(t, stats.TickerCount(statistics.NoFileOpens), opensBefore, "evicted tables were reopened")
	after := stats.Snapshot()
	require.Zero(t, after.CountDelta(getBefore, statistics.FileReadDBOpenMicros), "reopens on behalf of a Get are Get reads")
	require.Equal(t, after.CountDelta(getBefore, statistics.SSTReadMicros), after.CountDelta(getBefore, statistics.FileReadGetMicros))
	db.tables.mu.RLock()
	open := len(db.tables.entries)
	db.tables.mu.RUnlock()
	require.LessOrEqual(t, open, opts.MaxOpenFiles)
	runUserRead(t, ctx, db, "Iterator", 4000)
	runUserRead(t, ctx, db, "MultiGet", 4000)
}

// TestLastLevelReadTickers checks RocksDB's last-level split of read bytes:
// a table opened while in the last level counts its reads in
// LastLevelRead{Bytes,Count}, any other in NonLastLevelRead{Bytes,Count}.
func TestLastLevelReadTickers(t *testing.T) {
	stats := statistics.New(statistics.LevelAll)
	opts := smallOptions(nil)
	opts.Statistics = stats
	opts.BlockCacheSize = -1 // every Get reads its block from the file
	db, _ := openTestDB(t, opts)
	ctx := context.Background()
	for i := range 2000 {
		require.NoError(t, db.Put(ctx, key(i), []byte("value")))
	}
	require.NoError(t, db.Compact(ctx, nil, nil))
	rs := mustReadState(t, db)
	last := manifest.NumLevels - 1
	require.Positive(t, rs.current.NumFiles(last), "a full compaction fills the last level")
	for l := range last {
		require.Zero(t, rs.current.NumFiles(l), "L%d after a full compaction", l)
	}
	rs.unref()

	stats.Reset()
	_, err := db.Get(ctx, key(10))
	require.NoError(t, err)
	require.Positive(t, stats.TickerCount(statistics.LastLevelReadCount))
	require.Positive(t, stats.TickerCount(statistics.LastLevelReadBytes))
	require.Zero(t, stats.TickerCount(statistics.NonLastLevelReadCount))
	require.Zero(t, stats.TickerCount(statistics.NonLastLevelReadBytes))

	// A newer version of the key in an L0 table.
	require.NoError(t, db.Put(ctx, key(10), []byte("newer")))
	require.NoError(t, db.Flush(ctx))
	stats.Reset()
	v, err := db.Get(ctx, key(10))
	require.NoError(t, err)
	require.Equal(t, "newer", string(v))
	require.Positive(t, stats.TickerCount(statistics.NonLastLevelReadCount))
	require.Positive(t, stats.TickerCount(statistics.NonLastLevelReadBytes))
	require.Zero(t, stats.TickerCount(statistics.LastLevelReadCount))
}
