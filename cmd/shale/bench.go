package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

const benchUsage = `bench [-dir DIR] [-max-data 64MiB] [-value-size 256] [-key-size 16]
	[-duration-per-phase 3s] [-stats-level all] [-threads 1] [-batch 16]
	[-rate-limit 0] [-priority P] [-svg FILE] [-dsn-params "k=v&..."] [-keep]`

const benchDoc = `
Runs RocksDB's db_basic_bench workload through the driver façade. It opens a
database (a new temporary directory unless -dir is given), fills it with
max-data bytes of keys written in a pseudo-random order (fixed-width keys
holding the big-endian integer i*3, as RocksDB's KeyGenerator; i*3+1 are the
missing keys), flushes, compacts the whole key range, then runs timed phases
of duration-per-phase each, on -threads goroutines:

	get                    Get of random existing keys
	get-miss               Get of random missing keys
	multiget               MultiGet of -batch random existing keys
	seek                   SeekGE to random existing keys on one iterator
	next                   Next over full scans, restarted at the end
	verify-checksum        VerifyChecksum, repeated
	verify-file-checksums  VerifyFileChecksums, repeated

For each phase it prints the operations, operations per second, and P50 and
P99 latency in microseconds, measured by the bench itself; then the
per-activity table of the database's statistics. Every read is checked (an
existing key must be found with its value size, a missing one must not, a
scan must see every key): a wrong result exits with code 1.

The database is opened with the DSN parameters error_if_exists=true,
write_buffer_size=8MiB and target_file_size_base=8MiB (so the fill makes
several tables), stats_level from -stats-level, and rate_limit from
-rate-limit with rate_limit_mode=reads; -dsn-params overrides any of them. A temporary directory is
removed at the end unless -keep is given; a -dir directory is never removed.
Progress is drawn on stderr when it is a terminal.`

// benchDefaults are the DSN parameters bench sets before its flags and
// -dsn-params: a smaller write buffer and table size than the engine's
// defaults, so that a 64 MiB fill makes several tables and levels for the
// reads to cross.
var benchDefaults = []driver.Param{
	{Key: "error_if_exists", Value: "true"},
	{Key: "write_buffer_size", Value: "8MiB"},
	{Key: "target_file_size_base", Value: "8MiB"},
}

// fillBatch is the number of keys per write batch during the fill.
const fillBatch = 64

type benchConfig struct {
	dir       string
	maxData   int64
	valueSize int
	keySize   int
	duration  time.Duration
	level     string
	threads   int
	batch     int
	rateLimit int64
	priority  string
	svg       string
	dsnParams string
	keep      bool
}

func runBench(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, benchUsage, benchDoc)
	var c benchConfig
	maxData := sizeFlag{n: 64 << 20}
	rateLimit := sizeFlag{}
	fs.StringVar(&c.dir, "dir", "", "database directory `DIR` (default: a new temporary directory, removed at the end)")
	fs.Var(&maxData, "max-data", "`size` of the keys and values to fill (bytes or units: 64MiB)")
	fs.IntVar(&c.valueSize, "value-size", 256, "value size in bytes")
	fs.IntVar(&c.keySize, "key-size", 16, "key size in bytes (at least 8)")
	fs.DurationVar(&c.duration, "duration-per-phase", 3*time.Second, "how long each timed phase runs")
	fs.StringVar(&c.level, "stats-level", "all", "statistics `level` (DSN stats_level)")
	fs.IntVar(&c.threads, "threads", 1, "goroutines per timed phase")
	fs.IntVar(&c.batch, "batch", 16, "keys per MultiGet")
	fs.Var(&rateLimit, "rate-limit", "rate limiter `bytes` per second for reads (DSN rate_limit); 0: none")
	fs.StringVar(&c.priority, "priority", "", "rate-limiter `priority` of the timed reads: total, low, mid, high or user\n(default user with -rate-limit, else total)")
	fs.StringVar(&c.svg, "svg", "", "write the latency CDF of each phase and the per-activity latencies to this SVG `file`")
	fs.StringVar(&c.dsnParams, "dsn-params", "", "extra DSN `parameters` \"k=v&k=v\", applied last")
	fs.BoolVar(&c.keep, "keep", false, "keep the temporary directory")
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("unexpected argument %q", fs.Arg(0))
	}
	c.maxData, c.rateLimit = maxData.n, rateLimit.n
	b, err := newBench(env, c)
	if err != nil {
		return err
	}
	return b.run(ctx)
}

// bench is one run of the workload. Its fields are set before the timed
// phases and only read during them, by every thread; results is appended to
// between phases only.
type bench struct {
	env  *cmdEnv
	cfg  benchConfig
	pri  ioctx.Priority
	mode progressMode

	dir     string
	tempDir bool
	dsn     string
	numKeys uint64
	values  []byte // random bytes values are sliced from

	db      *driver.DB
	results []phaseResult
}

func newBench(env *cmdEnv, c benchConfig) (*bench, error) {
	switch {
	case c.keySize < 8 || c.keySize > 1<<16:
		return nil, usageErrorf("invalid -key-size %d: must be between 8 and 65536", c.keySize)
	case c.valueSize < 0 || c.valueSize > 64<<20:
		return nil, usageErrorf("invalid -value-size %d: must be between 0 and 64MiB", c.valueSize)
	case c.threads < 1 || c.threads > 1024:
		return nil, usageErrorf("invalid -threads %d: must be between 1 and 1024", c.threads)
	case c.batch < 1 || c.batch > 1<<16:
		return nil, usageErrorf("invalid -batch %d: must be between 1 and 65536", c.batch)
	case c.duration <= 0:
		return nil, usageErrorf("invalid -duration-per-phase %s: must be positive", c.duration)
	case c.rateLimit < 0:
		return nil, usageErrorf("invalid -rate-limit %d: must not be negative", c.rateLimit)
	}
	n := c.maxData / int64(c.keySize+c.valueSize)
	if n < 1 || n >= 1<<32 {
		return nil, usageErrorf("invalid -max-data %s: it must hold between 1 and 2^32-1 keys of %d+%d bytes",
			driver.FormatSize(c.maxData), c.keySize, c.valueSize)
	}
	b := &bench{env: env, cfg: c, numKeys: uint64(n)}
	pri := c.priority
	if pri == "" {
		pri = "total"
		if c.rateLimit > 0 {
			pri = "user"
		}
	}
	var err error
	if b.pri, err = parsePriority(pri); err != nil {
		return nil, err
	}
	if isTerminal(env.stderr) {
		b.mode = progressBar
	}
	// Values are slices of one random buffer at random offsets, as
	// db_bench's RandomGenerator: cheap to make, and not all alike.
	rng := rand.New(rand.NewPCG(301, 0))
	b.values = make([]byte, max(1<<20, 2*c.valueSize))
	for i := range b.values {
		b.values[i] = ' ' + byte(rng.IntN(95))
	}
	return b, nil
}

func (b *bench) run(ctx context.Context) (err error) {
	if b.cfg.dir == "" {
		dir, terr := os.MkdirTemp("", "shale-bench-")
		if terr != nil {
			return &exitError{code: exitFailure, err: errors.Wrap(terr, "creating a temporary directory")}
		}
		b.dir, b.tempDir = dir, true
		// err is the named result: a failed removal fails the run.
		defer func() {
			if b.cfg.keep {
				fmt.Fprintf(b.env.stdout, "\nkept the database in %s\n", b.dir)
				return
			}
			if rerr := os.RemoveAll(b.dir); rerr != nil && err == nil {
				err = &exitError{code: exitFailure, err: errors.Wrapf(rerr, "removing %s", b.dir)}
			}
		}()
	} else {
		b.dir = b.cfg.dir
	}
	if err := b.open(ctx); err != nil {
		return err
	}
	defer func() {
		if cerr := b.db.Close(); cerr != nil && err == nil {
			err = &exitError{code: exitFailure, err: errors.Wrap(cerr, "closing the database")}
		}
	}()
	b.printHeader()
	if err := b.load(ctx); err != nil {
		return b.failed(ctx, err)
	}
	if err := b.timedPhases(ctx); err != nil {
		return b.failed(ctx, err)
	}
	fmt.Fprintln(b.env.stdout)
	if err := printActivityTable(b.env.stdout, b.db.Statistics()); err != nil {
		return err
	}
	if err := printMetrics(ctx, b.env.stdout, b.db); err != nil {
		return &exitError{code: exitFailure, err: err}
	}
	if b.cfg.svg != "" {
		if err := writeSVGFile(b.cfg.svg, b.results, b.db.Statistics(), b.title()); err != nil {
			return &exitError{code: exitFailure, err: err}
		}
		fmt.Fprintf(b.env.stdout, "\nwrote %s\n", b.cfg.svg)
	}
	return nil
}

// failed classifies an error that stopped the workload.
func (b *bench) failed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return &exitError{code: exitFailure, err: errors.Wrap(err, "interrupted")}
	}
	return err
}

func (b *bench) open(ctx context.Context) error {
	d := &dsnBuilder{path: b.dir, params: append([]driver.Param(nil), benchDefaults...)}
	// -dsn-params statistics=false creates no statistics, which a
	// stats_level would contradict (the engine refuses the two together).
	user := &dsnBuilder{}
	if err := user.merge(b.cfg.dsnParams); err != nil {
		return err
	}
	if v, ok := user.get("statistics"); !ok {
		d.set("stats_level", b.cfg.level)
	} else if on, err := driver.ParseBool(v); err != nil || on {
		d.set("stats_level", b.cfg.level)
	}
	if b.cfg.rateLimit > 0 {
		// Reads only: the bench limits its reads, not the fill's flushes
		// and compactions (the engine's default mode charges both).
		d.set("rate_limit", strconv.FormatInt(b.cfg.rateLimit, 10))
		d.set("rate_limit_mode", "reads")
	}
	if err := d.merge(b.cfg.dsnParams); err != nil {
		return err
	}
	dsn, _, err := d.build()
	if err != nil {
		return err
	}
	b.dsn = dsn
	b.db, err = openDB(ctx, dsn)
	return err
}

func (b *bench) title() string {
	return fmt.Sprintf("shale bench: %d keys of %d+%d bytes, %d thread(s), %s per phase",
		b.numKeys, b.cfg.keySize, b.cfg.valueSize, b.cfg.threads, b.cfg.duration)
}

func (b *bench) printHeader() {
	w := b.env.stdout
	where := b.dir
	if b.tempDir {
		where += " (temporary)"
	}
	fmt.Fprintf(w, "shale bench\n")
	fmt.Fprintf(w, "  dir:      %s\n", where)
	fmt.Fprintf(w, "  dsn:      %s\n", b.dsn)
	fmt.Fprintf(w, "  keys:     %d x (%d B key + %d B value) = %s\n", b.numKeys, b.cfg.keySize, b.cfg.valueSize,
		formatBytes(int64(b.numKeys)*int64(b.cfg.keySize+b.cfg.valueSize)))
	fmt.Fprintf(w, "  phases:   %s each, %d thread(s), reads at priority %s\n", b.cfg.duration, b.cfg.threads, b.pri)
	fmt.Fprintf(w, "  machine:  GOMAXPROCS %d, %s %s/%s\n\n", runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// key writes the i-th key with offset (0: an existing key, 1: a missing
// one) into dst, which has the key size: the big-endian integer i*3+offset
// followed by zeros, as RocksDB's KeyGenerator (with 8-byte integers).
func (b *bench) key(dst []byte, i, offset uint64) []byte {
	dst = dst[:b.cfg.keySize]
	binary.BigEndian.PutUint64(dst, i*3+offset)
	clear(dst[8:])
	return dst
}

// value returns a value of the value size, sliced from the random buffer.
func (b *bench) value(rng *rand.Rand) []byte {
	off := rng.IntN(len(b.values) - b.cfg.valueSize + 1)
	return b.values[off : off+b.cfg.valueSize]
}

// permutation maps 0..n-1 onto itself in a scattered order, i -> (a*i + c)
// mod n with a coprime to n, so the fill writes every key once in a random
// looking order without a table of n entries. It is an immutable value.
type permutation struct{ a, c, n uint64 }

func newPermutation(n uint64, rng *rand.Rand) permutation {
	if n <= 1 {
		return permutation{a: 1, n: max(n, 1)}
	}
	a := uint64(2654435761) % n // Knuth's multiplicative constant
	for a < 2 || gcd(a, n) != 1 {
		a = (a + 1) % n
		if a == 0 {
			a = 1
			break
		}
	}
	return permutation{a: a, c: rng.Uint64N(n), n: n}
}

// at returns the i-th element; a and i are below 2^32, so a*i does not
// overflow.
func (p permutation) at(i uint64) uint64 { return (p.a*i + p.c) % p.n }

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// load fills the database, flushes and compacts it.
func (b *bench) load(ctx context.Context) error {
	w := b.env.stdout
	st := b.db.Statistics()
	var written atomic.Uint64
	total := b.numKeys
	pr := startProgress(b.env.stderr, b.mode, "fill", func() (float64, string) {
		n := written.Load()
		return float64(n) / float64(total), fmt.Sprintf("%d/%d keys", n, total)
	})
	rng := rand.New(rand.NewPCG(301, 1))
	perm := newPermutation(total, rng)
	var batch driver.Batch
	var hist statistics.HistogramStat
	keyBuf := make([]byte, b.cfg.keySize)
	start := time.Now()
	var err error
	for i := uint64(0); i < total && err == nil; {
		batch.Reset()
		for j := 0; j < fillBatch && i < total; j++ {
			batch.Put(b.key(keyBuf, perm.at(i), 0), b.value(rng))
			i++
		}
		t0 := time.Now()
		err = b.db.Write(ctx, &batch)
		hist.Add(uint64(time.Since(t0)))
		written.Store(i)
	}
	pr.stop()
	if err != nil {
		return errors.Wrap(err, "fill")
	}
	el := time.Since(start)
	bytesIn := int64(total) * int64(b.cfg.keySize+b.cfg.valueSize)
	fmt.Fprintf(w, "fill      %d keys, %s in %s: %s MiB/s, %s keys/s (write of %d keys: p50 %s µs, p99 %s µs)\n",
		total, formatBytes(bytesIn), roundDuration(el), formatRate(float64(bytesIn)/(1<<20), el),
		formatRate(float64(total), el), fillBatch, micros(hist.Percentile(50)), micros(hist.Percentile(99)))

	start = time.Now()
	if err := b.db.Flush(ctx); err != nil {
		return errors.Wrap(err, "flush")
	}
	fmt.Fprintf(w, "flush     %s\n", roundDuration(time.Since(start)))

	pr = startProgress(b.env.stderr, b.mode, "compact", func() (float64, string) {
		if st == nil {
			return -1, ""
		}
		return -1, fmt.Sprintf("read %s, wrote %s", formatBytes(int64(st.TickerCount(statistics.CompactReadBytes))),
			formatBytes(int64(st.TickerCount(statistics.CompactWriteBytes))))
	})
	start = time.Now()
	err = b.db.Compact(ctx, nil, nil)
	pr.stop()
	if err != nil {
		return errors.Wrap(err, "compact")
	}
	tables, size := tableFiles(b.dir)
	fmt.Fprintf(w, "compact   %s: %d table files, %s\n\n", roundDuration(time.Since(start)), tables, formatBytes(size))
	return nil
}

// tableFiles counts the table files in dir and their bytes; the tables of a
// DB closed cleanly after a compaction are its live ones.
func tableFiles(dir string) (n int, size int64) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".sst") {
			continue
		}
		if info, err := e.Info(); err == nil {
			n++
			size += info.Size()
		}
	}
	return n, size
}

// phaseResult is what a timed phase measured. It is not modified after
// runPhase returns it; hist is safe for concurrent use.
type phaseResult struct {
	name    string
	ops     int64
	elapsed time.Duration
	// hist holds each operation's latency in nanoseconds.
	hist *statistics.HistogramStat
	note string
}

// thread is one goroutine's state in a timed phase. It is used by that
// goroutine only, except ops, which the progress display reads.
type thread struct {
	b    *bench
	ctx  context.Context
	rng  *rand.Rand
	key  []byte
	hist *statistics.HistogramStat
	ops  atomic.Int64
	// scans is a phase-specific counter.
	scans int64
}

// loop runs op until the phase's deadline, timing each call.
func (t *thread) loop(deadline time.Time, op func() error) error {
	done := t.ctx.Done()
	for {
		select {
		case <-done:
			return t.ctx.Err()
		default:
		}
		t0 := time.Now()
		if err := op(); err != nil {
			return err
		}
		t1 := time.Now()
		t.hist.Add(uint64(t1.Sub(t0)))
		t.ops.Add(1)
		if !t1.Before(deadline) {
			return nil
		}
	}
}

// existing returns a random existing key in the thread's buffer.
func (t *thread) existing() []byte { return t.b.key(t.key, t.rng.Uint64N(t.b.numKeys), 0) }

// phase is one timed phase: body runs on each thread until the deadline;
// note, if set, describes the result beyond ops and latencies. body is
// called concurrently, each call with its own thread.
type phase struct {
	name string
	body func(t *thread, deadline time.Time) error
	note func(r *phaseResult, threads []*thread) string
}

func (b *bench) timedPhases(ctx context.Context) error {
	if b.pri != ioctx.PriorityTotal {
		ctx = ioctx.WithReadOptions(ctx, ioctx.ReadOptions{RateLimiterPriority: b.pri})
	}
	st := b.db.Statistics()
	phases := []phase{
		{name: "get", body: b.getPhase},
		{name: "get-miss", body: b.getMissPhase},
		{name: "multiget", body: b.multiGetPhase, note: func(r *phaseResult, ths []*thread) string {
			return fmt.Sprintf("%d keys/op, %s keys/s", b.cfg.batch, formatRate(float64(r.ops)*float64(b.cfg.batch), r.elapsed))
		}},
		{name: "seek", body: b.seekPhase},
		{name: "next", body: b.nextPhase, note: func(r *phaseResult, ths []*thread) string {
			var scans int64
			for _, t := range ths {
				scans += t.scans
			}
			return fmt.Sprintf("%d full scan(s) completed", scans)
		}},
		{name: "verify-checksum", body: b.verifyPhase(false)},
		{name: "verify-file-checksums", body: b.verifyPhase(true)},
	}
	w := b.env.stdout
	fmt.Fprintln(w, strings.TrimRight(fmt.Sprintf(phaseFormat, "phase", "ops", "ops/s", "p50 µs", "p99 µs", "note"), " "))
	for _, ph := range phases {
		var before statistics.Snapshot
		if st != nil {
			before = st.Snapshot()
		}
		r, ths, err := b.runPhase(ctx, ph)
		if err != nil {
			return errors.Wrapf(err, "%s", ph.name)
		}
		switch {
		case ph.note != nil:
			r.note = ph.note(&r, ths)
		case strings.HasPrefix(ph.name, "verify") && st != nil:
			read := st.Snapshot().Sub(before)[statistics.VerifyChecksumReadBytes]
			r.note = fmt.Sprintf("%s MiB/s verified", formatRate(float64(read)/(1<<20), r.elapsed))
		}
		b.results = append(b.results, r)
		// Fixed widths rather than a tabwriter: each line is printed as its
		// phase ends.
		line := fmt.Sprintf(phaseFormat, r.name, strconv.FormatInt(r.ops, 10), formatRate(float64(r.ops), r.elapsed),
			micros(r.hist.Percentile(50)), micros(r.hist.Percentile(99)), r.note)
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	return nil
}

// phaseFormat is a line of the phase table: name, ops, ops/s, p50, p99,
// note.
const phaseFormat = "%-22s %10s %12s %10s %10s  %s"

// runPhase runs ph on the configured number of threads.
func (b *bench) runPhase(ctx context.Context, ph phase) (phaseResult, []*thread, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hist := new(statistics.HistogramStat)
	ths := make([]*thread, b.cfg.threads)
	for i := range ths {
		// RocksDB seeds thread i with 301+i.
		ths[i] = &thread{b: b, ctx: ctx, rng: rand.New(rand.NewPCG(301+uint64(i), uint64(len(b.results)))),
			key: make([]byte, b.cfg.keySize), hist: hist}
	}
	d := b.cfg.duration
	start := time.Now()
	pr := startProgress(b.env.stderr, b.mode, ph.name, func() (float64, string) {
		var ops int64
		for _, t := range ths {
			ops += t.ops.Load()
		}
		return float64(time.Since(start)) / float64(d), fmt.Sprintf("%d ops", ops)
	})
	deadline := start.Add(d)
	var wg sync.WaitGroup
	errs := make([]error, len(ths))
	for i, t := range ths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = ph.body(t, deadline); errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	pr.stop()
	el := time.Since(start)
	// The first error that is not the cancellation it caused in the others.
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return phaseResult{}, nil, err
		}
	}
	for _, err := range errs {
		if err != nil {
			return phaseResult{}, nil, err
		}
	}
	var ops int64
	for _, t := range ths {
		ops += t.ops.Load()
	}
	return phaseResult{name: ph.name, ops: ops, elapsed: el, hist: hist}, ths, nil
}

func (b *bench) getPhase(t *thread, deadline time.Time) error {
	return t.loop(deadline, func() error {
		k := t.existing()
		v, err := b.db.Get(t.ctx, k)
		if err != nil {
			if errors.Is(err, driver.ErrNotFound) {
				return problemf("Get(%x): not found, but the key was written", k)
			}
			return err
		}
		if len(v) != b.cfg.valueSize {
			return problemf("Get(%x): %d-byte value, want %d bytes", k, len(v), b.cfg.valueSize)
		}
		return nil
	})
}

func (b *bench) getMissPhase(t *thread, deadline time.Time) error {
	return t.loop(deadline, func() error {
		k := b.key(t.key, t.rng.Uint64N(b.numKeys), 1)
		v, err := b.db.Get(t.ctx, k)
		switch {
		case err == nil:
			return problemf("Get(%x): found a %d-byte value for a key never written", k, len(v))
		case errors.Is(err, driver.ErrNotFound):
			return nil
		}
		return err
	})
}

func (b *bench) multiGetPhase(t *thread, deadline time.Time) error {
	keys := make([][]byte, b.cfg.batch)
	for i := range keys {
		keys[i] = make([]byte, b.cfg.keySize)
	}
	return t.loop(deadline, func() error {
		for i := range keys {
			keys[i] = b.key(keys[i], t.rng.Uint64N(b.numKeys), 0)
		}
		vals, err := b.db.MultiGet(t.ctx, keys)
		if err != nil {
			return err
		}
		for i, v := range vals {
			if v == nil {
				return problemf("MultiGet: key %x not found, but it was written", keys[i])
			}
			if len(v) != b.cfg.valueSize {
				return problemf("MultiGet: key %x: %d-byte value, want %d bytes", keys[i], len(v), b.cfg.valueSize)
			}
		}
		return nil
	})
}

func (b *bench) seekPhase(t *thread, deadline time.Time) error {
	it, err := b.db.NewIterator(t.ctx, nil)
	if err != nil {
		return err
	}
	err = t.loop(deadline, func() error {
		k := t.existing()
		if !it.SeekGE(k) {
			if err := it.Error(); err != nil {
				return err
			}
			return problemf("SeekGE(%x): no key, but the key was written", k)
		}
		if !bytes.Equal(it.Key(), k) {
			return problemf("SeekGE(%x): at %x, but the key was written", k, it.Key())
		}
		return nil
	})
	return errors.CombineErrors(err, it.Close())
}

func (b *bench) nextPhase(t *thread, deadline time.Time) error {
	it, err := b.db.NewIterator(t.ctx, nil)
	if err != nil {
		return err
	}
	var seen uint64
	err = t.loop(deadline, func() error {
		var ok bool
		if it.Valid() {
			ok = it.Next()
		} else {
			seen = 0
			ok = it.First()
		}
		if ok {
			seen++
			return nil
		}
		if err := it.Error(); err != nil {
			return err
		}
		if seen != b.numKeys {
			return problemf("a full scan saw %d keys, want %d", seen, b.numKeys)
		}
		t.scans++
		return nil
	})
	return errors.CombineErrors(err, it.Close())
}

func (b *bench) verifyPhase(files bool) func(t *thread, deadline time.Time) error {
	return func(t *thread, deadline time.Time) error {
		return t.loop(deadline, func() error {
			var err error
			if files {
				err = b.db.VerifyFileChecksums(t.ctx)
			} else {
				err = b.db.VerifyChecksum(t.ctx)
			}
			if errors.Is(err, driver.ErrCorruption) {
				return problem(err)
			}
			return err
		})
	}
}
