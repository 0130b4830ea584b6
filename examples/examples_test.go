// Package examples_test builds every example program and runs it, so that
// `go test ./...` keeps them working: each must exit 0 within a few seconds
// and print what it promises.
package examples_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
	"time"
)

// examples lists each example directory and lines its output must contain.
var examples = []struct {
	dir  string
	want []string // regexps, matched against the whole output with (?m)
}{
	{"quickstart", []string{
		`^Get greeting = "hello, shale"$`,
		`^Get greeting after Delete: not found$`,
		`^  fruit:apple = red\n  fruit:cherry = dark red\n`,
		`^MultiGet fruit:banana: not found$`,
		`^after reopening: veg:carrot = orange$`,
	}},
	{"readoptions", []string{
		`^Get with the default options: 0 rate-limiter requests$`,
		`^Get at priority User: 1 rate-limiter request\(s\)$`,
		`^session default priority: Low$`,
		"^Get tagged Flush: Can only call Get with `ReadOptions::io_activity` is `Env::IOActivity::kUnknown` or `Env::IOActivity::kGet`, not `Env::IOActivity::kFlush`$",
		`^Get with a cancelled context: context.Canceled$`,
		`^Get past its ReadOptions deadline: context.DeadlineExceeded$`,
	}},
	{"statistics", []string{
		`^Get +-> shale.sst.read.micros \+1, shale.file.read.get.micros \+1$`,
		`^MultiGet +-> shale.sst.read.micros \+\d+, shale.file.read.multiget.micros \+\d+$`,
		`^Iterator +-> shale.sst.read.micros \+\d+, shale.file.read.db.iterator.micros \+\d+$`,
		`^VerifyChecksum +-> shale.sst.read.micros \+\d+, shale.file.read.verify.db.checksum.micros \+\d+$`,
		`^VerifyFileChecksums +-> shale.sst.read.micros \+\d+, shale.file.read.verify.file.checksums.micros \+\d+$`,
		`^at stats_level except_detailed_timers, Get -> shale.sst.read.micros \+1$`,
	}},
	{"verify", []string{
		`^background VerifyChecksum +ok in [\d.]+s at priority Low$`,
		`^background VerifyFileChecksums +ok in [\d.]+s at priority Low$`,
		`^foreground Gets: [1-9]\d*, `,
		`^  shale.rate.limiter.requests.read +[1-9]\d*$`,
	}},
	{"backup", []string{
		`^batch: 6 writes, \d+ bytes$`,
		`^sessions: 2 live, 5 in the snapshot$`,
		`^account:alice: balance=70 now, balance=100 in the snapshot$`,
		`^a second Checkpoint into the same directory is refused$`,
		`^backup: 2 sessions, account:alice balance=70, account:bob not found$`,
	}},
	{"transactions", []string{
		`^transfer 30: inside the transaction alice=70 bob=80; outside alice=100$`,
		`^after Commit: alice=70$`,
		`^two transactions wrote bob: the first committed, the second failed: `,
		`^bob=81$`,
		`still sees alice=70$`,
		`^after Rollback: carol not found$`,
	}},
	{"zerocopy", []string{
		`^Has block:1 = true$`,
		`^Has block:9 = false$`,
		`^ValueSize block:2 = 262140 bytes$`,
		`^ValueSize block:9: not found$`,
		`^GetPinned block:3: 262140 bytes, as written: true; released$`,
		`^after Delete block:0: Has = false, in the earlier snapshot = true$`,
	}},
}

// goTool returns the go command of the toolchain running the test.
func goTool(t *testing.T) string {
	p, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the examples with")
	}
	return p
}

func TestExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs every example; skipped with -short")
	}
	bin := t.TempDir()
	// One build for all: much faster than a go run per example.
	var pkgs []string
	for _, ex := range examples {
		pkgs = append(pkgs, "./"+ex.dir)
	}
	build := exec.Command(goTool(t), append([]string{"build", "-o", bin + string(filepath.Separator)}, pkgs...)...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, ex := range examples {
		t.Run(ex.dir, func(t *testing.T) {
			exe := filepath.Join(bin, ex.dir)
			if runtime.GOOS == "windows" {
				exe += ".exe"
			}
			// An example must finish in a few seconds; the generous bound
			// allows for a loaded CI machine.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, exe)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s: %v\n%s", ex.dir, err, out.String())
			}
			t.Logf("%s ran in %s", ex.dir, time.Since(start).Round(time.Millisecond))
			for _, w := range ex.want {
				if !regexp.MustCompile("(?m)" + w).MatchString(out.String()) {
					t.Errorf("%s: output lacks %q:\n%s", ex.dir, w, out.String())
				}
			}
		})
	}
}

func TestExamplesListed(t *testing.T) {
	// Every example directory is listed above, so none escapes the test.
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	listed := make(map[string]bool)
	for _, ex := range examples {
		listed[ex.dir] = true
	}
	for _, e := range ents {
		if e.IsDir() && !listed[e.Name()] && e.Name() != "testdata" {
			t.Errorf("examples/%s is not in the examples table", e.Name())
		}
	}
	if len(ents) == 0 {
		t.Fatal("no examples found")
	}
}
