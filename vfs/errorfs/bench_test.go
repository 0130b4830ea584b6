package errorfs_test

import (
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// BenchmarkReadAt measures what wrapping costs a 4 KiB read of a MemFS file
// when nothing is injected.
func BenchmarkReadAt(b *testing.B) {
	const fileSize = 1 << 20
	mem := vfs.NewMem()
	w, err := mem.Create("000001.sst")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := w.Write(make([]byte, fileSize)); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		fs   vfs.FS
	}{
		{"none", mem},
		{"observer", errorfs.WrapObserver(mem, func(errorfs.Op) {})},
		{"predicate", errorfs.Wrap(mem, errorfs.And(errorfs.Reads(), errorfs.PathMatch("*.log")))},
	} {
		b.Run("wrap="+c.name, func(b *testing.B) {
			f, err := c.fs.Open("000001.sst")
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			rng := rand.New(rand.NewPCG(1, 2))
			buf := make([]byte, 4<<10)
			opts := ioctx.IOOptions{Activity: ioctx.ActivityGet}
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := vfs.ReadAtOptions(f, opts, buf, rng.Int64N(fileSize-int64(len(buf)))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
