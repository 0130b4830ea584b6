package shaleprom

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestExampleProgram builds ./example, runs it on a free loopback port,
// scrapes what it serves and stops it with SIGINT, which it must survive
// with exit status 0.
func TestExampleProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example program; skipped with -short")
	}
	if runtime.GOOS == "windows" {
		t.Skip("stops the program with SIGINT")
	}
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
	cmd := exec.CommandContext(ctx, exe, "-addr", "127.0.0.1:0")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer cmd.Process.Kill() // only if a check below fails first

	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	url := regexp.MustCompile(`^serving (http://127\.0\.0\.1:\d+/metrics)\n$`).FindStringSubmatch(line)
	require.NotNil(t, url, "first line: %q", line)

	// Every activity has samples but db_open and compaction: the example
	// reads through each read API at stats_level=all, but neither reopens
	// the database nor compacts it.
	mfs := scrape(t, url[1])
	require.Equal(t, 5.0, metric(mfs, levelFamily, "db", "example").GetGauge().GetValue())
	for _, a := range []string{"flush", "get", "multiget", "db_iterator", "verify_db_checksum", "verify_file_checksums"} {
		n, ok := histCount(mfs, fileReadFamily, activityLabel, a, "db", "example")
		require.True(t, ok, "activity %s exported", a)
		require.Positive(t, n, "shale_file_read_seconds_count{activity=%q}", a)
	}

	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	require.NoError(t, cmd.Wait(), "the example exits 0 on SIGINT")
}
