package conformance

import (
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

// statsDB opens a database whose reads reach the driver's IO (ColdReads),
// with statistics at level and the capabilities extra, and returns it with
// its statistics. It skips the case when the harness cannot provide one of
// the capabilities, or the driver reports no statistics.
func statsDB(t testing.TB, s *suite, level statistics.Level, extra ...Capability) (*dbh, *statistics.Statistics) {
	t.Helper()
	db := s.open(t, s.need(t, append([]Capability{coldReads(), statsLevel(level)}, extra...)...)...)
	st := db.Statistics()
	if st == nil {
		t.Skipf("the driver reports no statistics (DB.Statistics() is nil; a driver reports them by implementing " +
			"driver.StatsReporter)")
	}
	if l := st.Level(); l != level {
		t.Errorf("DB.Statistics().Level() = %s with the capability %s; want %s", l, statsLevel(level), level)
	}
	return db, st
}

// fillTables writes keys 0..n-1 with values of size bytes and flushes
// them (if the driver can), twice over (the second time only every other
// key), then compacts (if the driver can), so that the reads that follow
// reach the driver's IO (with ColdReads) and a compaction has overlapping
// inputs to read. It reports whether the Flushes and the Compact ran.
func fillTables(t testing.TB, db *dbh, n, size int) (flushed, compacted bool) {
	t.Helper()
	flushed = true
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
		if errors.Is(err, driver.ErrNotSupported) {
			flushed = false
			continue
		}
		if err != nil {
			t.Fatalf("Flush: %v", err)
		}
	}
	err := db.Compact(bg, nil, nil)
	if errors.Is(err, driver.ErrNotSupported) {
		return flushed, false
	}
	if err != nil {
		t.Fatalf("Compact(nil, nil): %v", err)
	}
	return flushed, true
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
	db, st := statsDB(t, s, statistics.LevelAll)
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
			t.Errorf("%s read table files (reached the driver's IO: capability ColdReads) but %s did not grow: at "+
				"stats_level=all each IO of %s (a table-file read, an RPC) must be recorded in %s (its reads must "+
				"carry activity %s)", api.name, own, api.name, own, api.own)
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
			t.Errorf("%s grew %s by %d samples but %s by %d: each IO (table-file read, RPC) is recorded once "+
				"in the aggregate and once in its activity's histogram", api.name, statistics.SSTReadMicros, sst, own, got)
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
	db, st := statsDB(t, s, statistics.LevelExceptDetailedTimers)
	before := st.Snapshot()
	flushed, compacted := fillTables(t, db, 200, 100)
	afterFill := st.Snapshot()
	background := func(a ioctx.Activity, ran bool, what string) bool {
		if !ran {
			t.Logf("%s not checked: the driver has no %s", statistics.FileReadHistogram(a.RocksDBValue()), what)
			return false
		}
		return s.has(t, backgroundReads(a), statistics.FileReadHistogram(a.RocksDBValue()).String())
	}
	if background(ioctx.ActivityFlush, flushed, "Flush") &&
		afterFill.CountDelta(before, statistics.FileReadFlushMicros) == 0 {
		t.Errorf("after Flush at the default stats level, %s is empty: a flush reads the table it wrote with "+
			"activity Flush, and flush reads are recorded from the default level up", statistics.FileReadFlushMicros)
	}
	if background(ioctx.ActivityCompaction, compacted, "Compact") &&
		afterFill.CountDelta(before, statistics.FileReadCompactionMicros) == 0 {
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
		t.Errorf("at the default stats level, reads that reached the driver's IO did not grow %s; the aggregate "+
			"is recorded from the default level up", statistics.SSTReadMicros)
	}
	switch {
	case db.path == memoryPath:
		t.Logf("%s: DB-open reads not checked (no reopen of %q)", statistics.FileReadDBOpenMicros, memoryPath)
	case background(ioctx.ActivityDBOpen, true, ""):
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
		db, st := statsDB(t, s, tc.want)
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
	db = s.open(t, s.need(t, coldReads(), statsLevel(statistics.LevelDisableAll))...)
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

// chargingDB opens a database whose reads reach the driver's IO, with a
// rate limiter that never makes reads wait and statistics to observe its
// charges, and fills it. It skips the case when the harness cannot provide
// that.
func chargingDB(t testing.TB, s *suite) (*dbh, *statistics.Statistics) {
	t.Helper()
	db, st := statsDB(t, s, statistics.LevelAll, chargingRate())
	fillTables(t, db, 200, 100)
	return db, st
}

// chargingRate is a rate limit no read of a case waits for.
func chargingRate() Capability { return rateLimit(1 << 30) }

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
	slow := s.need(t, coldReads(), rateLimit(rate))
	db, pick := throttlingDB(t, s, total)
	if db == nil {
		db = s.open(t, slow...)
		writeIncompressible(t, db, total)
	} else {
		db.close(t)
		db = s.openDSN(t, db.dsn, slow)
	}
	api := readAPIs("DB", db, key(5))[pick.index]
	timed := func(p ioctx.Priority) time.Duration {
		start := time.Now()
		if err := api.call(withRO(ioctx.ReadOptions{RateLimiterPriority: p})); err != nil {
			t.Fatalf("%s at priority %s: %v", api.name, p, err)
		}
		return time.Since(start)
	}
	uncharged := timed(ioctx.PriorityTotal)
	low := timed(ioctx.PriorityLow)
	expect := time.Duration(float64(pick.bytes) / rate * float64(time.Second))
	if low < expect/4 || low < 3*uncharged {
		t.Errorf("%s, which charges about %d KiB, with a rate limit of 256 KiB/s took %v at PriorityLow and %v at "+
			"PriorityTotal; charged reads must wait for the rate limiter (expected about %v)",
			api.name, pick.bytes>>10, low, uncharged, expect)
	}
}

// throttlePick is the read RateLimiterThrottling times, as an index into
// readAPIs' list for the DB, and the bytes it charges.
type throttlePick struct {
	index int
	bytes uint64
}

// scanIndex is the full scan's index in readAPIs' list.
const scanIndex = 2

// throttlingDB writes about total bytes to a database that can be reopened,
// whose rate limiter never makes reads wait and whose statistics count the
// charges, and picks the read of the DB (Get, MultiGet, a full scan, the
// verifications) that charges the most bytes: the one whose throttling is
// measurable. The caller reopens the database with a slow rate. Where the
// charges cannot be observed (no statistics, no rate limiter at
// PriorityUser, a database that does not outlive Close), it returns a nil
// database and a full scan, the read that reaches every byte in any driver.
func throttlingDB(t testing.TB, s *suite, total int) (*dbh, throttlePick) {
	t.Helper()
	scan := throttlePick{scanIndex, uint64(total)}
	params, unavailable := s.provide(coldReads(), statsLevel(statistics.LevelAll), chargingRate())
	if unavailable != "" {
		t.Logf("timing a full scan: %s", unavailable)
		return nil, scan
	}
	db, unsupported, err := s.tryOpenDSN(t, s.newDSN(), params)
	switch {
	case unsupported != "":
		t.Logf("timing a full scan: %s", unsupported)
		return nil, scan
	case err != nil:
		t.Fatalf("%v", err)
	case db.path == memoryPath:
		t.Logf("timing a full scan: the database does not outlive Close (%q), so the read charging the most "+
			"cannot be picked on it first", memoryPath)
		db.close(t)
		return nil, scan
	}
	st := db.Statistics()
	if st == nil {
		t.Logf("timing a full scan: the driver reports no statistics, so the charges cannot be compared")
		db.close(t)
		return nil, scan
	}
	writeIncompressible(t, db, total)
	var best throttlePick
	user := withRO(ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityUser})
	apis := readAPIs("DB", db, key(5))
	for i, api := range apis {
		_, b, err := charged(st, func() error { return api.call(user) })
		switch {
		case errors.Is(err, driver.ErrNotSupported):
			continue
		case err != nil:
			t.Fatalf("%s at PriorityUser: %v", api.name, err)
		case b > best.bytes:
			best = throttlePick{i, b}
		}
	}
	if best.bytes == 0 {
		t.Fatalf("no read of the DB charged the rate limiter at PriorityUser (rate limit %s); reads whose "+
			"priority is not Total are charged", chargingRate())
	}
	t.Logf("timing %s, which charged %d bytes of the %d written", apis[best.index].name, best.bytes, total)
	return db, best
}

// writeIncompressible writes keys holding about total random bytes and
// flushes them if the driver can.
func writeIncompressible(t testing.TB, db *dbh, total int) {
	t.Helper()
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
	if err := db.Flush(bg); err != nil && !errors.Is(err, driver.ErrNotSupported) {
		t.Fatalf("Flush: %v", err)
	}
}
