package etcd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
)

// privateCluster starts a 3-member cluster for a test that stops or damages
// members, which the shared one must never suffer.
func privateCluster(t *testing.T) *testCluster {
	t.Helper()
	start := time.Now()
	c, err := startCluster(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.stop)
	t.Logf("3-member cluster started in %v", time.Since(start))
	return c
}

// leaderIndex returns the index of the member that leads, or -1.
func (c *testCluster) leaderIndex() int {
	for i, m := range c.members {
		if m.etcd != nil && m.etcd.Server.Leader() == m.etcd.Server.MemberID() {
			return i
		}
	}
	return -1
}

// waitNoLeader waits until member i has lost its leader.
func (c *testCluster) waitNoLeader(t testing.TB, i int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for c.members[i].etcd.Server.Leader() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("member %d still has a leader two minutes after quorum was lost", i)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// dbCall is one call of the DB, for the failure tests.
type dbCall struct {
	name  string
	write bool
	call  func(ctx context.Context, db *driver.DB) error
}

var dbCalls = []dbCall{
	{"Get", false, func(ctx context.Context, db *driver.DB) error { _, err := db.Get(ctx, []byte("a")); return err }},
	{"MultiGet", false, func(ctx context.Context, db *driver.DB) error {
		_, err := db.MultiGet(ctx, [][]byte{[]byte("a"), []byte("b")})
		return err
	}},
	{"NewIterator", false, func(ctx context.Context, db *driver.DB) error {
		it, err := db.NewIterator(ctx, nil)
		if err != nil {
			return err
		}
		for ok := it.First(); ok; ok = it.Next() {
		}
		return errors.Join(it.Error(), it.Close())
	}},
	{"BeginTx", false, func(ctx context.Context, db *driver.DB) error {
		tx, err := db.BeginTx(ctx, nil)
		if err == nil {
			err = tx.Rollback()
		}
		return err
	}},
	{"Put", true, func(ctx context.Context, db *driver.DB) error { return db.Put(ctx, []byte("a"), []byte("x")) }},
	{"Delete", true, func(ctx context.Context, db *driver.DB) error { return db.Delete(ctx, []byte("c")) }},
	{"Write", true, func(ctx context.Context, db *driver.DB) error {
		var b driver.Batch
		b.Put([]byte("a"), []byte("y"))
		b.Put([]byte("b"), []byte("y"))
		return db.Write(ctx, &b)
	}},
	{"Commit", true, func(ctx context.Context, db *driver.DB) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := tx.Put(ctx, []byte("b"), []byte("tx")); err != nil {
			return err
		}
		return tx.Commit()
	}},
}

// TestQuorumLoss stops two of three members. With require_leader (the
// default) every call fails at once with ErrUnavailable, and a write is
// known not to be applied; without it, calls wait for their deadline
// (request_timeout, the ReadOptions' deadline, or the context's), and a
// write that timed out is of unknown outcome. A cancelled context stops a
// call waiting for the cluster.
func TestQuorumLoss(t *testing.T) {
	c := privateCluster(t)
	fast := openDSN(t, c.dsn(t, ""))
	slow := openDSN(t, c.dsn(t, "require_leader=false&request_timeout=300ms"))
	patient := openDSN(t, c.dsn(t, "require_leader=false&request_timeout=0"))
	for _, db := range []*driver.DB{fast, slow, patient} {
		for _, k := range []string{"a", "b", "c"} {
			if err := db.Put(bg, []byte(k), []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Transactions begun with quorum, committed without.
	txs := make(map[*driver.DB]*driver.Tx)
	for _, db := range []*driver.DB{fast, slow} {
		tx, err := db.BeginTx(bg, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Reading b first leaves Commit one RPC, the Txn.
		if _, err := tx.Get(bg, []byte("b")); err != nil {
			t.Fatal(err)
		}
		if err := tx.Put(bg, []byte("b"), []byte("tx")); err != nil {
			t.Fatal(err)
		}
		txs[db] = tx
	}
	c.stopMember(1)
	c.stopMember(2)
	c.waitNoLeader(t, 0)

	if err := txs[fast].Commit(); !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) {
		t.Errorf("require_leader: Commit without quorum = %v; want ErrUnavailable, of known outcome", err)
	}
	if err := txs[slow].Commit(); !errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("require_leader=false: Commit without quorum = %v; want a timeout of unknown outcome", err)
	}

	for _, dc := range dbCalls {
		start := time.Now()
		err := dc.call(bg, fast)
		took := time.Since(start)
		switch {
		case !errors.Is(err, ErrUnavailable):
			t.Errorf("require_leader: %s without quorum = %v; want an error matching ErrUnavailable", dc.name, err)
		case took > 2*time.Second:
			t.Errorf("require_leader: %s without quorum took %v to fail; want it at once (request_timeout is 10s)",
				dc.name, took)
		case errors.Is(err, ErrOutcomeUnknown):
			t.Errorf("require_leader: %s without quorum = %v; a member without a leader refuses before applying "+
				"anything, so the outcome is known", dc.name, err)
		}
	}

	for _, dc := range dbCalls {
		if dc.name == "Commit" {
			continue // its BeginTx times out: the Commits are below
		}
		start := time.Now()
		err := dc.call(bg, slow)
		took := time.Since(start)
		switch {
		case !errors.Is(err, context.DeadlineExceeded):
			t.Errorf("require_leader=false: %s without quorum = %v; want a timeout (context.DeadlineExceeded)",
				dc.name, err)
		case took < 250*time.Millisecond || took > 5*time.Second:
			t.Errorf("require_leader=false: %s without quorum failed after %v; want it at request_timeout=300ms",
				dc.name, took)
		case dc.write && !errors.Is(err, ErrOutcomeUnknown):
			t.Errorf("require_leader=false: %s that timed out = %v; want ErrOutcomeUnknown: the cluster may "+
				"apply it later", dc.name, err)
		}
	}

	// With no request_timeout, a read's deadline of its own (one the
	// context does not carry) bounds its RPC, and cancelling the context
	// stops it. The 10s context only keeps a broken driver from hanging
	// the test.
	safety, cancelSafety := context.WithTimeout(bg, 10*time.Second)
	defer cancelSafety()
	for _, dc := range dbCalls[:3] {
		ctx := ioctx.WithReadOptions(safety, ioctx.ReadOptions{Deadline: time.Now().Add(100 * time.Millisecond)})
		start := time.Now()
		err := dc.call(ctx, patient)
		if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > 2*time.Second {
			t.Errorf("%s with ReadOptions.Deadline 100ms ahead failed after %v with %v; want a timeout at the "+
				"deadline", dc.name, took, err)
		}
		ctx, cancel := context.WithCancel(safety)
		time.AfterFunc(100*time.Millisecond, cancel)
		start = time.Now()
		err = dc.call(ctx, patient)
		if took := time.Since(start); !errors.Is(err, context.Canceled) || took > 2*time.Second {
			t.Errorf("%s whose context was cancelled after 100ms failed after %v with %v; want context.Canceled "+
				"at once", dc.name, took, err)
		}
	}

	// Back to quorum: everything works again.
	for _, i := range []int{1, 2} {
		if err := c.restartMember(i); err != nil {
			t.Fatal(err)
		}
	}
	c.waitLeader(t, 0)
	for _, dc := range dbCalls {
		if err := retryUnavailable(func() error { return dc.call(bg, fast) }); err != nil {
			t.Errorf("%s after quorum came back: %v", dc.name, err)
		}
	}
}

// retryUnavailable calls f until it stops failing with ErrUnavailable (an
// election in progress), for up to two minutes.
func retryUnavailable(f func() error) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := f()
		if !errors.Is(err, ErrUnavailable) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOneMemberDown checks that a stopped member, follower or leader, leaves
// reads and writes working: at once for a follower, after the election for
// the leader.
func TestOneMemberDown(t *testing.T) {
	c := privateCluster(t)
	db := openDSN(t, c.dsn(t, ""))
	for _, k := range []string{"a", "b", "c"} {
		if err := db.Put(bg, []byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	leader := c.leaderIndex()
	if leader < 0 {
		t.Fatal("no leader")
	}
	follower := (leader + 1) % 3
	c.stopMember(follower)
	for round := range 3 {
		for _, dc := range dbCalls {
			if err := dc.call(bg, db); err != nil {
				t.Errorf("round %d with follower %d stopped: %s: %v", round, follower, dc.name, err)
			}
		}
	}
	if err := c.restartMember(follower); err != nil {
		t.Fatal(err)
	}
	c.waitLeader(t, follower)

	leader = c.leaderIndex()
	c.stopMember(leader)
	for _, dc := range dbCalls {
		if err := retryUnavailable(func() error { return dc.call(bg, db) }); err != nil {
			t.Errorf("with the leader (member %d) stopped: %s: %v", leader, dc.name, err)
		}
	}
	if err := db.VerifyChecksum(bg); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(),
		c.members[leader].name) {
		t.Errorf("VerifyChecksum with member %s stopped = %v; want ErrUnavailable naming it", c.members[leader].name, err)
	}
}

// TestVerifyChecksumCorruptMember damages one member's data: it stops the
// member, flips a byte inside a value in its bbolt file (member/snap/db:
// bbolt checks its meta pages, not its data pages, so the member starts),
// and restarts it. VerifyChecksum must then report ErrCorruption naming
// that member, and so must VerifyFileChecksums once etcd's own corruption
// check has raised its alarm.
func TestVerifyChecksumCorruptMember(t *testing.T) {
	c := privateCluster(t)
	db := openDSN(t, c.dsn(t, ""))
	marker := []byte("shale-etcd-corruption-marker-" + strings.Repeat("0123456789", 10))
	for i := range 20 {
		v := []byte("ordinary value")
		if i == 7 {
			v = marker
		}
		if err := db.Put(bg, fmt.Appendf(nil, "k%02d", i), v); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.VerifyChecksum(bg); err != nil {
		t.Fatalf("VerifyChecksum of a healthy cluster: %v", err)
	}
	if err := db.VerifyFileChecksums(bg); err != nil {
		t.Fatalf("VerifyFileChecksums of a healthy cluster: %v", err)
	}

	const victim = 2
	c.stopMember(victim)
	path := filepath.Join(c.members[victim].dir, "member", "snap", "db")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	flipped := 0
	for i := 0; ; {
		j := bytes.Index(data[i:], marker)
		if j < 0 {
			break
		}
		data[i+j+len(marker)/2] ^= 0xff
		flipped++
		i += j + len(marker)
	}
	if flipped == 0 {
		t.Fatalf("the marker value is not in %s", path)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("flipped a byte in %d copies of the marker value in %s", flipped, path)
	if err := c.restartMember(victim); err != nil {
		t.Fatalf("restarting the member after corrupting its data: %v", err)
	}
	c.waitLeader(t, victim)

	err = retryUnavailable(func() error { return db.VerifyChecksum(bg) })
	name := c.members[victim].name
	switch {
	case !errors.Is(err, driver.ErrCorruption):
		t.Errorf("VerifyChecksum after member %s's data was corrupted = %v; want ErrCorruption", name, err)
	case !strings.Contains(err.Error(), "member "+name+" "):
		t.Errorf("VerifyChecksum = %v; want it to name member %s", err, name)
	default:
		for i, m := range c.members {
			if i != victim && strings.Contains(err.Error(), "member "+m.name+" ") {
				t.Errorf("VerifyChecksum = %v; it names healthy member %s too", err, m.name)
			}
		}
		t.Logf("VerifyChecksum: %v", err)
	}

	// etcd's own corruption check, which a leader runs every
	// --corrupt-check-time, finds the same member and raises a CORRUPT
	// alarm for it: VerifyFileChecksums reports the alarms.
	leader := c.leaderIndex()
	if leader < 0 {
		t.Fatal("no leader")
	}
	if err := c.members[leader].etcd.Server.CorruptionChecker().PeriodicCheck(); err != nil {
		t.Fatalf("etcd's corruption check on the leader: %v", err)
	}
	// The check raises the alarm through a raft proposal that it does not
	// wait for: poll until the alarm is applied, or give up.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		err = db.VerifyFileChecksums(bg)
		if errors.Is(err, driver.ErrCorruption) || time.Now().After(deadline) {
			break
		}
	}
	switch {
	case !errors.Is(err, driver.ErrCorruption):
		t.Errorf("VerifyFileChecksums after etcd's corruption check = %v; want ErrCorruption", err)
	case !strings.Contains(err.Error(), "member "+name+" "):
		t.Errorf("VerifyFileChecksums = %v; want it to name member %s", err, name)
	default:
		t.Logf("VerifyFileChecksums: %v", err)
	}
}
