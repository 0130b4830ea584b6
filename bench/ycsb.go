package main

// The YCSB suite (-suite ycsb): YCSB's core workloads A–F and its load
// phase on shale, Pebble and Badger, each engine and thread count a child
// process of its own in every round. See bench/README.md, "YCSB".

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/dgraph-io/badger/v4"
)

const (
	ycsbSuite = "ycsb"

	// A row is YCSB's default record, fieldcount=10 fields of
	// fieldlength=100 bytes, stored as one value the way YCSB's RocksDB
	// binding serializes it: per field a 4-byte big-endian name length,
	// the name ("field0" …), a 4-byte big-endian value length, the value.
	ycsbFields    = 10
	ycsbFieldLen  = 100
	ycsbFieldName = 6 // len("field0")
	ycsbFieldSize = 4 + ycsbFieldName + 4 + ycsbFieldLen
	ycsbRowSize   = ycsbFields * ycsbFieldSize

	// ycsbMemory is every engine's block cache and memtable unless -cache
	// or -memtable is given.
	ycsbMemory = 64 << 20

	ycsbPhaseLoad = "load"
)

// ycsbDefaultEngines are the engines of -suite ycsb unless -engines is given.
var ycsbDefaultEngines = []string{"shale", "pebble", "badger"}

// ycsbSettings are the suite's settings, from the flags and the suite's
// own defaults where a shared flag was not given.
type ycsbSettings struct {
	engines   []string
	threads   []int
	records   int64
	ops       int64
	workloads []string // in run order
	cache     int64
	memtable  int64
}

func ycsbSettingsOf(cfg *config) ycsbSettings {
	s := ycsbSettings{engines: ycsbDefaultEngines, threads: []int{1, 4}, records: cfg.ycsbRecords, ops: cfg.ycsbOps,
		cache: ycsbMemory, memtable: ycsbMemory}
	if cfg.setFlags["engines"] {
		s.engines = cfg.engines
	}
	if cfg.setFlags["threads"] {
		s.threads = cfg.threads
	}
	if cfg.setFlags["cache"] {
		s.cache = cfg.cacheSize
	}
	if cfg.setFlags["memtable"] {
		s.memtable = cfg.memtableSize
	}
	for _, w := range ycsbRunOrder {
		if slices.Contains(cfg.ycsbWorkloads, w) {
			s.workloads = append(s.workloads, w)
		}
	}
	return s
}

// checkYCSBFlags validates the suite's flags (parseFlags calls it).
func checkYCSBFlags(c *config, workloads string) error {
	if c.ycsbRecords < 10 {
		return errors.Newf("-ycsb-records %d: want at least 10", c.ycsbRecords)
	}
	if c.ycsbOps < 1 {
		return errors.Newf("-ycsb-ops %d: want at least 1", c.ycsbOps)
	}
	c.ycsbWorkloads = nil
	for _, w := range strings.Split(workloads, ",") {
		w = strings.ToUpper(strings.TrimSpace(w))
		if ycsbWorkloadNamed(w) == nil {
			return errors.Newf("-ycsb-workloads: unknown workload %q (want some of A,B,C,D,E,F)", w)
		}
		c.ycsbWorkloads = append(c.ycsbWorkloads, w)
	}
	return nil
}

func ycsbWorkloadNamed(name string) *ycsbWorkload {
	for i := range ycsbWorkloads {
		if ycsbWorkloads[i].name == name {
			return &ycsbWorkloads[i]
		}
	}
	return nil
}

// ycsbJob is one child: an engine at a thread count.
type ycsbJob struct {
	engine  string
	threads int
}

func (j ycsbJob) id() string { return fmt.Sprintf("%s/t%d", j.engine, j.threads) }

func ycsbJobs(s ycsbSettings) []ycsbJob {
	var jobs []ycsbJob
	for _, t := range s.threads {
		for _, e := range s.engines {
			jobs = append(jobs, ycsbJob{e, t})
		}
	}
	return jobs
}

// ycsbStoreConfig is every engine's configuration: the main harness's
// (bloom 10 bits/key, snappy, WAL on without sync) with the suite's cache
// and memtable.
func ycsbStoreConfig(cfg *config, s ycsbSettings) storeConfig {
	return storeConfig{cacheSize: s.cache, memtableSize: s.memtable, bloomBits: 10, shaleStats: cfg.stats,
		pebbleCacheTotal: cfg.pebbleCache == "total", shaleTables: cfg.shaleTables}
}

// ---- rows ----

// ycsbRow fills row (ycsbRowSize bytes) with ten fields of random
// printable bytes chosen by seed.
func ycsbRow(row []byte, seed uint64) []byte {
	row = row[:ycsbRowSize]
	for f := range ycsbFields {
		o := f * ycsbFieldSize
		binary.BigEndian.PutUint32(row[o:], ycsbFieldName)
		copy(row[o+4:], "field")
		row[o+4+5] = byte('0' + f)
		binary.BigEndian.PutUint32(row[o+4+ycsbFieldName:], ycsbFieldLen)
		ycsbSetField(row, f, seed)
	}
	return row
}

// ycsbSetField replaces field f's value, as an update of one field
// (writeallfields=false) does.
func ycsbSetField(row []byte, f int, seed uint64) {
	pool := valuePool()
	off := int((seed*0x9E3779B97F4A7C15 + uint64(f)*104729) % uint64(len(pool)-ycsbFieldLen))
	o := f*ycsbFieldSize + 4 + ycsbFieldName + 4
	copy(row[o:o+ycsbFieldLen], pool[off:])
}

// ycsbRowOK reports whether row has the shape ycsbRow gives: a read that
// returns anything else read a damaged or foreign value.
func ycsbRowOK(row []byte) bool {
	if len(row) != ycsbRowSize {
		return false
	}
	for f := range ycsbFields {
		o := f * ycsbFieldSize
		if binary.BigEndian.Uint32(row[o:]) != ycsbFieldName || string(row[o+4:o+9]) != "field" ||
			row[o+9] != byte('0'+f) || binary.BigEndian.Uint32(row[o+4+ycsbFieldName:]) != ycsbFieldLen {
			return false
		}
	}
	return true
}

// ---- the client: YCSB's operations on one store ----

// ycsbTally is one thread's (or, merged, one phase's) latencies and checks.
type ycsbTally struct {
	hist [numYCSBOps]latencyHist
	// misses counts reads (the reads of updates and read-modify-writes,
	// and the first record of a scan) of an acknowledged record that did
	// not find it; no workload deletes, so any miss is a failure.
	misses int64
	// badRows counts rows read back in another shape than written.
	badRows int64
	// outOfOrder counts scan steps whose key was not above the previous.
	outOfOrder int64
	reads      int64 // point reads checked
	scanRows   int64 // rows returned by scans, each checked
}

func (t *ycsbTally) merge(o *ycsbTally) {
	for i := range t.hist {
		t.hist[i].merge(&o.hist[i])
	}
	t.misses += o.misses
	t.badRows += o.badRows
	t.outOfOrder += o.outOfOrder
	t.reads += o.reads
	t.scanRows += o.scanRows
}

type ycsbClient struct {
	s    store
	rng  *rand.Rand
	kbuf []byte
	prev []byte
	row  []byte
	t    *ycsbTally
}

func newYCSBClient(s store, seed uint64, t *ycsbTally) *ycsbClient {
	return &ycsbClient{s: s, rng: rand.New(rand.NewPCG(seed, 0x5943)), kbuf: make([]byte, 0, 32),
		prev: make([]byte, 0, 32), row: make([]byte, ycsbRowSize), t: t}
}

// read reads record keynum's row (all fields) and checks it; nil if missing.
func (c *ycsbClient) read(keynum int64) ([]byte, error) {
	c.kbuf = ycsbKey(c.kbuf, keynum)
	v, found, err := c.s.getCopy(c.kbuf)
	if err != nil {
		return nil, err
	}
	c.t.reads++
	if !found {
		c.t.misses++
		return nil, nil
	}
	if !ycsbRowOK(v) {
		c.t.badRows++
	}
	return v, nil
}

// update replaces one field of record keynum: a key-value store has no
// partial write, so it reads the row, replaces the field and writes the
// row back, as YCSB's RocksDB binding (and go-ycsb's Pebble and Badger
// bindings) do.
func (c *ycsbClient) update(keynum int64) error {
	v, err := c.read(keynum)
	if err != nil || v == nil {
		return err
	}
	ycsbSetField(v, c.rng.IntN(ycsbFields), c.rng.Uint64())
	return c.s.put(c.kbuf, v)
}

func (c *ycsbClient) insert(keynum int64) error {
	c.kbuf = ycsbKey(c.kbuf, keynum)
	return c.s.put(c.kbuf, ycsbRow(c.row, c.rng.Uint64()))
}

// scan reads n records from record keynum on, in key order, checking that
// the first is keynum's and that keys ascend.
func (c *ycsbClient) scan(keynum int64, n int) error {
	c.kbuf = ycsbKey(c.kbuf, keynum)
	i := 0
	err := ycsbScan(c.s, c.kbuf, n, func(k, v []byte) {
		switch {
		case i == 0 && !bytes.Equal(k, c.kbuf):
			c.t.misses++
		case i > 0 && bytes.Compare(k, c.prev) <= 0:
			c.t.outOfOrder++
		}
		if !ycsbRowOK(v) {
			c.t.badRows++
		}
		c.prev = append(c.prev[:0], k...)
		i++
	})
	if i == 0 {
		c.t.misses++
	}
	c.t.scanRows += int64(i)
	return err
}

// readModifyWrite is CoreWorkload's: a read of the whole row, then an
// update of one field (which, in a key-value binding, reads it again).
func (c *ycsbClient) readModifyWrite(keynum int64) error {
	if _, err := c.read(keynum); err != nil {
		return err
	}
	return c.update(keynum)
}

// ycsbScanner is a store with a scan of its own (the tests' fakes).
type ycsbScanner interface {
	scan(start []byte, n int, visit func(k, v []byte)) error
}

// ycsbScan visits up to n entries from start on with a new iterator, as
// YCSB's key-value bindings scan.
func ycsbScan(s store, start []byte, n int, visit func(k, v []byte)) error {
	switch s := s.(type) {
	case ycsbScanner:
		return s.scan(start, n, visit)
	case *shaleStore:
		it, err := s.db.NewIterator(s.ctx, nil)
		if err != nil {
			return err
		}
		for ok, i := it.SeekGE(start), 0; ok && i < n; ok, i = it.Next(), i+1 {
			visit(it.Key(), it.Value())
		}
		return it.Close()
	case *pebbleStore:
		it, err := s.db.NewIter(nil)
		if err != nil {
			return err
		}
		for ok, i := it.SeekGE(start), 0; ok && i < n; ok, i = it.Next(), i+1 {
			v, err := it.ValueAndErr()
			if err != nil {
				_ = it.Close()
				return err
			}
			visit(it.Key(), v)
		}
		return it.Close()
	case *badgerStore:
		txn := s.db.NewTransaction(false)
		defer txn.Discard()
		o := badger.DefaultIteratorOptions
		o.PrefetchValues = false // the rows live in the LSM tree: item.Value reads them in place
		it := txn.NewIterator(o)
		defer it.Close()
		for it.Seek(start); it.Valid() && n > 0; it.Next() {
			item := it.Item()
			if err := item.Value(func(v []byte) error { visit(item.Key(), v); return nil }); err != nil {
				return err
			}
			n--
		}
		return nil
	case *goleveldbStore:
		it := s.db.NewIterator(nil, nil)
		for ok, i := it.Seek(start), 0; ok && i < n; ok, i = it.Next(), i+1 {
			visit(it.Key(), it.Value())
		}
		it.Release()
		return it.Error()
	}
	return errors.Newf("ycsb: no scan for %T", s)
}

// ---- phases ----

// ycsbPhaseResult is one phase (the load or a workload) of one child.
type ycsbPhaseResult struct {
	ops     int64
	wall    time.Duration
	cpu     time.Duration
	tally   ycsbTally
	peakRSS float64 // MiB, since the phase began
	// rssSinceStart: the peak could not be reset (no writable
	// /proc/self/clear_refs), so peakRSS is the child's since it began.
	rssSinceStart bool
}

// resetPeakRSS sets the process's peak RSS (VmHWM) to its current RSS, so
// the next reading is the peak of what follows (Linux 4.0+).
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// ycsbRun runs threads goroutines, thread t calling mk(t)'s operation until
// it reports done or any thread fails, and returns the wall and process
// CPU time of the whole.
func ycsbRun(threads int, mk func(t int) func() (done bool, err error)) (time.Duration, time.Duration, error) {
	var stop atomic.Bool
	errs := make([]error, threads)
	ops := make([]func() (bool, error), threads)
	for t := range threads {
		ops[t] = mk(t)
	}
	var wg sync.WaitGroup
	cpu0, start := cpuTime(), time.Now()
	for t := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				done, err := ops[t]()
				if err != nil {
					errs[t] = err
					stop.Store(true)
				}
				if done {
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start), cpuTime() - cpu0, errors.Join(errs...)
}

// ycsbLoad is YCSB's load phase: every record inserted once, the threads
// taking record numbers from one shared sequence.
func ycsbLoad(s store, threads int, records int64, seed uint64) (ycsbPhaseResult, error) {
	var next atomic.Int64
	tallies := make([]ycsbTally, threads)
	resetOK := resetPeakRSS()
	wall, cpu, err := ycsbRun(threads, func(t int) func() (bool, error) {
		c := newYCSBClient(s, seed+uint64(t), &tallies[t])
		h := &tallies[t].hist[opInsert]
		return func() (bool, error) {
			k := next.Add(1) - 1
			if k >= records {
				return true, nil
			}
			t0 := time.Now()
			err := c.insert(k)
			h.record(time.Since(t0))
			return false, err
		}
	})
	r := ycsbPhaseResult{ops: records, wall: wall, cpu: cpu, peakRSS: float64(procStatusKiB("VmHWM")) / 1024, rssSinceStart: !resetOK}
	for i := range tallies {
		r.tally.merge(&tallies[i])
	}
	return r, err
}

// ycsbTransactions runs ops operations of w over the records the counter
// has acknowledged, split across threads as YCSB splits operationcount.
func ycsbTransactions(s store, w *ycsbWorkload, threads int, ops int64, counter *ackCounter, seed uint64) (ycsbPhaseResult, error) {
	records := counter.count()
	var latest0 *zipfian
	if w.distribution == "latest" {
		latest0 = newZipfianItems(counter.lastValue())
	}
	tallies := make([]ycsbTally, threads)
	resetOK := resetPeakRSS()
	wall, cpu, err := ycsbRun(threads, func(t int) func() (bool, error) {
		c := newYCSBClient(s, seed+uint64(t), &tallies[t])
		kc := w.keyChooser(records, ops, counter, latest0)
		left := ops / int64(threads)
		if int64(t) < ops%int64(threads) {
			left++
		}
		return func() (bool, error) {
			if left == 0 {
				return true, nil
			}
			left--
			op := w.chooseOp(c.rng)
			var err error
			var t0 time.Time
			switch op {
			case opInsert:
				k := counter.next()
				t0 = time.Now()
				if err = c.insert(k); err == nil {
					counter.acknowledge(k)
				}
			case opScan:
				k, n := nextKeynum(kc, c.rng, counter), scanLength(c.rng)
				t0 = time.Now()
				err = c.scan(k, n)
			default:
				k := nextKeynum(kc, c.rng, counter)
				t0 = time.Now()
				switch op {
				case opRead:
					_, err = c.read(k)
				case opUpdate:
					err = c.update(k)
				case opRMW:
					err = c.readModifyWrite(k)
				}
			}
			c.t.hist[op].record(time.Since(t0))
			return left == 0, err
		}
	})
	r := ycsbPhaseResult{ops: ops, wall: wall, cpu: cpu, peakRSS: float64(procStatusKiB("VmHWM")) / 1024, rssSinceStart: !resetOK}
	for i := range tallies {
		r.tally.merge(&tallies[i])
	}
	return r, err
}

// check fails the phase on any miss, damaged row or disorder: no core
// workload deletes, so every read of an acknowledged record must find it.
func (r *ycsbPhaseResult) check(engine, phase string) error {
	t := &r.tally
	if t.misses > 0 || t.badRows > 0 || t.outOfOrder > 0 {
		return errors.Newf("%s, %s: %d of %d reads and scans missed an acknowledged record, %d rows read back damaged, %d scan steps out of order",
			engine, phase, t.misses, t.reads+t.hist[opScan].n, t.badRows, t.outOfOrder)
	}
	return nil
}

// values stores the phase's figures in vals under phase/…
func (r *ycsbPhaseResult) values(vals map[string]float64, phase string) {
	vals[phase+"/ops_s"] = float64(r.ops) / r.wall.Seconds()
	vals[phase+"/seconds"] = r.wall.Seconds()
	vals[phase+"/cpu_us"] = float64(r.cpu.Nanoseconds()) / 1e3 / float64(r.ops)
	vals[phase+"/rss_mib"] = r.peakRSS
	if r.rssSinceStart {
		vals["rss_not_reset"] = 1
	}
	vals[phase+"/misses"] = float64(r.tally.misses)
	vals[phase+"/reads_checked"] = float64(r.tally.reads)
	vals[phase+"/scan_rows"] = float64(r.tally.scanRows)
	for op := range numYCSBOps {
		h := &r.tally.hist[op]
		if h.n == 0 {
			continue
		}
		name := phase + "/" + ycsbOpNames[op]
		vals[name+"/count"] = float64(h.n)
		vals[name+"/p50_us"] = h.percentile(50) / 1e3
		vals[name+"/p99_us"] = h.percentile(99) / 1e3
	}
}

// runYCSBJob is a child: it loads a new database with j's threads, runs
// the selected workloads on it in YCSB's order, and returns the figures.
func runYCSBJob(cfg *config, j ycsbJob, dir string) (*suiteResult, error) {
	set := ycsbSettingsOf(cfg)
	s, err := openStore(j.engine, dir, ycsbStoreConfig(cfg, set))
	if err != nil {
		return nil, err
	}
	defer func() {
		if s != nil {
			_ = s.close()
		}
	}()
	res := &suiteResult{Job: j.id(), Values: map[string]float64{}}
	load, err := ycsbLoad(s, j.threads, set.records, 1)
	if err != nil {
		return nil, errors.Wrap(err, "load")
	}
	load.values(res.Values, ycsbPhaseLoad)
	logf(j.engine, "ycsb, %d thread(s): load of %d records: %.0f ops/s, insert p50 %.1f µs, p99 %.1f µs, peak RSS %.0f MiB",
		j.threads, set.records, res.Values["load/ops_s"], res.Values["load/insert/p50_us"], res.Values["load/insert/p99_us"], load.peakRSS)
	if ps, ok := s.(*pebbleStore); ok {
		// Pebble's blocks get the others' cache from now on (see settleCache).
		ps.settleCache()
	}
	counter := newAckCounter(set.records)
	for i, name := range set.workloads {
		w := ycsbWorkloadNamed(name)
		r, err := ycsbTransactions(s, w, j.threads, set.ops, counter, uint64(100*(i+1)))
		if err != nil {
			return nil, errors.Wrapf(err, "workload %s", name)
		}
		if err := r.check(j.engine, "workload "+name); err != nil {
			return nil, err
		}
		r.values(res.Values, name)
		var lat []string
		for op := range numYCSBOps {
			if h := &r.tally.hist[op]; h.n > 0 {
				lat = append(lat, fmt.Sprintf("%s p50 %.1f p99 %.1f µs", ycsbOpNames[op], h.percentile(50)/1e3, h.percentile(99)/1e3))
			}
		}
		logf(j.engine, "ycsb, %d thread(s): workload %s: %.0f ops/s, %s, peak RSS %.0f MiB", j.threads, name,
			res.Values[name+"/ops_s"], strings.Join(lat, ", "), r.peakRSS)
	}
	res.Values["records_end"] = float64(counter.count())
	res.Notes = append(res.Notes, fmt.Sprintf("%d records at the end (%d loaded, %d inserted by the workloads)",
		counter.count(), set.records, counter.count()-set.records))
	err = s.close()
	s = nil
	return res, err
}

// ycsbJobByID finds the job -suite-job names.
func ycsbJobByID(set ycsbSettings, id string) (ycsbJob, error) {
	for _, j := range ycsbJobs(set) {
		if j.id() == id {
			return j, nil
		}
	}
	return ycsbJob{}, errors.Newf("-suite-job %q is not a job of suite ycsb", id)
}

// ycsbDir is a child's database directory under the run's.
func ycsbDir(cfg *config, j ycsbJob) string {
	return cfg.dir + "/ycsb-" + j.engine + "-t" + strconv.Itoa(j.threads)
}
