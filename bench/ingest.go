package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	pvfs "github.com/cockroachdb/pebble/v2/vfs"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/engine"
)

// The bulk-load comparison (issue 27, item 5): the 128 MiB workload loaded
// three ways into an empty database, each timed from nothing to every key
// in a table file of the database:
//
//   - shale-fill: shale's batched writes (batches of 100, in the fill's
//     random order, as the main run's fill_batch100), then Flush;
//   - shale-ingest: engine.TableWriter writes the keys, sorted, into table
//     files of ingestTableKeys keys, then one DB.Ingest adds them all;
//   - pebble-ingest: Pebble's sstable.Writer writes the same files (same
//     block size, bloom filter and codec), then one pebble.DB.Ingest.
//
// The ingest paths are given the keys sorted (a bulk load's precondition);
// sorting them is not timed. Every configuration runs in this process, in a
// new random order each round, with a garbage collection between runs.

// ingestTableKeys is the number of keys per ingested table: about 32 MiB
// of the workload's 16-byte keys and 256-byte values, 4 tables for 128 MiB.
const ingestTableKeys = 120000

// runIngestBench runs rounds of the three loads of n keys of valueSize
// bytes under dir and writes a table of medians (min–max) to w.
func runIngestBench(w io.Writer, dir string, rounds, n, valueSize int) error {
	cfg := storeConfig{cacheSize: 32 << 20, memtableSize: 64 << 20, bloomBits: 10, shaleStats: "default"}
	order := newKeyOrder(n, 1)
	sorted := make([]int, n)
	for i := range sorted {
		sorted[i] = i // makeKey's keys sort as their numbers do
	}
	// Each load returns the seconds its Ingest call took (0 for the fill).
	loads := []struct {
		name string
		run  func(dir string) (float64, error)
	}{
		{"shale-fill", func(d string) (float64, error) { return 0, shaleFillFlush(d, cfg, &order, n, valueSize) }},
		{"shale-ingest", func(d string) (float64, error) { return shaleIngest(d, cfg, sorted, valueSize) }},
		{"pebble-ingest", func(d string) (float64, error) { return pebbleIngest(d, cfg, sorted, valueSize) }},
	}
	times := make(map[string][]float64)
	ingestTimes := make(map[string][]float64)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for r := range rounds {
		idx := rng.Perm(len(loads))
		for _, i := range idx {
			l := loads[i]
			d := filepath.Join(dir, fmt.Sprintf("ingest-%s-%d", l.name, r))
			runtime.GC()
			start := time.Now()
			ing, err := l.run(d)
			el := time.Since(start).Seconds()
			if rerr := os.RemoveAll(d); err == nil {
				err = rerr
			}
			if err != nil {
				return errors.Wrapf(err, "%s, round %d", l.name, r)
			}
			times[l.name] = append(times[l.name], el)
			ingestTimes[l.name] = append(ingestTimes[l.name], ing)
			fmt.Fprintf(os.Stderr, "round %d: %s %.3f s (Ingest call %.3f s)\n", r, l.name, el, ing)
		}
	}
	fmt.Fprintf(w, "| load of %d keys (%d B values) | seconds: median (min–max) | vs shale-ingest: median of per-round ratios (min–max) | of which the Ingest call (s) |\n|---|---|---|---|\n", n, valueSize)
	for _, l := range loads {
		ts := times[l.name]
		ratios := make([]float64, len(ts))
		for i := range ts {
			ratios[i] = ts[i] / times["shale-ingest"][i]
		}
		its := ingestTimes[l.name]
		fmt.Fprintf(w, "| %s | %.3f (%.3f–%.3f) | %.2f× (%.2f–%.2f) | %.3f (%.3f–%.3f) |\n", l.name,
			median(ts), slices.Min(ts), slices.Max(ts), median(ratios), slices.Min(ratios), slices.Max(ratios),
			median(its), slices.Min(its), slices.Max(its))
	}
	return nil
}

func shaleFillFlush(dir string, cfg storeConfig, order *keyOrder, n, valueSize int) error {
	s, err := openShale(dir, cfg)
	if err != nil {
		return err
	}
	keys := make([][]byte, fillBatch)
	vals := make([][]byte, fillBatch)
	for i := range keys {
		keys[i] = make([]byte, keySize)
	}
	for lo := 0; lo < n && err == nil; lo += fillBatch {
		hi := min(lo+fillBatch, n)
		for i := lo; i < hi; i++ {
			k := order.at(i)
			makeKey(keys[i-lo], k, 0)
			vals[i-lo] = makeValue(k, valueSize)
		}
		err = s.putBatch(keys[:hi-lo], vals[:hi-lo])
	}
	if err == nil {
		err = s.db.Flush(s.ctx)
	}
	if err == nil && n <= verifyKeys {
		var c cursor
		if c, err = s.newCursor(); err == nil {
			err = countKeys(c, n)
		}
	}
	return errors.CombineErrors(err, s.close())
}

// writeTables writes sorted's keys into tables under dir/ext with
// write, ingestTableKeys keys each, and returns their paths.
func writeTables(dir string, sorted []int, valueSize int, write func(path string, keys [][]byte, vals [][]byte) error) ([]string, error) {
	ext := filepath.Join(dir, "ext")
	if err := os.MkdirAll(ext, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	keys := make([][]byte, 0, ingestTableKeys)
	vals := make([][]byte, 0, ingestTableKeys)
	buf := make([]byte, ingestTableKeys*keySize)
	for lo := 0; lo < len(sorted); lo += ingestTableKeys {
		hi := min(lo+ingestTableKeys, len(sorted))
		keys, vals = keys[:0], vals[:0]
		for i := lo; i < hi; i++ {
			j := i - lo
			keys = append(keys, makeKey(buf[j*keySize:(j+1)*keySize], sorted[i], 0))
			vals = append(vals, makeValue(sorted[i], valueSize))
		}
		p := filepath.Join(ext, fmt.Sprintf("%06d.sst", len(paths)))
		if err := write(p, keys, vals); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

func shaleIngest(dir string, cfg storeConfig, sorted []int, valueSize int) (float64, error) {
	opts, err := shaleOptions(cfg)
	if err != nil {
		return 0, err
	}
	paths, err := writeTables(dir, sorted, valueSize, func(path string, keys, vals [][]byte) error {
		tw, err := engine.NewTableWriter(path, opts)
		if err != nil {
			return err
		}
		for i := range keys {
			if err := tw.Set(keys[i], vals[i]); err != nil {
				_ = tw.Abort()
				return err
			}
		}
		_, err = tw.Finish()
		return err
	})
	if err != nil {
		return 0, err
	}
	db := driver.OpenDB(engine.NewConnector(filepath.Join(dir, "db"), opts))
	if err := db.Ping(context.Background()); err != nil {
		return 0, errors.CombineErrors(err, db.Close())
	}
	start := time.Now()
	err = db.Ingest(context.Background(), paths)
	ing := time.Since(start).Seconds()
	if err == nil && len(sorted) <= verifyKeys {
		err = countKeys(shaleCursorOf(db), len(sorted))
	}
	return ing, errors.CombineErrors(err, db.Close())
}

func pebbleIngest(dir string, cfg storeConfig, sorted []int, valueSize int) (float64, error) {
	s, err := openPebble(filepath.Join(dir, "db"), cfg)
	if err != nil {
		return 0, err
	}
	wo := sstable.WriterOptions{
		TableFormat:  s.db.FormatMajorVersion().MaxTableFormat(),
		BlockSize:    4096,
		FilterPolicy: bloom.FilterPolicy(cfg.bloomBits),
		Compression:  sstable.SnappyCompression,
	}
	paths, err := writeTables(dir, sorted, valueSize, func(path string, keys, vals [][]byte) error {
		f, err := pvfs.Default.Create(path, pvfs.WriteCategoryUnspecified)
		if err != nil {
			return err
		}
		w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), wo)
		for i := range keys {
			if err := w.Set(keys[i], vals[i]); err != nil {
				_ = w.Close()
				return err
			}
		}
		return w.Close()
	})
	var ing float64
	if err == nil {
		start := time.Now()
		err = s.db.Ingest(context.Background(), paths)
		ing = time.Since(start).Seconds()
	}
	if err == nil && len(sorted) <= verifyKeys {
		var c cursor
		if c, err = s.newCursor(); err == nil {
			err = countKeys(c, len(sorted))
		}
	}
	return ing, errors.CombineErrors(err, s.close())
}

// verifyKeys: a load of at most this many keys (the test's small run) is
// checked by counting the keys afterwards, outside the timing that matters.
const verifyKeys = 100000

func shaleCursorOf(db *driver.DB) cursor {
	it, err := db.NewIterator(context.Background(), nil)
	if err != nil {
		return errCursor{err}
	}
	return shaleCursor{it}
}

type errCursor struct{ err error }

func (c errCursor) first() bool            { return false }
func (c errCursor) seekGE(key []byte) bool { return false }
func (c errCursor) next() bool             { return false }
func (c errCursor) touch() (int, error)    { return 0, c.err }
func (c errCursor) close() error           { return c.err }

// countKeys checks that c holds want keys, and closes it.
func countKeys(c cursor, want int) error {
	n := 0
	for ok := c.first(); ok; ok = c.next() {
		if _, err := c.touch(); err != nil {
			return errors.CombineErrors(err, c.close())
		}
		n++
	}
	if err := c.close(); err != nil {
		return err
	}
	if n != want {
		return errors.Newf("the load left %d keys, want %d", n, want)
	}
	return nil
}
