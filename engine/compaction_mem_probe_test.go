package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/compact"
	"github.com/stretchr/testify/require"
)

// TestCompactionMemProbe measures the memory of a full compaction in the
// shape of the bench's rss-equal workload (issue 15): 16-byte keys with
// 256-byte random printable values (which snappy barely compresses) written
// in a random order, 4 MiB memtables, a 32 MiB block cache, partitioned
// index and filters kept in the cache; then Compact(nil, nil), as the bench
// does. It samples the Go heap while the compaction runs and reports the
// peak live heap (as of the last GC), the peak heap objects (live and
// garbage), the peak RSS, and for each manual compaction its inputs and
// peak live heap. A heap profile taken at the peak live heap is written
// to SHALE_COMPMEM_PROFILE, when set, for `go tool pprof -top
// -inuse_space`. With SHALE_COMPMEM_SEED set to a directory, the loaded
// database is kept there (loaded the first time) and each run compacts a
// copy of it.
//
// It is a measurement, not a test: it runs only when SHALE_COMPMEM_PROBE
// gives the data size (e.g. SHALE_COMPMEM_PROBE=1536MiB), in
// SHALE_BENCH_DIR or /dev/shm:
//
//	SHALE_COMPMEM_PROBE=1536MiB SHALE_COMPMEM_PROFILE=/tmp/compmem.pprof \
//	  go test ./engine -run TestCompactionMemProbe -v -timeout 30m
func TestCompactionMemProbe(t *testing.T) {
	size := os.Getenv("SHALE_COMPMEM_PROBE")
	if size == "" {
		t.Skip("SHALE_COMPMEM_PROBE (the data size, e.g. 1536MiB) is not set")
	}
	dataSize, err := benchParseSize(size)
	require.NoError(t, err)
	const valueSize = 256
	n := int(dataSize / (benchKeySize + valueSize))

	opts := func() *Options {
		return &Options{
			BlockCacheSize:            32 << 20,
			WriteBufferSize:           4 << 20,
			BloomBitsPerKey:           10,
			Compression:               CompressionSnappy,
			CacheIndexAndFilterBlocks: true,
			PartitionIndexAndFilters:  true,
		}
	}
	// The loaded database is kept in seed, when set, and copied for each
	// run, so that runs before and after a change compact the same tables.
	seed := os.Getenv("SHALE_COMPMEM_SEED")
	if seed == "" {
		var err error
		seed, err = os.MkdirTemp(benchBaseDir(), "shale-compmem-seed-")
		require.NoError(t, err)
		defer func() { _ = os.RemoveAll(seed) }()
		require.NoError(t, os.Remove(seed))
	}
	if _, err := os.Stat(seed); os.IsNotExist(err) {
		d, err := openDatabase(seed, opts())
		require.NoError(t, err)
		start := time.Now()
		probeLoad(t, d, n, valueSize)
		t.Logf("loaded %d keys (%.0f MiB) in %s", n, mib(uint64(n)*(benchKeySize+valueSize)), time.Since(start).Round(time.Millisecond))
		require.NoError(t, d.Close())
	}
	dir, err := os.MkdirTemp(benchBaseDir(), "shale-compmem-probe-")
	require.NoError(t, err)
	defer func() { _ = os.RemoveAll(dir) }()
	require.NoError(t, copyDirFiles(seed, dir))
	// What the load left behind is not the compaction's.
	runtime.GC()
	debug.FreeOSMemory()
	// Sample small allocations too: index partitions are a few KiB.
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 4 << 10

	// From the open on: the open starts background compactions (of the
	// L0 tables the load left), which Compact then waits for.
	s := newMemSampler()
	var compactions []string
	var mu sync.Mutex
	hook := func(_ *database, c *compact.Compaction) {
		mu.Lock()
		defer mu.Unlock()
		compactions = append(compactions, fmt.Sprintf("L%d→L%d inputs %d+%d files (%.0f MiB)",
			c.Level, c.OutputLevel, len(c.Inputs[0]), len(c.Inputs[1]), mib(inputBytes(c))))
		s.phase(len(compactions))
	}
	compactionStartHook.Store(&hook)
	defer compactionStartHook.Store(nil)
	s.start()
	d, err := openDatabase(dir, opts())
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	ctx := context.Background()
	t.Logf("at open: %s", probeShape(d))
	start := time.Now()
	require.NoError(t, d.Compact(ctx, nil, nil))
	elapsed := time.Since(start)
	s.stop()
	t.Logf("Compact(nil, nil) took %s; after it: %s", elapsed.Round(time.Millisecond), probeShape(d))
	t.Logf("from the open on: peak live heap %.1f MiB, peak heap objects %.1f MiB, peak RSS %.1f MiB (before the open: live %.1f MiB, RSS %.1f MiB)",
		mib(s.peakLive), mib(s.peakObjects), mib(s.peakRSS), mib(s.startLive), mib(s.startRSS))
	t.Logf("open, until the first compaction starts: peak live heap %.1f MiB", mib(s.phasePeak[0]))
	for i, c := range compactions {
		t.Logf("compaction %d: %s: peak live heap %.1f MiB", i+1, c, mib(s.phasePeak[i+1]))
	}
	if path := os.Getenv("SHALE_COMPMEM_PROFILE"); path != "" && s.profile.Len() > 0 {
		require.NoError(t, os.WriteFile(path, s.profile.Bytes(), 0o644))
		t.Logf("heap profile at the peak live heap (%.1f MiB): %s", mib(s.profileLive), path)
	}
}

// probeLoad writes n keys in a random order, 100 to a batch.
func probeLoad(t testing.TB, d *database, n, valueSize int) {
	ctx := context.Background()
	// A permutation of int32s: an []int of 8M keys would be 64 MB.
	perm := make([]int32, n)
	for i := range perm {
		perm[i] = int32(i)
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	batch := newWriteBatch()
	var key [benchKeySize]byte
	for i, k32 := range perm {
		k := int(k32)
		batch.Put(benchKey(key[:], k, 0), benchValue(k, valueSize))
		if batch.Count() == 100 || i == n-1 {
			require.NoError(t, d.Write(ctx, batch, nil))
			batch.Reset()
		}
	}
}

func inputBytes(c *compact.Compaction) (n uint64) {
	for _, files := range c.Inputs {
		for _, f := range files {
			n += f.Size
		}
	}
	return n
}

// probeShape describes the tree: the files and bytes of each non-empty level.
func probeShape(d *database) string {
	v := d.readState.Load().current
	var b strings.Builder
	for level, files := range v.Levels {
		if len(files) == 0 {
			continue
		}
		var size uint64
		for _, f := range files {
			size += f.Size
		}
		fmt.Fprintf(&b, "L%d %d files %.0f MiB; ", level, len(files), mib(size))
	}
	return strings.TrimSuffix(b.String(), "; ")
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// memSampler samples the Go heap and the RSS every few milliseconds, keeps
// their peaks (overall and per phase), and takes a heap profile whenever
// the live heap reaches a new peak by more than a MiB.
type memSampler struct {
	done chan struct{}
	wg   sync.WaitGroup

	mu                  sync.Mutex
	cur                 int
	phasePeak           map[int]uint64
	startLive, startRSS uint64
	peakLive            uint64
	peakObjects         uint64
	peakRSS             uint64
	profile             bytes.Buffer
	profileLive         uint64
}

func newMemSampler() *memSampler {
	return &memSampler{done: make(chan struct{}), phasePeak: map[int]uint64{}}
}

func (s *memSampler) phase(p int) {
	s.mu.Lock()
	s.cur = p
	s.mu.Unlock()
}

func (s *memSampler) start() {
	s.startLive, _ = s.sample()
	s.startRSS = rssBytes()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-tick.C:
				s.record()
			}
		}
	}()
}

func (s *memSampler) stop() {
	close(s.done)
	s.wg.Wait()
	s.record()
}

var memSamples = []metrics.Sample{
	{Name: "/gc/heap/live:bytes"},
	{Name: "/memory/classes/heap/objects:bytes"},
}

func (s *memSampler) sample() (live, objects uint64) {
	samples := append([]metrics.Sample(nil), memSamples...)
	metrics.Read(samples)
	return samples[0].Value.Uint64(), samples[1].Value.Uint64()
}

func (s *memSampler) record() {
	live, objects := s.sample()
	rss := rssBytes()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peakObjects = max(s.peakObjects, objects)
	s.peakRSS = max(s.peakRSS, rss)
	s.phasePeak[s.cur] = max(s.phasePeak[s.cur], live)
	if live > s.peakLive {
		s.peakLive = live
		if live > s.profileLive+1<<20 {
			s.profile.Reset()
			if err := pprof.Lookup("heap").WriteTo(&s.profile, 0); err == nil {
				s.profileLive = live
			}
		}
	}
}

// copyDirFiles copies the files of src (no subdirectories) into dst.
func copyDirFiles(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if err := copyFile(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// rssBytes is the process's resident set size, from /proc/self/statm; 0
// where there is none.
func rssBytes() uint64 {
	b, err := os.ReadFile(filepath.Join("/proc", "self", "statm"))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}
