package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/statistics"
)

// The plot written by bench -svg: a self-contained SVG (no scripts, fonts or
// external references) of two panels.
//
//  1. The latency CDF of each timed phase, from the bench's own histograms:
//     x is the latency on a log scale, y the percentile on a tail scale
//     (-log10(1 - p), as HdrHistogram plots: 0, 50, 90, 99 and 99.9% are
//     evenly spaced from 90% on, so the tail is visible), one line per
//     phase, drawn through the histogram's interpolated percentiles
//     (RocksDB's bucket interpolation).
//  2. The per-activity file-read latencies from the database's statistics:
//     for each of shale.sst.read.micros and the file.read.* histograms with
//     samples, a bar to P99 and a darker one to P50, on a log scale.

const (
	svgWidth   = 1080
	plotLeft   = 90
	cdfRight   = 730 // the CDF's right edge; the legend is beyond it
	legendLeft = 750
	plotRight  = 1040 // panel 2's right edge
	cdfTop     = 60
	cdfBottom  = 400
	barsTop    = 480
	barRowH    = 26
	labelWidth = 330 // of the histogram names in panel 2
	// tailNines is how many nines the CDF's y axis spans: a little more
	// than three, so 99.9% is marked below the top edge, where the maximum
	// is drawn.
	tailNines = 3.25
)

// cdfTicks are the percentiles marked on the CDF's y axis.
var cdfTicks = []float64{0, 50, 90, 99, 99.9}

// cdfPoints are the percentiles each CDF line is drawn through: dense
// where the tail scale stretches.
var cdfPoints = func() []float64 {
	var ps []float64
	for p := 0.0; p < 90; p++ {
		ps = append(ps, p)
	}
	for p := 900; p < 990; p++ {
		ps = append(ps, float64(p)/10)
	}
	for p := 9900; p <= 9990; p++ {
		ps = append(ps, float64(p)/100)
	}
	return append(ps, 100)
}()

// tailY maps a percentile to [0, 1] on the tail scale.
func tailY(p float64) float64 {
	if p >= 100 {
		return 1
	}
	return math.Min(-math.Log10(1-p/100)/tailNines, 1)
}

// palette holds the phase line colours (colour-blind friendly, from Okabe
// and Ito, plus grey).
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#777777"}

// writeSVGFile renders the plot to path.
func writeSVGFile(path string, results []phaseResult, st *statistics.Statistics, title string) error {
	var buf bytes.Buffer
	if err := renderSVG(&buf, results, st, title); err != nil {
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return errors.Wrapf(err, "writing %s", path)
	}
	return nil
}

// logScale maps values in [lo, hi] (both > 0) to [x0, x1] logarithmically.
// It is an immutable value.
type logScale struct {
	lo, hi float64 // decade-aligned bounds
	x0, x1 float64
}

func newLogScale(minV, maxV, x0, x1 float64) logScale {
	minV = math.Max(minV, 0.01)
	maxV = math.Max(maxV, minV*10)
	return logScale{
		lo: math.Pow(10, math.Floor(math.Log10(minV))),
		hi: math.Pow(10, math.Ceil(math.Log10(maxV))),
		x0: x0, x1: x1,
	}
}

func (s logScale) at(v float64) float64 {
	v = math.Min(math.Max(v, s.lo), s.hi)
	return s.x0 + (s.x1-s.x0)*math.Log10(v/s.lo)/math.Log10(s.hi/s.lo)
}

// decades returns the powers of ten from lo to hi.
func (s logScale) decades() []float64 {
	var ds []float64
	for d := s.lo; d <= s.hi*1.0001; d *= 10 {
		ds = append(ds, d)
	}
	return ds
}

// formatMicros labels a latency given in microseconds.
func formatMicros(us float64) string {
	switch {
	case us >= 1e6:
		return strconv.FormatFloat(us/1e6, 'g', 3, 64) + " s"
	case us >= 1e3:
		return strconv.FormatFloat(us/1e3, 'g', 3, 64) + " ms"
	}
	return strconv.FormatFloat(us, 'g', 3, 64) + " µs"
}

// svgWriter writes the document and keeps the first write error. It is not
// safe for concurrent use.
type svgWriter struct {
	w   io.Writer
	err error
}

func (s *svgWriter) printf(format string, args ...any) {
	if s.err == nil {
		_, s.err = fmt.Fprintf(s.w, format, args...)
	}
}

// text writes a text element with escaped content.
func (s *svgWriter) text(x, y float64, anchor, style, content string) {
	var esc bytes.Buffer
	_ = xml.EscapeText(&esc, []byte(content))
	s.printf(`<text x="%.1f" y="%.1f" text-anchor="%s" %s>%s</text>`+"\n", x, y, anchor, style, esc.String())
}

// renderSVG writes the plot. Phases without samples are left out of the
// CDF; a nil st leaves panel 2 with a note.
func renderSVG(w io.Writer, results []phaseResult, st *statistics.Statistics, title string) error {
	type hrow struct {
		name string
		d    statistics.HistogramData
	}
	var rows []hrow
	if st != nil {
		for _, h := range activityHistograms {
			if d := st.HistogramData(h); d.Count > 0 {
				rows = append(rows, hrow{h.String(), d})
			}
		}
	}
	height := barsTop + 40 + barRowH*max(len(rows), 1) + 40

	s := &svgWriter{w: w}
	s.printf(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	s.printf(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		svgWidth, height, svgWidth, height)
	s.printf(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	s.text(svgWidth/2, 24, "middle", `font-size="15" font-weight="bold"`, title)

	// Panel 1: CDFs.
	s.text(svgWidth/2, cdfTop-12, "middle", `font-weight="bold"`, "Latency CDF per phase (measured by the bench)")
	minUs, maxUs := math.Inf(1), 0.0
	var plotted []phaseResult
	for _, r := range results {
		if r.hist == nil || r.hist.Count() == 0 {
			continue
		}
		plotted = append(plotted, r)
		minUs = math.Min(minUs, r.hist.Percentile(0)/1e3)
		maxUs = math.Max(maxUs, r.hist.Percentile(100)/1e3)
	}
	if len(plotted) == 0 {
		minUs, maxUs = 1, 10
	}
	xs := newLogScale(minUs, maxUs, plotLeft, cdfRight)
	yAt := func(p float64) float64 { return cdfBottom - (cdfBottom-cdfTop)*tailY(p) }
	s.printf(`<g stroke="#dddddd" stroke-width="1">` + "\n")
	for _, d := range xs.decades() {
		s.printf(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`+"\n", xs.at(d), cdfTop, xs.at(d), cdfBottom)
	}
	for _, p := range cdfTicks {
		s.printf(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`+"\n", plotLeft, yAt(p), cdfRight, yAt(p))
	}
	s.printf("</g>\n")
	for _, d := range xs.decades() {
		s.text(xs.at(d), cdfBottom+16, "middle", "", formatMicros(d))
	}
	for _, p := range cdfTicks {
		s.text(plotLeft-6, yAt(p)+4, "end", "", strconv.FormatFloat(p, 'f', -1, 64)+"%")
	}
	s.text(plotLeft-6, cdfTop+4, "end", "", "max")
	s.text((plotLeft+cdfRight)/2, cdfBottom+34, "middle", "", "latency (log scale)")
	s.text(24, (cdfTop+cdfBottom)/2, "middle", `transform="rotate(-90 24 230)"`, "percentile (tail scale)")
	s.printf(`<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333333"/>`+"\n",
		plotLeft, cdfTop, cdfRight-plotLeft, cdfBottom-cdfTop)
	for i, r := range plotted {
		color := palette[i%len(palette)]
		s.printf(`<polyline class="cdf" data-phase="%s" fill="none" stroke="%s" stroke-width="2" points="`, r.name, color)
		for _, p := range cdfPoints {
			s.printf("%.1f,%.1f ", xs.at(r.hist.Percentile(p)/1e3), yAt(p))
		}
		s.printf(`"/>` + "\n")
		// The legend, right of the plot.
		ly := float64(cdfTop + 12 + 36*i)
		s.printf(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-width="3"/>`+"\n",
			legendLeft, ly-4, legendLeft+24, ly-4, color)
		s.text(legendLeft+30, ly, "start", "", r.name)
		s.text(legendLeft+30, ly+15, "start", `fill="#555555"`, fmt.Sprintf("p50 %s, p99 %s, max %s",
			formatMicros(r.hist.Percentile(50)/1e3), formatMicros(r.hist.Percentile(99)/1e3),
			formatMicros(r.hist.Percentile(100)/1e3)))
	}

	// Panel 2: per-activity P50 and P99 bars.
	s.text(svgWidth/2, barsTop-12, "middle", `font-weight="bold"`,
		"File-read latency per IO activity (shale statistics): P50 dark, P99 light")
	if len(rows) == 0 {
		s.text(svgWidth/2, barsTop+30, "middle", "", "no file reads recorded")
	} else {
		minUs, maxUs = math.Inf(1), 0
		for _, r := range rows {
			minUs = math.Min(minUs, math.Max(r.d.Median, 0.1))
			maxUs = math.Max(maxUs, r.d.P99)
		}
		bs := newLogScale(minUs, maxUs, plotLeft+labelWidth, plotRight)
		bottom := barsTop + barRowH*len(rows)
		for _, d := range bs.decades() {
			s.printf(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#dddddd"/>`+"\n", bs.at(d), barsTop, bs.at(d), bottom)
			s.text(bs.at(d), float64(bottom+16), "middle", "", formatMicros(d))
		}
		for i, r := range rows {
			y := float64(barsTop + barRowH*i)
			s.text(plotLeft+labelWidth-8, y+barRowH/2+4, "end", "",
				fmt.Sprintf("%s (%d)", r.name, r.d.Count))
			x0 := bs.at(bs.lo)
			s.printf(`<rect class="p99" x="%.1f" y="%.1f" width="%.1f" height="%d" fill="#9ecae1"/>`+"\n",
				x0, y+4, bs.at(r.d.P99)-x0, barRowH-8)
			s.printf(`<rect class="p50" x="%.1f" y="%.1f" width="%.1f" height="%d" fill="#08519c"/>`+"\n",
				x0, y+8, bs.at(r.d.Median)-x0, barRowH-16)
		}
	}
	s.printf("</svg>\n")
	return s.err
}
