package sstable

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/cpubench"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// mgParKeys is the number of keys of the table of BenchmarkMultiGetMiss:
// with the large table's entries, about 70 MiB.
const mgParKeys = 256 << 10

// openMGParTable writes the table of BenchmarkMultiGetMiss to a directory
// of its own on /dev/shm (tmpfs, as the engine benchmark's database, where
// MultiRead reads with pread: io_uring would punt to kernel workers; the
// test's temporary directory where there is no /dev/shm) and opens it with
// a block cache of an eighth of its size, so that most random lookups miss
// the cache.
func openMGParTable(b *testing.B) *Reader {
	b.Helper()
	dir := b.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "mgpar-bench-")
		require.NoError(b, err)
		b.Cleanup(func() { _ = os.RemoveAll(d) })
		dir = d
	}
	path := filepath.Join(dir, testFile)
	out, err := os.Create(path)
	require.NoError(b, err)
	w := NewWriter(out, largeWriterOptions)
	require.NoError(b, addLargeEntries(w, mgParKeys))
	_, err = w.Close()
	require.NoError(b, err)
	require.NoError(b, out.Close())
	st, err := os.Stat(path)
	require.NoError(b, err)
	c := cache.New(st.Size() / 8)
	f, err := fileio.Open(vfs.Default, path, fileio.Options{})
	require.NoError(b, err)
	r, err := Open(context.Background(), f, verifyEnv, ReaderOptions{Cache: c, CacheID: c.NewID(), FileNum: 1})
	require.NoError(b, err)
	b.Cleanup(func() { _ = r.Close() })
	return r
}

// BenchmarkMultiGetMiss measures MultiGet of 16 sorted random present keys
// of a table of about 70 MiB on tmpfs whose block cache holds an eighth of
// it (most blocks miss and are read, verified and decoded), against 16 Gets
// of the same keys, per key: wall time (ns/key) and the process's CPU time
// (cpu-ns/op, per 16 keys). op=interleaved runs one batch of each in turn
// and reports both and their ratio, which the machine's load, varying from
// second to second on a shared machine, then weighs on alike.
//
// It was written to decide whether a MultiGet should read and decode its
// uncached blocks on two goroutines (issue 15, MultiGet per key at 0.65 of
// Get). A prototype (fileio MultiReadEach: the caller and one helper
// goroutine claim the requests one at a time, each reading and decoding
// its own) did not pay on the 2-vCPU firecracker VM: wall per key 1.0-1.5
// times the one-goroutine path, CPU per key 1.3-1.5 times. A helper
// goroutine starts about 100 µs after its go statement when the creator
// keeps its core busy (BenchmarkHelperWake in internal/fileio), longer than
// the whole 16-key MultiGet (about 90 µs); even a helper that spins on the
// other core waiting for work, which costs that core, gained only 7%.
//
//	go test ./internal/sstable -run '^$' -bench MultiGetMiss -benchtime 3s
func BenchmarkMultiGetMiss(b *testing.B) {
	r := openMGParTable(b)
	const batches = 4096
	rng := rand.New(rand.NewPCG(3, 4))
	ks := make([]int, 16)
	all := make([][]MultiGetKey, batches)
	for j := range all {
		for i := range ks {
			ks[i] = rng.IntN(mgParKeys)
		}
		sortUnique(ks)
		for _, k := range ks {
			key := largeKey(make([]byte, 16), k, 0)
			all[j] = append(all[j], MultiGetKey{Key: key, Hash: bloom.Hash(key), Seq: base.MaxSeqNum})
		}
	}
	ctx := context.Background()
	keys := make([]MultiGetKey, 16)
	mget := func(b *testing.B, j int) {
		keys = append(keys[:0], all[j%batches]...)
		if err := r.MultiGet(ctx, verifyEnv, keys); err != nil {
			b.Fatal(err)
		}
		for i := range keys {
			if !keys[i].Found {
				b.Fatalf("MultiGet(%x): not found (%v)", keys[i].Key, keys[i].Err)
			}
		}
		releaseKeys(keys)
	}
	get := func(b *testing.B, j int) {
		for _, k := range all[j%batches] {
			_, _, found, pin, err := r.Get(ctx, verifyEnv, k.Key, base.MaxSeqNum)
			if err != nil || !found {
				b.Fatalf("Get(%x) = %t, %v", k.Key, found, err)
			}
			pin.Release()
		}
	}
	for j := range batches { // warm the cache
		mget(b, j)
	}
	for _, tc := range []struct {
		name string
		op   func(*testing.B, int)
	}{{"op=get16", get}, {"op=multiget", mget}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			defer cpubench.Start(b)()
			j := 0
			for b.Loop() {
				tc.op(b, j)
				j++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*16), "ns/key")
		})
	}
	b.Run("op=interleaved", func(b *testing.B) {
		var spent [2]time.Duration
		ops := [2]func(*testing.B, int){get, mget}
		j := 0
		for b.Loop() {
			for k := range 2 {
				op := (j + k) % 2
				start := time.Now()
				ops[op](b, j+k)
				spent[op] += time.Since(start)
			}
			j += 2
		}
		b.ReportMetric(float64(spent[0].Nanoseconds())/float64(b.N*16), "get-ns/key")
		b.ReportMetric(float64(spent[1].Nanoseconds())/float64(b.N*16), "multiget-ns/key")
		b.ReportMetric(float64(spent[1])/float64(spent[0]), "multiget/get")
	})
}
