package memtable

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/batch"
	"github.com/shaledb/shale/internal/cpubench"
)

// fillKeys is the bench module's 32 MiB fill: 32 MiB of 256-byte values.
const fillKeys = 32 << 20 / 256

// BenchmarkFillApply is the memtable's share of the bench module's "random
// fill, 1 put/write" phase (issue 15): the fill's keys (the big-endian
// uint32 k*3 zero-filled to 16 bytes, in a fixed random order) with 256-byte
// values, applied one single-record batch each to a memtable of the
// engine's 64 MiB write buffer, which holds all of them. A new memtable is
// made, untimed, every fillKeys records. Most of the time goes into cache
// misses along the skiplist search.
func BenchmarkFillApply(b *testing.B) {
	perm := rand.New(rand.NewPCG(1, 2)).Perm(fillKeys)
	value := make([]byte, 256)
	var key [16]byte
	var bt batch.Batch
	var m *MemTable
	defer func() {
		if m != nil {
			m.Free()
		}
	}()
	i := fillKeys
	seq := base.SeqNum(1)
	var cpu time.Duration
	b.ReportAllocs()
	cpu0, cpuOK := cpubench.ProcessCPU()
	for b.Loop() {
		if i == fillKeys {
			b.StopTimer()
			cpu += cpuSince(cpu0)
			if m != nil {
				m.Free()
			}
			m = New(64<<20 + 8<<20)
			i = 0
			cpu0, _ = cpubench.ProcessCPU()
			b.StartTimer()
		}
		fillKey(&key, perm[i])
		bt.Reset()
		bt.Set(key[:], value)
		if err := m.Apply(&bt, seq); err != nil {
			b.Fatal(err)
		}
		seq++
		i++
	}
	cpu += cpuSince(cpu0)
	b.StopTimer()
	cmps, nodes := searchCost(m, perm[:i])
	b.ReportMetric(cmps, "cmp/search")
	b.ReportMetric(nodes, "nodes/search")
	// CPU time is less disturbed than wall time by other processes on a
	// shared machine. Where the system does not give it (see
	// cputime_other_test.go), no figure rather than a zero one.
	if cpuOK {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// fillKey writes the fill's key for k into key: the big-endian uint32 k*3,
// zero-filled to 16 bytes (key's last 12 bytes stay as they are, zero).
func fillKey(key *[16]byte, k int) {
	binary.BigEndian.PutUint32(key[:4], uint32(k*3))
}

// cpuSince is the process CPU time used since cpubench.ProcessCPU said cpu0. The
// process's CPU time is read per system: cputime_{unix,windows,other}_test.go.
func cpuSince(cpu0 time.Duration) time.Duration {
	now, _ := cpubench.ProcessCPU()
	return now - cpu0
}

// searchCost returns the mean number of key comparisons and of distinct
// nodes loaded by a search from the head for a new version of a key in m,
// over up to 10,000 of the fill's keys ks: the nodes are the cache misses of
// a search in a memtable larger than the cache, less the few near the top
// that stay cached. It walks the list as seek does, counting: a comparison
// its link's prefix settles loads no node (see link).
func searchCost(m *MemTable, ks []int) (cmps, nodes float64) {
	if len(ks) == 0 {
		return 0, 0
	}
	ks = ks[:min(len(ks), 10000)]
	var key [16]byte
	seen := map[uint32]bool{}
	for _, k := range ks {
		fillKey(&key, k)
		ik := base.InternalKey{UserKey: key[:], Trailer: base.MakeTrailer(base.MaxSeqNum, base.KindSet)}
		kp := m.keyPrefix32(key[:])
		clear(seen)
		prev := m.head
		for level := int(m.height.Load()) - 1; level >= 0; level-- {
			for {
				next := link(m.arena.node(prev).next[level].Load())
				if next == 0 {
					break
				}
				cmps++
				if next.prefix() == kp {
					seen[next.off()] = true
				}
				if m.compareLink(ik, kp, next) <= 0 {
					break
				}
				seen[next.off()] = true
				prev = next.off()
			}
		}
		nodes += float64(len(seen))
	}
	return cmps / float64(len(ks)), nodes / float64(len(ks))
}

// BenchmarkFillApplySmall is BenchmarkFillApply with go-ethereum's dbtest
// records (random 32-byte keys, 32-byte values): 600,000 single-record
// batches into a 64 MiB memtable, whose nodes are then dense and the
// skiplist deep. A new memtable is made, untimed, every 600,000 records.
func BenchmarkFillApplySmall(b *testing.B) {
	const n = 600_000
	rng := rand.New(rand.NewPCG(3, 4))
	keys := make([]byte, 32*n)
	for i := range keys {
		keys[i] = byte(rng.Uint32())
	}
	value := make([]byte, 32)
	var bt batch.Batch
	var m *MemTable
	defer func() {
		if m != nil {
			m.Free()
		}
	}()
	i := n
	seq := base.SeqNum(1)
	var cpu time.Duration
	cpu0, cpuOK := cpubench.ProcessCPU()
	for b.Loop() {
		if i == n {
			b.StopTimer()
			cpu += cpuSince(cpu0)
			if m != nil {
				m.Free()
			}
			m = New(64<<20 + 8<<20)
			i = 0
			cpu0, _ = cpubench.ProcessCPU()
			b.StartTimer()
		}
		bt.Reset()
		bt.Set(keys[32*i:32*i+32], value)
		if err := m.Apply(&bt, seq); err != nil {
			b.Fatal(err)
		}
		seq++
		i++
	}
	cpu += cpuSince(cpu0)
	if cpuOK {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkFlushScan is a flush's walk of a memtable BenchmarkFillApply
// filled (fillKeys random keys with 256-byte values, so that consecutive
// entries lie far apart in the arena): every entry in order, its key and
// value appended to a 32 KiB buffer, as a flush's block builder copies
// them. One op is one entry.
func BenchmarkFlushScan(b *testing.B) {
	perm := rand.New(rand.NewPCG(1, 2)).Perm(fillKeys)
	value := make([]byte, 256)
	var key [16]byte
	m := New(64<<20 + 8<<20)
	defer m.Free()
	for i, k := range perm {
		fillKey(&key, k)
		if err := m.Add(base.SeqNum(i+1), base.KindSet, key[:], value); err != nil {
			b.Fatal(err)
		}
	}
	it := m.NewIter(nil, nil)
	defer it.Close()
	buf := make([]byte, 0, 32<<10)
	kv := it.First()
	for b.Loop() {
		if kv == nil {
			kv = it.First()
		}
		if len(buf)+len(kv.K.UserKey)+len(kv.V) > cap(buf) {
			buf = buf[:0]
		}
		buf = append(append(buf, kv.K.UserKey...), kv.V...)
		kv = it.Next()
	}
}
