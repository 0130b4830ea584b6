package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/engine"
)

// BenchmarkMerge compares shale's merge operator with Pebble's on RocksDB's
// uint64add counters: merge=Merge of 1 into one of mergeKeys keys,
// round-robin (no sync; the WAL buffered, as the other fills); get=Get of a
// random counter after 32 merges each, 16 of them flushed into a table and
// 16 in the memtable, so that a read combines a table's operand with the
// memtable's. The engines alternate within each round
// (round=N/engine=...), so that a slow spell of the machine hits both:
// compare the medians over the rounds (go test -bench Merge -run XXX).
func BenchmarkMerge(b *testing.B) {
	for round := range mergeRounds {
		for _, eng := range []string{"shale", "pebble"} {
			b.Run(fmt.Sprintf("op=uint64add/round=%d/engine=%s/phase=merge", round+1, eng), func(b *testing.B) {
				s := openMergeStore(b, eng)
				defer s.close(b)
				one := binary.LittleEndian.AppendUint64(nil, 1)
				key := make([]byte, keySize)
				b.ResetTimer()
				for i := range b.N {
					if err := s.merge(makeKey(key, i%mergeKeys, 0), one); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("op=uint64add/round=%d/engine=%s/phase=get", round+1, eng), func(b *testing.B) {
				s := openMergeStore(b, eng)
				defer s.close(b)
				one := binary.LittleEndian.AppendUint64(nil, 1)
				key := make([]byte, keySize)
				for half := range 2 {
					for range 16 {
						for k := range mergeKeys {
							if err := s.merge(makeKey(key, k, 0), one); err != nil {
								b.Fatal(err)
							}
						}
					}
					if half == 0 {
						if err := s.flush(); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ResetTimer()
				x := uint64(1)
				for range b.N {
					x = x*6364136223846793005 + 1442695040888963407
					v, err := s.get(makeKey(key, int(x>>33)%mergeKeys, 0))
					if err != nil {
						b.Fatal(err)
					}
					if n := binary.LittleEndian.Uint64(v); n != 32 {
						b.Fatalf("counter = %d; want 32", n)
					}
				}
			})
		}
	}
}

const (
	mergeRounds = 3
	mergeKeys   = 4096
)

// mergeStore is what BenchmarkMerge needs of an engine.
type mergeStore struct {
	merge func(key, operand []byte) error
	get   func(key []byte) ([]byte, error)
	flush func() error
	close func(testing.TB)
}

func openMergeStore(b *testing.B, eng string) mergeStore {
	dir := b.TempDir()
	ctx := context.Background()
	switch eng {
	case "shale":
		op, err := engine.ParseMergeOperator("uint64add")
		if err != nil {
			b.Fatal(err)
		}
		db := driver.OpenDB(engine.NewConnector(dir, &engine.Options{MergeOperator: op}))
		return mergeStore{
			merge: func(k, v []byte) error { return db.Merge(ctx, k, v) },
			get:   func(k []byte) ([]byte, error) { return db.Get(ctx, k) },
			flush: func() error { return db.Flush(ctx) },
			close: func(t testing.TB) {
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
			},
		}
	default:
		db, err := pebble.Open(dir, &pebble.Options{Merger: uint64AddMerger, Logger: quietPebbleLogger{}})
		if err != nil {
			b.Fatal(err)
		}
		return mergeStore{
			merge: func(k, v []byte) error { return db.Merge(k, v, pebble.NoSync) },
			get: func(k []byte) ([]byte, error) {
				v, c, err := db.Get(k)
				if err != nil {
					return nil, err
				}
				out := append([]byte(nil), v...)
				return out, c.Close()
			},
			flush: db.Flush,
			close: func(t testing.TB) {
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
			},
		}
	}
}

// uint64AddMerger is RocksDB's UInt64AddOperator for Pebble.
var uint64AddMerger = &pebble.Merger{
	Name: "uint64add",
	Merge: func(_, value []byte) (pebble.ValueMerger, error) {
		m := &uint64Add{}
		return m, m.MergeNewer(value)
	},
}

type uint64Add struct{ sum uint64 }

func (m *uint64Add) MergeNewer(v []byte) error {
	if len(v) != 8 {
		return fmt.Errorf("uint64add: %d-byte operand", len(v))
	}
	m.sum += binary.LittleEndian.Uint64(v)
	return nil
}

func (m *uint64Add) MergeOlder(v []byte) error { return m.MergeNewer(v) }

func (m *uint64Add) Finish(bool) ([]byte, io.Closer, error) {
	return binary.LittleEndian.AppendUint64(nil, m.sum), nil, nil
}
