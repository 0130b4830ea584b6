package wal

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	default:
		return fmt.Sprintf("%dB", n)
	}
}

var benchSizes = []int{64, 1 << 10, 16 << 10, 128 << 10}

// BenchmarkWALAppend appends records to a file in b.TempDir(), with an fsync
// after every record (sync=true) or none (sync=false: the Writer hands full
// blocks to the file). The file is rewritten from its start every 64 MiB so
// long runs do not fill the disk.
func BenchmarkWALAppend(b *testing.B) {
	for _, size := range benchSizes {
		for _, sync := range []bool{false, true} {
			b.Run(fmt.Sprintf("size=%s/sync=%t", sizeName(size), sync), func(b *testing.B) {
				f, err := os.Create(filepath.Join(b.TempDir(), "000001.log"))
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				rec := randomRecord(rand.New(rand.NewPCG(1, 2)), size)
				w := NewWriter(f)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := w.WriteRecord(rec); err != nil {
						b.Fatal(err)
					}
					if sync {
						if err := w.Sync(); err != nil {
							b.Fatal(err)
						}
					}
					if w.Size() >= 64<<20 {
						if err := w.Flush(); err != nil {
							b.Fatal(err)
						}
						if _, err := f.Seek(0, io.SeekStart); err != nil {
							b.Fatal(err)
						}
						w = NewWriter(f)
					}
				}
				if err := w.Flush(); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

// BenchmarkWALRead reads an in-memory log of 8 MiB of records, starting a new
// Reader when it ends.
func BenchmarkWALRead(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("size=%s", sizeName(size)), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			var records [][]byte
			for range max(1, (8<<20)/size) {
				records = append(records, randomRecord(rng, size))
			}
			data := writeLog(b, records).data
			br := bytes.NewReader(data)
			r := NewReader(br, TolerateCorruptedTailRecords)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				_, err := r.Next()
				if err == io.EOF {
					br.Reset(data)
					r = NewReader(br, TolerateCorruptedTailRecords)
					_, err = r.Next()
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
