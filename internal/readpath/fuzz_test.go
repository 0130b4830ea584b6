package readpath

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
)

// maxIteratorOps bounds FuzzIteratorOps's sequences: 200 calls walk the
// 30-key LSM several times over in both directions.
const maxIteratorOps = 200

// FuzzIteratorOps drives the DB iterator with an arbitrary sequence of
// positioning calls, bounds and snapshot over a fixed random LSM, and checks
// every step against the model. Input: byte 0 picks the snapshot, bytes 1
// and 2 the bounds (0 = none), then one byte per operation: the low 3 bits
// the call, the rest the key of a seek.
//
// Sequences are at most maxIteratorOps long: the fuzzer's mutations grow
// inputs by up to a kilobyte at a time, and minimizing an input takes
// executions that grow with the square of its length, so inputs of hundreds
// of operations stalled a 5-minute run for most of its time.
func FuzzIteratorOps(f *testing.F) {
	rng := rand.New(rand.NewPCG(21, 21))
	cfg := defaultLSMConfig()
	cfg.keySpace, cfg.opsPerPart = 30, 40
	db := buildLSM(f, rng, cfg)

	f.Add([]byte{0, 0, 0, 0, 2, 2, 3, 3, 1, 3, 2})
	f.Add([]byte{255, 5, 20, 1, 3, 3, 2, 2, 0, 2, 3, 2})
	f.Add([]byte{100, 0, 9, 4 | 8<<3, 3, 2, 5 | 12<<3, 2, 2, 3})
	f.Add([]byte{7, 12, 3, 0, 1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 3 || len(data) > 3+maxIteratorOps {
			return
		}
		var seq base.SeqNum
		switch data[0] {
		case 255:
			seq = ^base.SeqNum(0)
		default:
			seq = base.SeqNum(data[0]) * (db.maxSeq + 1) / 255
		}
		bound := func(b byte) []byte {
			if b == 0 {
				return nil
			}
			return []byte(testKey(int(b) % (cfg.keySpace + 2)))
		}
		lower, upper := bound(data[1]), bound(data[2])
		keys, values := db.model.visible(seq, lower, upper)
		m := &iterModel{keys: keys, values: values, lower: lower, upper: upper, none: true}
		it := NewIterator(context.Background(), db.view, readEnv(), seq, IterOptions{LowerBound: lower, UpperBound: upper})
		defer func() {
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
		}()
		runIterOps(t, it, m, cfg, data[3:])
	})
}

// iterOp makes the move op (0 First, 1 Last, 4 SeekGE key, 5 SeekLT key,
// 2 and 6 Next, 3 and 7 Prev) on it and on the model m, and returns the
// iterator's answer.
func iterOp(it *Iterator, m *iterModel, op int, key []byte) bool {
	switch op & 7 {
	case 0:
		m.seekGE(nil)
		return it.First()
	case 1:
		m.seekLT([]byte("\xff"))
		return it.Last()
	case 4:
		m.seekGE(key)
		return it.SeekGE(key)
	case 5:
		m.seekLT(key)
		return it.SeekLT(key)
	case 2, 6:
		m.next()
		return it.Next()
	default:
		m.prev()
		return it.Prev()
	}
}

// runIterOps runs the fuzz targets' operations on it and m, one byte each:
// the move in its low three bits, the key (with '~' appended, between keys,
// when bit 3 is set) in the rest, and fails at the first difference.
func runIterOps(t *testing.T, it *Iterator, m *iterModel, cfg lsmConfig, ops []byte) {
	for step, b := range ops {
		key := []byte(testKey(int(b>>3) % (cfg.keySpace + 2)))
		if b>>3&1 == 1 {
			key = append(key, '~') // between keys
		}
		ok := iterOp(it, m, int(b), key)
		if err := it.Error(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if ok != m.valid() {
			t.Fatalf("step %d (op %d): valid %t, model %t", step, b&7, ok, m.valid())
		}
		if ok && (string(it.Key()) != m.keys[m.pos] || string(it.Value()) != string(m.values[m.pos])) {
			t.Fatalf("step %d (op %d): at %q=%q, model %q=%q", step, b&7, it.Key(), it.Value(), m.keys[m.pos], m.values[m.pos])
		}
	}
}
