//go:build linux && !(mips || mipsle || mips64 || mips64le)

package vfs

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/shaledb/shale/internal/cpubench"
	"github.com/shaledb/shale/internal/iobatch"
	"github.com/shaledb/shale/ioctx"
)

// BenchmarkReadAtBatch compares 16 random reads of a 128 MiB file on tmpfs
// (/dev/shm when present: the bench workload's medium) read with one pread
// each and with one ReadAtBatch (one io_uring_enter). Besides ns/op it
// reports the process's CPU time per op, of 16 reads (getrusage, which counts
// io_uring's worker threads too): on a VM whose system calls are expensive
// that is what a batch saves. SHALE_URING_BENCH_DIR names another directory (a disk
// filesystem whose page cache holds the file, for one).
//
//	go test ./vfs -run '^$' -bench ReadAtBatch -count 5
func BenchmarkReadAtBatch(b *testing.B) {
	const fileSize = 128 << 20
	const batch = 16
	dir := os.Getenv("SHALE_URING_BENCH_DIR")
	if dir == "" {
		dir = "/dev/shm"
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		dir = b.TempDir()
	}
	name := filepath.Join(dir, fmt.Sprintf("shale_uring_bench_%d", os.Getpid()))
	defer os.Remove(name)
	writeRandomFile(b, name, fileSize)
	f, err := Default.Open(name)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	d := f.(*diskFile)
	sizes := []struct {
		name    string
		n       int
		aligned bool
	}{{"4KiB", 4 << 10, true}, {"4.2KiB", 4300, false}}
	for _, size := range sizes {
		for _, mode := range []string{"pread", "uring"} {
			b.Run("size="+size.name+"/mode="+mode, func(b *testing.B) {
				if mode == "uring" {
					// The ring whatever the filesystem: this measures
					// what ringSuits decides from.
					if !uringAvailable() {
						b.Skip("io_uring is not available here")
					}
					uringAnyFS.Store(true)
					defer uringAnyFS.Store(false)
				}
				rng := rand.New(rand.NewPCG(1, 2))
				reqs := make([]iobatch.Read, batch)
				for i := range reqs {
					reqs[i].P = make([]byte, size.n)
				}
				b.SetBytes(int64(batch * size.n))
				b.ReportAllocs()
				defer cpubench.Start(b)()
				for b.Loop() {
					for i := range reqs {
						off := rng.Int64N(fileSize - int64(size.n))
						if size.aligned {
							off &^= 4<<10 - 1
						}
						reqs[i].Off = off
					}
					if mode == "pread" {
						d.readEach(reqs)
					} else if !d.ReadAtBatch(ioctx.IOOptions{}, reqs) {
						b.Fatal("ReadAtBatch declined the batch")
					}
					for i := range reqs {
						if reqs[i].N != size.n || reqs[i].Err != nil {
							b.Fatalf("read %d at %d: %d, %v", size.n, reqs[i].Off, reqs[i].N, reqs[i].Err)
						}
					}
				}
			})
		}
	}
}

func writeRandomFile(tb testing.TB, name string, size int) {
	tb.Helper()
	data := make([]byte, size)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// uringAvailable reports whether the pool can hand out a ring.
func uringAvailable() bool {
	r := getURing()
	if r == nil {
		return false
	}
	putURing(r)
	return true
}
