package etcd

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

// These tests check, for this driver, what the conformance suite's
// statistics and rate-limiter cases check through the façade (which run
// here too, see TestConformance's capabilities), and more: the DB-level
// histograms and tickers, and the RPCs made on no read's behalf. An RPC is
// this driver's IO.

// readCase is one read of the public API, with the activity it must carry.
type readCase struct {
	name string
	own  ioctx.Activity
	call func(ctx context.Context) error
}

// statsReads returns a read of each API of db, of a session of it and of a
// read-only transaction (begun here: BeginTx's own read is not one of them).
func statsReads(t *testing.T, db *driver.DB) []readCase {
	t.Helper()
	conn, err := db.Conn(bg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	tx, err := db.BeginTx(bg, &driver.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	type reader interface {
		Get(context.Context, []byte) ([]byte, error)
		MultiGet(context.Context, [][]byte) ([][]byte, error)
		NewIterator(context.Context, *driver.IterOptions) (*driver.Iterator, error)
	}
	reads := func(prefix string, r reader) []readCase {
		return []readCase{
			{prefix + ".Get", ioctx.ActivityGet, func(ctx context.Context) error {
				_, err := r.Get(ctx, []byte("k05"))
				return err
			}},
			{prefix + ".MultiGet", ioctx.ActivityMultiGet, func(ctx context.Context) error {
				_, err := r.MultiGet(ctx, [][]byte{[]byte("k05"), []byte("absent")})
				return err
			}},
			{prefix + ".NewIterator", ioctx.ActivityDBIterator, func(ctx context.Context) error {
				it, err := r.NewIterator(ctx, nil)
				if err != nil {
					return err
				}
				for ok := it.First(); ok; ok = it.Next() {
				}
				return it.Close()
			}},
		}
	}
	cases := reads("DB", db)
	cases = append(cases,
		readCase{"DB.VerifyChecksum", ioctx.ActivityVerifyDBChecksum, db.VerifyChecksum},
		readCase{"DB.VerifyFileChecksums", ioctx.ActivityVerifyFileChecksums, db.VerifyFileChecksums})
	cases = append(cases, reads("Conn", conn)[:2]...)
	return append(cases, reads("Tx", tx)...)
}

// statsDB opens a namespace with 40 keys and the given parameters.
func statsDB(t *testing.T, params string) *driver.DB {
	t.Helper()
	db := openDB(t, "page_size=16&"+params)
	var b driver.Batch
	for i := range 40 {
		b.Put(fmt.Appendf(nil, "k%02d", i), make([]byte, 100))
	}
	if err := db.Write(bg, &b); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestStatisticsPerActivity: at stats_level=all each read's RPCs are
// recorded in its activity's FileRead*Micros histogram, in no other
// user-read one, and one for one in SSTReadMicros.
func TestStatisticsPerActivity(t *testing.T) {
	db := statsDB(t, "stats_level=all")
	st := db.Statistics()
	if st == nil || st.Level() != statistics.LevelAll {
		t.Fatalf("Statistics() = %v with stats_level=all", st)
	}
	for _, rc := range statsReads(t, db) {
		own := statistics.FileReadHistogram(rc.own.RocksDBValue())
		before := st.Snapshot()
		if err := rc.call(bg); err != nil {
			t.Errorf("%s: %v", rc.name, err)
			continue
		}
		after := st.Snapshot()
		got := after.CountDelta(before, own)
		if got == 0 {
			t.Errorf("%s made RPCs but %s did not grow", rc.name, own)
		}
		for h := range statistics.NumHistograms {
			if d := after.CountDelta(before, h); h.IsUserFileRead() && h != own && d != 0 {
				t.Errorf("%s recorded %d samples in %s; want them all in %s", rc.name, d, h, own)
			}
		}
		if sst := after.CountDelta(before, statistics.SSTReadMicros); sst != got {
			t.Errorf("%s grew %s by %d and %s by %d; want each RPC once in both", rc.name,
				statistics.SSTReadMicros, sst, own, got)
		}
	}
	// The DB-level histograms and tickers, as the engine records them.
	snap := st.Snapshot()
	for _, h := range []statistics.Histogram{statistics.DBGet, statistics.DBMultiGet, statistics.BytesPerRead,
		statistics.BytesPerMultiGet, statistics.DBWrite} {
		if snap.Histograms[h].Count == 0 {
			t.Errorf("%s recorded nothing", h)
		}
	}
	for _, tk := range []statistics.Ticker{statistics.NumberKeysRead, statistics.BytesRead,
		statistics.NumberMultiGetCalls, statistics.NumberMultiGetKeysRead, statistics.NumberMultiGetKeysFound,
		statistics.NumberDBSeek, statistics.NumberDBNext, statistics.IterBytesRead, statistics.NumberKeysWritten,
		statistics.BytesWritten} {
		if snap.Tickers[tk] == 0 {
			t.Errorf("ticker %s = 0", tk)
		}
	}
}

// TestStatisticsGating: the stats level gates recording as the engine's
// does.
func TestStatisticsGating(t *testing.T) {
	if db := openDB(t, "statistics=false"); db.Statistics() != nil {
		t.Errorf("Statistics() with statistics=false is not nil")
	}
	for _, tc := range []struct {
		level string
		want  statistics.Level
		// bad says which histograms must stay empty.
		bad     func(statistics.Histogram) bool
		tickers bool
	}{
		{"except_detailed_timers", statistics.LevelExceptDetailedTimers, statistics.Histogram.IsUserFileRead, true},
		{"except_timers", statistics.LevelExceptTimers, statistics.Histogram.IsTime, true},
		{"except_histogram_or_timers", statistics.LevelExceptHistogramOrTimers,
			func(statistics.Histogram) bool { return true }, true},
		{"disable_all", statistics.LevelDisableAll, func(statistics.Histogram) bool { return true }, false},
	} {
		db := statsDB(t, "stats_level="+tc.level)
		st := db.Statistics()
		if st.Level() != tc.want {
			t.Errorf("stats_level=%s: Level() = %s", tc.level, st.Level())
		}
		for _, rc := range statsReads(t, db) {
			if err := rc.call(bg); err != nil {
				t.Errorf("%s: %v", rc.name, err)
			}
		}
		snap := st.Snapshot()
		var bad []string
		for h := range statistics.NumHistograms {
			if c := snap.Histograms[h].Count; c != 0 && tc.bad(h) {
				bad = append(bad, fmt.Sprintf("%s (%d)", h, c))
			}
		}
		if len(bad) > 0 {
			t.Errorf("stats_level=%s: these recorded samples: %s", tc.level, strings.Join(bad, ", "))
		}
		if tc.want == statistics.LevelExceptDetailedTimers && snap.Histograms[statistics.SSTReadMicros].Count == 0 {
			t.Errorf("stats_level=%s: %s recorded nothing; the aggregate records from the default level up",
				tc.level, statistics.SSTReadMicros)
		}
		var ticks uint64
		for _, c := range snap.Tickers {
			ticks += c
		}
		if tc.tickers != (ticks > 0) {
			t.Errorf("stats_level=%s: tickers sum to %d", tc.level, ticks)
		}
	}
}

// charged returns the read requests and bytes call charged to the rate
// limiter.
func charged(st *statistics.Statistics, call func() error) (n, b uint64, err error) {
	before := st.Snapshot()
	err = call()
	d := st.Snapshot().Sub(before)
	return d[statistics.RateLimiterRequestsRead], d[statistics.RateLimiterBytesRead], err
}

// TestRateLimiterCharging: every read's responses are charged at its
// priority, and not at all at PriorityTotal (the default), whether the
// priority comes from the call's context or a session's defaults.
func TestRateLimiterCharging(t *testing.T) {
	db := statsDB(t, "rate_limit=1GiB&stats_level=all")
	st := db.Statistics()
	user := ioctx.WithReadOptions(bg, ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityUser})
	for _, rc := range statsReads(t, db) {
		if n, b, err := charged(st, func() error { return rc.call(bg) }); err != nil || n != 0 || b != 0 {
			t.Errorf("%s at PriorityTotal charged %d requests, %d bytes (error %v); want nothing", rc.name, n, b, err)
		}
		if n, b, err := charged(st, func() error { return rc.call(user) }); err != nil || n == 0 || b == 0 {
			t.Errorf("%s at PriorityUser charged %d requests, %d bytes (error %v); want its responses charged",
				rc.name, n, b, err)
		}
	}
	session, err := db.Conn(user)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	if n, _, err := charged(st, func() error { _, err := session.Get(bg, []byte("k01")); return err }); err != nil || n == 0 {
		t.Errorf("Conn.Get on a session with default priority User charged %d requests (error %v)", n, err)
	}
	if n, _, err := charged(st, func() error { _, err := db.Get(bg, []byte("k01")); return err }); err != nil || n != 0 {
		t.Errorf("DB.Get while a charging session is open charged %d requests (error %v)", n, err)
	}
}

// TestRateLimiterThrottling: reads charged at a low rate take measurably
// longer than the same reads uncharged.
func TestRateLimiterThrottling(t *testing.T) {
	const rate, total = 256 << 10, 128 << 10
	db := openDB(t, fmt.Sprintf("rate_limit=%d", rate))
	var b driver.Batch
	for i := range total / 4096 {
		b.Put(fmt.Appendf(nil, "k%03d", i), make([]byte, 4096))
	}
	if err := db.Write(bg, &b); err != nil {
		t.Fatal(err)
	}
	scan := func(p ioctx.Priority) time.Duration {
		start := time.Now()
		it, err := db.NewIterator(ioctx.WithReadOptions(bg, ioctx.ReadOptions{RateLimiterPriority: p}), nil)
		if err != nil {
			t.Fatal(err)
		}
		for ok := it.First(); ok; ok = it.Next() {
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	uncharged := scan(ioctx.PriorityTotal)
	low := scan(ioctx.PriorityLow)
	expect := time.Duration(float64(total) / rate * float64(time.Second))
	if low < expect/4 || low < 3*uncharged {
		t.Errorf("a scan of %d KiB at rate_limit=%dKiB took %v at PriorityLow and %v at PriorityTotal; "+
			"want the charged one to wait (about %v)", total>>10, rate>>10, low, uncharged, expect)
	}
	t.Logf("scan of %d KiB: %v uncharged, %v at PriorityLow (rate %d KiB/s)", total>>10, uncharged, low, rate>>10)
}
