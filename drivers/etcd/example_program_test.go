package etcd

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExampleProgram builds ./example with the go command, as a user would,
// and runs it against the shared cluster.
func TestExampleProgram(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the example with")
	}
	exe := filepath.Join(t.TempDir(), "example")
	if out, err := exec.Command(goTool, "build", "-o", exe, "./example").CombinedOutput(); err != nil {
		t.Fatalf("go build ./example: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, exe, "-dsn", shared.dsn(t, "")).CombinedOutput()
	if err != nil {
		t.Fatalf("the example failed: %v\n%s", err, out)
	}
	for _, want := range []string{`Get greeting = "hello, etcd"`, "fruit:banana = yellow",
		"Commit after a concurrent write: conflict", "VerifyChecksum, VerifyFileChecksums: ok",
		"shale.file.read.get.micros: 2 RPCs"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the example's output lacks %q:\n%s", want, out)
		}
	}
	// Without a DSN it says so and fails.
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = []string{}
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "no DSN") {
		t.Errorf("the example without a DSN = %v, %q; want a failure saying so", err, out)
	}
}
