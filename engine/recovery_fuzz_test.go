package engine

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// recoveryFixture is a small database on a MemFS, built once: keys [0, 6)
// flushed to one table, [6, 12) to a second, [12, 24) only in the newest
// WAL, one synced write per record. The flush of the second table left the
// WAL it made obsolete in place (it is the MANIFEST's last edit). Its
// CURRENT, MANIFEST and newest WAL are what FuzzRecovery replaces.
type recoveryFixture struct {
	template *vfs.MemFS

	currentName, manifestName, walName string
	current, manifest, wal             []byte
	tables                             map[string][]byte // name → contents
	tableKeys                          map[string][2]int // name → the keys it holds

	// manifestEnds[i] is where MANIFEST record i ends: 0 the snapshot, 1
	// the first flush, 2 the second. walEnds[i] is where the record of key
	// fuzzFlushed2+i ends in the newest WAL.
	manifestEnds, walEnds []int64
}

const (
	fuzzFlushed1, fuzzFlushed2, fuzzKeys = 6, 12, 24
)

var (
	recoveryFixtureOnce sync.Once
	recoveryFixtureVal  *recoveryFixture
)

// fuzzOptions are cheap options for the fuzz target's many opens: no block
// cache, no statistics, no read-back of new tables, no compactions, and
// recovery reports dropped.
func fuzzOptions(fs vfs.FS) *Options {
	return &Options{
		FS:                     fs,
		WriteBufferSize:        64 << 10,
		BlockCacheSize:         -1,
		DisableStatistics:      true,
		DisableAutoCompactions: true,
		Sync:                   true,
		Logger:                 slog.New(slog.DiscardHandler),
	}
}

func getRecoveryFixture(t testing.TB) *recoveryFixture {
	recoveryFixtureOnce.Do(func() {
		ctx := context.Background()
		fs := vfs.NewMem()
		db, err := openDatabase("/db", fuzzOptions(fs))
		require.NoError(t, err)
		recKeys(t, db, 0, fuzzFlushed1)
		require.NoError(t, db.Flush(ctx))
		recKeys(t, db, fuzzFlushed1, fuzzFlushed2)
		require.NoError(t, db.Flush(ctx))
		recKeys(t, db, fuzzFlushed2, fuzzKeys)
		require.NoError(t, db.Close())
		// Make the live state the durable one, so clones start from it.
		require.NoError(t, syncDir(fs, "/db"))

		fx := &recoveryFixture{template: fs, tables: map[string][]byte{}}
		fx.currentName = manifest.CurrentFileName("/db")
		fx.current = recRead(t, fs, fx.currentName)
		manifests := recFiles(t, fs, "/db", manifest.FileKindManifest)
		require.Len(t, manifests, 1)
		fx.manifestName = manifests[0]
		fx.manifest = recRead(t, fs, fx.manifestName)
		logs := recFiles(t, fs, "/db", manifest.FileKindLog)
		require.Len(t, logs, 2, "the newest WAL and the one the last flush made obsolete")
		fx.walName = logs[1]
		fx.wal = recRead(t, fs, fx.walName)
		tables := recFiles(t, fs, "/db", manifest.FileKindTable)
		require.Len(t, tables, 2)
		fx.tableKeys = map[string][2]int{tables[0]: {0, fuzzFlushed1}, tables[1]: {fuzzFlushed1, fuzzFlushed2}}
		for _, name := range tables {
			fx.tables[name] = recRead(t, fs, name)
		}
		fx.manifestEnds = recordEnds(t, fx.manifest)
		require.Len(t, fx.manifestEnds, 3)
		fx.walEnds = recordEnds(t, fx.wal)
		require.Len(t, fx.walEnds, fuzzKeys-fuzzFlushed2)
		recoveryFixtureVal = fx
	})
	require.NotNil(t, recoveryFixtureVal, "building the fixture failed")
	return recoveryFixtureVal
}

// recordEnds returns where each record of a log ends.
func recordEnds(t testing.TB, data []byte) []int64 {
	r := wal.NewReader(bytes.NewReader(data), wal.AbsoluteConsistency)
	var ends []int64
	for {
		_, err := r.Next()
		if err != nil {
			require.Equal(t, "EOF", err.Error())
			return ends
		}
		ends = append(ends, r.Offset())
	}
}

// intactPrefix returns how many leading bytes of got are those of orig: the
// first byte damaged (changed, cut or added) is at that offset.
func intactPrefix(orig, got []byte) int64 {
	n := min(len(orig), len(got))
	for i := range n {
		if orig[i] != got[i] {
			return int64(i)
		}
	}
	return int64(n)
}

// cleanLog reports whether data reads as a log without damage other than an
// incomplete final record: what the engine takes for a clean end. intact
// reports whether it has no damage at all.
func cleanLog(data []byte) (clean, intact bool) {
	r := wal.NewReader(bytes.NewReader(data), wal.PointInTime)
	for {
		if _, err := r.Next(); err != nil {
			break
		}
	}
	_, reason := r.Stopped()
	return reason == nil || r.TailIncomplete(), reason == nil
}

// FuzzRecovery fuzzes the bytes of CURRENT, the MANIFEST and the newest WAL
// of a small database, and the WAL recovery mode, and checks the recovery
// decision. Open either fails with an error marked ErrCorruption and changes
// no file, or it opens with every write whose records lie before the first
// damaged byte (of the MANIFEST for the flushed keys, of the WAL for the
// others), and it never deletes a table that held anything it did not
// recover otherwise: one the recovered state does not name is kept as
// *.orphan. What it recovered must be durable: after a crash, the database
// reopens with the same keys.
func FuzzRecovery(f *testing.F) {
	fx := getRecoveryFixture(f)
	cut := func(b []byte, n int64) []byte { return bytes.Clone(b[:n]) }
	flip := func(b []byte, at int64) []byte { c := bytes.Clone(b); c[at] ^= 0x04; return c }
	m, w, c := fx.manifest, fx.wal, fx.current
	mEnd := fx.manifestEnds
	wEnd := fx.walEnds
	last := len(wEnd) - 1
	for mode := range byte(4) {
		f.Add(mode, c, m, w)
		f.Add(mode, c, cut(m, mEnd[1]+(mEnd[2]-mEnd[1])/2), w)          // torn last MANIFEST record
		f.Add(mode, c, cut(m, mEnd[1]), w)                              // a MANIFEST that lost its last record whole
		f.Add(mode, c, cut(m, mEnd[0]+3), w)                            // torn first flush
		f.Add(mode, c, append(bytes.Clone(m), make([]byte, 100)...), w) // zeros after the MANIFEST
		f.Add(mode, c, flip(m, mEnd[0]+10), w)                          // MANIFEST damaged mid-log
		f.Add(mode, c, flip(m, mEnd[2]-1), w)                           // MANIFEST's last record damaged
		f.Add(mode, c, m, cut(w, wEnd[last]-2))                         // torn last WAL record
		f.Add(mode, c, m, flip(w, wEnd[last]-2))                        // damaged last WAL record
		f.Add(mode, c, m, flip(w, wEnd[5]-2))                           // damaged WAL record mid-log
		f.Add(mode, c, m, append(bytes.Clone(w), 0xff, 0xee, 0xdd))     // garbage after the WAL
		f.Add(mode, []byte("MANIFEST-000099\n"), m, w)
		f.Add(mode, []byte{}, m, w)
	}
	f.Fuzz(func(t *testing.T, modeByte byte, current, manifestData, walData []byte) {
		checkRecovery(t, fx, WALRecoveryMode(modeByte%4), current, manifestData, walData)
	})
}

func checkRecovery(t *testing.T, fx *recoveryFixture, mode WALRecoveryMode, current, manifestData, walData []byte) {
	ctx := context.Background()
	fs := fx.template.CrashClone()
	writeAll(t, fs, fx.currentName, current)
	writeAll(t, fs, fx.manifestName, manifestData)
	writeAll(t, fs, fx.walName, walData)
	before := recDir(t, fs, "/db")

	o := fuzzOptions(fs)
	o.WALRecoveryMode = mode
	db, err := openDatabase("/db", o)
	if err != nil {
		require.True(t, errors.Is(err, ErrCorruption), "an Open that fails must say why with ErrCorruption: %v", err)
		requireSameDir(t, before, recDir(t, fs, "/db"), "a failed Open changes nothing: %v", err)
		return
	}

	// Only the lenient modes open past damage that a crash cannot leave,
	// and absolute_consistency opens only an undamaged WAL.
	manifestClean, _ := cleanLog(manifestData)
	walClean, walIntact := cleanLog(walData)
	require.True(t, manifestClean, "opened with a damaged MANIFEST")
	switch mode {
	case WALRecoveryTolerateCorruptedTailRecords:
		require.True(t, walClean, "tolerate_corrupted_tail_records opened a WAL damaged by more than a torn write")
	case WALRecoveryAbsoluteConsistency:
		require.True(t, walIntact, "absolute_consistency opened a damaged WAL")
	}

	// What must have survived: the flushed keys if the MANIFEST's first
	// flush record is intact (the second flush's keys are then in its table
	// or in the WAL it left), the WAL's keys up to its first damaged byte.
	mIntact := intactPrefix(fx.manifest, manifestData)
	wIntact := intactPrefix(fx.wal, walData)
	want := make([]bool, fuzzKeys)
	for i := range fuzzKeys {
		switch {
		case i < fuzzFlushed2:
			want[i] = fx.manifestEnds[1] <= mIntact
		default:
			want[i] = fx.walEnds[i-fuzzFlushed2] <= wIntact
		}
	}
	got := recPresent(t, db, fuzzKeys)
	for i := range fuzzKeys {
		if want[i] && !got[i] {
			t.Fatalf("key %d lost (mode %s, MANIFEST intact to %d of %d, WAL intact to %d of %d)",
				i, mode, mIntact, len(manifestData), wIntact, len(walData))
		}
	}

	// No table was deleted that held anything not recovered otherwise: one
	// the recovered state does not name is kept aside unless every key it
	// held is still readable.
	v := db.vs.Current()
	named := map[string]bool{}
	for _, files := range v.Levels {
		for _, f := range files {
			named[manifest.TableFileName("/db", f.FileNum)] = true
		}
	}
	v.Unref()
	for name, data := range fx.tables {
		switch {
		case recHas(t, fs, name):
			require.True(t, bytes.Equal(data, recRead(t, fs, name)), "%s changed", name)
		case recHas(t, fs, name+orphanSuffix):
			require.False(t, named[name], "%s is named but was kept aside", name)
			require.True(t, bytes.Equal(data, recRead(t, fs, name+orphanSuffix)), "%s changed", name)
		default:
			require.False(t, named[name], "%s is named but missing", name)
			for i := fx.tableKeys[name][0]; i < fx.tableKeys[name][1]; i++ {
				require.True(t, got[i], "%s was deleted, and with it key %d", name, i)
			}
		}
	}
	// A lenient mode keeps the WAL it dropped damaged records from.
	if (mode == WALRecoveryPointInTime || mode == WALRecoverySkipAnyCorruptedRecords) && !walClean {
		kept := fx.walName + corruptSuffix
		require.True(t, recHas(t, fs, kept), "%s is kept", kept)
		require.True(t, bytes.Equal(walData, recRead(t, fs, kept)))
	}
	require.NoError(t, db.Close())

	// The recovered state is durable and opens cleanly as it is: a crash
	// now loses nothing (read-only, which skips the background goroutines
	// and is enough to read what a reopen finds).
	o = fuzzOptions(fs.CrashClone())
	o.ReadOnly = true
	db, err = openDatabase("/db", o)
	require.NoError(t, err, "reopening the recovered database")
	require.Equal(t, got, recPresent(t, db, fuzzKeys), "the reopened database has the same keys")
	require.NoError(t, db.Check(ctx))
	require.NoError(t, db.Close())
}

// TestRecoveryFixture runs the fuzz target's checks on the fixture unharmed
// and on one damage of each file, in every mode, as a plain test.
func TestRecoveryFixture(t *testing.T) {
	fx := getRecoveryFixture(t)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range fx.tables {
			if !yield(filepath.Base(n)) {
				return
			}
		}
	})
	require.Len(t, names, 2)
	for mode := WALRecoveryTolerateCorruptedTailRecords; mode <= WALRecoverySkipAnyCorruptedRecords; mode++ {
		checkRecovery(t, fx, mode, fx.current, fx.manifest, fx.wal)
		torn := fx.manifest[:fx.manifestEnds[1]+5]
		checkRecovery(t, fx, mode, fx.current, torn, fx.wal)
	}
}
