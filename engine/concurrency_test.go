package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConcurrentReadersAndWriters runs writers, readers, iterators, flushes
// and compactions at once (meant for -race). Each writer owns its keys and
// writes increasing versions, so readers can check monotonicity: a key's
// version never goes backwards, and an iterator's view is consistent.
func TestConcurrentReadersAndWriters(t *testing.T) {
	ctx := context.Background()
	db, _ := openTestDB(t, nil)
	const writers, keysPerWriter = 4, 200
	iterations := 3000
	if testing.Short() {
		iterations = 800
	}
	var done atomic.Bool
	var latest [writers][keysPerWriter]atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 3))
			for i := 1; i <= iterations; i++ {
				k := rng.IntN(keysPerWriter)
				b := newWriteBatch()
				b.Put([]byte(fmt.Sprintf("w%d-%04d", w, k)), []byte(strconv.Itoa(i)))
				b.Put([]byte(fmt.Sprintf("w%d-last", w)), []byte(strconv.Itoa(i)))
				if err := db.Write(ctx, b, nil); err != nil {
					fail(err)
					return
				}
				latest[w][k].Store(int64(i))
			}
		}()
	}
	var readers sync.WaitGroup
	for r := range 3 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 4))
			for !done.Load() {
				w, k := rng.IntN(writers), rng.IntN(keysPerWriter)
				floor := latest[w][k].Load()
				v, err := db.Get(ctx, []byte(fmt.Sprintf("w%d-%04d", w, k)))
				if err != nil {
					if floor == 0 {
						continue
					}
					fail(fmt.Errorf("get w%d-%04d: %w", w, k, err))
					return
				}
				if n, _ := strconv.Atoi(string(v)); int64(n) < floor {
					fail(fmt.Errorf("w%d-%04d went back: read %d after %d was acknowledged", w, k, n, floor))
					return
				}
			}
		}()
	}
	readers.Add(1)
	go func() {
		defer readers.Done()
		for !done.Load() {
			it, err := db.NewIterator(ctx, nil)
			if err != nil {
				fail(err)
				return
			}
			// Within one iterator's view, no writer's key holds a version
			// newer than the writer's "last" key (written in the same batch).
			maxSeen := map[byte]int{}
			var last [writers]int
			for ok := it.First(); ok; ok = it.Next() {
				k := it.Key()
				n, _ := strconv.Atoi(string(it.Value()))
				if string(k[3:]) == "last" {
					last[k[1]-'0'] = n
				} else if n > maxSeen[k[1]] {
					maxSeen[k[1]] = n
				}
			}
			if err := it.Close(); err != nil {
				fail(err)
				return
			}
			for w := range writers {
				if maxSeen['0'+byte(w)] > last[w] {
					fail(fmt.Errorf("iterator saw half a batch of writer %d: key version %d > last %d",
						w, maxSeen['0'+byte(w)], last[w]))
					return
				}
			}
		}
	}()
	readers.Add(1)
	go func() {
		defer readers.Done()
		for i := 0; !done.Load(); i++ {
			var err error
			if i%3 == 2 {
				err = db.Compact(ctx, nil, nil)
			} else {
				err = db.Flush(ctx)
			}
			if err != nil {
				fail(err)
				return
			}
		}
	}()
	wg.Wait()
	done.Store(true)
	readers.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
