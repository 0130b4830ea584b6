package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
)

// runMeta describes the run for the report's header and the JSON file.
type runMeta struct {
	Date          string    `json:"date"`
	EndDate       string    `json:"end_date"`
	Commit        string    `json:"commit"`
	CommitNote    string    `json:"commit_note,omitempty"`
	GOOS          string    `json:"goos"`
	GOARCH        string    `json:"goarch"`
	CPUs          int       `json:"cpus"`
	CPUModel      string    `json:"cpu_model"`
	RAM           string    `json:"ram"`
	GoVersion     string    `json:"go_version"`
	Command       string    `json:"command"`
	MaxDataBytes  int64     `json:"max_data_bytes"`
	KeySize       int       `json:"key_size"`
	ValueSize     int       `json:"value_size"`
	NumKeys       int       `json:"num_keys"`
	Dir           string    `json:"dir"`
	DirKind       string    `json:"dir_kind"`
	Threads       []int     `json:"threads"`
	PhaseDuration string    `json:"phase_duration"`
	LoadAvgBefore string    `json:"loadavg_before"`
	LoadAvgAfter  string    `json:"loadavg_after"`
	Load1         []float64 `json:"load1_at_each_child"`
	OtherCPU      []float64 `json:"other_cpu_share_at_each_child,omitempty"`
	Engines       []string  `json:"engines"`
	RocksDB       string    `json:"rocksdb"`
	CacheBytes    int64     `json:"cache_bytes"`
	MemtableBytes int64     `json:"memtable_bytes"`
	BatchKeys     int       `json:"batch_keys"`
	Warmup        string    `json:"warmup"`
	Note          string    `json:"note,omitempty"`
	PebbleCache   string    `json:"pebble_cache,omitempty"`
	DBBenchRaw    []string  `json:"db_bench_raw,omitempty"`
}

// job is one child process of a round: an engine in a configuration.
type job struct{ engine, variant string }

// plannedJobs lists one round's children.
func plannedJobs(cfg *config, engines []string) []job {
	var jobs []job
	for _, v := range variants {
		switch {
		case (v == variantRSSEqual || v == variantRSSDefaults) && !cfg.rss:
			continue
		case v == variantDBGet && !cfg.dbget:
			continue
		}
		for _, e := range engines {
			if variantRuns(v, e) {
				jobs = append(jobs, job{e, v})
			}
		}
	}
	return jobs
}

// roundOrder is round r's order of the jobs: a permutation fixed by r,
// so that no engine always runs first (on a cooler or hotter machine) or
// always follows the same one.
func roundOrder(r, n int) []int { return rand.New(rand.NewPCG(uint64(r), 15)).Perm(n) }

func runParent(cfg *config, stdout io.Writer) error {
	exe, runDir, cleanup, err := prepareRun(cfg, "shale-bench-")
	if err != nil {
		return err
	}
	defer cleanup()
	engines := append([]string{}, cfg.engines...)
	dbBench, why := findDBBench(cfg.rocksdb)
	rocksNote := "not run: " + why
	if dbBench != "" {
		engines = append(engines, engineRocksDB)
		rocksNote = dbBenchVersion(dbBench)
	} else {
		fmt.Fprintf(os.Stderr, "[rocksdb] skipped: %s\n", why)
	}
	commit, note := gitCommit()
	meta := runMeta{
		Date: time.Now().UTC().Format("2006-01-02 15:04"), Commit: commit, CommitNote: note,
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPUs: runtime.NumCPU(), CPUModel: cpuModel(), RAM: memTotal(),
		GoVersion:    runtime.Version(),
		Command:      "go run . " + shellJoin(os.Args[1:]),
		MaxDataBytes: cfg.maxData, KeySize: keySize, ValueSize: cfg.valueSize, NumKeys: cfg.numKeys(),
		Dir: cfg.dir, DirKind: fsKind(cfg.dir), Threads: cfg.threads, PhaseDuration: cfg.phaseDuration.String(),
		LoadAvgBefore: loadAvg(), Engines: engines, RocksDB: rocksNote,
		Note: cfg.note, PebbleCache: cfg.pebbleCache, CacheBytes: cfg.cacheSize, MemtableBytes: cfg.memtableSize, BatchKeys: cfg.batchKeys, Warmup: cfg.warmup.String(),
	}
	rep := &report{}
	jobs := plannedJobs(cfg, engines)
	for r := range cfg.rounds {
		rr := roundResults{}
		if lo, hi := cfg.threads[0], cfg.threads[len(cfg.threads)-1]; hi > lo {
			s := recordMemScaling(rr, lo, hi, cfg.phaseDuration)
			fmt.Fprintf(os.Stderr, "== round %d/%d: the machine's random memory reads scale %.2f× from %d to %d goroutines\n",
				r+1, cfg.rounds, s, lo, hi)
		}
		for i, j := range roundOrder(r, len(jobs)) {
			jb := jobs[j]
			fmt.Fprintf(os.Stderr, "== round %d/%d, child %d/%d: %s, %s (load %s)\n", r+1, cfg.rounds, i+1, len(jobs),
				jb.engine, jb.variant, loadAvg())
			res, err := measureChild(&meta, func() (*engineResult, error) {
				if jb.engine == engineRocksDB {
					return runRocksDB(cfg, dbBench, jb.variant, runDir)
				}
				return runChildProcess(exe, jb, runDir)
			})
			if err != nil {
				return errors.Wrapf(err, "round %d: %s, %s", r+1, jb.engine, jb.variant)
			}
			if jb.engine == engineRocksDB && jb.variant == variantMain {
				meta.DBBenchRaw = res.DBBenchRaw
			}
			rr[resultKey(jb.engine, jb.variant)] = res
		}
		rep.Rounds = append(rep.Rounds, rr)
	}
	finishMeta(&meta)
	rep.Meta = meta
	if err := writeJSON(cfg.jsonPath, rep); err != nil {
		return err
	}
	return writeReport(cfg, rep, stdout)
}

// measureChild runs one child of a round through run, recording in meta the
// 1-minute load average at its start and the share of the machine other
// processes took while it ran (otherCPUShare).
func measureChild[T any](meta *runMeta, run func() (T, error)) (T, error) {
	meta.Load1 = append(meta.Load1, load1())
	before := markCPU()
	res, err := run()
	if share, ok := otherCPUShare(before, markCPU(), meta.CPUs); ok {
		meta.OtherCPU = append(meta.OtherCPU, share)
	}
	return res, err
}

// finishMeta records the end of a run in meta.
func finishMeta(meta *runMeta) {
	meta.LoadAvgAfter = loadAvg()
	meta.EndDate = time.Now().UTC().Format("15:04")
}

// writeJSON writes v, indented, to path; nothing when path is empty (no
// -json flag).
func writeJSON(path string, v any) error {
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func writeReport(cfg *config, rep *report, stdout io.Writer) error {
	var buf bytes.Buffer
	printReport(&buf, cfg, rep)
	// The report first: a README that cannot be rewritten must not cost
	// the run's figures.
	var err error
	if cfg.outPath != "" {
		err = os.WriteFile(cfg.outPath, buf.Bytes(), 0o644)
	} else {
		_, err = stdout.Write(buf.Bytes())
	}
	if err != nil || cfg.readmePath == "" {
		return err
	}
	return updateReadme(cfg.readmePath, cfg, rep)
}

// reportFromJSON prints the report of an earlier run's -json file: the
// figures are that run's; the settings the file records override the
// flags (files written before they were recorded need the run's flags).
func reportFromJSON(cfg *config, stdout io.Writer) error {
	b, err := os.ReadFile(cfg.fromJSON)
	if err != nil {
		return err
	}
	rep := &report{}
	if err := json.Unmarshal(b, rep); err != nil {
		return errors.Wrapf(err, "%s", cfg.fromJSON)
	}
	m := rep.Meta
	if len(m.Threads) > 0 {
		cfg.threads = m.Threads
	}
	if m.CacheBytes > 0 {
		cfg.cacheSize, cfg.memtableSize, cfg.batchKeys = m.CacheBytes, m.MemtableBytes, m.BatchKeys
	}
	if d, err := time.ParseDuration(m.Warmup); err == nil {
		cfg.warmup = d
	}
	if cfg.note != "" {
		rep.Meta.Note = cfg.note
	}
	return writeReport(cfg, rep, stdout)
}

// prepareRun finds this binary, for the children to re-execute, and makes
// the run's directory, a new one named prefix* under cfg.dir; cleanup
// removes it unless cfg.keep.
func prepareRun(cfg *config, prefix string) (exe, runDir string, cleanup func(), err error) {
	if exe, err = os.Executable(); err != nil {
		return "", "", nil, err
	}
	if cfg.reuse != "" {
		return exe, cfg.reuse, func() {}, nil
	}
	if err := os.MkdirAll(cfg.dir, 0o755); err != nil {
		return "", "", nil, err
	}
	if runDir, err = os.MkdirTemp(cfg.dir, prefix); err != nil {
		return "", "", nil, err
	}
	cleanup = func() {}
	if !cfg.keep {
		cleanup = func() { _ = os.RemoveAll(runDir) }
	}
	return exe, runDir, cleanup, nil
}

// runChildProcess re-executes this binary for one engine and variant and
// reads its JSON result; its peak RSS is its own.
func runChildProcess(exe string, jb job, runDir string) (*engineResult, error) {
	return reexecChild[engineResult](exe, runDir, "-engine="+jb.engine, "-variant="+jb.variant)
}

// reexecChild re-executes this binary with its own arguments, then flags and
// -dir=runDir, and decodes the JSON result the child writes to stdout.
func reexecChild[T any](exe, runDir string, flags ...string) (*T, error) {
	args := append(append(append([]string{}, os.Args[1:]...), flags...), "-dir="+runDir)
	cmd := exec.Command(exe, args...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, err
	}
	var r T
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		return nil, errors.Wrapf(err, "bad result %q", stdout.String())
	}
	return &r, nil
}

// gitCommit names the commit of the shale module under test, and whether
// tracked files differ from it (the working tree is shared, so say so).
func gitCommit() (commit, note string) {
	out, err := exec.Command("git", "-C", "..", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		// A binary built with go build (not go run) and run elsewhere
		// carries the commit it was built from.
		return buildCommit()
	}
	commit = strings.TrimSpace(string(out))
	st, err := exec.Command("git", "-C", "..", "status", "--porcelain", "--untracked-files=no").Output()
	if err == nil {
		if n := len(strings.Fields(strings.TrimSpace(string(st)))) / 2; n > 0 {
			note = fmt.Sprintf(" (plus uncommitted changes in %d tracked files)", n)
		}
	}
	return commit, note
}

// buildCommit returns the commit recorded in the binary by go build, for a
// bench run outside its checkout.
func buildCommit() (commit, note string) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown", " (not a git checkout)"
	}
	commit, note = "unknown", " (not a git checkout)"
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			commit, note = s.Value[:min(len(s.Value), 7)], " (from the binary's build information)"
		case "vcs.modified":
			if s.Value == "true" {
				defer func() { note += ", built with uncommitted changes" }()
			}
		}
	}
	return commit, note
}

func dbBenchVersion(bin string) string {
	s := bin
	if out, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", rocksdbPackage).Output(); err == nil {
		s += fmt.Sprintf(" (Debian %s %s)", rocksdbPackage, strings.TrimSpace(string(out)))
	}
	return s
}

// shellJoin joins args so that a shell reads them back: an argument with
// spaces or quotes is single-quoted.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"$`\\;&|()<>*?") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

func memTotal() string {
	kib := int64(0)
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				if f := strings.Fields(rest); len(f) > 0 {
					kib, _ = strconv.ParseInt(f[0], 10, 64)
				}
			}
		}
	}
	if kib == 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.1f GiB", float64(kib)/(1<<20))
}

func load1() float64 {
	f := strings.Fields(loadAvg())
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
