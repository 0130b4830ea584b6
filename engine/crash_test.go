package engine

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// The crash test re-runs the test binary as a child that writes with sync
// and prints every acknowledged key; the parent kills it with SIGKILL at a
// random moment and checks, after reopening, that every acknowledged write
// is there.
const crashChildEnv = "SHALE_CRASH_CHILD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir, os.Getenv("SHALE_CRASH_CHILD_ROUND"))
		return
	}
	os.Exit(m.Run())
}

// crashChild writes until killed: sync writes from several goroutines
// (group commit), with flushes and compactions happening on their own.
func crashChild(dir, round string) {
	db := openChildDatabase(dir, childOptions(true))
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), uint64(time.Now().UnixNano())))
			for i := 0; ; i++ {
				k := fmt.Sprintf("r%s-g%d-%06d", round, g, i)
				v := strings.Repeat(k, 1+rng.IntN(8))
				if err := db.Put(context.Background(), []byte(k), []byte(v)); err != nil {
					childExit(3, "put", err)
				}
				mu.Lock()
				fmt.Fprintf(out, "%s %d\n", k, len(v))
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// killChildAfter starts cmd, passes each line of its standard output, split
// into fields, to ack, and sends SIGKILL once ack has accepted target lines;
// it returns once the child is dead, how many lines ack accepted. The child
// must have been killed, not have exited, and have acknowledged something.
func killChildAfter(t *testing.T, cmd *exec.Cmd, target int, ack func(fields []string) bool) int {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	n := 0
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if !ack(strings.Fields(sc.Text())) {
			continue
		}
		if n++; n == target {
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		}
	}
	err = cmd.Wait()
	require.Error(t, err, "the child must have been killed; stderr: %s", stderr.String())
	require.Greater(t, n, 0, "stderr: %s", stderr.String())
	return n
}

// childCommand returns a command that runs, in a child process, this test
// binary's tests matching the -test.run pattern run, with env added to its
// environment (that is how a child finds its database and round).
func childCommand(t *testing.T, run string, env ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run="+run)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// childDir is the database directory a child test's parent passed it in
// the environment variable env; the child test is skipped when it was not
// started by its parent, named by parent.
func childDir(t *testing.T, env, parent string) string {
	t.Helper()
	dir := os.Getenv(env)
	if dir == "" {
		t.Skip("run by " + parent + " in a child process")
	}
	return dir
}

// childOptions are the options of a database a child process writes to:
// small memtables, tables and levels, so that flushes and compactions run
// all the time while it writes and a kill is likely to land during one.
func childOptions(sync bool) *Options {
	return &Options{
		Sync:                           sync,
		WriteBufferSize:                64 << 10,
		TargetFileSizeBase:             32 << 10,
		MaxBytesForLevelBase:           128 << 10,
		Level0FileNumCompactionTrigger: 2,
	}
}

// openChildDatabase opens a child process's database, or ends the process
// with status 2 (see childExit).
func openChildDatabase(dir string, opts *Options) *database {
	db, err := openDatabase(dir, opts)
	if err != nil {
		childExit(2, "open", err)
	}
	return db
}

// childExit ends a child process with status code, after printing what
// failed to its standard error: a child is meant to be killed, so its
// parent fails on the exit and shows that output.
func childExit(code int, what string, err error) {
	fmt.Fprintln(os.Stderr, what+":", err)
	os.Exit(code)
}

func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	// Mostly waiting on the child's fsyncs: it overlaps well with the
	// CPU-bound parallel tests (the model seeds).
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "db")
	acked := map[string]int{}
	for round := range 5 {
		// No test: the child's body is in TestMain.
		cmd := childCommand(t, "^$", crashChildEnv+"="+dir, "SHALE_CRASH_CHILD_ROUND="+strconv.Itoa(round))
		n := killChildAfter(t, cmd, 300+rand.IntN(1500), func(fields []string) bool {
			if len(fields) != 2 {
				return false
			}
			l, _ := strconv.Atoi(fields[1])
			acked[fields[0]] = l
			return true
		})

		db, err := openDatabase(dir, nil)
		require.NoError(t, err, "round %d: reopen after SIGKILL", round)
		ctx := context.Background()
		for k, l := range acked {
			v, err := db.Get(ctx, []byte(k))
			require.NoError(t, err, "round %d: acknowledged key %s lost", round, k)
			require.Len(t, v, l, "round %d: key %s", round, k)
		}
		require.NoError(t, db.Check(ctx))
		require.NoError(t, db.Close())
		t.Logf("round %d: %d acknowledged writes survived", round, n)
	}
}

// TestTornWALTail checks that a WAL whose last record was cut short (a crash
// during a write) is recovered from: everything before the torn record is
// there.
func TestTornWALTail(t *testing.T) {
	ctx := context.Background()
	for _, cut := range []int{1, 3, 7, 20} {
		fs := vfs.NewMem()
		db, err := openDatabase("/db", smallOptions(fs))
		require.NoError(t, err)
		for i := range 100 {
			require.NoError(t, db.Put(ctx, key(i), []byte("v")))
		}
		require.NoError(t, db.Close())
		log := newestLog(t, fs)
		data := readAll(t, fs, log)
		writeAll(t, fs, log, data[:len(data)-cut])

		db, err = openDatabase("/db", smallOptions(fs))
		require.NoError(t, err, "cut %d", cut)
		for i := range 99 {
			_, err := db.Get(ctx, key(i))
			require.NoError(t, err, "cut %d key %d", cut, i)
		}
		// The last write may or may not have survived, depending on where
		// its record was cut; it was never acknowledged as synced.
		require.NoError(t, db.Put(ctx, []byte("after"), []byte("x")), "the database takes writes again")
		require.NoError(t, db.Check(ctx))
		require.NoError(t, db.Close())
	}
}

// TestCorruptWALMiddleIsAnError checks that damage followed by intact
// records is not mistaken for a torn tail: it is reported, not skipped.
func TestCorruptWALMiddleIsAnError(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	db, err := openDatabase("/db", smallOptions(fs))
	require.NoError(t, err)
	for i := range 200 {
		require.NoError(t, db.Put(ctx, key(i), []byte("v")))
	}
	require.NoError(t, db.Close())
	log := newestLog(t, fs)
	data := readAll(t, fs, log)
	data[len(data)/2] ^= 0x40
	writeAll(t, fs, log, data)
	_, err = openDatabase("/db", smallOptions(fs))
	require.ErrorIs(t, err, ErrCorruption)
}

// TestCrashCloneRecovery simulates power loss on the in-memory filesystem:
// only synced data and synced directory entries survive. Every write
// acknowledged with sync before the crash must be there afterwards.
func TestCrashCloneRecovery(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(9, 9))
	fs := vfs.NewMem()
	opts := smallOptions(fs)
	opts.Sync = true
	db, err := openDatabase("/db", opts)
	require.NoError(t, err)
	acked := map[string]string{}
	for round := range 6 {
		for i := range 500 + rng.IntN(2000) {
			k, v := fmt.Sprintf("r%d-%05d", round, i), string(value(rng, rng.IntN(100)))
			require.NoError(t, db.Put(ctx, []byte(k), []byte(v)))
			acked[k] = v
		}
		crashed := fs.CrashClone()
		o := smallOptions(crashed)
		o.Sync = true
		db2, err := openDatabase("/db", o)
		require.NoError(t, err, "round %d: open after the crash", round)
		for k, v := range acked {
			got, err := db2.Get(ctx, []byte(k))
			require.NoError(t, err, "round %d: synced key %s lost", round, k)
			require.Equal(t, v, string(got))
		}
		require.NoError(t, db2.Check(ctx))
		require.NoError(t, db2.Close())
	}
	require.NoError(t, db.Close())
}

// TestFaultInjection fails the i-th filesystem operation for i = 0, 1, 2, …
// while a workload opens, writes, flushes, compacts and closes: every
// failure must surface as an error (the injected one), never a panic or
// lost data, and the database must reopen with its acknowledged writes.
//
// Writes without sync are acknowledged once in the WAL's buffer, so when
// the injected failure is a write or sync of the WAL itself, the writes
// acknowledged since the last successful Flush may be lost (the same as in
// a process crash); every other failure loses nothing acknowledged.
func TestFaultInjection(t *testing.T) {
	ctx := context.Background()
	step := 1
	if testing.Short() {
		step = 7
	}
	for i := int64(0); ; i += int64(step) {
		mem := vfs.NewMem()
		var failed errorfs.Op
		inj := errorfs.OnIndex(i)
		efs := errorfs.Wrap(mem, injectorFunc(func(op errorfs.Op) error {
			err := inj.MaybeError(op)
			if err != nil {
				failed = op
			}
			return err
		}))
		// durable holds each key's value as of the last successful Flush;
		// since holds the values acknowledged after it.
		durable := map[string]string{}
		since := map[string][]string{}
		workloadErr := func() error {
			opts := smallOptions(efs)
			opts.DisableAutoCompactions = i%2 == 0
			db, err := openDatabase("/db", opts)
			if err != nil {
				return err
			}
			var firstErr error
			note := func(err error) {
				if firstErr == nil {
					firstErr = err
				}
			}
			for j := range 400 {
				k, v := fmt.Sprintf("k%04d", j%150), fmt.Sprintf("v%d-%d", i, j)
				if err := db.Put(ctx, []byte(k), []byte(v)); err != nil {
					note(err)
					break
				}
				since[k] = append(since[k], v)
				if j%100 == 99 {
					if err := db.Flush(ctx); err != nil {
						note(err)
						break
					}
					for k, vs := range since {
						durable[k] = vs[len(vs)-1]
					}
					clear(since)
				}
			}
			if firstErr == nil {
				note(db.Compact(ctx, nil, nil))
			}
			if firstErr == nil {
				_, err := db.Get(ctx, []byte("k0001"))
				note(err)
			}
			note(db.Close())
			return firstErr
		}()
		injected := efs.Injected() > 0
		if !injected {
			require.NoError(t, workloadErr, "no injection, yet the workload failed")
			t.Logf("%d operations, each failed once", i)
			break
		}
		if workloadErr != nil {
			require.True(t, errors.Is(workloadErr, errorfs.ErrInjected), "op %d: the error is not the injected one: %+v", i, workloadErr)
		}
		walFailed := strings.HasSuffix(failed.Path, ".log") &&
			(failed.Kind == errorfs.OpFileWrite || failed.Kind == errorfs.OpFileSync)
		if _, err := mem.Stat(manifest.CurrentFileName("/db")); errors.Is(err, os.ErrNotExist) {
			require.Empty(t, durable, "op %d: database lost", i)
			continue
		}
		db, err := openDatabase("/db", smallOptions(mem))
		if err != nil && len(durable) == 0 && len(since) == 0 {
			// The first open failed part way: nothing was ever acknowledged.
			continue
		}
		require.NoError(t, err, "op %d (%s): reopen after an injected error", i, failed)
		for k, vs := range since {
			got, err := db.Get(ctx, []byte(k))
			switch {
			case !walFailed && err == nil && string(got) == vs[len(vs)-1]:
			case walFailed && err == nil && slices.Contains(vs, string(got)):
			case walFailed && err == nil && string(got) == durable[k]:
			case walFailed && errors.Is(err, ErrNotFound) && durable[k] == "":
			default:
				t.Fatalf("op %d (%s): key %s = %q (%v), acknowledged %v since the last flush, durable %q",
					i, failed, k, got, err, vs, durable[k])
			}
		}
		for k, v := range durable {
			if _, ok := since[k]; ok {
				continue
			}
			got, err := db.Get(ctx, []byte(k))
			require.NoError(t, err, "op %d (%s): flushed key %s", i, failed, k)
			require.Equal(t, v, string(got), "op %d: key %s", i, k)
		}
		require.NoError(t, db.Check(ctx), "op %d", i)
		require.NoError(t, db.Close())
	}
}

// injectorFunc adapts a function to errorfs.Injector.
type injectorFunc func(op errorfs.Op) error

func (f injectorFunc) MaybeError(op errorfs.Op) error { return f(op) }

func newestLog(t *testing.T, fs vfs.FS) string {
	names, err := fs.List("/db")
	require.NoError(t, err)
	var newest manifest.FileNum
	for _, name := range names {
		if kind, num, ok := manifest.ParseFileName(name); ok && kind == manifest.FileKindLog && num > newest {
			newest = num
		}
	}
	require.NotZero(t, newest)
	return manifest.LogFileName("/db", newest)
}

func readAll(t *testing.T, fs vfs.FS, name string) []byte {
	f, err := fs.Open(name)
	require.NoError(t, err)
	defer f.Close()
	info, err := f.Stat()
	require.NoError(t, err)
	data := make([]byte, info.Size())
	_, err = f.ReadAt(data, 0)
	require.NoError(t, err)
	return data
}

func writeAll(t *testing.T, fs vfs.FS, name string, data []byte) {
	f, err := fs.Create(name)
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}
