package manifest

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/vfs"
)

// FuzzVersionEdit feeds arbitrary bytes to Decode. Decode must never panic;
// it either fails with a corruption error, or yields an edit whose encoding
// is canonical: encoding it and decoding again gives the same edit, and that
// encoding is a fixed point. Inputs that decode also go through the version
// builder, which must reject or apply them without panicking.
func FuzzVersionEdit(f *testing.F) {
	for _, e := range testEdits() {
		f.Add(e.Encode(nil))
	}
	for _, name := range []string{"version_edit.bin", "version_edit_ingest.bin"} {
		if golden, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(golden)
		}
	}
	f.Add([]byte{})
	f.Add([]byte{0x80})
	f.Add([]byte{tagNewFile, 0, 1, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add((&VersionEdit{NewFiles: []NewFileEntry{{Level: 1, Meta: rangeDelFile(7, "a", "m")}}}).Encode(nil))
	f.Add([]byte{tagDeletedFile, 6, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})

	f.Fuzz(func(t *testing.T, data []byte) {
		orig := bytes.Clone(data)
		var e VersionEdit
		if err := e.Decode(data); err != nil {
			if !base.IsCorruption(err) {
				t.Fatalf("Decode error not marked corruption: %v", err)
			}
			return
		}
		if !bytes.Equal(orig, data) {
			t.Fatal("Decode modified its input")
		}
		enc := e.Encode(nil)
		if len(enc) > len(data) {
			// Varints are re-encoded minimally and nothing is added.
			t.Fatalf("re-encoding grew from %d to %d bytes", len(data), len(enc))
		}
		var e2 VersionEdit
		if err := e2.Decode(enc); err != nil {
			t.Fatalf("re-encoded edit does not decode: %v\n%s", err, e.String())
		}
		if e.String() != e2.String() {
			t.Fatalf("round trip changed the edit:\n%s\nvs\n%s", e.String(), e2.String())
		}
		if enc2 := e2.Encode(nil); !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not a fixed point:\n%x\n%x", enc, enc2)
		}
		b := newVersionBuilder(&Version{})
		if err := b.apply(&e); err == nil {
			v, _ := b.build()
			_ = v.CheckConsistency()
			_ = v.String()
		}
	})
}

// FuzzRecover replays fuzzed MANIFESTs. The input is a sequence of records,
// each a uvarint length and that many bytes (a short last one is cut to
// what is there), framed with wal.Writer so that the fuzzer reaches edit
// decoding and application rather than checksum failures, followed by tail,
// appended raw (torn or junk endings). Recover must not panic; it fails
// with corruption, or recovers a consistent version that survives a second
// recovery unchanged.
func FuzzRecover(f *testing.F) {
	edits := testEdits()
	snap := &VersionEdit{}
	snap.SetLogNumber(1)
	snap.SetNextFileNumber(30)
	snap.SetLastSeqNum(2000)
	records := func(es ...*VersionEdit) []byte {
		var b []byte
		for _, e := range es {
			enc := e.Encode(nil)
			b = binary.AppendUvarint(b, uint64(len(enc)))
			b = append(b, enc...)
		}
		return b
	}
	f.Add(records(snap), []byte(nil))
	f.Add(records(snap, edits["new-file"], edits["all"]), []byte(nil))
	f.Add(records(snap, edits["all"], edits["all"]), []byte{1, 2, 3})
	f.Add(records(snap, edits["new-file-other-checksum"], edits["deleted"]), []byte(nil))
	f.Add(records(edits["all"]), make([]byte, 20))
	f.Add([]byte{}, []byte("MANIFEST"))

	f.Fuzz(func(t *testing.T, recs, tail []byte) {
		if len(recs)+len(tail) > maxRecoverInput {
			return
		}
		checkRecover(t, recs, tail)
	})
}

// maxRecoverInput bounds FuzzRecover's inputs. Each execution recovers twice
// (about 300 µs), the fuzzer's mutations grow inputs by up to a kilobyte at
// a time, and minimizing an input takes executions that grow with the
// square of its length: inputs of 0.5 to 3 KB stalled a 5-minute run for a
// minute at a time (86% of it). 384 bytes hold the seeds, a few full edits;
// larger inputs the fuzzer once kept run in TestRecoverRegressions.
const maxRecoverInput = 384

// checkRecover replays recs, framed as records, and tail as a MANIFEST (see
// FuzzRecover).
func checkRecover(t *testing.T, recs, tail []byte) {
	var buf bytes.Buffer
	w := wal.NewWriter(&buf)
	for len(recs) > 0 {
		n, k := binary.Uvarint(recs)
		if k <= 0 {
			break
		}
		recs = recs[k:]
		n = min(n, uint64(len(recs)))
		if _, err := w.WriteRecord(recs[:n]); err != nil {
			t.Fatal(err)
		}
		recs = recs[n:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	buf.Write(tail)

	mem := vfs.NewMem()
	if err := mem.MkdirAll("db", 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, mem, ManifestFileName("db", 1), buf.Bytes())
	writeFile(t, mem, CurrentFileName("db"), []byte("MANIFEST-000001\n"))
	vs, err := Recover(mem, "db")
	if err != nil {
		// A MANIFEST that names another comparer (tag 1) is not damaged:
		// it is a database of another order, and Recover says so as an
		// invalid argument, naming both (found by this fuzzer).
		if !base.IsCorruption(err) && !(errors.Is(err, base.ErrInvalidArgument) && strings.Contains(err.Error(), "ordered by comparer")) {
			t.Fatalf("Recover error neither corruption nor a comparer mismatch: %v", err)
		}
		return
	}
	v := vs.Current()
	if err := v.CheckConsistency(); err != nil {
		t.Fatalf("recovered an inconsistent version: %v", err)
	}
	v.Unref()
	want := state(vs)
	if err := vs.LogAndApply(&VersionEdit{}); err != nil {
		t.Fatal(err)
	}
	if err := vs.Close(); err != nil {
		t.Fatal(err)
	}
	vs, err = Recover(mem, "db")
	if err != nil {
		t.Fatalf("second recovery: %v", err)
	}
	if got := state(vs); got != want {
		t.Fatalf("second recovery differs:\n%s\nvs\n%s", got, want)
	}
	if err := vs.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRecoverRegressions runs checkRecover on the inputs over
// maxRecoverInput that FuzzRecover once kept in testdata/fuzz.
func TestRecoverRegressions(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "recover-regressions", "*.recs"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no regression inputs: %v", err)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			recs, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			tail, err := os.ReadFile(strings.TrimSuffix(p, ".recs") + ".tail")
			if err != nil {
				t.Fatal(err)
			}
			checkRecover(t, recs, tail)
		})
	}
}

// FuzzParseFileName checks that ParseFileName never panics, and that a name
// it accepts names the same file as the name the helpers build for its kind
// and number.
func FuzzParseFileName(f *testing.F) {
	for _, name := range []string{"000001.sst", "000002.log", "MANIFEST-000003", "CURRENT", "LOCK",
		"000004.dbtmp", "1.sst", "MANIFEST-18446744073709551615", "x.sst", ".log", "MANIFEST-"} {
		f.Add(name)
	}
	f.Fuzz(func(t *testing.T, name string) {
		kind, num, ok := ParseFileName(name)
		if !ok {
			if kind != FileKindUnknown || num != 0 {
				t.Fatalf("%q: not ok but kind %s, number %d", name, kind, num)
			}
			return
		}
		var built string
		switch kind {
		case FileKindTable:
			built = TableFileName("", num)
		case FileKindLog:
			built = LogFileName("", num)
		case FileKindManifest:
			built = ManifestFileName("", num)
		case FileKindCurrent:
			built = CurrentFileName("")
		case FileKindLock:
			built = LockFileName("")
		case FileKindTemp:
			built = TempFileName("", num)
		default:
			t.Fatalf("%q: ok with kind %s", name, kind)
		}
		k2, n2, ok2 := ParseFileName(built)
		if !ok2 || k2 != kind || n2 != num {
			t.Fatalf("%q parses as (%s, %d) but %q as (%s, %d, %v)", name, kind, num, built, k2, n2, ok2)
		}
		// Canonical names (no padding beyond six digits) round-trip exactly.
		if len(name) == len(built) && name != built && (kind == FileKindTable || kind == FileKindManifest) {
			t.Fatalf("%q and %q have one length but differ", name, built)
		}
	})
}
