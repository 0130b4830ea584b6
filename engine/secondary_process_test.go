package engine

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/shaledb/shale/ioctx"
	"github.com/stretchr/testify/require"
)

// The cross-process secondary test: TestSecondaryWriterChild, in a child
// process, writes key k%04d = v%08d (i) for i = 0, 1, 2, ... over
// secondaryKeys keys, syncing every 16th write and printing "S i" after
// each synced one; a small write buffer makes it flush and compact all the
// time, deleting WALs and tables. The parent opens the database as a
// secondary while the child writes, catches up again and again, and checks
// that everything it reads is a write the child made (the value belongs
// to its key), that every write synced before the CatchUp is visible, and
// that no key's value ever goes back.
const (
	secondaryChildEnv = "SHALE_SECONDARY_CHILD_DIR"
	secondaryKeys     = 500
)

func TestSecondaryWriterChild(t *testing.T) {
	dir := childDir(t, secondaryChildEnv, "TestSecondaryOtherProcess")
	opts := childOptions(false)
	opts.MaxManifestFileSize = 4 << 10 // rotate the MANIFEST often too
	db := openChildDatabase(dir, opts)
	syncCtx := ioctx.WithWriteOptions(context.Background(), ioctx.WriteOptions{Sync: true})
	out := bufio.NewWriter(os.Stdout)
	pad := strings.Repeat("x", 80)
	for i := 0; ; i++ {
		ctx := context.Background()
		if i%16 == 15 {
			ctx = syncCtx
		}
		k := fmt.Sprintf("k%04d", i%secondaryKeys)
		if err := db.Put(ctx, []byte(k), fmt.Appendf(nil, "v%08d%s", i, pad)); err != nil {
			childExit(3, "put", err)
		}
		if i%16 == 15 {
			fmt.Fprintf(out, "S %d\n", i)
			out.Flush()
		}
	}
}

func TestSecondaryOtherProcess(t *testing.T) {
	// Under a second on an idle machine: it runs in -short too.
	dir := filepath.Join(t.TempDir(), "db")
	cmd := childCommand(t, "^TestSecondaryWriterChild$", secondaryChildEnv+"="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()

	// synced is the child's last synced write, -1 before any; changed is
	// closed and replaced when it grows, or when the child's output ends.
	var mu sync.Mutex
	synced, ended := -1, false
	changed := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 2 || f[0] != "S" {
				continue
			}
			i, err := strconv.Atoi(f[1])
			if err != nil {
				continue
			}
			mu.Lock()
			synced = i
			close(changed)
			changed = make(chan struct{})
			mu.Unlock()
		}
		mu.Lock()
		ended = true
		close(changed)
		mu.Unlock()
	}()
	waitSynced := func(atLeast int) int {
		for {
			mu.Lock()
			s, e, ch := synced, ended, changed
			mu.Unlock()
			if s >= atLeast {
				return s
			}
			require.False(t, e, "the writer ended: %s", stderr.String())
			<-ch
		}
	}

	ctx := context.Background()
	waitSynced(0)
	sec, err := openDatabase(dir, &Options{Secondary: true})
	require.NoError(t, err)
	defer sec.Close()
	latest := make([]int, secondaryKeys) // each key's newest value seen, -1 for none
	for k := range latest {
		latest[k] = -1
	}
	last := 0
	for round := range 40 {
		last = waitSynced(last + 300)
		require.NoError(t, sec.CatchUp(ctx), "round %d", round)
		it, err := sec.NewIterator(ctx, nil)
		require.NoError(t, err)
		seen := 0
		for ok := it.First(); ok; ok = it.Next() {
			var k, i int
			_, err := fmt.Sscanf(string(it.Key()), "k%04d", &k)
			require.NoError(t, err, "round %d: key %q", round, it.Key())
			_, err = fmt.Sscanf(string(it.Value()), "v%08d", &i)
			require.NoError(t, err, "round %d: value %q", round, it.Value())
			require.Equal(t, k, i%secondaryKeys, "round %d: key %q holds a value the writer never wrote to it: %q",
				round, it.Key(), it.Value())
			require.GreaterOrEqual(t, i, latest[k], "round %d: key %q went back", round, it.Key())
			latest[k] = i
			seen++
		}
		require.NoError(t, it.Error())
		require.NoError(t, it.Close())
		// Every write synced before the CatchUp is visible: each key's
		// value is at least its last write up to last.
		for k := range secondaryKeys {
			if k > last {
				break
			}
			want := last - (last-k)%secondaryKeys
			require.GreaterOrEqual(t, latest[k], want, "round %d: key k%04d misses synced write %d", round, k, want)
		}
		if round%10 == 9 {
			// A verification opens each table anew, and a compaction of
			// the writer's may have deleted one since the CatchUp: that is
			// reported as such (never as corruption), and a CatchUp moves
			// past it.
			for attempt := 0; ; attempt++ {
				err := sec.VerifyFileChecksums(ctx)
				if err == nil {
					break
				}
				require.ErrorIs(t, err, os.ErrNotExist, "round %d", round)
				require.ErrorContains(t, err, "call CatchUp and verify again")
				require.Less(t, attempt, 100, "round %d: %v", round, err)
				require.NoError(t, sec.CatchUp(ctx))
			}
		}
	}
	t.Logf("40 catch-ups, up to the writer's synced write %d", last)
}
