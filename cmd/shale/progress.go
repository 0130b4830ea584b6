package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progressMode says how progress is shown.
type progressMode uint8

const (
	// progressOff shows nothing.
	progressOff progressMode = iota
	// progressBar redraws one line in place; for terminals.
	progressBar
	// progressLines prints a plain line every plainInterval; for logs.
	progressLines
)

const (
	// sampleInterval is how often the progress goroutine samples its
	// callback and redraws the bar.
	sampleInterval = 200 * time.Millisecond
	// plainInterval is how often progressLines prints, so that a log is
	// not flooded.
	plainInterval = time.Second
	barWidth      = 30
)

// progress shows the progress of one long operation on a writer (stderr),
// sampling a callback from its own goroutine. Start it with startProgress
// and end it with stop; it is not meant to be shared beyond that.
type progress struct {
	w     io.Writer
	mode  progressMode
	label string
	// sample returns the fraction done in [0, 1] (or a negative value when
	// unknown) and a short status text. It is called from the progress
	// goroutine, so it must be safe to call concurrently with the work.
	sample func() (frac float64, status string)
	start  time.Time

	stopc chan struct{}
	wg    sync.WaitGroup
	width int // of the last line drawn, to erase it
}

// startProgress starts showing progress; with progressOff it does nothing
// but still returns a progress whose stop is safe to call.
func startProgress(w io.Writer, mode progressMode, label string, sample func() (float64, string)) *progress {
	p := &progress{w: w, mode: mode, label: label, sample: sample, start: time.Now(), stopc: make(chan struct{})}
	if mode == progressOff {
		return p
	}
	p.wg.Add(1)
	go p.loop()
	return p
}

func (p *progress) loop() {
	defer p.wg.Done()
	t := time.NewTicker(sampleInterval)
	defer t.Stop()
	lastPlain := p.start
	for {
		select {
		case <-p.stopc:
			return
		case now := <-t.C:
			if p.mode == progressLines {
				if now.Sub(lastPlain) < plainInterval {
					continue
				}
				lastPlain = now
			}
			p.draw(false)
		}
	}
}

// stop ends the display. A bar is erased; in line mode a final line is
// printed, so a log shows where the operation ended.
func (p *progress) stop() {
	if p.mode == progressOff {
		return
	}
	close(p.stopc)
	p.wg.Wait()
	p.draw(true)
}

func (p *progress) draw(final bool) {
	frac, status := p.sample()
	elapsed := time.Since(p.start).Round(100 * time.Millisecond)
	var b strings.Builder
	if p.mode == progressBar {
		if final {
			// Erase the bar: the caller prints the result on stdout.
			fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
			return
		}
		b.WriteByte('\r')
	}
	b.WriteString(p.label)
	b.WriteByte(' ')
	if frac >= 0 {
		frac = min(frac, 1)
		if p.mode == progressBar {
			n := int(frac * barWidth)
			b.WriteByte('[')
			b.WriteString(strings.Repeat("=", n))
			if n < barWidth {
				b.WriteByte('>')
				b.WriteString(strings.Repeat(" ", barWidth-n-1))
			}
			b.WriteString("] ")
		}
		fmt.Fprintf(&b, "%3.0f%% ", frac*100)
	}
	fmt.Fprintf(&b, "%s %s", elapsed, status)
	if final {
		b.WriteString(" (done)")
	}
	line := b.String()
	if p.mode == progressBar {
		// Pad over the remains of a longer previous line.
		if pad := p.width - len(line); pad > 0 {
			line += strings.Repeat(" ", pad)
		}
		p.width = len(line)
	} else {
		line += "\n"
	}
	_, _ = io.WriteString(p.w, line)
}
