package crashtest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
)

// Config is a crash test run.
type Config struct {
	Dir      string        // holds the database and the expected-state file
	Keys     int           // size of the keyspace (default 1000)
	Seed     uint64        // draws the kill points and the children's seeds
	Rounds   int           // crashes to run (0: until Duration)
	Duration time.Duration // stop starting rounds after this long (0: no limit)
	Writers  int           // writer goroutines in the child (default 4; as many readers)
	Faults   bool          // inject filesystem faults in every other round
	Sync     bool          // open the database with sync=true
	Large    bool          // large values and batches (see ChildConfig.Large)
	MinOps   int           // a child is killed after between MinOps ...
	MaxOps   int           // ... and MaxOps operations (defaults 200, 5000)
	// Stall is how long the parent waits for a child's next progress line
	// before it calls the child hung (default 2 minutes: a generous bound,
	// not a timing assumption; the workload reports every 50 operations).
	Stall time.Duration
	// Command returns the command that runs a child with the configuration
	// whose environment entry is env (ChildConfig.Env).
	Command func(env string) *exec.Cmd
	// Logf, when set, receives a line per round.
	Logf func(format string, args ...any)
}

// Stats are what a run did.
type Stats struct {
	Rounds        int
	Ops           int64 // operations the children reported
	Crashes       int   // children killed with SIGKILL
	KilledInOpen  int   // of those, killed while opening (recovering) the database
	FaultRounds   int
	Faults        int64 // faults injected (as reported by the children)
	Recoveries    int   // reopens in a child after faults left the database failing
	KeysVerified  int64
	SyncedLost    int64 // keys that lost a write acknowledged as synced (must be 0)
	Wrong         int64 // keys holding a value never written, or resurrected (must be 0)
	UnsyncedLost  int64 // keys whose newest acknowledged unsynced write was lost (allowed)
	PendingLanded int64 // keys holding a write that was issued but not acknowledged (allowed)
}

func (s Stats) String() string {
	return fmt.Sprintf("rounds %d, operations %d, crashes %d (%d during open), fault rounds %d, faults injected %d, recoveries after faults %d, "+
		"keys verified %d, synced writes lost %d, wrong values %d; allowed: unsynced writes lost %d, unacknowledged writes present %d",
		s.Rounds, s.Ops, s.Crashes, s.KilledInOpen, s.FaultRounds, s.Faults, s.Recoveries, s.KeysVerified, s.SyncedLost, s.Wrong,
		s.UnsyncedLost, s.PendingLanded)
}

// Run runs the crash loop: start a child on the database, kill it with
// SIGKILL after a random number of operations (or while it opens the
// database), reopen the database and verify every key against the
// expected state, and repeat. It returns an error on the first round that
// fails, with the stats so far.
func Run(ctx context.Context, cfg Config) (Stats, error) {
	var st Stats
	if cfg.Keys <= 0 {
		cfg.Keys = 1000
	}
	if cfg.Writers <= 0 {
		cfg.Writers = 4
	}
	if cfg.MinOps <= 0 {
		cfg.MinOps = 200
	}
	if cfg.MaxOps < cfg.MinOps {
		cfg.MaxOps = max(cfg.MinOps, 5000)
	}
	if cfg.Stall <= 0 {
		cfg.Stall = 2 * time.Minute
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Rounds <= 0 && cfg.Duration <= 0 {
		return st, errors.New("crashtest: set Rounds or Duration")
	}
	dbDir := filepath.Join(cfg.Dir, "db")
	stateFile := filepath.Join(cfg.Dir, "expected-state")
	if err := createState(stateFile, cfg.Keys); err != nil {
		return st, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x63726173))
	start := time.Now()
	for round := 0; cfg.Rounds <= 0 || round < cfg.Rounds; round++ {
		if cfg.Duration > 0 && time.Since(start) > cfg.Duration {
			break
		}
		if err := ctx.Err(); err != nil {
			return st, err
		}
		cc := ChildConfig{
			Dir:       dbDir,
			StateFile: stateFile,
			Seed:      rng.Uint64(),
			Writers:   cfg.Writers,
			Faults:    cfg.Faults && round%2 == 1,
			Sync:      cfg.Sync,
			Large:     cfg.Large,
		}
		target := cfg.MinOps + rng.IntN(cfg.MaxOps-cfg.MinOps+1)
		inOpen := rng.IntN(8) == 0
		if inOpen {
			target = -1
		}
		rs, err := runChild(cfg, cc, target)
		st.Rounds++
		st.Ops += rs.ops
		st.Faults += rs.faults
		st.Recoveries += rs.reopens
		if cc.Faults {
			st.FaultRounds++
		}
		if err != nil {
			return st, errors.Wrapf(err, "round %d (child seed %d)", round, cc.Seed)
		}
		st.Crashes++
		if rs.killedInOpen {
			st.KilledInOpen++
		}
		vs, err := verify(ctx, dbDir, stateFile)
		st.KeysVerified += vs.keys
		st.SyncedLost += vs.syncedLost
		st.Wrong += vs.wrong
		st.UnsyncedLost += vs.unsyncedLost
		st.PendingLanded += vs.pendingLanded
		cfg.Logf("round %d: %d ops, faults %v (%d injected, %d recoveries), killed %s; verified %d keys: %d unsynced writes lost, %d unacknowledged present",
			round, rs.ops, cc.Faults, rs.faults, rs.reopens, map[bool]string{true: "while opening", false: "after " + strconv.Itoa(target) + " ops"}[rs.killedInOpen],
			vs.keys, vs.unsyncedLost, vs.pendingLanded)
		if err != nil {
			return st, errors.Wrapf(err, "round %d (child seed %d, faults %v)", round, cc.Seed, cc.Faults)
		}
	}
	return st, nil
}

type roundStats struct {
	ops, faults  int64
	reopens      int
	killedInOpen bool
}

// runChild starts a child and kills it once it reports target ops (-1:
// as soon as it says it is opening the database).
func runChild(cfg Config, cc ChildConfig, target int) (roundStats, error) {
	var rs roundStats
	cmd := cfg.Command(cc.Env())
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return rs, err
	}
	if err := cmd.Start(); err != nil {
		return rs, err
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	stall := time.NewTimer(cfg.Stall)
	defer stall.Stop()
	kill := func() error {
		if err := cmd.Process.Kill(); err != nil {
			return err
		}
		for range lines { // drain, so the reader ends
		}
		_ = cmd.Wait()
		return nil
	}
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				err := cmd.Wait()
				return rs, errors.Newf("child exited before it was killed (%v): %s", err, tail(stderr.String()))
			}
			stall.Reset(cfg.Stall)
			f := strings.Fields(line)
			switch {
			case len(f) == 1 && f[0] == "reopened":
				rs.reopens++
			case len(f) == 1 && f[0] == "opening" && target < 0:
				rs.killedInOpen = true
				return rs, kill()
			case len(f) == 4 && f[0] == "ops" && f[2] == "faults":
				rs.ops, _ = strconv.ParseInt(f[1], 10, 64)
				rs.faults, _ = strconv.ParseInt(f[3], 10, 64)
				if target >= 0 && rs.ops >= int64(target) {
					return rs, kill()
				}
			}
		case <-stall.C:
			_ = kill()
			return rs, errors.Newf("child made no progress for %v (hung?): %s", cfg.Stall, tail(stderr.String()))
		}
	}
}

type verifyStats struct {
	keys, syncedLost, wrong, unsyncedLost, pendingLanded int64
}

// verify opens the database (with the default options, no faults), checks
// every key against the expected state, both by Get and by a full scan,
// and makes what it found the new durable base of every key.
func verify(ctx context.Context, dir, stateFile string) (verifyStats, error) {
	var vs verifyStats
	st, err := openState(stateFile)
	if err != nil {
		return vs, err
	}
	defer st.Close()
	db, err := driver.Open("shale", dir)
	if err != nil {
		return vs, err
	}
	defer db.Close()
	if err := db.Ping(ctx); err != nil {
		return vs, errors.Wrap(err, "reopen after the crash")
	}
	// A full scan: every entry must be a key of the keyspace; what it
	// finds must agree with Get.
	scanned := map[int][]byte{}
	it, err := db.NewIterator(ctx, nil)
	if err != nil {
		return vs, err
	}
	for ok := it.First(); ok; ok = it.Next() {
		k, ok := parseKey(it.Key())
		if !ok || k >= len(st.slots) {
			_ = it.Close()
			return vs, errors.Newf("the database holds %q, which is no key of the keyspace", it.Key())
		}
		scanned[k] = bytes.Clone(it.Value())
	}
	if err := errors.CombineErrors(it.Error(), it.Close()); err != nil {
		return vs, errors.Wrap(err, "scan")
	}
	var problems []string
	for k := range st.slots {
		s := &st.slots[k]
		val, err := db.Get(ctx, key(k))
		found := err == nil
		if err != nil && !errors.Is(err, driver.ErrNotFound) {
			return vs, errors.Wrapf(err, "Get(%s)", key(k))
		}
		if sv, ok := scanned[k]; ok != found || (found && !bytes.Equal(sv, val)) {
			problems = append(problems, fmt.Sprintf("%s: Get and a scan disagree (%q, %q)", key(k), val, sv))
		}
		var v uint32
		if found {
			var ok bool
			if v, ok = parseValue(k, val); !ok {
				vs.wrong++
				problems = append(problems, fmt.Sprintf("%s = %q: never written", key(k), val))
				continue
			}
		}
		vs.keys++
		if !s.allows(found, v) {
			if found && v < s.base&verMask || !found && s.base&delBit == 0 {
				vs.syncedLost++
				problems = append(problems, fmt.Sprintf("%s = %s: the synced write of %s was lost (pending %s)",
					key(k), describe(found, v), describeVer(s.base), describePending(s.pending)))
			} else {
				vs.wrong++
				problems = append(problems, fmt.Sprintf("%s = %s: neither the synced %s nor one of the pending %s",
					key(k), describe(found, v), describeVer(s.base), describePending(s.pending)))
			}
			continue
		}
		// Allowed; count what the crash lost and what landed unacknowledged.
		got := delBit | uint32(0)
		if found {
			got = v
		}
		newestAcked, newest := s.base, s.base
		for _, p := range s.pending {
			newest = p &^ ackedBit
			if p&ackedBit != 0 {
				newestAcked = p &^ ackedBit
			}
		}
		same := func(x uint32) bool {
			return (x&delBit != 0 && got&delBit != 0) || (x&delBit == 0 && got&delBit == 0 && x&verMask == got)
		}
		if !same(newestAcked) && !same(newest) && !landedAfter(s.pending, got) {
			vs.unsyncedLost++
		}
		if landedUnacked(s.pending, got) {
			vs.pendingLanded++
		}
		s.base = got
		s.pending = s.pending[:0]
		if err := st.write(k); err != nil {
			return vs, err
		}
	}
	if len(problems) > 0 {
		if len(problems) > 20 {
			problems = append(problems[:20], fmt.Sprintf("... and %d more", len(problems)-20))
		}
		return vs, errors.Newf("verification failed:\n  %s", strings.Join(problems, "\n  "))
	}
	if err := db.VerifyChecksum(ctx); err != nil {
		return vs, errors.Wrap(err, "VerifyChecksum after recovery")
	}
	return vs, db.Close()
}

// landedAfter reports whether got is a pending version issued after the
// newest acknowledged one (so nothing acknowledged was lost).
func landedAfter(pending []uint32, got uint32) bool {
	acked := -1
	for i, p := range pending {
		if p&ackedBit != 0 {
			acked = i
		}
	}
	for _, p := range pending[acked+1:] {
		if p&delBit != 0 && got&delBit != 0 || p&delBit == 0 && got&delBit == 0 && p&verMask == got {
			return true
		}
	}
	return false
}

// landedUnacked reports whether got is a put version that was issued but
// never acknowledged.
func landedUnacked(pending []uint32, got uint32) bool {
	for _, p := range pending {
		if p&ackedBit == 0 && p&delBit == 0 && got&delBit == 0 && p&verMask == got {
			return true
		}
	}
	return false
}

func describePending(ps []uint32) string {
	var s []string
	for _, p := range ps {
		d := describeVer(p &^ ackedBit)
		if p&ackedBit != 0 {
			d += " acked"
		}
		s = append(s, d)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// lockedBuffer is a bytes.Buffer safe for the exec package's copying
// goroutine and our reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func tail(s string) string {
	if len(s) > 4000 {
		s = "…" + s[len(s)-4000:]
	}
	return s
}

// DefaultDir returns a new directory for a run under the system's
// temporary directory.
func DefaultDir() (string, error) {
	return os.MkdirTemp("", "shalecrash-")
}
