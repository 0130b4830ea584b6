package metamorphic

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cockroachdb/errors"
)

// Result is the output of one history under one configuration (or the
// model): one line per op, and the messages of errors of no known class.
type Result struct {
	Config Config
	Out    []string
	Errs   []string
	// Err is set when the run could not go on (an open that failed, an op
	// the history cannot run); Out holds the outputs up to it.
	Err error
}

type executor interface {
	Exec(Op) (string, error)
}

func run(e executor, h *History, res *Result) {
	for i, o := range h.Ops {
		out, err := e.Exec(o)
		if err != nil {
			res.Err = errors.Wrapf(err, "op %d (%s)", i+1, o.String())
			return
		}
		res.Out = append(res.Out, out)
	}
}

// RunModel runs h on the model.
func RunModel(h *History) *Result {
	res := &Result{Config: Config{Name: "model"}}
	run(newModel(), h, res)
	return res
}

// RunConfig runs h on a database in dir (which must be empty or absent)
// opened with cfg.
func RunConfig(h *History, cfg Config, dir string) *Result {
	res := &Result{Config: cfg}
	r, err := newRunner(cfg, dir)
	if err != nil {
		res.Err = errors.Wrap(err, "open")
		return res
	}
	run(r, h, res)
	if err := r.Close(); err != nil && res.Err == nil {
		res.Err = errors.Wrap(err, "close")
	}
	res.Errs = r.errs
	return res
}

// Diff describes the first difference between a configuration's outputs
// and the model's.
type Diff struct {
	Config Config
	Op     int // 0-based index of the first op whose outputs differ
	Want   string
	Got    string
	Err    error
	Errs   []string
}

// Compare returns the first difference between got and want, or nil.
func Compare(h *History, want, got *Result) *Diff {
	n := min(len(want.Out), len(got.Out))
	for i := range n {
		if want.Out[i] != got.Out[i] {
			return &Diff{Config: got.Config, Op: i, Want: want.Out[i], Got: got.Out[i], Errs: got.Errs}
		}
	}
	if got.Err != nil || want.Err != nil || len(got.Out) != len(want.Out) {
		d := &Diff{Config: got.Config, Op: n, Err: errors.CombineErrors(got.Err, want.Err), Errs: got.Errs}
		if n < len(want.Out) {
			d.Want = want.Out[n]
		}
		if n < len(got.Out) {
			d.Got = got.Out[n]
		}
		return d
	}
	return nil
}

// Format describes d with the ops before it, the way a failing test
// prints it.
func (d *Diff) Format(h *History) string {
	var b strings.Builder
	fmt.Fprintf(&b, "config %s (%s): first difference at op %d", d.Config.Name, d.Config.DSN, d.Op+1)
	if d.Op < len(h.Ops) {
		fmt.Fprintf(&b, ": %s", h.Ops[d.Op])
	}
	b.WriteByte('\n')
	if d.Err != nil {
		fmt.Fprintf(&b, "  run stopped: %v\n", d.Err)
	}
	w, g := firstDiffToken(d.Want, d.Got)
	fmt.Fprintf(&b, "  model: %s\n  got:   %s\n", clip(d.Want), clip(d.Got))
	if w != d.Want || g != d.Got {
		fmt.Fprintf(&b, "  first differing entry: model %q, got %q\n", w, g)
	}
	for _, e := range d.Errs {
		fmt.Fprintf(&b, "  error: %s\n", e)
	}
	b.WriteString("  ops before it:\n")
	for i := max(0, d.Op-15); i < d.Op && i < len(h.Ops); i++ {
		fmt.Fprintf(&b, "    %d: %s\n", i+1, h.Ops[i])
	}
	return b.String()
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return s
}

// firstDiffToken returns the first space-separated entries where a and b
// differ (a scan's outputs are long lines).
func firstDiffToken(a, b string) (string, string) {
	as, bs := strings.Fields(a), strings.Fields(b)
	for i := range max(len(as), len(bs)) {
		var x, y string
		if i < len(as) {
			x = as[i]
		}
		if i < len(bs) {
			y = bs[i]
		}
		if x != y {
			return x, y
		}
	}
	return a, b
}

// RunAll runs h on the model and under every configuration, at most
// parallel at a time, each in its own directory under dir, and returns the
// differences from the model.
func RunAll(h *History, cfgs []Config, dir string, parallel int) []*Diff {
	want := RunModel(h)
	if want.Err != nil {
		return []*Diff{{Config: want.Config, Op: len(want.Out), Err: want.Err}}
	}
	diffs := make([]*Diff, len(cfgs))
	sem := make(chan struct{}, max(1, parallel))
	var wg sync.WaitGroup
	for i, cfg := range cfgs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			d := filepath.Join(dir, fmt.Sprintf("%02d-%s", i, cfg.Name))
			got := RunConfig(h, cfg, d)
			diffs[i] = Compare(h, want, got)
			_ = os.RemoveAll(d)
		}()
	}
	wg.Wait()
	var out []*Diff
	for _, d := range diffs {
		if d != nil {
			out = append(out, d)
		}
	}
	return out
}

// SaveHistory writes h, with the diffs as comments, to a new file in dir
// and returns its path.
func SaveHistory(dir, name string, h *History, diffs []*Diff) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	saved := &History{Comment: append([]string(nil), h.Comment...), Ops: h.Ops}
	for _, d := range diffs {
		saved.Comment = append(saved.Comment, strings.Split(strings.TrimRight(d.Format(h), "\n"), "\n")...)
	}
	f, err := os.CreateTemp(dir, name+"-*.history")
	if err != nil {
		return "", err
	}
	if err := saved.Write(f); err != nil {
		_ = f.Close()
		return "", err
	}
	return f.Name(), f.Close()
}
