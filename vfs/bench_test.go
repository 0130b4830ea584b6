package vfs

import (
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/shaledb/shale/ioctx"
)

var benchSizes = []struct {
	name string
	n    int
}{{"128B", 128}, {"4KiB", 4 << 10}, {"64KiB", 64 << 10}}

// benchReadAt reads size-byte blocks at random offsets of a 4 MiB file.
func benchReadAt(b *testing.B, fs FS, name string) {
	const fileSize = 4 << 20
	data := make([]byte, fileSize)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	w, err := fs.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	for _, size := range benchSizes {
		b.Run("size="+size.name, func(b *testing.B) {
			f, err := fs.Open(name)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			buf := make([]byte, size.n)
			opts := ioctx.IOOptions{Activity: ioctx.ActivityGet}
			b.SetBytes(int64(size.n))
			b.ReportAllocs()
			for b.Loop() {
				off := rng.Int64N(fileSize - int64(size.n))
				if _, err := ReadAtOptions(f, opts, buf, off); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkMemFileReadAt(b *testing.B) { benchReadAt(b, NewMem(), "a") }

func BenchmarkDiskFileReadAt(b *testing.B) {
	benchReadAt(b, Default, filepath.Join(b.TempDir(), "a"))
}

func BenchmarkMemFileWrite(b *testing.B) {
	for _, size := range benchSizes {
		b.Run("size="+size.name, func(b *testing.B) {
			m := NewMem()
			buf := make([]byte, size.n)
			// Truncate every 32 MiB so memory stays bounded however long
			// the benchmark runs.
			perFile := (32 << 20) / size.n
			var f File
			b.SetBytes(int64(size.n))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if i%perFile == 0 {
					var err error
					if f, err = m.Create("a"); err != nil {
						b.Fatal(err)
					}
				}
				i++
				if _, err := f.Write(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCrashClone(b *testing.B) {
	for _, files := range []int{10, 1000} {
		b.Run("files="+strconv.Itoa(files), func(b *testing.B) {
			m := NewMem()
			if err := m.MkdirAll("db", 0o755); err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 4<<10)
			for i := range files {
				f, err := m.Create("db/" + strconv.Itoa(i))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.Write(buf); err != nil {
					b.Fatal(err)
				}
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
			}
			for _, dir := range []string{"/", "db"} {
				d, err := m.OpenDir(dir)
				if err != nil {
					b.Fatal(err)
				}
				if err := d.Sync(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = m.CrashClone()
			}
		})
	}
}
