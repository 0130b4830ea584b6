package main

// The feature suites (-suite prefix, -suite zstd): one feature of issue 27
// measured on shale beside Pebble, with the main harness's method (rounds;
// in each round every job a child process of its own, in a new random
// order; medians with min–max; ratios as the median of per-round ratios;
// every per-round figure again as a benchstat line), but a workload of
// their own, so a run takes minutes instead of the main run's half hour.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
)

// suiteJob is one child of a suite's round: an engine in a configuration.
type suiteJob struct {
	engine string
	config string
	// label heads the job's column.
	label string
	// tags are the job's benchstat sub-benchmark keys ("codec=zstd/engine=shale").
	tags string
	// pair is the ID of the shale job this peer's cells are compared with
	// (empty for shale's own jobs).
	pair string
}

// id names the job on the command line (-suite-job) and in the results.
func (j suiteJob) id() string { return j.engine + "/" + j.config }

// suiteFigure is one row of a suite's table.
type suiteFigure struct {
	key   string // in suiteResult.Values
	bench string // benchstat name, without "Benchmark"
	label string
	// scale turns the stored value into the displayed one; bsScale into
	// the benchstat one, in bsUnit.
	scale   float64
	bsScale float64
	bsUnit  string
}

// suiteResult is what one child of a suite reports.
type suiteResult struct {
	Job    string             `json:"job"`
	Values map[string]float64 `json:"values"`
	// Notes are the child's observations for the report (filter
	// statistics, table properties), in the order made.
	Notes []string `json:"notes,omitempty"`
}

// benchSuite is a feature suite.
type benchSuite struct {
	name  string
	title string
	// workload describes the data and settings in sentences, for the
	// report's header.
	workload func(cfg *config) string
	jobs     func(cfg *config) []suiteJob
	figures  []suiteFigure
	// run measures one job in a new database under dir.
	run func(cfg *config, j suiteJob, dir string) (*suiteResult, error)
}

var benchSuites = map[string]*benchSuite{}

func suiteNames() []string {
	var names []string
	for n := range benchSuites {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// suiteReport is a suite run: its header facts and every round's results.
type suiteReport struct {
	Suite  string                    `json:"suite"`
	Meta   runMeta                   `json:"meta"`
	Rounds []map[string]*suiteResult `json:"rounds"`
}

// runSuiteParent runs cfg.rounds rounds of the suite's jobs, each job a
// child process, and prints the report.
func runSuiteParent(cfg *config, s *benchSuite, stdout io.Writer) error {
	exe, runDir, cleanup, err := prepareRun(cfg, "shale-bench-"+s.name+"-")
	if err != nil {
		return err
	}
	defer cleanup()
	commit, note := gitCommit()
	rep := &suiteReport{Suite: s.name, Meta: runMeta{
		Date: time.Now().UTC().Format("2006-01-02 15:04"), Commit: commit, CommitNote: note,
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPUs: runtime.NumCPU(), CPUModel: cpuModel(), RAM: memTotal(),
		GoVersion: runtime.Version(), Command: "go run . " + shellJoin(os.Args[1:]),
		MaxDataBytes: cfg.maxData, KeySize: keySize, ValueSize: cfg.valueSize, NumKeys: cfg.numKeys(),
		Dir: cfg.dir, DirKind: fsKind(cfg.dir), PhaseDuration: cfg.phaseDuration.String(), Warmup: cfg.warmup.String(),
		LoadAvgBefore: loadAvg(), CacheBytes: cfg.cacheSize, MemtableBytes: cfg.memtableSize, Note: cfg.note,
	}}
	jobs := s.jobs(cfg)
	for r := range cfg.rounds {
		rr := map[string]*suiteResult{}
		for i, k := range roundOrder(r, len(jobs)) {
			j := jobs[k]
			fmt.Fprintf(os.Stderr, "== %s: round %d/%d, child %d/%d: %s (load %s)\n", s.name, r+1, cfg.rounds, i+1, len(jobs), j.id(), loadAvg())
			res, err := measureChild(&rep.Meta, func() (*suiteResult, error) { return runSuiteChild(exe, j, runDir) })
			if err != nil {
				return errors.Wrapf(err, "round %d: %s", r+1, j.id())
			}
			rr[j.id()] = res
		}
		rep.Rounds = append(rep.Rounds, rr)
	}
	finishMeta(&rep.Meta)
	if err := writeJSON(cfg.jsonPath, rep); err != nil {
		return err
	}
	var buf bytes.Buffer
	printSuiteReport(&buf, cfg, s, rep)
	if cfg.outPath != "" {
		return os.WriteFile(cfg.outPath, buf.Bytes(), 0o644)
	}
	_, err = stdout.Write(buf.Bytes())
	return err
}

func runSuiteChild(exe string, j suiteJob, runDir string) (*suiteResult, error) {
	return reexecChild[suiteResult](exe, runDir, "-suite-job="+j.id())
}

// runSuiteJob is a child: it measures cfg.suiteJob and writes its result
// as JSON to out.
func runSuiteJob(cfg *config, s *benchSuite, out io.Writer) error {
	i := slices.IndexFunc(s.jobs(cfg), func(j suiteJob) bool { return j.id() == cfg.suiteJob })
	if i < 0 {
		return errors.Newf("-suite-job %q is not a job of suite %s", cfg.suiteJob, s.name)
	}
	j := s.jobs(cfg)[i]
	dir := fmt.Sprintf("%s/%s-%s-%s", cfg.dir, s.name, j.engine, j.config)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if !cfg.keep {
		defer func() { _ = os.RemoveAll(dir) }()
	}
	res, err := s.run(cfg, j, dir)
	if err != nil {
		return err
	}
	res.Job = j.id()
	return json.NewEncoder(out).Encode(res)
}

// suiteValues are figure f of job j, one per round that has it.
func suiteValues(rep *suiteReport, j suiteJob, f suiteFigure) spread {
	var s spread
	for _, rr := range rep.Rounds {
		if r := rr[j.id()]; r != nil {
			if v, ok := r.Values[f.key]; ok {
				s = append(s, v*f.scale)
			}
		}
	}
	return s
}

// suiteRatios are the per-round ratios of figure f, pair job / j.
func suiteRatios(rep *suiteReport, pair, j suiteJob, f suiteFigure) spread {
	var s spread
	for _, rr := range rep.Rounds {
		a, b := rr[pair.id()], rr[j.id()]
		if a == nil || b == nil {
			continue
		}
		va, oka := a.Values[f.key]
		vb, okb := b.Values[f.key]
		if oka && okb && vb != 0 {
			s = append(s, va/vb)
		}
	}
	return s
}

func printSuiteReport(w io.Writer, cfg *config, s *benchSuite, rep *suiteReport) {
	m := rep.Meta
	fmt.Fprintf(w, "### %s\n\n", s.title)
	fmt.Fprintf(w, "Generated by `%s` (in `bench/`), %s – %s UTC at commit %s%s, on %s (%d cores, %s RAM), %s/%s, %s, databases on %s (%s). ",
		m.Command, m.Date, m.EndDate, m.Commit, m.CommitNote, m.CPUModel, m.CPUs, m.RAM, m.GOOS, m.GOARCH, m.GoVersion, m.Dir, m.DirKind)
	fmt.Fprintf(w, "%s ", s.workload(cfg))
	fmt.Fprintf(w, "%d rounds, each job a child process of its own, in a new random order each round; read phases %s after a %s warm-up.",
		len(rep.Rounds), m.PhaseDuration, m.Warmup)
	if len(m.OtherCPU) > 0 {
		fmt.Fprintf(w, " Other processes took %s of the machine's CPU while each child ran (median, min–max).",
			spread(m.OtherCPU).format(percent, ""))
	}
	if loaded, why := underLoad(m); loaded {
		fmt.Fprintf(w, " Taken under load: %s; treat differences inside the spread as noise.", why)
	}
	if m.Note != "" {
		fmt.Fprintf(w, " Note: %s.", strings.TrimSuffix(m.Note, "."))
	}
	fmt.Fprintln(w, " Each cell: median over the rounds (min–max); under a Pebble cell, **shale / Pebble** for the same configuration, the median of the per-round ratios (below 1: shale is faster or smaller).")
	fmt.Fprintln(w)
	jobs := s.jobs(cfg)
	fmt.Fprint(w, "| figure |")
	for _, j := range jobs {
		fmt.Fprintf(w, " %s |", j.label)
	}
	fmt.Fprint(w, "\n|---|")
	for range jobs {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w)
	for _, f := range s.figures {
		fmt.Fprintf(w, "| %s |", f.label)
		for _, j := range jobs {
			cell := suiteValues(rep, j, f).String()
			if j.pair != "" {
				if p := slices.IndexFunc(jobs, func(x suiteJob) bool { return x.id() == j.pair }); p >= 0 {
					if r := suiteRatios(rep, jobs[p], j, f); len(r) > 0 {
						cell += "<br>**" + ratioString(r) + "**"
					}
				}
			}
			fmt.Fprintf(w, " %s |", cell)
		}
		fmt.Fprintln(w)
	}
	var notes []string
	for _, j := range jobs {
		if len(rep.Rounds) > 0 {
			if r := rep.Rounds[len(rep.Rounds)-1][j.id()]; r != nil {
				for _, n := range r.Notes {
					notes = append(notes, j.label+": "+n)
				}
			}
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nWhat the children observed (last round):")
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
	fmt.Fprintln(w, "\nRaw figures, one line per job and round (benchstat format):")
	fmt.Fprintln(w, "\n```")
	fmt.Fprintf(w, "goos: %s\ngoarch: %s\npkg: github.com/shaledb/shale/bench\ncpu: %s\n", m.GOOS, m.GOARCH, m.CPUModel)
	fmt.Fprintf(w, "go: %s\ncommit: %s\n", m.GoVersion, m.Commit)
	for _, f := range s.figures {
		for _, j := range jobs {
			for _, rr := range rep.Rounds {
				if r := rr[j.id()]; r != nil {
					if v, ok := r.Values[f.key]; ok {
						fmt.Fprintf(w, "Benchmark%s/%s 1 %s %s\n", benchstatName(f.bench), j.tags, bsFloat(v*f.bsScale), f.bsUnit)
					}
				}
			}
		}
	}
	fmt.Fprintln(w, "```")
}
