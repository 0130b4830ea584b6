package conformance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

// tableParams are the parameters of the cases that need reads to reach
// table files: no block cache, and no background compaction to read files
// concurrently with the reads measured.
func tableParams(extra ...param) []param {
	return append([]param{req("block_cache_size", "0"), opt("disable_auto_compactions", "true")}, extra...)
}

// statsDB opens a database with params and returns it with its statistics,
// skipping the case when the driver reports none.
func statsDB(t testing.TB, s *suite, params []param) (*dbh, *statistics.Statistics) {
	t.Helper()
	db := s.open(t, params...)
	st := db.Statistics()
	if st == nil {
		t.Skipf("the driver reports no statistics (DB.Statistics() is nil; a driver reports them by implementing " +
			"driver.StatsReporter)")
	}
	return db, st
}

// fillTables writes keys 0..n-1 with values of size bytes and flushes
// them to table files, twice over (the second time only every other key),
// then compacts the two overlapping tables (if the driver can), so that the
// reads that follow read files and the compaction has inputs to read. It
// skips the case when the driver cannot flush. It returns whether the
// compaction ran.
func fillTables(t testing.TB, db *dbh, n, size int) (compacted bool) {
	t.Helper()
	for pass := range 2 {
		var b driver.Batch
		for i := pass; i < n; i += 1 + pass {
			v := make([]byte, size)
			for j := range v {
				v[j] = byte(i*31 + j*7) // varied, so blocks do not compress to nothing
			}
			b.Put(key(i), v)
		}
		mustWrite(t, db, &b)
		err := db.Flush(bg)
		skipIfNotSupported(t, err, "reading table files needs Flush (driver.Flusher)")
		if err != nil {
			t.Fatalf("Flush: %v", err)
		}
	}
	err := db.Compact(bg, nil, nil)
	if errors.Is(err, driver.ErrNotSupported) {
		return false
	}
	if err != nil {
		t.Fatalf("Compact(nil, nil): %v", err)
	}
	return true
}

// measuredReads are the reads whose statistics the statistics and rate
// limiter cases check: the DB's five read APIs, and a Tx's and a Conn's
// Get and MultiGet (a transaction's MultiGet must keep its MultiGet tag all
// the way down, RocksDB #11444).
func measuredReads(t testing.TB, db *dbh) []readAPI {
	t.Helper()
	k := key(5)
	apis := readAPIs("DB", db, k)
	conn, err := db.Conn(bg)
	if err != nil {
		t.Fatalf("DB.Conn: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	apis = append(apis, readAPIs("Conn", conn, k)[:2]...)
	tx, err := db.BeginTx(bg, &driver.TxOptions{ReadOnly: true})
	if err == nil {
		t.Cleanup(func() { _ = tx.Rollback() })
		apis = append(apis, readAPIs("Tx", tx, k)...)
	} else if !errors.Is(err, driver.ErrNotSupported) {
		t.Fatalf("BeginTx: %v", err)
	}
	return apis
}

func testStatisticsPerActivity(t testing.TB, s *suite) {
	db, st := statsDB(t, s, tableParams(req("stats_level", "all")))
	if l := st.Level(); l != statistics.LevelAll {
		t.Errorf("DB.Statistics().Level() = %s with stats_level=all; want %s", l, statistics.LevelAll)
	}
	fillTables(t, db, 200, 100)
	for _, api := range measuredReads(t, db) {
		own := statistics.FileReadHistogram(api.own.RocksDBValue())
		before := st.Snapshot()
		err := api.call(bg)
		after := st.Snapshot()
		if errors.Is(err, driver.ErrNotSupported) {
			t.Logf("%s: not supported (%v)", api.name, err)
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", api.name, err)
			continue
		}
		got := after.CountDelta(before, own)
		if got == 0 {
			t.Errorf("%s read table files (block_cache_size=0, data flushed) but %s did not grow: at "+
				"stats_level=all each table-file read of %s must be recorded in %s (its reads must carry activity %s)",
				api.name, own, api.name, own, api.own)
		}
		for h := range statistics.NumHistograms {
			if !h.IsUserFileRead() {
				continue
			}
			if d := after.CountDelta(before, h); h != own && d != 0 {
				t.Errorf("%s recorded %d samples in %s; its reads must be tagged %s and recorded only in %s",
					api.name, d, h, api.own, own)
			}
		}
		if sst := after.CountDelta(before, statistics.SSTReadMicros); sst != got {
			t.Errorf("%s grew %s by %d samples but %s by %d: each table-file read is recorded once in the "+
				"aggregate and once in its activity's histogram", api.name, statistics.SSTReadMicros, sst, own, got)
		}
	}
}

// nonZero lists the statistics of snap that are not zero and that bad
// selects, for messages.
func nonZero(snap statistics.Snapshot, bad func(statistics.Histogram) bool) []string {
	var out []string
	for h := range statistics.NumHistograms {
		if c := snap.Histograms[h].Count; c != 0 && bad(h) {
			out = append(out, fmt.Sprintf("%s (count %d)", h, c))
		}
	}
	return out
}

func tickerSum(snap statistics.Snapshot) uint64 {
	var n uint64
	for _, c := range snap.Tickers {
		n += c
	}
	return n
}

// readEverything runs each of the DB's read APIs once, reporting failures
// other than ErrNotSupported.
func readEverything(t testing.TB, db *dbh) {
	t.Helper()
	for _, api := range readAPIs("DB", db, key(5)) {
		if err := api.call(bg); err != nil && !errors.Is(err, driver.ErrNotSupported) {
			t.Errorf("%s: %v", api.name, err)
		}
	}
}

func testStatisticsGating(t testing.TB, s *suite) {
	// The default level: user-read breakdowns stay empty, background
	// breakdowns fill.
	db, st := statsDB(t, s, tableParams(req("stats_level", "except_detailed_timers")))
	if l := st.Level(); l != statistics.LevelExceptDetailedTimers {
		t.Errorf("DB.Statistics().Level() = %s with stats_level=except_detailed_timers; want %s",
			l, statistics.LevelExceptDetailedTimers)
	}
	before := st.Snapshot()
	compacted := fillTables(t, db, 200, 100)
	afterFill := st.Snapshot()
	if afterFill.CountDelta(before, statistics.FileReadFlushMicros) == 0 {
		t.Errorf("after Flush at the default stats level, %s is empty: a flush reads the table it wrote with "+
			"activity Flush, and flush reads are recorded from the default level up", statistics.FileReadFlushMicros)
	}
	if compacted && afterFill.CountDelta(before, statistics.FileReadCompactionMicros) == 0 {
		t.Errorf("after Compact at the default stats level, %s is empty: compaction reads its inputs with "+
			"activity Compaction, recorded from the default level up", statistics.FileReadCompactionMicros)
	}
	readEverything(t, db)
	after := st.Snapshot()
	if bad := nonZero(after, statistics.Histogram.IsUserFileRead); len(bad) > 0 {
		t.Errorf("at the default stats level (except_detailed_timers), user-read histograms recorded samples: %s; "+
			"they are detailed timers, recorded only from except_time_for_mutex up (RocksDB #11444)",
			strings.Join(bad, ", "))
	}
	if after.CountDelta(afterFill, statistics.SSTReadMicros) == 0 {
		t.Errorf("at the default stats level, reads of table files did not grow %s; the aggregate is "+
			"recorded from the default level up", statistics.SSTReadMicros)
	}
	if db.path == memoryPath {
		t.Logf("%s: DB-open reads not checked (no reopen of %q)", statistics.FileReadDBOpenMicros, memoryPath)
	} else {
		db.close(t)
		db = s.reopen(t, db)
		st := db.Statistics()
		if st == nil {
			t.Fatalf("the reopened database reports no statistics")
		}
		if st.HistogramData(statistics.FileReadDBOpenMicros).Count == 0 {
			t.Errorf("after reopening a database with table files, %s is empty: opening reads each table's "+
				"metadata with activity DBOpen, recorded from the default level up", statistics.FileReadDBOpenMicros)
		}
	}

	// except_timers: counts but no time; except_histogram_or_timers:
	// tickers only.
	for _, tc := range []struct {
		level string
		want  statistics.Level
		bad   func(statistics.Histogram) bool
		what  string
	}{
		{"except_timers", statistics.LevelExceptTimers, statistics.Histogram.IsTime, "a time histogram"},
		{"except_histogram_or_timers", statistics.LevelExceptHistogramOrTimers,
			func(statistics.Histogram) bool { return true }, "a histogram"},
	} {
		db, st := statsDB(t, s, tableParams(req("stats_level", tc.level)))
		if l := st.Level(); l != tc.want {
			t.Errorf("DB.Statistics().Level() = %s with stats_level=%s; want %s", l, tc.level, tc.want)
		}
		fillTables(t, db, 200, 100)
		readEverything(t, db)
		snap := st.Snapshot()
		if bad := nonZero(snap, tc.bad); len(bad) > 0 {
			t.Errorf("at stats_level=%s these recorded samples: %s; %s is not recorded at that level",
				tc.level, strings.Join(bad, ", "), tc.what)
		}
		if tickerSum(snap) == 0 {
			t.Errorf("at stats_level=%s no ticker counted anything after writes, a flush and reads; tickers are "+
				"recorded from except_histogram_or_timers up", tc.level)
		}
	}

	// disable_all: nothing at all (or no Statistics).
	db = s.open(t, tableParams(req("stats_level", "disable_all"))...)
	fillTables(t, db, 200, 100)
	readEverything(t, db)
	if st := db.Statistics(); st != nil {
		snap := st.Snapshot()
		if bad := nonZero(snap, func(statistics.Histogram) bool { return true }); len(bad) > 0 {
			t.Errorf("at stats_level=disable_all these histograms recorded samples: %s; want none",
				strings.Join(bad, ", "))
		}
		for tk, c := range snap.Tickers {
			if c != 0 {
				t.Errorf("at stats_level=disable_all ticker %s = %d; want 0", statistics.Ticker(tk), c)
			}
		}
	}
}

// chargingDB opens a database with a rate limiter that never makes reads
// wait, statistics to observe its charges, and data in table files. It
// skips the case when the driver cannot.
func chargingDB(t testing.TB, s *suite) (*dbh, *statistics.Statistics) {
	t.Helper()
	db, st := statsDB(t, s, chargingParams())
	fillTables(t, db, 200, 100)
	return db, st
}

func chargingParams() []param {
	return tableParams(req("rate_limit", "1GiB"), req("rate_limit_mode", "all"), req("stats_level", "all"))
}

// charged runs call and returns the read requests and bytes it charged to
// the rate limiter, as the tickers RateLimiterRequestsRead and
// RateLimiterBytesRead (RocksDB #14884's) count them.
func charged(st *statistics.Statistics, call func() error) (n, b uint64, err error) {
	before := st.Snapshot()
	err = call()
	d := st.Snapshot().Sub(before)
	return d[statistics.RateLimiterRequestsRead], d[statistics.RateLimiterBytesRead], err
}

func testRateLimiterCharging(t testing.TB, s *suite) {
	db, st := chargingDB(t, s)
	user := withRO(ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityUser})
	for _, api := range measuredReads(t, db) {
		n, b, err := charged(st, func() error { return api.call(bg) })
		if errors.Is(err, driver.ErrNotSupported) {
			t.Logf("%s: not supported (%v)", api.name, err)
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", api.name, err)
			continue
		}
		if n != 0 || b != 0 {
			t.Errorf("%s at the default priority (PriorityTotal) charged the rate limiter %d requests, %d bytes; "+
				"reads at PriorityTotal must not be charged", api.name, n, b)
		}
		n, b, err = charged(st, func() error { return api.call(user) })
		if err != nil {
			t.Errorf("%s at PriorityUser: %v", api.name, err)
			continue
		}
		if n == 0 || b == 0 {
			t.Errorf("%s with ReadOptions{RateLimiterPriority: PriorityUser} read table files but charged the "+
				"rate limiter %d requests, %d bytes; every table-file read at a priority other than Total is charged",
				api.name, n, b)
		}
	}
}

func testRateLimiterThrottling(t testing.TB, s *suite) {
	const rate, total = 256 << 10, 320 << 10
	db := s.open(t, tableParams(req("rate_limit", "256KiB"), opt("rate_limit_mode", "reads"))...)
	var b driver.Batch
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range total / 4096 {
		v := make([]byte, 4096)
		for j := range v {
			v[j] = byte(rng.Uint32()) // incompressible
		}
		b.Put(key(i), v)
	}
	mustWrite(t, db, &b)
	err := db.Flush(bg)
	skipIfNotSupported(t, err, "reading table files needs Flush (driver.Flusher)")
	if err != nil {
		t.Fatalf("Flush: %v", err)
	}
	name, read := "VerifyFileChecksums", func(ctx context.Context) error { return db.VerifyFileChecksums(ctx) }
	if err := db.VerifyFileChecksums(bg); errors.Is(err, driver.ErrNotSupported) {
		name, read = "a full iterator scan", func(ctx context.Context) error { return scanAll(ctx, db) }
	}
	timed := func(p ioctx.Priority) time.Duration {
		start := time.Now()
		if err := read(withRO(ioctx.ReadOptions{RateLimiterPriority: p})); err != nil {
			t.Fatalf("%s at priority %s: %v", name, p, err)
		}
		return time.Since(start)
	}
	uncharged := timed(ioctx.PriorityTotal)
	low := timed(ioctx.PriorityLow)
	expect := time.Duration(float64(total) / rate * float64(time.Second))
	if low < expect/4 || low < 3*uncharged {
		t.Errorf("%s of about %d KiB of tables with rate_limit=256KiB took %v at PriorityLow and %v at "+
			"PriorityTotal; charged reads must wait for the rate limiter (expected about %v)",
			name, total>>10, low, uncharged, expect)
	}
}
