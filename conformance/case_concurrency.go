package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shaledb/shale/driver"
)

func testConcurrency(t testing.TB, s *suite) {
	db := s.open(t, opt("write_buffer_size", "64KiB"))
	const (
		workers = 4
		ops     = 400
		perKeys = 100
	)
	// Each worker writes keys of its own, so the final state is the union
	// of the workers' models whatever the interleaving; it reads everyone's.
	wkey := func(w, i int) []byte { return fmt.Appendf(nil, "w%d-%04d", w, i) }
	models := make([]*model, workers)
	var (
		wg       sync.WaitGroup
		failed   atomic.Bool
		flushes  atomic.Bool
		txs      atomic.Bool
		seqs     atomic.Uint64
		failOnce sync.Once
	)
	flushes.Store(true)
	txs.Store(true)
	fail := func(format string, args ...any) {
		failed.Store(true)
		failOnce.Do(func() { t.Errorf(format, args...) })
	}
	// plausible reports whether v could have been written to k: every
	// value is "<key>@<sequence>".
	plausible := func(k, v []byte) bool { return bytes.HasPrefix(v, append(bytes.Clone(k), '@')) }
	for w := range workers {
		m := newModel()
		models[w] = m
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			value := func(k []byte) []byte { return fmt.Appendf(bytes.Clone(k), "@%d", seqs.Add(1)) }
			for i := 0; i < ops && !failed.Load(); i++ {
				k := wkey(w, rng.IntN(perKeys))
				switch r := rng.IntN(100); {
				case r < 30:
					v := value(k)
					if err := db.Put(bg, k, v); err != nil {
						fail("worker %d: Put(%s): %v", w, q(k), err)
						return
					}
					m.put(k, v)
				case r < 40:
					if err := db.Delete(bg, k); err != nil {
						fail("worker %d: Delete(%s): %v", w, q(k), err)
						return
					}
					m.del(k)
				case r < 50:
					var batchOps []op
					for range 2 + rng.IntN(4) {
						k := wkey(w, rng.IntN(perKeys))
						batchOps = append(batchOps, op{del: rng.IntN(4) == 0, key: k, value: value(k)})
					}
					if err := db.Write(bg, batch(batchOps)); err != nil {
						fail("worker %d: Write: %v", w, err)
						return
					}
					m.apply(batchOps)
				case r < 55 && txs.Load():
					tx, err := db.BeginTx(bg, nil)
					if errors.Is(err, driver.ErrNotSupported) {
						txs.Store(false)
						continue
					}
					if err != nil {
						fail("worker %d: BeginTx: %v", w, err)
						return
					}
					k2 := wkey(w, rng.IntN(perKeys))
					v, v2 := value(k), value(k2)
					if err := tx.Put(bg, k, v); err != nil {
						fail("worker %d: Tx.Put: %v", w, err)
						return
					}
					if err := tx.Put(bg, k2, v2); err != nil {
						fail("worker %d: Tx.Put: %v", w, err)
						return
					}
					if err := tx.Commit(); err != nil {
						fail("worker %d: Commit of a transaction writing only keys no one else writes: %v", w, err)
						return
					}
					m.put(k, v)
					m.put(k2, v2)
				case r < 75:
					// Read-your-writes for the worker's own key, plausibility
					// for another's.
					other := wkey(rng.IntN(workers), rng.IntN(perKeys))
					for _, rk := range [][]byte{k, other} {
						v, err := db.Get(bg, rk)
						switch {
						case err != nil && !errors.Is(err, driver.ErrNotFound):
							fail("worker %d: Get(%s): %v", w, q(rk), err)
							return
						case bytes.Equal(rk, k):
							want, ok := m.m[string(k)]
							if ok != (err == nil) || ok && string(v) != want {
								fail("worker %d: Get(%s) of its own key = %s, %v; want %q (the last value this "+
									"goroutine wrote): a goroutine must read its own writes", w, q(k), q(v), err, want)
								return
							}
						case err == nil && !plausible(rk, v):
							fail("worker %d: Get(%s) = %s, a value never written to that key", w, q(rk), q(v))
							return
						}
					}
				case r < 85:
					keys := make([][]byte, 5)
					for j := range keys {
						keys[j] = wkey(rng.IntN(workers), rng.IntN(perKeys))
					}
					vals, err := db.MultiGet(bg, keys)
					if err != nil || len(vals) != len(keys) {
						fail("worker %d: MultiGet of %d keys = %d values, %v", w, len(keys), len(vals), err)
						return
					}
					for j, v := range vals {
						if v != nil && !plausible(keys[j], v) {
							fail("worker %d: MultiGet entry %d (key %s) = %s, a value never written to that key",
								w, j, q(keys[j]), q(v))
							return
						}
					}
				case r < 97:
					other := rng.IntN(workers)
					lower, upper := wkey(other, 0), wkey(other, perKeys)
					it, err := db.NewIterator(bg, &driver.IterOptions{LowerBound: lower, UpperBound: upper})
					if err != nil {
						fail("worker %d: NewIterator: %v", w, err)
						return
					}
					var prev []byte
					for ok := it.First(); ok; ok = it.Next() {
						if prev != nil && bytes.Compare(prev, it.Key()) >= 0 {
							fail("worker %d: a scan returned %s after %s: keys must be strictly increasing",
								w, q(it.Key()), q(prev))
						}
						if bytes.Compare(it.Key(), lower) < 0 || bytes.Compare(it.Key(), upper) >= 0 ||
							!plausible(it.Key(), it.Value()) {
							fail("worker %d: a scan of [%s, %s) returned %s=%s", w, q(lower), q(upper),
								q(it.Key()), q(it.Value()))
						}
						prev = append(prev[:0], it.Key()...)
					}
					if err := it.Error(); err != nil {
						fail("worker %d: scan: %v", w, err)
					}
					if err := it.Close(); err != nil {
						fail("worker %d: Iterator.Close: %v", w, err)
					}
				default:
					if w != 0 || !flushes.Load() {
						continue
					}
					if err := db.Flush(bg); errors.Is(err, driver.ErrNotSupported) {
						flushes.Store(false)
					} else if err != nil {
						fail("worker %d: Flush: %v", w, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() {
		return
	}
	all := newModel()
	for _, m := range models {
		for k, v := range m.m {
			all.m[k] = v
		}
	}
	var absent [][]byte
	for w := range workers {
		for i := range perKeys {
			absent = append(absent, wkey(w, i))
		}
	}
	checkModel(t, db, all, absent, fmt.Sprintf("after %d goroutines made %d mixed calls each", workers, ops))
}
