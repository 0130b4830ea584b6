// Command bench runs one workload on shale, Pebble, goleveldb and Badger
// and prints each figure with its ratio to shale. See README.md.
//
//	cd bench && go run .
//
// The parent process runs each engine in a child process (this binary
// re-executed with -engine=NAME), so that each engine's peak RSS is its
// own; a child writes its results as JSON on stdout and its progress on
// stderr.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
)

type config struct {
	engines       []string
	threads       []int
	maxData       int64
	valueSize     int
	cacheSize     int64
	memtableSize  int64
	phaseDuration time.Duration
	warmup        time.Duration
	stats         string
	statsRounds   int
	statsDuration time.Duration
	dir           string
	keep          bool
	// reuse is a run directory an earlier run kept (-keep): its children
	// open the databases there and measure the reads, without filling or
	// compacting anew (a 4 GiB fill takes minutes).
	reuse string
	// fillBatch runs the batched fill (into a scratch database) before
	// the main one.
	fillBatch bool
	// rssInterval is the sampling interval of each child's RSS timeline
	// (0: none).
	rssInterval   time.Duration
	jsonPath      string
	cpuProfileDir string
	// heapProfileDir, when set, receives each engine's heap profile at the
	// peak live heap of its full compaction (main variant).
	heapProfileDir string
	child          string
	variant        string
	rounds         int
	outPath        string
	readmePath     string
	rocksdb        string
	batchKeys      int
	rss            bool
	dbget          bool
	fromJSON       string
	note           string
	pebbleCache    string
	// shaleTables are the -cache-index-and-filter-blocks,
	// -partition-index-and-filters and -optimize-filters-for-hits flags,
	// passed on to every variant.
	shaleTables shaleTables
	// suite, when set, runs a feature suite (prefix, zstd) instead of the
	// main workload; suiteJob is the internal flag of its children.
	suite      string
	suiteJob   string
	prefixKeys int
	// -suite ycsb's flags (ycsb.go); setFlags names the flags given on
	// the command line, so the suite can keep its own defaults for the
	// shared -engines, -threads, -cache and -memtable.
	ycsbRecords   int64
	ycsbOps       int64
	ycsbWorkloads []string
	setFlags      map[string]bool
}

func (c *config) numKeys() int { return int(c.maxData / int64(keySize+c.valueSize)) }

func parseFlags(args []string) (*config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var (
		engines = fs.String("engines", strings.Join(engineNames, ","), "engines to run, comma-separated")
		threads = fs.String("threads", "1", "reader goroutines: 1, 8, or a list such as 1,8 (fill is always one writer)")
		maxData = fs.String("max-data", "128MiB", "data size: keys × (16 + value size) bytes")
		cache   = fs.String("cache", "32MiB", "block cache size of every engine")
		mem     = fs.String("memtable", "64MiB", "memtable size of every engine")
		dir     = fs.String("dir", "", "parent directory for the databases (default /dev/shm when it exists, else the temporary directory)")
	)
	c := &config{}
	fs.IntVar(&c.valueSize, "value-size", 256, "value size in bytes")
	fs.DurationVar(&c.phaseDuration, "phase-duration", time.Second, "measured time of each read phase")
	fs.DurationVar(&c.warmup, "warmup", 500*time.Millisecond, "untimed warm-up before each read phase")
	fs.StringVar(&c.stats, "stats", "default", "shale statistics for the main run: off, default or all")
	fs.IntVar(&c.statsRounds, "stats-rounds", 3, "rounds of shale's interleaved statistics-level comparisons (0: skip)")
	fs.DurationVar(&c.statsDuration, "stats-duration", 500*time.Millisecond, "measured time of each candidate in each round of the interleaved comparisons")
	fs.BoolVar(&c.keep, "keep", false, "keep the databases after the run")
	fs.StringVar(&c.reuse, "reuse", "", "reuse the databases of this run directory, kept by an earlier run with -keep and the same -max-data and engine flags: skip the fills and the full compaction, measure the reads (implies -keep)")
	fs.BoolVar(&c.fillBatch, "fill-batch", true, "measure the fill in batches of 100 (a scratch database of the full size, filled before the main one; false halves a large run's loading)")
	fs.DurationVar(&c.rssInterval, "rss-interval", time.Second, "sample each child's RSS at this interval into an RSS-over-time table of the report (0: off)")
	fs.StringVar(&c.jsonPath, "json", "", "also write every result as JSON to this file")
	fs.StringVar(&c.heapProfileDir, "heapprofile", "", "write heap profiles of each engine at the peak live Go heap of its full compaction and of its verification and read phases (main variant) into this directory, as engine-compaction-heap.pprof and engine-reads-heap.pprof")
	fs.StringVar(&c.cpuProfileDir, "cpuprofile", "", "write CPU profiles of each engine's Get hit, MultiGet and SeekGE phases (first thread count) into this directory, as engine-phase.pprof")
	fs.StringVar(&c.child, "engine", "", "internal: run one engine as a child process")
	fs.StringVar(&c.variant, "variant", variantMain, "internal: the child's configuration ("+strings.Join(variants, ", ")+")")
	fs.IntVar(&c.rounds, "rounds", 5, "rounds: each runs every engine and configuration once, in a new random order")
	fs.StringVar(&c.outPath, "out", "", "write the Markdown report to this file (default: standard output)")
	fs.StringVar(&c.readmePath, "readme", "", "also rewrite the generated performance section of this README (between its bench:begin and bench:end lines), e.g. README.md")
	fs.StringVar(&c.rocksdb, "rocksdb", "auto", "RocksDB's db_bench: auto (run it when installed), install (apt-get install "+rocksdbPackage+" when missing), off")
	fs.IntVar(&c.batchKeys, "batch-keys", 1000000, "keys in the one-batch write of issue 12 (shale and Pebble; 0: skip)")
	fs.BoolVar(&c.rss, "rss", true, "measure peak RSS in extra children: 4 MiB memtables, and each engine's defaults")
	fs.StringVar(&c.fromJSON, "from-json", "", "measure nothing: print the report of an earlier run's -json file (with that run's flags)")
	fs.StringVar(&c.pebbleCache, "pebble-cache", "blocks", "Pebble's cache: blocks (cache + 2 × memtable, since Pebble charges its memtables to the cache: its blocks get -cache) or total (exactly -cache, memtables charged)")
	fs.StringVar(&c.note, "note", "", "a sentence for the report's header (e.g. why the run is small)")
	fs.BoolVar(&c.shaleTables.cacheIndexAndFilter, "cache-index-and-filter-blocks", false,
		"open shale with cache_index_and_filter_blocks (index and filter blocks charged to the block cache, as Pebble does) in every variant, defaults included")
	fs.BoolVar(&c.shaleTables.partitionIndexAndFilters, "partition-index-and-filters", false,
		"open shale with partition_index_and_filters (tables written with index and filter partitions under a top-level index) in every variant, defaults included")
	fs.BoolVar(&c.shaleTables.optimizeFiltersForHits, "optimize-filters-for-hits", false,
		"open shale with optimize_filters_for_hits (last-level tables without a bloom filter) in every variant, defaults included")
	fs.BoolVar(&c.dbget, "dbget", true, "measure the seed's DBGet shape (mmap, no cache, no compression) on shale and RocksDB")
	fs.StringVar(&c.suite, "suite", "", "run a feature suite instead of the main workload: "+strings.Join(append(suiteNames(), ycsbSuite), ", ")+" (see README.md)")
	fs.StringVar(&c.suiteJob, "suite-job", "", "internal: run one job of -suite as a child process")
	fs.IntVar(&c.prefixKeys, "prefix-keys", 16, "-suite prefix: keys per tenant prefix")
	fs.Int64Var(&c.ycsbRecords, "ycsb-records", 1000000, "-suite ycsb: records loaded (YCSB's recordcount)")
	fs.Int64Var(&c.ycsbOps, "ycsb-ops", 500000, "-suite ycsb: operations per workload (YCSB's operationcount)")
	ycsbWorkloadsFlag := fs.String("ycsb-workloads", "A,B,C,D,E,F", "-suite ycsb: the core workloads to run, comma-separated (they run in YCSB's order A, B, C, F, D, E)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	c.setFlags = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { c.setFlags[f.Name] = true })
	if err := checkYCSBFlags(c, *ycsbWorkloadsFlag); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, errors.Newf("unexpected arguments %q", fs.Args())
	}
	for _, e := range strings.Split(*engines, ",") {
		e = strings.TrimSpace(e)
		if e == engineRocksDB {
			return nil, errors.Newf("-engines: %s is driven through db_bench: use -rocksdb", e)
		}
		if !contains(engineNames, e) {
			return nil, errors.Newf("-engines: unknown engine %q (want some of %s)", e, strings.Join(engineNames, ","))
		}
		c.engines = append(c.engines, e)
	}
	for _, t := range strings.Split(*threads, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(t))
		if err != nil || n < 1 {
			return nil, errors.Newf("-threads: bad thread count %q", t)
		}
		c.threads = append(c.threads, n)
	}
	var err error
	if c.maxData, err = parseSize(*maxData); err != nil {
		return nil, errors.Wrap(err, "-max-data")
	}
	if c.cacheSize, err = parseSize(*cache); err != nil {
		return nil, errors.Wrap(err, "-cache")
	}
	if c.memtableSize, err = parseSize(*mem); err != nil {
		return nil, errors.Wrap(err, "-memtable")
	}
	if c.valueSize < 1 || c.valueSize > 1<<20 {
		return nil, errors.Newf("-value-size %d out of range", c.valueSize)
	}
	if c.numKeys() < 100 {
		return nil, errors.Newf("-max-data %s holds only %d keys", *maxData, c.numKeys())
	}
	if _, _, err := shaleStatistics(c.stats); err != nil {
		return nil, err
	}
	if !contains(variants, c.variant) {
		return nil, errors.Newf("-variant %q: want one of %s", c.variant, strings.Join(variants, ", "))
	}
	if c.rounds < 1 {
		return nil, errors.Newf("-rounds %d: want at least 1", c.rounds)
	}
	if c.batchKeys < 0 {
		return nil, errors.Newf("-batch-keys %d: want 0 (skip) or more", c.batchKeys)
	}
	if c.pebbleCache != "blocks" && c.pebbleCache != "total" {
		return nil, errors.Newf("-pebble-cache=%q: want blocks or total", c.pebbleCache)
	}
	switch c.rocksdb {
	case "auto", "install", "off":
	default:
		return nil, errors.Newf("-rocksdb=%q: want auto, install or off", c.rocksdb)
	}
	if c.suite != "" && benchSuites[c.suite] == nil && c.suite != ycsbSuite {
		return nil, errors.Newf("-suite %q: want one of %s", c.suite, strings.Join(append(suiteNames(), ycsbSuite), ", "))
	}
	if c.prefixKeys < 1 || c.prefixKeys > c.numKeys()/2 {
		return nil, errors.Newf("-prefix-keys %d: want 1 to %d", c.prefixKeys, c.numKeys()/2)
	}
	c.dir = *dir
	if c.reuse != "" {
		c.keep = true
	}
	if c.dir == "" {
		c.dir = defaultDir()
	}
	return c, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// parseSize reads a positive size in bytes or units ("128MiB"), as shale's
// DSN does.
func parseSize(s string) (int64, error) {
	n, err := driver.ParseSize(s)
	if err != nil || n <= 0 {
		return 0, errors.Newf("bad size %q (want e.g. 128MiB)", s)
	}
	return n, nil
}

func defaultDir() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}

// fsKind names the filesystem under dir: tmpfs or not.
func fsKind(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "unknown filesystem"
	}
	if st.Type == 0x01021994 { // TMPFS_MAGIC
		return "tmpfs"
	}
	return "not tmpfs: expect noisier figures"
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if cfg.suite == ycsbSuite {
		runYCSBMain(cfg)
		return
	}
	if s := benchSuites[cfg.suite]; s != nil {
		if cfg.suiteJob != "" {
			out := os.Stdout
			os.Stdout = os.Stderr
			if err := runSuiteJob(cfg, s, out); err != nil {
				fmt.Fprintf(os.Stderr, "bench: %s %s: %+v\n", cfg.suite, cfg.suiteJob, err)
				os.Exit(1)
			}
			return
		}
		if err := runSuiteParent(cfg, s, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if cfg.child != "" {
		// Nothing but the JSON result may reach stdout: the engines' own
		// chatter goes to stderr.
		out := os.Stdout
		os.Stdout = os.Stderr
		if err := runChild(cfg, cfg.child, out); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s: %+v\n", cfg.child, err)
			os.Exit(1)
		}
		return
	}
	run := runParent
	if cfg.fromJSON != "" {
		run = reportFromJSON
	}
	if err := run(cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
