package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWriterAwaitTurn checks both ends of a queued writer's spin: it returns
// once the leader sets its turn, and it gives up (to park on its cond) when
// no turn comes.
func TestWriterAwaitTurn(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("awaitTurn spins only with two processors or more")
	}
	w := new(writer)
	w.awaitTurn() // no turn comes: it must return by itself
	require.False(t, w.turn.Load())

	started := make(chan struct{})
	returned := make(chan struct{})
	go func() {
		close(started)
		for !w.turn.Load() {
			w.awaitTurn()
		}
		close(returned)
	}()
	<-started
	w.turn.Store(true)
	<-returned
}

// TestQueuedWritersSpinOrPark runs writers that queue behind each other,
// synced and not, with one processor (no spin) and with several (spin, and
// park when a synced group outlasts it), and checks that every write is
// acknowledged once and readable.
func TestQueuedWritersSpinOrPark(t *testing.T) {
	for _, procs := range []int{1, 4} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			db, _ := openTestDB(t, nil)
			ctx := context.Background()
			const goroutines, writes = 6, 150
			var wg sync.WaitGroup
			errs := make(chan error, goroutines)
			for g := range goroutines {
				wg.Go(func() {
					for i := range writes {
						wo := writeOptions{Sync: i%10 == g%10}
						if err := db.putImpl(ctx, wo, fmt.Appendf(nil, "g%d-%04d", g, i), fmt.Appendf(nil, "v%d", i)); err != nil {
							errs <- fmt.Errorf("goroutine %d, write %d: %w", g, i, err)
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			for g := range goroutines {
				for i := range writes {
					v, err := db.Get(ctx, fmt.Appendf(nil, "g%d-%04d", g, i))
					require.NoError(t, err)
					require.Equal(t, fmt.Sprintf("v%d", i), string(v))
				}
			}
		})
	}
}
