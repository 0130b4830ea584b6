package block

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
)

// scanBlocks builds the blocks of the side-by-side run's scan: 4 KiB blocks
// of 16-byte keys (as internal keys) with 256-byte values, restart interval
// 16, about 64 MiB of them in all, each in its own allocation as a block
// cache holds them, in a random order so that neither the processor's
// caches nor its prefetcher have seen a block before its turn.
func scanBlocks(tb testing.TB) [][]byte {
	const total = 64 << 20
	rng := rand.New(rand.NewPCG(1, 2))
	value := make([]byte, 256)
	var bld Builder
	bld.Init(16)
	var blocks [][]byte
	key := make([]byte, 16)
	for k, size := 0, 0; size < total; k++ {
		binary.BigEndian.PutUint32(key, uint32(3*k))
		for i := range value {
			value[i] = byte(' ' + rng.IntN(95))
		}
		bld.Add(base.MakeInternalKey(key, base.SeqNum(k+1), base.KindSet).Append(nil), value)
		if bld.EstimatedSize() >= 4<<10 {
			blocks = append(blocks, append([]byte(nil), bld.Finish()...))
			size += len(blocks[len(blocks)-1])
			bld.Reset()
		}
	}
	rng.Shuffle(len(blocks), func(i, j int) { blocks[i], blocks[j] = blocks[j], blocks[i] })
	return blocks
}

// BenchmarkBlockScanCold times a table iterator's walk through blocks that
// are not in the processor's caches: InitInternal, First and Next to the
// end of each block. Three ways of walking take turns block by block, so
// that load from other processes hits them alike, and each reports its
// time per entry: touch-init is what a table iterator does (init touches
// the block), touch-first touches in First (after init has waited for the
// restart count), none positions at the first entry without touching.
func BenchmarkBlockScanCold(b *testing.B) {
	blocks := scanBlocks(b)
	modes := []string{"none", "touch-first", "touch-init"}
	var its [3]Iter
	var spent [3]time.Duration
	var entries [3]int
	j := 0
	for b.Loop() {
		m := j % len(modes)
		it := &its[m]
		start := time.Now()
		if m == 1 {
			it.scanning = false // First touches, not init
		}
		if err := it.InitInternal(blocks[j]); err != nil {
			b.Fatal(err)
		}
		var ok bool
		if m == 0 {
			ok = it.loadAt(0, 0)
		} else {
			ok = it.First()
		}
		n := 0
		for ; ok; ok = it.Next() {
			n += len(it.Key())
		}
		spent[m] += time.Since(start)
		entries[m] += n / 24
		if j++; j == len(blocks) {
			j = 0
		}
	}
	for m, name := range modes {
		if entries[m] > 0 {
			b.ReportMetric(float64(spent[m].Nanoseconds())/float64(entries[m]), name+"-ns/entry")
		}
	}
}
