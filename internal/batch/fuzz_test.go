package batch

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
)

// FuzzBatchDecode feeds arbitrary bytes to SetRepr. Malformed input must give
// an error marked base.ErrCorruption (never a panic or a hang); well-formed
// input must read back as records that re-encode to an equivalent batch and
// that an Index serves correctly.
func FuzzBatchDecode(f *testing.F) {
	f.Add(goldenBytes(f, filepath.Join("testdata", "batch.golden")))
	f.Add(New().Repr())
	f.Add(build(1, set("a", "1")).Repr())
	f.Add(build(base.MaxSeqNum, del("a")).Repr())
	f.Add(build(99, set("k", ""), del("k"), set("k", "v2"), set("", strings.Repeat("v", 200))).Repr())
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x10})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 1, 'a', 1, 'b'})
	f.Add(build(5, set("a", "1"), rdel("a", "c"), set("b", "2"), rdel("", "")).Repr())
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0x0F, 1, 'a', 5, 'b'})
	// Unbounded range deletions (an empty end): every key from the start.
	f.Add(build(7, set("a", "1"), set("m", "2"), rdel("b", ""), set("z", "3")).Repr())
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0x0F, 1, 'a', 0})
	f.Add(build(9, mrg("a", "1"), set("a", "2"), mrg("a", ""), del("a"), mrg("b", "x")).Repr())
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0x02, 1, 'a', 1, 'b'})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0x02, 1, 'a'})

	f.Fuzz(func(t *testing.T, data []byte) {
		var b Batch
		// SetRepr adopts its argument; keep the fuzzer's buffer out of it.
		err := b.SetRepr(bytes.Clone(data))
		if err != nil {
			if !base.IsCorruption(err) {
				t.Fatalf("error not marked corruption: %v", err)
			}
			if b.Count() != 0 || b.Len() != HeaderLen {
				t.Fatalf("a failed SetRepr changed the batch")
			}
			return
		}

		seq, count, err := DecodeHeader(data)
		if err != nil {
			t.Fatalf("SetRepr accepted what DecodeHeader rejects: %v", err)
		}
		if seq != b.SeqNum() || count != b.Count() {
			t.Fatalf("header (%d, %d) vs batch (%d, %d)", seq, count, b.SeqNum(), b.Count())
		}

		// Re-encode the records; the result must decode to the same records.
		// It need not be byte-identical: a varint may have been non-minimal.
		ops := readAll(t, &b)
		if uint32(len(ops)) != count {
			t.Fatalf("read %d records, header says %d", len(ops), count)
		}
		// DecodeAt, at the offsets the Reader reports, decodes the same
		// records, non-minimal varints included.
		r := b.Reader()
		for {
			off := r.Offset()
			kind, key, value, ok, err := r.Next()
			if err != nil || !ok {
				break
			}
			k2, key2, value2 := DecodeAt(b.Repr(), uint32(off))
			if k2 != kind || !bytes.Equal(key2, key) || !bytes.Equal(value2, value) || (value == nil) != (value2 == nil) {
				t.Fatalf("DecodeAt(%d) = %v %q %q; the Reader read %v %q %q", off, k2, key2, value2, kind, key, value)
			}
			if !bytes.Equal(KeyAt(b.Repr(), uint32(off)), key) {
				t.Fatalf("KeyAt(%d) differs from the Reader's key %q", off, key)
			}
		}
		re := build(seq, ops...)
		if re.Len() > len(data) {
			t.Fatalf("re-encoding grew from %d to %d bytes", len(data), re.Len())
		}
		var c Batch
		if err := c.SetRepr(re.Repr()); err != nil {
			t.Fatalf("re-encoded batch rejected: %v", err)
		}
		if got := readAll(t, &c); len(got) != len(ops) {
			t.Fatalf("re-encoded batch has %d records, want %d", len(got), len(ops))
		}

		// The index agrees with the last write to each key, a range
		// deletion turning every key it covers into a Delete.
		model := indexModel{}
		var ranges []op
		for _, o := range ops {
			if o.kind != base.KindRangeDelete {
				model[o.key] = o
				continue
			}
			ranges = append(ranges, o)
			for k := range model {
				if o.key <= k && (o.value == "" || k < o.value) { // "" is unbounded
					model[k] = del(k)
				}
			}
		}
		if n := NewIndex(&b).NumRangeDeletions(); n != len(ranges) {
			t.Fatalf("index has %d range deletions, want %d", n, len(ranges))
		}
		x := NewIndex(&b)
		if x.Len() != len(model) {
			t.Fatalf("index has %d keys, want %d", x.Len(), len(model))
		}
		for k, want := range model {
			v, kind, found := x.Get([]byte(k))
			if !found || kind != want.kind || string(v) != want.value {
				t.Fatalf("Get(%q) = %q, %v, %v; want %q, %v", k, v, kind, found, want.value, want.kind)
			}
		}
		for _, r := range ranges {
			if _, ok := model[r.key]; ok || (r.value != "" && r.key >= r.value) {
				continue
			}
			if _, kind, found := x.Get([]byte(r.key)); !found || kind != base.KindDelete {
				t.Fatalf("Get(%q) inside deleted range [%q, %q) = %v, %v; want a Delete", r.key, r.key, r.value, kind, found)
			}
		}
		it := x.NewIter(nil, nil)
		n := 0
		var prev []byte
		for kv := it.First(); kv != nil; kv = it.Next() {
			if n > 0 && bytes.Compare(prev, kv.K.UserKey) >= 0 {
				t.Fatalf("iterator out of order: %q then %q", prev, kv.K.UserKey)
			}
			prev = kv.K.UserKey
			n++
		}
		if n != len(model) {
			t.Fatalf("iterator gave %d keys, want %d", n, len(model))
		}
	})
}
