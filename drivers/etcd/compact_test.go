package etcd

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// rawClient returns a plain etcd client of the shared cluster: someone else,
// from the driver's point of view.
func rawClient(t testing.TB, c *testCluster) *clientv3.Client {
	t.Helper()
	var eps []string
	for _, m := range c.members {
		eps = append(eps, m.clientURL.String()) // with its scheme, as users write them
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// currentRev returns the cluster's revision.
func currentRev(t testing.TB, cli *clientv3.Client) int64 {
	t.Helper()
	resp, err := cli.Get(bg, "any")
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

// fill writes n keys k000.. with values "<gen>-<i>".
func fill(t testing.TB, db *driver.DB, n int, gen string) {
	t.Helper()
	for start := 0; start < n; start += 100 {
		var b driver.Batch
		for i := start; i < min(n, start+100); i++ {
			b.Put(fmt.Appendf(nil, "k%03d", i), fmt.Appendf(nil, "%s-%d", gen, i))
		}
		if err := db.Write(bg, &b); err != nil {
			t.Fatal(err)
		}
	}
}

// scanGen scans it from First and checks that it sees n keys of generation
// gen.
func scanGen(t testing.TB, it *driver.Iterator, n int, gen string) {
	t.Helper()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if want := fmt.Sprintf("%s-%d", gen, i); string(it.Value()) != want {
			t.Fatalf("scan entry %d = %s=%s; want value %s", i, it.Key(), it.Value(), want)
		}
		i++
	}
	if err := it.Error(); err != nil || i != n {
		t.Fatalf("scan saw %d keys, error %v; want %d keys", i, err, n)
	}
}

// TestCompactKeepsOpenReaders checks that DB.Compact does not compact past
// the revision an open iterator or transaction of the DB reads at: both go
// on reading their snapshot after the keys were rewritten and compacted.
func TestCompactKeepsOpenReaders(t *testing.T) {
	db := openDB(t, "page_size=5")
	cli := rawClient(t, shared)
	fill(t, db, 30, "old")
	it, err := db.NewIterator(bg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	tx, err := db.BeginTx(bg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	pinned := currentRev(t, cli)
	fill(t, db, 30, "new")
	if err := db.Compact(bg, nil, nil); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	// The revision the readers read at survived; the one before is gone
	// unless the cluster was compacted no further than that.
	if _, err := cli.Get(bg, "any", clientv3.WithRev(pinned)); err != nil {
		t.Errorf("after Compact with readers open at revision %d, a read at it fails: %v", pinned, err)
	}
	scanGen(t, it, 30, "old")
	if v, err := tx.Get(bg, []byte("k007")); err != nil || string(v) != "old-7" {
		t.Errorf("Tx.Get after Compact = %q, %v; want old-7", v, err)
	}
	txIt, err := tx.NewIterator(bg, nil)
	if err != nil {
		t.Fatal(err)
	}
	scanGen(t, txIt, 30, "old")
	txIt.Close()

	// Once they end, Compact goes to the current revision.
	it.Close()
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	now := currentRev(t, cli)
	if err := db.Compact(bg, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Get(bg, "any", clientv3.WithRev(now-1)); err == nil {
		t.Errorf("after Compact with no reader open, revision %d (before the current %d) is still readable", now-1, now)
	}
}

// TestForeignCompaction checks that a compaction by someone else past an
// open iterator's or transaction's revision is reported as
// ErrSnapshotCompacted, and is not taken for the end of the data.
func TestForeignCompaction(t *testing.T) {
	db := openDB(t, "page_size=5")
	cli := rawClient(t, shared)
	fill(t, db, 30, "old")
	it, err := db.NewIterator(bg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	tx, err := db.BeginTx(bg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := tx.Put(bg, []byte("k001"), []byte("tx")); err != nil {
		t.Fatal(err)
	}
	fill(t, db, 30, "new")
	if _, err := cli.Compact(bg, currentRev(t, cli), clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Error(); !errors.Is(err, ErrSnapshotCompacted) {
		t.Errorf("a scan past its first page after a foreign compaction stopped after %d keys with %v; want an "+
			"error matching ErrSnapshotCompacted", n, err)
	}
	if _, err := tx.Get(bg, []byte("k009")); !errors.Is(err, ErrSnapshotCompacted) {
		t.Errorf("Tx.Get after a foreign compaction = %v; want ErrSnapshotCompacted", err)
	}
	if err := tx.Commit(); !errors.Is(err, ErrSnapshotCompacted) {
		t.Errorf("Commit after a foreign compaction = %v; want ErrSnapshotCompacted (it cannot check its keys)", err)
	}
	if v, _ := db.Get(bg, []byte("k001")); string(v) != "new-1" {
		t.Errorf("after the failed Commit, k001 = %q; want new-1", v)
	}
}

// TestCompactWaitsForPendingPin checks the pin protocol's order: a reader
// that registered before Compact read the pins, but had not read its
// revision yet, is not compacted away.
func TestCompactWaitsForPendingPin(t *testing.T) {
	cn := openConn(t, shared.dsn(t, ""))
	put := func(v string) {
		if err := cn.Put(bg, ioctx.WriteOptions{}, []byte("k"), []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	put("v1")
	pn := cn.pins.add() // a reader about to make its first read
	floor := pn.rev
	put("v2")
	put("v3")
	if err := cn.Compact(bg, nil, nil); err != nil {
		t.Fatal(err)
	}
	cli := rawClient(t, shared)
	if _, err := cli.Get(bg, "any", clientv3.WithRev(floor)); err != nil {
		t.Errorf("Compact with a pin pending at floor %d compacted it: %v", floor, err)
	}
	cn.pins.remove(pn)
}

// openConn opens a driver connection without the façade, closed when the
// test ends.
func openConn(t testing.TB, dsn string) *conn {
	t.Helper()
	dc, err := Driver{}.Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dc.Close() })
	return dc.(*conn)
}
