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
		for step, b := range data[3:] {
			key := []byte(testKey(int(b>>3) % (cfg.keySpace + 2)))
			if b>>3&1 == 1 {
				key = append(key, '~') // between keys
			}
			var ok bool
			switch b & 7 {
			case 0:
				ok = it.First()
				m.seekGE(nil)
			case 1:
				ok = it.Last()
				m.seekLT([]byte("\xff"))
			case 4:
				ok = it.SeekGE(key)
				m.seekGE(key)
			case 5:
				ok = it.SeekLT(key)
				m.seekLT(key)
			case 2, 6:
				ok = it.Next()
				m.next()
			default:
				ok = it.Prev()
				m.prev()
			}
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
	})
}
