package main

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"
)

// RocksDB is measured through its own db_bench (Debian's rocksdb-tools
// package), run as a child process in the same rounds as the Go engines,
// on the same key and value sizes, key count and options. Its figures
// are parsed from db_bench's report lines ("readrandom : 2.4 micros/op
// ...").
const (
	engineRocksDB  = "rocksdb"
	dbBenchBinary  = "db_bench"
	rocksdbPackage = "rocksdb-tools"
)

// findDBBench returns db_bench's path, or "" and why it will not run.
// mode is the -rocksdb flag: off, auto (use it when installed) or install
// (apt-get install the package when it is missing: the harness's setup
// step on a Debian machine where we are root).
func findDBBench(mode string) (path, why string) {
	if mode == "off" {
		return "", "-rocksdb=off"
	}
	if p, err := exec.LookPath(dbBenchBinary); err == nil {
		return p, ""
	}
	missing := fmt.Sprintf("%s not found: install Debian's %s package (apt-get install %s), or run with -rocksdb=install",
		dbBenchBinary, rocksdbPackage, rocksdbPackage)
	if mode != "install" {
		return "", missing
	}
	fmt.Fprintf(os.Stderr, "[rocksdb] %s missing: apt-get update && apt-get install -y %s\n", dbBenchBinary, rocksdbPackage)
	// A fresh machine may have no package lists yet: update them first.
	for _, args := range [][]string{{"update", "-qq"}, {"install", "-y", rocksdbPackage}} {
		cmd := exec.Command("apt-get", args...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if err := cmd.Run(); err != nil {
			return "", fmt.Sprintf("apt-get %s failed (%v): skipping RocksDB (install Debian's %s to include it)",
				args[0], err, rocksdbPackage)
		}
	}
	if p, err := exec.LookPath(dbBenchBinary); err == nil {
		return p, ""
	}
	return "", missing
}

// dbBenchLine matches a db_bench report line: name, µs per operation,
// operations.
var dbBenchLine = regexp.MustCompile(`^(\w+)\s*:\s*([0-9.]+) micros/op [0-9.]+ ops/sec(?: [0-9.]+ seconds)? ?([0-9]+)? ?operations`)

// dbBenchFigure is one parsed report line.
type dbBenchFigure struct {
	name    string
	usPerOp float64
	ops     int64
	line    string
}

// parseDBBench returns the report lines of db_bench's stdout, in order.
func parseDBBench(out []byte) []dbBenchFigure {
	var figs []dbBenchFigure
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		// db_bench's progress ("... finished 100 ops") is joined to the
		// report on the same line when stderr and stdout share a
		// terminal; keep what follows the last progress marker.
		if i := strings.LastIndex(line, "ops  "); i >= 0 && strings.Contains(line, "... finished") {
			line = strings.TrimSpace(line[i+len("ops  "):])
		}
		m := dbBenchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		us, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			continue
		}
		f := dbBenchFigure{name: m[1], usPerOp: us, line: line}
		if m[3] != "" {
			f.ops, _ = strconv.ParseInt(m[3], 10, 64)
		}
		figs = append(figs, f)
	}
	return figs
}

// dbBenchArgs are the flags every invocation shares: the workload's key
// and value sizes and key count, values that do not compress (as the Go
// engines' random printable bytes do not), one thread, WAL on, no sync.
func dbBenchArgs(cfg *config, dir string) []string {
	return []string{
		"-db=" + dir,
		"-num=" + strconv.Itoa(cfg.numKeys()),
		"-key_size=" + strconv.Itoa(keySize),
		"-value_size=" + strconv.Itoa(cfg.valueSize),
		"-compression_ratio=1",
		"-threads=1",
		"-seed=1",
		"-disable_wal=false",
		"-sync=false",
		"-histogram=false",
		"-statistics=false",
	}
}

// dbBenchOptions are the engine options of a variant, as db_bench flags.
func dbBenchOptions(cfg *config, variant string) []string {
	switch variant {
	case variantRSSDefaults:
		return nil // db_bench's own defaults
	case variantDBGet:
		return []string{"-compression_type=none", "-cache_size=0", "-bloom_bits=10",
			"-block_restart_interval=1", "-write_buffer_size=" + strconv.FormatInt(cfg.memtableSize, 10),
			"-mmap_read=true", "-verify_checksum=true"}
	}
	mem := cfg.memtableSize
	if variant == variantRSSEqual {
		mem = rssEqualMemtable
	}
	return []string{"-compression_type=snappy", "-cache_size=" + strconv.FormatInt(cfg.cacheSize, 10),
		"-bloom_bits=10", "-write_buffer_size=" + strconv.FormatInt(mem, 10)}
}

// runDBBench runs db_bench once and returns its report lines and its peak
// RSS (getrusage maxrss of the child) in MiB.
func runDBBench(bin string, args []string) ([]dbBenchFigure, float64, error) {
	cmd := exec.Command(bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, 0, errors.Wrapf(err, "%s %s: %s", bin, strings.Join(args, " "), lastLines(stderr.String(), 5))
	}
	rss := 0.0
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = float64(ru.Maxrss) / 1024 // KiB on Linux
	}
	return parseDBBench(stdout.Bytes()), rss, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// runRocksDB measures one variant with db_bench: a fill and full
// compaction in one invocation, then the read benchmarks on the existing
// database in another (so the peak RSS is the larger of the two).
func runRocksDB(cfg *config, bin, variant, runDir string) (*engineResult, error) {
	dir := filepath.Join(runDir, engineRocksDB+"-"+variant)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if !cfg.keep {
		defer func() { _ = os.RemoveAll(dir) }()
	}
	res := &engineResult{Engine: engineRocksDB, Variant: variant, NumKeys: cfg.numKeys()}
	opts := dbBenchOptions(cfg, variant)
	args := append(dbBenchArgs(cfg, dir), opts...)
	fill, rss1, err := runDBBench(bin, append(args, "-benchmarks=filluniquerandom,compact"))
	if err != nil {
		return nil, err
	}
	seconds := int(math.Ceil(cfg.phaseDuration.Seconds())) // db_bench takes whole seconds
	reads := "readrandom"
	if variant == variantMain {
		reads = "readrandom,readmissing,multireadrandom,readseq"
	}
	read, rss2, err := runDBBench(bin, append(args, "-use_existing_db=true", "-benchmarks="+reads,
		"-duration="+strconv.Itoa(max(1, seconds)), "-batch_size="+strconv.Itoa(multiGetBatch), "-multiread_batched=true"))
	if err != nil {
		return nil, err
	}
	res.PeakRSSMiB = max(rss1, rss2)
	res.RSSAfterLoadMiB = rss1
	_, tables := diskUsage(dir)
	res.TablesMiB = float64(tables) / (1 << 20)
	phase := func(name string, f dbBenchFigure) phaseResult {
		return phaseResult{Name: name, Threads: 1, Ops: f.ops, Keys: f.ops, NsPerOp: f.usPerOp * 1e3,
			Seconds: f.usPerOp * float64(f.ops) / 1e6}
	}
	for _, f := range append(fill, read...) {
		res.DBBenchRaw = append(res.DBBenchRaw, f.line)
		switch f.name {
		case "filluniquerandom":
			res.Fill = phase(phaseFill, f)
		case "compact":
			res.CompactSeconds = f.usPerOp / 1e6
		case "readrandom":
			res.Reads = append(res.Reads, phase(phaseGetHit, f))
		case "readmissing":
			res.Reads = append(res.Reads, phase(phaseGetMiss, f))
		case "multireadrandom": // micros/op is per key: db_bench counts each key as an op
			res.Reads = append(res.Reads, phase(phaseMultiGet, f))
		case "readseq":
			res.Reads = append(res.Reads, phase(phaseNext, f))
		}
	}
	if res.Fill.Ops == 0 {
		return nil, errors.Newf("db_bench printed no filluniquerandom line: %q", res.DBBenchRaw)
	}
	if _, ok := res.read(phaseGetHit, 1); !ok {
		return nil, errors.Newf("db_bench printed no readrandom line: %q", res.DBBenchRaw)
	}
	logf(engineRocksDB, "%s: fill %.3f µs/op, Get hit %.3f µs/op, peak RSS %.0f MiB (%s)", variant,
		res.Fill.NsPerOp/1e3, res.Reads[0].NsPerOp/1e3, res.PeakRSSMiB, time.Now().Format("15:04:05"))
	return res, nil
}
