package etcd

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shaledb/shale/driver"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The benchmarks measure the driver against the shared in-process cluster:
// every RPC crosses loopback gRPC to a member and, for writes, a Raft round
// among the three members (without fsync, see memberConfig). Run them with
//
//	go test -run '^$' -bench . -benchtime 2s
//
// on an otherwise idle machine: the members share its cores with the
// benchmark.

// benchDB opens a namespace holding n keys of 100-byte values.
func benchDB(b *testing.B, n int, params string) *driver.DB {
	b.Helper()
	db := openDB(b, params)
	for start := 0; start < n; start += 500 {
		var batch driver.Batch
		for i := start; i < min(n, start+500); i++ {
			batch.Put(benchKey(i), make([]byte, 100))
		}
		if err := db.Write(bg, &batch); err != nil {
			b.Fatal(err)
		}
	}
	return db
}

func benchKey(i int) []byte { return fmt.Appendf(nil, "key%06d", i) }

func BenchmarkGet(b *testing.B) {
	db := benchDB(b, 1000, "")
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := db.Get(bg, benchKey(i%1000)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPut(b *testing.B) {
	db := openDB(b, "")
	v := make([]byte, 100)
	for i := 0; b.Loop(); i++ {
		if err := db.Put(bg, benchKey(i%1000), v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMultiGet16(b *testing.B) {
	db := benchDB(b, 1000, "")
	keys := make([][]byte, 16)
	for i := 0; b.Loop(); i++ {
		for j := range keys {
			keys[j] = benchKey((i*16 + j*61) % 1000)
		}
		if _, err := db.MultiGet(bg, keys); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScan10k scans 10,000 keys forward (the default page of 256 keys:
// 40 Ranges) and, in the Backward variant, from the end (80 Ranges, each
// backward page costing the server a walk of the keys below it).
func BenchmarkScan10k(b *testing.B) {
	const n = 10000
	db := benchDB(b, n, "")
	for _, dir := range []string{"Forward", "Backward"} {
		b.Run(dir, func(b *testing.B) {
			for b.Loop() {
				it, err := db.NewIterator(bg, nil)
				if err != nil {
					b.Fatal(err)
				}
				seen := 0
				if dir == "Forward" {
					for ok := it.First(); ok; ok = it.Next() {
						seen++
					}
				} else {
					for ok := it.Last(); ok; ok = it.Prev() {
						seen++
					}
				}
				if err := it.Close(); err != nil || seen != n {
					b.Fatalf("scan saw %d keys, %v", seen, err)
				}
			}
			b.ReportMetric(float64(n), "keys/op")
		})
	}
}

// BenchmarkVerifyChecksum is a HashKV of every member at one revision (and
// the member list and revision it needs first), over a cluster holding the
// other benchmarks' and tests' keys.
func BenchmarkVerifyChecksum(b *testing.B) {
	db := benchDB(b, 1000, "")
	for b.Loop() {
		if err := db.VerifyChecksum(bg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHashKV is one member's HashKV (a new connection to the member and
// the RPC), the unit VerifyChecksum repeats per member. keys/op is the
// cluster's key count: the hash covers every revision of every key since the
// last compaction.
func BenchmarkHashKV(b *testing.B) {
	benchDB(b, 1000, "")
	cn := openConn(b, shared.dsn(b, ""))
	cli := rawClient(b, shared)
	resp, err := cli.Get(bg, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly())
	if err != nil {
		b.Fatal(err)
	}
	rev := resp.Header.Revision
	url := shared.members[0].clientURL.String()
	for b.Loop() {
		if _, err := cn.hashKV(bg, url, rev); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(resp.Count), "keys")
}

// BenchmarkDeleteRange10k deletes a range of 10,000 keys: one DeleteRange
// RPC, one Raft round. Writing the keys back (20 batches) is not timed.
func BenchmarkDeleteRange10k(b *testing.B) {
	const n = 10000
	db := openDB(b, "")
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for start := 0; start < n; start += 500 {
			var batch driver.Batch
			for j := start; j < start+500; j++ {
				batch.Put(benchKey(j), make([]byte, 100))
			}
			if err := db.Write(bg, &batch); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		if err := db.DeleteRange(bg, benchKey(0), benchKey(n)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if _, err := db.Get(bg, benchKey(n/2)); !errors.Is(err, driver.ErrNotFound) {
		b.Fatalf("after DeleteRange, Get = %v; want ErrNotFound", err)
	}
	b.ReportMetric(n, "keys/op")
}
