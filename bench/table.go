package main

import (
	"fmt"
	"io"
	"math"
	"strings"
)

const (
	labelWidth = 34
	cellWidth  = 21
)

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

// ratio is shale's figure over a peer's: below 1 means shale is faster
// (or smaller).
func ratio(shale, peer float64) string {
	if shale <= 0 || peer <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%s×)", fmt3(shale/peer))
}

type tableWriter struct {
	w       io.Writer
	engines []string
}

func (t *tableWriter) header() {
	fmt.Fprintf(t.w, "%-*s", labelWidth, "")
	for _, e := range t.engines {
		fmt.Fprintf(t.w, "%-*s", cellWidth, e)
	}
	fmt.Fprintln(t.w)
}

// row prints one figure per engine; withRatio adds each peer's ratio to
// shale's figure (when shale ran).
func (t *tableWriter) row(label string, withRatio bool, val func(r *engineResult) (float64, bool), res map[string]*engineResult) {
	fmt.Fprintf(t.w, "%-*s", labelWidth, label)
	shale, haveShale := 0.0, false
	if r, ok := res["shale"]; ok {
		shale, haveShale = val(r)
	}
	for _, e := range t.engines {
		v, ok := val(res[e])
		cell := "—"
		if ok {
			cell = fmt3(v)
			if withRatio && haveShale && e != "shale" {
				cell += ratio(shale, v)
			}
		}
		fmt.Fprintf(t.w, "%-*s", cellWidth, cell)
	}
	fmt.Fprintln(t.w)
}

// pctRow prints "p50 / p99" per engine in microseconds.
func (t *tableWriter) pctRow(label string, get func(r *engineResult) (phaseResult, bool), res map[string]*engineResult) {
	fmt.Fprintf(t.w, "%-*s", labelWidth, label)
	for _, e := range t.engines {
		cell := "—"
		if p, ok := get(res[e]); ok {
			cell = fmt3(p.P50Ns/1e3) + " / " + fmt3(p.P99Ns/1e3)
		}
		fmt.Fprintf(t.w, "%-*s", cellWidth, cell)
	}
	fmt.Fprintln(t.w)
}

var readRows = []struct {
	phase, label, cpuLabel, pctLabel string
}{
	{phaseGetHit, "Get hit (µs/op)", "  CPU µs/op", "  p50 / p99 (µs)"},
	{phaseGetHitCopy, "Get hit, copying (µs/op)", "  CPU µs/op", "  p50 / p99 (µs)"},
	{phaseGetMiss, "Get miss (µs/op)", "  CPU µs/op", "  p50 / p99 (µs)"},
	{phaseMultiGet, "MultiGet(16) (µs/key)", "  CPU µs/key", "  p50 / p99 per batch (µs)"},
	{phaseNext, "iterator Next (µs/op)", "  CPU µs/op", "  p50 / p99 (µs)"},
	{phaseSeek, "iterator SeekGE (µs/op)", "  CPU µs/op", "  p50 / p99 (µs)"},
}

func printTable(w io.Writer, cfg *config, out *runOutput) {
	m := out.Meta
	res := out.Results
	fmt.Fprintf(w, "shale bench — %s — %s/%s, %d CPUs (%s), %s — data %s (%d B keys, %d B values, %d keys) on %s (%s) — reads with %s thread(s), %s per phase\n",
		m.Date, m.GOOS, m.GOARCH, m.CPUs, m.CPUModel, m.GoVersion, formatSize(m.MaxDataBytes), m.KeySize, m.ValueSize,
		m.NumKeys, m.Dir, m.DirKind, joinInts(m.Threads), m.PhaseDuration)
	fmt.Fprintf(w, "load average before %s, after %s; ratio = shale / peer (below 1: shale faster or smaller)\n\n",
		m.LoadAvgBefore, m.LoadAvgAfter)
	t := &tableWriter{w: w, engines: cfg.engines}
	t.header()
	phase := func(get func(r *engineResult) phaseResult) func(r *engineResult) (phaseResult, bool) {
		return func(r *engineResult) (phaseResult, bool) {
			if r == nil {
				return phaseResult{}, false
			}
			p := get(r)
			return p, p.Ops > 0
		}
	}
	perOp := func(get func(r *engineResult) (phaseResult, bool)) func(r *engineResult) (float64, bool) {
		return func(r *engineResult) (float64, bool) {
			p, ok := get(r)
			return p.NsPerOp / 1e3, ok
		}
	}
	cpuPerOp := func(get func(r *engineResult) (phaseResult, bool)) func(r *engineResult) (float64, bool) {
		return func(r *engineResult) (float64, bool) {
			p, ok := get(r)
			return p.CPUNsPerOp / 1e3, ok
		}
	}
	fill := phase(func(r *engineResult) phaseResult { return r.Fill })
	fillBatch := phase(func(r *engineResult) phaseResult { return r.FillBatch })
	t.row("random fill, 1 put/write (µs/op)", true, perOp(fill), res)
	t.row("  CPU µs/op", true, cpuPerOp(fill), res)
	t.pctRow("  p50 / p99 (µs)", fill, res)
	t.row("random fill, batch 100 (µs/key)", true, perOp(fillBatch), res)
	t.row("  CPU µs/key", true, cpuPerOp(fillBatch), res)
	t.pctRow("  p50 / p99 per batch (µs)", fillBatch, res)
	t.row("full compaction (s)", true, func(r *engineResult) (float64, bool) {
		return r.get().CompactSeconds, r != nil
	}, res)
	t.row("table files (MiB)", true, func(r *engineResult) (float64, bool) {
		return r.get().TablesMiB, r != nil
	}, res)
	t.row("directory, allocated (MiB)", true, func(r *engineResult) (float64, bool) {
		return r.get().DiskMiB, r != nil
	}, res)
	for _, threads := range cfg.threads {
		fmt.Fprintf(w, "-- %d reader thread(s); µs/op = wall time / operations --\n", threads)
		for _, rr := range readRows {
			get := func(r *engineResult) (phaseResult, bool) {
				if r == nil {
					return phaseResult{}, false
				}
				return r.read(rr.phase, threads)
			}
			t.row(rr.label, true, perOp(get), res)
			t.row(rr.cpuLabel, true, cpuPerOp(get), res)
			t.pctRow(rr.pctLabel, get, res)
		}
	}
	fmt.Fprintln(w, "--")
	t.row("peak RSS, load + reads (MiB)", true, func(r *engineResult) (float64, bool) {
		return r.get().PeakRSSMiB, r != nil
	}, res)
	t.row("  of which load (MiB)", true, func(r *engineResult) (float64, bool) {
		return r.get().RSSAfterLoadMiB, r != nil
	}, res)
	if len(cfg.threads) > 1 {
		lo, hi := cfg.threads[0], cfg.threads[len(cfg.threads)-1]
		t.row(fmt.Sprintf("Get hit throughput %d→%d thr (×)", lo, hi), false, func(r *engineResult) (float64, bool) {
			if r == nil {
				return 0, false
			}
			a, ok1 := r.read(phaseGetHit, lo)
			b, ok2 := r.read(phaseGetHit, hi)
			return a.NsPerOp / b.NsPerOp, ok1 && ok2
		}, res)
	}
	if s := res["shale"]; s != nil && s.StatsCost != nil {
		printStatsCost(w, s.StatsCost)
	}
	printTargets(w, cfg, res)
}

func (r *engineResult) get() *engineResult {
	if r == nil {
		return &engineResult{}
	}
	return r
}

func printStatsCost(w io.Writer, sc *statsCost) {
	fmt.Fprintf(w, "\nshale, interleaved (%d rounds × %.1f s, a new random order each round); µs/op per round → median;\n", sc.Rounds, sc.Seconds)
	fmt.Fprintln(w, "differences (→) are medians of per-round ratios:")
	line := func(name string) {
		v, ok := sc.NsPerOp[name]
		if !ok {
			return
		}
		fmt.Fprintf(w, "  %-48s wall %s → %s;  CPU %s → %s\n", name,
			joinMicros(v), fmt3(sc.Median[name]/1e3), joinMicros(sc.CPUNsPerOp[name]), fmt3(sc.CPUMedian[name]/1e3))
	}
	// pct is the median over rounds of a's figure over b's from the same
	// round: pairing by round cancels drift slower than a round.
	pct := func(a, b string) string {
		pr := func(m map[string][]float64) float64 {
			x, y := m[a], m[b]
			var rs []float64
			for i := range min(len(x), len(y)) {
				if y[i] > 0 {
					rs = append(rs, x[i]/y[i])
				}
			}
			return 100 * (median(rs) - 1)
		}
		if len(sc.NsPerOp[a]) == 0 || len(sc.NsPerOp[b]) == 0 {
			return "—"
		}
		return fmt.Sprintf("%+.1f%% wall, %+.1f%% CPU", pr(sc.NsPerOp), pr(sc.CPUNsPerOp))
	}
	fmt.Fprintln(w, " statistics levels, switched with SetLevel on one database:")
	for _, name := range []string{costHitOff, costHitOffAA, costHitDefault, costHitAll, costMissOff, costMissOffAA, costMissDefault, costMissAll} {
		line(name)
	}
	fmt.Fprintf(w, "  → Get hit: default %s (target ≤2%%); all %s (target ≤4%%); A/A %s\n",
		pct(costHitDefault, costHitOff), pct(costHitAll, costHitOff), pct(costHitOffAA, costHitOff))
	fmt.Fprintf(w, "  → Get miss: default %s; all %s; A/A %s\n", pct(costMissDefault, costMissOff), pct(costMissAll, costMissOff),
		pct(costMissOffAA, costMissOff))
	fmt.Fprintf(w, " driver façade (stats=%s), each on its own copy of the database:\n", sc.StatsLevel)
	for _, name := range []string{costEngineHit, costEngineAA, costFacadeHit, costEngineMiss, costFacadeMiss} {
		line(name)
	}
	fmt.Fprintf(w, "  → façade cost: Get hit %s (engine copies A/A: %s); Get miss %s\n",
		pct(costFacadeHit, costEngineHit), pct(costEngineAA, costEngineHit), pct(costFacadeMiss, costEngineMiss))
}

func joinMicros(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt3(x / 1e3)
	}
	return strings.Join(s, " ")
}

// printTargets checks the performance targets against this run, on
// the wall-time figures and on the CPU-time ones.
func printTargets(w io.Writer, cfg *config, res map[string]*engineResult) {
	s := res["shale"]
	if s == nil {
		return
	}
	t1 := cfg.threads[0]
	type fig struct{ wall, cpu float64 }
	phaseFig := func(p phaseResult) fig { return fig{p.NsPerOp, p.CPUNsPerOp} }
	read := func(r *engineResult, phase string) fig {
		if r == nil {
			return fig{}
		}
		p, _ := r.read(phase, t1)
		return phaseFig(p)
	}
	type target struct {
		what     string
		num, den fig
		limit    float64
		higher   bool // the ratio must be at least limit
	}
	var ts []target
	add := func(what string, num, den fig, limit float64) {
		if num.wall > 0 && den.wall > 0 {
			ts = append(ts, target{what, num, den, limit, false})
		}
	}
	add("Get hit vs pebble", read(s, phaseGetHit), read(res["pebble"], phaseGetHit), 0.5)
	add("Get hit vs goleveldb", read(s, phaseGetHit), read(res["goleveldb"], phaseGetHit), 0.6)
	add("Get miss vs goleveldb", read(s, phaseGetMiss), read(res["goleveldb"], phaseGetMiss), 0.25)
	add("MultiGet per key vs shale Get hit (pinned)", read(s, phaseMultiGet), read(s, phaseGetHit), 0.6)
	add("MultiGet per key vs shale Get hit (copying)", read(s, phaseMultiGet), read(s, phaseGetHitCopy), 0.6)
	var fastest fig
	fastestName := ""
	for _, e := range []string{"pebble", "goleveldb", "badger"} {
		if v := read(res[e], phaseNext); v.wall > 0 && (fastest.wall == 0 || v.wall < fastest.wall) {
			fastest, fastestName = v, e
		}
	}
	add("iterator Next vs fastest peer ("+fastestName+")", read(s, phaseNext), fastest, 0.8)
	if p := res["pebble"]; p != nil {
		add("random fill (1 put/write) vs pebble", phaseFig(s.Fill), phaseFig(p.Fill), 0.8)
	}
	if len(cfg.threads) > 1 {
		lo, hi := cfg.threads[0], cfg.threads[len(cfg.threads)-1]
		a, ok1 := s.read(phaseGetHit, lo)
		b, ok2 := s.read(phaseGetHit, hi)
		if ok1 && ok2 {
			// Throughput ratio hi/lo = time per op lo / time per op hi. CPU
			// time cannot show scaling; both columns use wall time.
			ts = append(ts, target{fmt.Sprintf("Get hit throughput, %d→%d threads", lo, hi),
				fig{a.NsPerOp, a.NsPerOp}, fig{b.NsPerOp, b.NsPerOp}, 1.7, true})
		}
	}
	if len(ts) == 0 {
		return
	}
	fmt.Fprintf(w, "\nissue targets (%d thread(s); ratio = shale / reference; verdict on wall time, then CPU time):\n", t1)
	for _, t := range ts {
		op := "≤"
		if t.higher {
			op = "≥"
		}
		verdict := func(got float64) string {
			if t.higher && got < t.limit {
				return fmt.Sprintf("NOT met (%.2f× short)", t.limit/got)
			}
			if !t.higher && got > t.limit {
				return fmt.Sprintf("NOT met (%.2f× over)", got/t.limit)
			}
			return "met"
		}
		wall, cpu := t.num.wall/t.den.wall, t.num.cpu/t.den.cpu
		fmt.Fprintf(w, "  %-50s %s %-5s  wall %-6s %-22s  CPU %-6s %s\n", t.what, op, fmt3(t.limit),
			fmt3(wall), verdict(wall), fmt3(cpu), verdict(cpu))
	}
}

func formatSize(n int64) string {
	switch {
	case n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
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
