package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
	"github.com/stretchr/testify/require"
)

// TestIteratorMoveKeepsItsEntryAcrossClose is issue 26's case: goroutines
// scan with First/Next and read Key and Value while another closes the
// database. A move that returned true must hand out its whole entry — the
// key and value that were written — never an empty one, whatever point of
// the scan the Close lands on; after it, moves return false with ErrClosed.
func TestIteratorMoveKeepsItsEntryAcrossClose(t *testing.T) {
	const keys, scanners = 2000, 4
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	for round := range rounds {
		dir := t.TempDir()
		db := driver.OpenDB(NewConnector(dir, &Options{WriteBufferSize: 256 << 10}))
		ctx := context.Background()
		var b driver.Batch
		for i := range keys {
			b.Put(fmt.Appendf(nil, "k%06d", i), fmt.Appendf(nil, "v%06d", i))
		}
		require.NoError(t, db.Write(ctx, &b))
		require.NoError(t, db.Flush(ctx))

		started := make(chan struct{}, scanners)
		errs := make(chan error, scanners)
		var wg sync.WaitGroup
		for range scanners {
			wg.Go(func() {
				it, err := db.NewIterator(ctx, nil)
				if err != nil {
					errs <- err
					return
				}
				started <- struct{}{}
				for {
					for ok := it.First(); ok; ok = it.Next() {
						k, v := it.Key(), it.Value()
						if len(k) != 7 || len(v) != 7 || v[0] != 'v' || string(k[1:]) != string(v[1:]) {
							errs <- fmt.Errorf("a move returned true with key=%q value=%q", k, v)
							return
						}
					}
					if err := it.Error(); err != nil {
						if !errors.Is(err, driver.ErrClosed) {
							errs <- err
						}
						return
					}
				}
			})
		}
		for range scanners {
			<-started
		}
		require.NoError(t, db.Close(), "round %d", round)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err, "round %d", round)
		}
	}
}
