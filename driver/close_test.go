package driver

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shale/statistics"
	"github.com/stretchr/testify/require"
)

func newTestStats() *statistics.Statistics { return statistics.New(statistics.LevelAll) }

func TestCloseWaitsForInFlightCall(t *testing.T) {
	conn := newFullConn()
	conn.data["k"] = []byte("v")
	entered := make(chan struct{})
	release := make(chan struct{})
	conn.getHook = func(_ context.Context, key []byte) error {
		if string(key) == "block" {
			close(entered)
			<-release
		}
		return nil
	}
	db := openFake(t, conn)
	ctx := context.Background()
	require.NoError(t, db.Ping(ctx))

	getDone := make(chan error)
	go func() {
		_, err := db.Get(ctx, []byte("block"))
		getDone <- err
	}()
	<-entered
	closeDone := make(chan error)
	go func() { closeDone <- db.Close() }()

	// Close has begun: new calls are refused at once, while the blocked
	// Get keeps Close waiting.
	require.Eventually(t, db.isClosed, 2*time.Minute, time.Millisecond)
	_, err := db.Get(ctx, []byte("k"))
	require.ErrorIs(t, err, ErrClosed)
	select {
	case <-closeDone:
		t.Fatal("Close returned while a call was in flight")
	case <-time.After(30 * time.Millisecond):
	}
	conn.mu.Lock()
	require.False(t, conn.closed, "the driver was closed under a call in flight")
	conn.mu.Unlock()

	close(release)
	require.ErrorIs(t, <-getDone, ErrNotFound, "the in-flight call finishes normally")
	require.NoError(t, <-closeDone)
	conn.mu.Lock()
	require.Equal(t, 1, conn.closes)
	conn.mu.Unlock()

	err = db.Close()
	require.ErrorIs(t, err, ErrClosed, "a second Close")
}

// TestCloseWaitsForInFlightMove checks that DB.Close, which a move does not
// hold off as a DB call does (the move holds only its iterator's guard),
// still waits for a move in flight before closing the driver's iterator,
// and that the iterator's next move reports ErrClosed.
func TestCloseWaitsForInFlightMove(t *testing.T) {
	conn := newFullConn()
	conn.data["a"], conn.data["b"] = []byte("1"), []byte("2")
	entered := make(chan struct{})
	release := make(chan struct{})
	conn.seekHook = func(key []byte) {
		if string(key) == "a" {
			close(entered)
			<-release
		}
	}
	db := openFake(t, conn)
	ctx := context.Background()
	it, err := db.NewIterator(ctx, nil)
	require.NoError(t, err)

	moved := make(chan bool)
	go func() { moved <- it.SeekGE([]byte("a")) }()
	<-entered
	closeDone := make(chan error)
	go func() { closeDone <- db.Close() }()
	require.Eventually(t, db.isClosed, 2*time.Minute, time.Millisecond)
	select {
	case <-closeDone:
		t.Fatal("Close returned while a move was in flight")
	case <-time.After(30 * time.Millisecond):
	}
	conn.mu.Lock()
	require.Equal(t, 1, conn.openIters, "the driver's iterator was closed under a move")
	conn.mu.Unlock()

	close(release)
	require.True(t, <-moved, "the move in flight finishes normally")
	require.Equal(t, "a", string(it.Key()))
	require.NoError(t, <-closeDone)
	require.Zero(t, conn.openIters)

	for name, move := range map[string]func() bool{
		"Next": it.Next, "First": it.First, "SeekGE": func() bool { return it.SeekGE([]byte("b")) },
	} {
		require.False(t, move(), name)
		require.ErrorIs(t, it.Error(), ErrClosed, name)
	}
	require.ErrorIs(t, it.Close(), ErrClosed)
	require.Empty(t, conn.violationList())
}

func TestCloseClosesIteratorsAndTransactions(t *testing.T) {
	conn := newFullConn()
	conn.data["a"], conn.data["b"] = []byte("1"), []byte("2")
	conn.closeErr = errors.New("conn close failed")
	connector := &fakeConnector{conn: conn, closeErr: errors.New("connector close failed")}
	db := OpenDB(connector)
	ctx := context.Background()

	it1, err := db.NewIterator(ctx, nil)
	require.NoError(t, err)
	require.True(t, it1.First())
	it2, err := db.NewIterator(ctx, &IterOptions{LowerBound: []byte("b")})
	require.NoError(t, err)
	c, err := db.Conn(ctx)
	require.NoError(t, err)
	it3, err := c.NewIterator(ctx, nil)
	require.NoError(t, err)
	tx1, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, tx1.Put(ctx, []byte("c"), []byte("3")))
	tx2, err := c.BeginTx(ctx, &TxOptions{ReadOnly: true})
	require.NoError(t, err)
	txIt, err := tx2.NewIterator(ctx, nil)
	require.NoError(t, err)
	require.True(t, txIt.Last())

	err = db.Close()
	require.EqualError(t, err, "conn close failed\nconnector close failed", "the two closes' errors, joined")
	require.Empty(t, conn.violationList(), "the driver saw a Close with iterators or transactions open")
	require.Zero(t, conn.openIters)
	require.Zero(t, conn.openTxs)
	require.EqualValues(t, 1, connector.closes.Load())
	_, committed := conn.data["c"]
	require.False(t, committed, "open transactions are rolled back, not committed")

	// txIt was at a key when the DB closed: its entry stays readable until
	// its next move, so an entry read during a Close is never taken for
	// an empty one.
	require.True(t, txIt.Valid())
	require.Equal(t, "b", string(txIt.Key()))
	require.Equal(t, "2", string(txIt.Value()))
	for i, it := range []*Iterator{it1, it2, it3, txIt} {
		require.False(t, it.First(), i)
		require.False(t, it.Valid(), i)
		require.Nil(t, it.Key(), i)
		require.Nil(t, it.Value(), i)
		require.False(t, it.Next(), i)
		require.ErrorIs(t, it.Error(), ErrClosed, i)
		require.ErrorIs(t, it.Close(), ErrClosed, i)
	}
	for i, tx := range []*Tx{tx1, tx2} {
		_, err := tx.Get(ctx, []byte("a"))
		require.ErrorIs(t, err, ErrClosed, i)
		require.ErrorIs(t, tx.Put(ctx, []byte("a"), nil), ErrClosed, i)
		require.ErrorIs(t, tx.Commit(), ErrClosed, i)
		require.ErrorIs(t, tx.Rollback(), ErrClosed, i)
	}
	_, err = c.Get(ctx, []byte("a"))
	require.ErrorIs(t, err, ErrClosed)
	_, err = db.Conn(ctx)
	require.ErrorIs(t, err, ErrClosed)
	require.Empty(t, conn.violationList())
}

// TestCloseUnderLoad runs many goroutines calling every kind of method while
// the DB closes. Run it with -race: the fake driver flags any call after its
// Close and any Close with resources still open.
func TestCloseUnderLoad(t *testing.T) {
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	for round := range rounds {
		conn := newFullConn()
		for i := range 50 {
			conn.data[fmt.Sprintf("k%02d", i)] = []byte{byte(i)}
		}
		db := openFake(t, conn)
		ctx := context.Background()
		session, err := db.Conn(ctx)
		require.NoError(t, err)

		var ops atomic.Int64
		var wg sync.WaitGroup
		unexpected := make(chan error, 64)
		report := func(err error) {
			if err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrConflict) {
				select {
				case unexpected <- err:
				default:
				}
			}
		}
		for g := range 8 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(round), uint64(g)))
				for {
					key := fmt.Appendf(nil, "k%02d", rng.IntN(60))
					var err error
					switch rng.IntN(9) {
					case 0:
						_, err = db.Get(ctx, key)
					case 1:
						_, err = session.MultiGet(ctx, [][]byte{key, []byte("k00")})
					case 2:
						err = db.Put(ctx, key, key)
					case 3:
						var b Batch
						b.Put(key, nil)
						b.Delete([]byte("k01"))
						err = session.Write(ctx, &b)
					case 4:
						var it *Iterator
						it, err = db.NewIterator(ctx, &IterOptions{LowerBound: key})
						if err == nil {
							for ok := it.First(); ok; ok = it.Next() {
								_ = it.Key()
							}
							report(it.Error())
							err = it.Close()
						}
					case 5:
						var tx *Tx
						tx, err = db.BeginTx(ctx, nil)
						if err == nil {
							_, gerr := tx.Get(ctx, key)
							report(gerr)
							report(tx.Put(ctx, key, []byte("tx")))
							var it *Iterator
							if it, err = tx.NewIterator(ctx, nil); err == nil {
								it.First()
								report(it.Error())
								// Left open for Commit (or DB.Close) to close.
							}
							report(err)
							if rng.IntN(2) == 0 {
								err = tx.Commit()
							} else {
								err = tx.Rollback()
							}
						}
					case 6:
						err = db.VerifyChecksum(ctx)
					case 7:
						var s *Snapshot
						s, err = session.NewSnapshot(ctx)
						if err == nil {
							_, gerr := s.Get(ctx, key)
							report(gerr)
							var it *Iterator
							if it, err = s.NewIterator(ctx, nil); err == nil {
								it.First()
								if rng.IntN(2) == 0 {
									// Left open: it keeps the snapshot
									// until DB.Close.
									report(it.Close())
								}
							}
							report(err)
							if rng.IntN(3) > 0 {
								err = s.Close() // else left for DB.Close
							}
						}
					case 8:
						err = db.DeleteRange(ctx, key, []byte("k99"))
					}
					report(err)
					if errors.Is(err, ErrClosed) {
						return
					}
					ops.Add(1)
				}
			})
		}
		for ops.Load() < 200 {
			time.Sleep(100 * time.Microsecond)
		}
		require.NoError(t, db.Close())
		wg.Wait()
		close(unexpected)
		for err := range unexpected {
			t.Errorf("unexpected error: %v", err)
		}
		require.Empty(t, conn.violationList())
		require.Zero(t, conn.openIters)
		require.Zero(t, conn.openTxs)
		require.Zero(t, conn.openSnaps)
	}
}
