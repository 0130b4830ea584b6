package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// The report: every figure as the median over rounds with its spread
// (min–max), every ratio shale / peer as the median of the per-round
// ratios (each round's engines ran back to back, so pairing by round
// cancels drift slower than a round) with its spread, the targets,
// and every per-round figure as a benchstat-compatible line.

// fmt3 prints v with about three significant digits.
func fmt3(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a < 1:
		return fmt.Sprintf("%.3f", v)
	case a < 10:
		return fmt.Sprintf("%.2f", v)
	case a < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// spread is a set of per-round values.
type spread []float64

func (s spread) median() float64 { return median(s) }

// String is "median (min–max)", or the value alone for one round.
func (s spread) String() string { return s.format(fmt3, "") }

func (s spread) format(f func(float64) string, suffix string) string {
	if len(s) == 0 {
		return "—"
	}
	if len(s) == 1 {
		return f(s[0]) + suffix
	}
	return fmt.Sprintf("%s%s (%s–%s)", f(s.median()), suffix, f(slices.Min(s)), f(slices.Max(s)))
}

// roundResults are one round's results, keyed by resultKey.
type roundResults map[string]*engineResult

func resultKey(engine, variant string) string { return engine + "/" + variant }

func (rr roundResults) get(engine, variant string) *engineResult {
	return rr[resultKey(engine, variant)]
}

// figure is one row of the table: a value per engine and round.
type figure struct {
	bench   string // benchstat name (without "Benchmark" and the engine)
	label   string
	unit    string // of the displayed value
	variant string
	value   func(r *engineResult) (float64, bool) // in unit
	bsUnit  string                                // benchstat unit
	bsScale float64                               // benchstat value = value × bsScale
}

func phaseFigure(bench, label, variant string, get func(r *engineResult) (phaseResult, bool), cpu bool) figure {
	f := figure{bench: bench, label: label, unit: "µs/op", variant: variant, bsUnit: "ns/op", bsScale: 1e3}
	f.value = func(r *engineResult) (float64, bool) {
		p, ok := get(r)
		if !ok || p.Ops == 0 {
			return 0, false
		}
		if cpu {
			return p.CPUNsPerOp / 1e3, p.CPUNsPerOp > 0
		}
		return p.NsPerOp / 1e3, p.NsPerOp > 0
	}
	return f
}

func readFigure(phase string, threads int) func(r *engineResult) (phaseResult, bool) {
	return func(r *engineResult) (phaseResult, bool) { return r.read(phase, threads) }
}

func bigBatchFigure(order string, alloc bool) figure {
	f := figure{variant: variantMain}
	name := "BigBatch" + strings.ToUpper(order[:1]) + order[1:]
	get := func(r *engineResult) (bigBatchResult, bool) {
		for _, b := range r.BigBatch {
			if b.Order == order {
				return b, true
			}
		}
		return bigBatchResult{}, false
	}
	if alloc {
		f.bench, f.label, f.unit, f.bsUnit, f.bsScale = name+"Alloc", "… Go heap allocated (MiB)", "MiB", "B/op", 1<<20
		f.value = func(r *engineResult) (float64, bool) {
			b, ok := get(r)
			return float64(b.AllocBytes) / (1 << 20), ok
		}
		return f
	}
	f.bench, f.label, f.unit, f.bsUnit, f.bsScale = name, "one batch, "+order+" keys (s)", "s", "ns/op", 1e9
	f.value = func(r *engineResult) (float64, bool) {
		b, ok := get(r)
		return b.Seconds, ok
	}
	return f
}

func rssFigure(variant, label string) figure {
	name := map[string]string{variantMain: "main", variantRSSEqual: "equal", variantRSSDefaults: "defaults"}[variant]
	return figure{bench: "PeakRSS/config=" + name, label: label, unit: "MiB", variant: variant,
		bsUnit: "peak-RSS-B", bsScale: 1 << 20,
		value: func(r *engineResult) (float64, bool) { return r.PeakRSSMiB, r.PeakRSSMiB > 0 }}
}

// figures lists the table's rows for cfg.
func figures(cfg *config) []figure {
	// A run with -reuse fills nothing: no fill figures.
	fill := func(r *engineResult) (phaseResult, bool) { return r.Fill, r.Fill.Ops > 0 }
	fillBatch := func(r *engineResult) (phaseResult, bool) { return r.FillBatch, r.FillBatch.Ops > 0 }
	fs := []figure{
		phaseFigure("FillRandom", "fill random, 1 key per write (µs/op)", variantMain, fill, false),
		phaseFigure("FillRandomCPU", "… CPU µs/op", variantMain, fill, true),
		phaseFigure("FillRandomBatch100", "fill random, batches of 100 (µs/key)", variantMain, fillBatch, false),
		// The RSS children fill too: at 4 MiB memtables and at each
		// engine's defaults, where issue 29 judges the fill.
		phaseFigure("FillRandom/config=equal", "fill random, 1 key per write, 4 MiB memtables (µs/op)", variantRSSEqual, fill, false),
		phaseFigure("FillRandom/config=defaults", "fill random, 1 key per write, each engine's defaults (µs/op)", variantRSSDefaults, fill, false),
		{bench: "FullCompaction", label: "full compaction after the fill (s)", unit: "s", variant: variantMain,
			bsUnit: "ns/op", bsScale: 1e9,
			value: func(r *engineResult) (float64, bool) { return r.CompactSeconds, r.CompactSeconds > 0 }},
	}
	reads := []struct{ phase, bench, label string }{
		{phaseGetHit, "GetHit", "Get hit (µs/op)"},
		{phaseGetHitCopy, "GetHitCopy", "Get hit, copying (µs/op)"},
		{phaseGetMiss, "GetMiss", "Get miss (µs/op)"},
		{phaseMultiGet, "MultiGet16", "MultiGet(16), per key (µs)"},
		{phaseNext, "IterNext", "iterator Next (µs/op)"},
		{phaseSeek, "IterSeekGE", "iterator SeekGE (µs/op)"},
	}
	for _, t := range cfg.threads {
		for _, rd := range reads {
			label := rd.label
			if t > 1 {
				label = fmt.Sprintf("%s, %d threads (wall time / ops)", label, t)
			}
			f := phaseFigure(fmt.Sprintf("%s/threads=%d", rd.bench, t), label, variantMain, readFigure(rd.phase, t), false)
			fs = append(fs, f)
			if t == cfg.threads[0] {
				// CPU time does not grow while other processes hold the
				// CPUs: on a loaded machine it is the steadier figure.
				fs = append(fs, phaseFigure(fmt.Sprintf("%sCPU/threads=%d", rd.bench, t), "… CPU µs/op", variantMain, readFigure(rd.phase, t), true))
			}
		}
	}
	if cfg.batchKeys > 0 {
		for _, order := range []string{orderRandom, orderSorted} {
			f := bigBatchFigure(order, false)
			f.label = fmt.Sprintf("one batch of %d %s keys, 32 B + 32 B (s)", cfg.batchKeys, order)
			fs = append(fs, f, bigBatchFigure(order, true))
		}
	}
	fs = append(fs,
		rssFigure(variantMain, fmt.Sprintf("peak RSS, main run (%s memtable, %s cache) (MiB)", formatSize(cfg.memtableSize), formatSize(cfg.cacheSize))),
		rssFigure(variantRSSEqual, fmt.Sprintf("peak RSS, 4 MiB memtables, %s cache (MiB)", formatSize(cfg.cacheSize))),
		rssFigure(variantRSSDefaults, "peak RSS, each engine's defaults (MiB)"),
		phaseFigure("DBGetShape", "Get hit, DBGet shape: mmap, no cache, no compression (µs/op)", variantDBGet, readFigure(phaseGetHit, 1), false),
	)
	return fs
}

// values collects a figure's per-round values for one engine.
func (f figure) values(rounds []roundResults, engine string) spread {
	var s spread
	for _, rr := range rounds {
		if r := rr.get(engine, f.variant); r != nil {
			if v, ok := f.value(r); ok {
				s = append(s, v)
			}
		}
	}
	return s
}

// ratios collects the per-round ratios a/b of two engines' figures.
func (f figure) ratios(rounds []roundResults, a, b string) spread {
	var s spread
	for _, rr := range rounds {
		ra, rb := rr.get(a, f.variant), rr.get(b, f.variant)
		if ra == nil || rb == nil {
			continue
		}
		va, ok1 := f.value(ra)
		vb, ok2 := f.value(rb)
		if ok1 && ok2 && vb > 0 {
			s = append(s, va/vb)
		}
	}
	return s
}

func ratioString(s spread) string {
	return s.format(func(v float64) string { return fmt3(v) }, "×")
}

// report is everything the report is printed from.
type report struct {
	Meta   runMeta        `json:"meta"`
	Rounds []roundResults `json:"rounds"`
}

func printReport(w io.Writer, cfg *config, rep *report) {
	m := rep.Meta
	fmt.Fprintf(w, "# shale bench: interleaved rounds\n\n")
	fmt.Fprintf(w, "Generated by `%s` (in `bench/`).\n\n", m.Command)
	fmt.Fprintf(w, "- date: %s – %s UTC; shale commit %s%s\n", m.Date, m.EndDate, m.Commit, m.CommitNote)
	fmt.Fprintf(w, "- machine: %s, %d cores, %s RAM; %s/%s; %s\n", m.CPUModel, m.CPUs, m.RAM, m.GOOS, m.GOARCH, m.GoVersion)
	fmt.Fprintf(w, "- data: %s = %d keys of %d B with %d B values; databases on %s (%s); %s block cache, %s memtable, bloom 10 bits/key, snappy, read after a full compaction\n",
		formatSize(m.MaxDataBytes), m.NumKeys, m.KeySize, m.ValueSize, m.Dir, m.DirKind, formatSize(cfg.cacheSize), formatSize(cfg.memtableSize))
	fmt.Fprintf(w, "- rounds: %d; in each round every engine and configuration ran once, as its own child process, in a new random order; read phases %s after a %s warm-up; reads with %s thread(s)\n",
		len(rep.Rounds), m.PhaseDuration, cfg.warmup, joinInts(m.Threads))
	fmt.Fprintf(w, "- load average (1, 5, 15 min): before %s, after %s; 1-minute load at each child's start %s\n",
		m.LoadAvgBefore, m.LoadAvgAfter, spread(m.Load1).String())
	if len(m.OtherCPU) > 0 {
		fmt.Fprintf(w, "- other work: processes other than the bench (with the hypervisor's steal) took %s of the machine's CPU capacity while each child ran (median, min–max over the children)\n",
			spread(m.OtherCPU).format(percent, ""))
	}
	if loaded, why := underLoad(m); loaded {
		fmt.Fprintf(w, "- **taken under load**: %s; treat differences inside the spread as noise\n", why)
	}
	switch m.PebbleCache {
	case "blocks":
		fmt.Fprintf(w, "- Pebble's cache: %s + 2 × the memtable size, because Pebble charges its memtables (the mutable one and one kept for recycling) to its block cache; after the load, the part its memtables do not hold is reserved, so its blocks get exactly %s like the others' (`-pebble-cache=total` gives it exactly %s in all)\n",
			formatSize(cfg.cacheSize), formatSize(cfg.cacheSize), formatSize(cfg.cacheSize))
	case "total":
		fmt.Fprintf(w, "- Pebble's cache: exactly %s, with its memtables charged to it: with memtables as large as the cache it caches (almost) no blocks\n", formatSize(cfg.cacheSize))
	}
	if m.Note != "" {
		fmt.Fprintf(w, "- note: %s\n", m.Note)
	}
	if m.RocksDB != "" {
		fmt.Fprintf(w, "- RocksDB: %s\n", m.RocksDB)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Each cell: median over rounds (min–max). Under a peer's figure, **shale / peer**: the median of the per-round ratios (min–max); below 1, shale is faster or smaller.")
	fmt.Fprintln(w)

	printFigureTable(w, cfg, rep)
	printTargets(w, cfg, rep)
	printStatsCost(w, rep)
	if len(m.DBBenchRaw) > 0 {
		fmt.Fprintf(w, "\n### db_bench's own lines (last round)\n\n```\n%s\n```\n", strings.Join(m.DBBenchRaw, "\n"))
	}
	writeRSSTimelines(w, rep.Rounds, cfg.engines, cfg.rssInterval)
	fmt.Fprintln(w, "\n## Raw figures, one line per engine and round (benchstat format)")
	fmt.Fprintln(w, "\n`benchstat -col /engine RESULTS.md` compares the engines; `benchstat old.md new.md` compares two runs.")
	fmt.Fprintln(w, "\n```")
	printBenchstat(w, cfg, rep)
	fmt.Fprintln(w, "```")
}

// printFigureTable prints the main table: one row per figure, one column
// per engine, each peer's cell with shale's ratio to it.
func printFigureTable(w io.Writer, cfg *config, rep *report) {
	engines := rep.Meta.Engines
	fmt.Fprintf(w, "| figure | %s |\n|---|%s\n", strings.Join(engines, " | "), strings.Repeat("---|", len(engines)))
	for _, f := range figures(cfg) {
		var cells []string
		any := false
		for _, e := range engines {
			v := f.values(rep.Rounds, e)
			if len(v) == 0 {
				cells = append(cells, "—")
				continue
			}
			any = true
			cell := v.String()
			if e != "shale" {
				if r := f.ratios(rep.Rounds, "shale", e); len(r) > 0 {
					cell += "<br>**" + ratioString(r) + "**"
				}
			}
			cells = append(cells, cell)
		}
		if any {
			fmt.Fprintf(w, "| %s | %s |\n", f.label, strings.Join(cells, " | "))
		}
	}
}

// target is one of the issues' targets: a per-round ratio and its limit.
type target struct {
	what    string
	limit   float64
	atLeast bool
	ratio   func(rr roundResults) (float64, bool)
	// cpu is the same ratio on CPU time, where the figures have it.
	cpu func(rr roundResults) (float64, bool)
}

func figureRatio(f figure, a, b string) func(rr roundResults) (float64, bool) {
	return func(rr roundResults) (float64, bool) {
		s := f.ratios([]roundResults{rr}, a, b)
		if len(s) == 0 {
			return 0, false
		}
		return s[0], true
	}
}

// sameEngineRatio is shale's figure f over its own figure g, per round.
func sameEngineRatio(f, g figure) func(rr roundResults) (float64, bool) {
	return func(rr roundResults) (float64, bool) {
		r := rr.get("shale", f.variant)
		if r == nil {
			return 0, false
		}
		a, ok1 := f.value(r)
		b, ok2 := g.value(r)
		return a / b, ok1 && ok2 && b > 0
	}
}

// bestPeerRatio is shale's figure f over the lowest of the Go peers' in
// the same round.
func bestPeerRatio(f figure) func(rr roundResults) (float64, bool) {
	return func(rr roundResults) (float64, bool) {
		best := math.Inf(1)
		for _, e := range []string{"pebble", "goleveldb", "badger"} {
			if r := rr.get(e, f.variant); r != nil {
				if v, ok := f.value(r); ok {
					best = min(best, v)
				}
			}
		}
		s := rr.get("shale", f.variant)
		if s == nil || math.IsInf(best, 1) {
			return 0, false
		}
		v, ok := f.value(s)
		return v / best, ok
	}
}

func targets(cfg *config) []target {
	byName := map[string]figure{}
	for _, f := range figures(cfg) {
		byName[f.bench] = f
	}
	t1 := cfg.threads[0]
	rd := func(b string) figure { return byName[fmt.Sprintf("%s/threads=%d", b, t1)] }
	cpu := func(b string) figure { return byName[fmt.Sprintf("%sCPU/threads=%d", b, t1)] }
	ts := []target{
		{what: "fill random, 1 key per write, vs Pebble", limit: 0.8, ratio: figureRatio(byName["FillRandom"], "shale", "pebble"),
			cpu: figureRatio(byName["FillRandomCPU"], "shale", "pebble")},
		{what: "Get hit vs Pebble", limit: 0.75, ratio: figureRatio(rd("GetHit"), "shale", "pebble"),
			cpu: figureRatio(cpu("GetHit"), "shale", "pebble")},
		{what: "Get miss vs goleveldb", limit: 0.25, ratio: figureRatio(rd("GetMiss"), "shale", "goleveldb"),
			cpu: figureRatio(cpu("GetMiss"), "shale", "goleveldb")},
		{what: "MultiGet(16) per key vs own Get hit", limit: 0.65, ratio: sameEngineRatio(rd("MultiGet16"), rd("GetHit")),
			cpu: sameEngineRatio(cpu("MultiGet16"), cpu("GetHit"))},
		{what: "MultiGet(16) per key vs own copying Get hit", limit: 0.65, ratio: sameEngineRatio(rd("MultiGet16"), rd("GetHitCopy")),
			cpu: sameEngineRatio(cpu("MultiGet16"), cpu("GetHitCopy"))},
		{what: "iterator Next vs the best Go peer of the round", limit: 0.6, ratio: bestPeerRatio(rd("IterNext")),
			cpu: bestPeerRatio(cpu("IterNext"))},
		{what: "peak RSS, 4 MiB memtables and equal cache, vs Pebble", limit: 1.0, ratio: figureRatio(byName["PeakRSS/config=equal"], "shale", "pebble")},
		{what: "DBGet shape (mmap, no cache, no compression) vs RocksDB", limit: 0.9, ratio: figureRatio(byName["DBGetShape"], "shale", engineRocksDB)},
		// Issue 29's.
		{what: "fill random, 1 key per write, 4 MiB memtables, vs Pebble", limit: 0.8, ratio: figureRatio(byName["FillRandom/config=equal"], "shale", "pebble")},
		{what: "fill random, 1 key per write, each engine's defaults, vs Pebble", limit: 0.8, ratio: figureRatio(byName["FillRandom/config=defaults"], "shale", "pebble")},
		{what: "iterator SeekGE vs Pebble", limit: 0.8, ratio: figureRatio(rd("IterSeekGE"), "shale", "pebble"),
			cpu: figureRatio(cpu("IterSeekGE"), "shale", "pebble")},
		{what: "peak RSS, each engine's defaults, vs Pebble", limit: 1.0, ratio: figureRatio(byName["PeakRSS/config=defaults"], "shale", "pebble")},
		{what: "MultiGet(16) per key vs RocksDB's multireadrandom", limit: 0.8, ratio: figureRatio(rd("MultiGet16"), "shale", engineRocksDB)},
	}
	if cfg.batchKeys > 0 {
		for _, o := range []string{"Random", "Sorted"} {
			ts = append(ts,
				target{what: fmt.Sprintf("one %d-key batch, %s keys, time vs Pebble", cfg.batchKeys, strings.ToLower(o)), limit: 1.0,
					ratio: figureRatio(byName["BigBatch"+o], "shale", "pebble")},
				target{what: fmt.Sprintf("one %d-key batch, %s keys, bytes allocated vs Pebble", cfg.batchKeys, strings.ToLower(o)), limit: 1.5,
					ratio: figureRatio(byName["BigBatch"+o+"Alloc"], "shale", "pebble")})
		}
	}
	if len(cfg.threads) > 1 {
		lo, hi := cfg.threads[0], cfg.threads[len(cfg.threads)-1]
		a := byName[fmt.Sprintf("GetHit/threads=%d", lo)]
		b := byName[fmt.Sprintf("GetHit/threads=%d", hi)]
		ts = append(ts, target{what: fmt.Sprintf("Get hit throughput, %d → %d threads", lo, hi), limit: 1.8, atLeast: true,
			ratio: sameEngineRatio(a, b)},
			// Issue 29: the scaling against the machine's own, measured in
			// the same round (memscale.go).
			target{what: fmt.Sprintf("machine's random memory reads, %d → %d goroutines (the limit below)", lo, hi), limit: 0, atLeast: true,
				ratio: func(rr roundResults) (float64, bool) { return machineScaling(rr, lo, hi) }},
			target{what: fmt.Sprintf("Get hit throughput, %d → %d threads, vs the machine's scaling", lo, hi), limit: 0.9, atLeast: true,
				ratio: func(rr roundResults) (float64, bool) {
					g, ok1 := sameEngineRatio(a, b)(rr)
					m, ok2 := machineScaling(rr, lo, hi)
					return g / m, ok1 && ok2 && m > 0
				}})
	}
	return ts
}

func printTargets(w io.Writer, cfg *config, rep *report) {
	fmt.Fprintln(w, "\n## The issues' targets (ratios measured within each round)")
	fmt.Fprintln(w, "\nWall time is the issue's measure; the CPU-time ratio (process CPU time per operation, for the Go engines) is given beside it because it moves less when other work takes the CPUs.")
	fmt.Fprintln(w)
	printTargetTable(w, cfg, rep)
}

// printTargetTable prints one row per target with its verdicts.
func printTargetTable(w io.Writer, cfg *config, rep *report) {
	fmt.Fprintln(w, "| target | limit | wall: median (min–max) | verdict | CPU time: median (min–max) | verdict |\n|---|---|---|---|---|---|")
	collect := func(f func(rr roundResults) (float64, bool)) spread {
		var s spread
		if f == nil {
			return s
		}
		for _, rr := range rep.Rounds {
			if v, ok := f(rr); ok {
				s = append(s, v)
			}
		}
		return s
	}
	for _, t := range targets(cfg) {
		s, c := collect(t.ratio), collect(t.cpu)
		op := "≤"
		if t.atLeast {
			op = "≥"
		}
		cpuCell, cpuVerdict := "—", ""
		if len(c) > 0 {
			cpuCell, cpuVerdict = ratioString(c), verdict(c, t.limit, t.atLeast)
		}
		fmt.Fprintf(w, "| %s | %s %s× | %s | %s | %s | %s |\n", t.what, op, fmt3(t.limit), ratioString(s),
			verdict(s, t.limit, t.atLeast), cpuCell, cpuVerdict)
	}
}

// verdict judges the median and says whether every round agrees, so that
// one noisy round can neither pass nor fail a target on its own.
func verdict(s spread, limit float64, atLeast bool) string {
	if len(s) == 0 {
		return "not measured"
	}
	meets := func(v float64) bool {
		if atLeast {
			return v >= limit
		}
		return v <= limit
	}
	all, none := true, true
	for _, v := range s {
		if meets(v) {
			none = false
		} else {
			all = false
		}
	}
	switch {
	case meets(s.median()) && all:
		return "met in every round"
	case meets(s.median()):
		return "met at the median, not in every round"
	case none:
		return "not met in any round"
	}
	return "not met at the median (met in some rounds)"
}

// statsPairs pools shale's per-inner-round ratios a/b from every round's
// interleaved comparison.
func statsPairs(rep *report, a, b string, cpu bool) spread {
	var s spread
	for _, rr := range rep.Rounds {
		r := rr.get("shale", variantMain)
		if r == nil || r.StatsCost == nil {
			continue
		}
		m := r.StatsCost.NsPerOp
		if cpu {
			m = r.StatsCost.CPUNsPerOp
		}
		x, y := m[a], m[b]
		for i := range min(len(x), len(y)) {
			if y[i] > 0 {
				s = append(s, x[i]/y[i])
			}
		}
	}
	return s
}

func statsValues(rep *report, name string) spread {
	var s spread
	for _, rr := range rep.Rounds {
		if r := rr.get("shale", variantMain); r != nil && r.StatsCost != nil {
			for _, v := range r.StatsCost.NsPerOp[name] {
				s = append(s, v/1e3)
			}
		}
	}
	return s
}

func printStatsCost(w io.Writer, rep *report) {
	if len(statsValues(rep, costMissOff)) == 0 {
		return
	}
	fmt.Fprintln(w, "\n## shale's statistics levels")
	fmt.Fprintln(w, "\nThe façade's own cost (driver.DB.Get against the engine's Get) is measured by BenchmarkFacadeCost in the engine package: the engine's DB is no longer public, so this harness, outside the module, cannot call it.")
	fmt.Fprintln(w, "\nInside each round's shale child, on copies of its compacted database, candidates measured in turn in a new random order per inner round; statistics levels are switched with `SetLevel` on one database. A ratio pairs two candidates of the same inner round; the spread is over every inner round of every round. \"cached Get\" reads keys from a range a quarter of the block cache's size, so its blocks stay cached.")
	fmt.Fprintln(w, "\n| comparison | µs/op, first (median, min–max) | µs/op, second | ratio, wall | ratio, CPU time | target (on wall time) |\n|---|---|---|---|---|---|")
	rows := []struct {
		what, a, b, target string
		limit              float64
	}{
		{"Get miss: default level / disabled", costMissDefault, costMissOff, "≤ 1.10×", 1.10},
		{"Get miss: A/A control (disabled / disabled)", costMissOffAA, costMissOff, "", 0},
		{"Get miss: level all / disabled", costMissAll, costMissOff, "", 0},
		{"cached Get hit: default level / disabled", costCachedDefault, costCachedOff, "≤ 1.02×", 1.02},
		{"cached Get hit: A/A control", costCachedOffAA, costCachedOff, "", 0},
		{"Get hit, random keys over all the data: default / disabled", costHitDefault, costHitOff, "", 0},
		{"Get hit: A/A control", costHitOffAA, costHitOff, "", 0},
		{"Get hit: level all / disabled", costHitAll, costHitOff, "", 0},
	}
	for _, r := range rows {
		s := statsPairs(rep, r.a, r.b, false)
		if len(s) == 0 {
			continue
		}
		tgt := r.target
		if tgt != "" {
			tgt += ": " + verdict(s, r.limit, false)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", r.what, statsValues(rep, r.a), statsValues(rep, r.b), ratioString(s),
			ratioString(statsPairs(rep, r.a, r.b, true)), tgt)
	}
}

// benchstatName makes a name benchstat accepts: no spaces.
func benchstatName(s string) string { return strings.ReplaceAll(s, " ", "_") }

// printBenchstat prints every per-round figure as a Go benchmark line
// (golang.org/x/perf/benchfmt), engine as a sub-benchmark key.
func printBenchstat(w io.Writer, cfg *config, rep *report) {
	m := rep.Meta
	fmt.Fprintf(w, "goos: %s\ngoarch: %s\npkg: github.com/shaledb/shale/bench\ncpu: %s\n", m.GOOS, m.GOARCH, m.CPUModel)
	fmt.Fprintf(w, "go: %s\ncommit: %s\n", m.GoVersion, m.Commit)
	for _, f := range figures(cfg) {
		for _, e := range m.Engines {
			for _, rr := range rep.Rounds {
				r := rr.get(e, f.variant)
				if r == nil {
					continue
				}
				if v, ok := f.value(r); ok {
					fmt.Fprintf(w, "Benchmark%s/engine=%s 1 %s %s\n", benchstatName(f.bench), e, bsFloat(v*f.bsScale), f.bsUnit)
				}
			}
		}
	}
	for _, c := range []string{costHitOff, costHitOffAA, costHitDefault, costHitAll, costMissOff, costMissOffAA, costMissDefault,
		costMissAll, costCachedOff, costCachedOffAA, costCachedDefault} {
		for _, v := range statsValues(rep, c) {
			fmt.Fprintf(w, "BenchmarkShaleInterleaved/%s/engine=shale 1 %s ns/op\n", benchstatName(strings.NewReplacer(",", "", ".", "_", "(", "", ")", "", "/", "-").Replace(c)), bsFloat(v*1e3))
		}
	}
}

func bsFloat(v float64) string { return fmt.Sprintf("%.6g", v) }

func formatSize(n int64) string {
	switch {
	case n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}
