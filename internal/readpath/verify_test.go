package readpath

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/crc"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

func readFile(t testing.TB, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	require.NoError(t, err)
	defer f.Close()
	info, err := f.Stat()
	require.NoError(t, err)
	b := make([]byte, info.Size())
	_, err = f.ReadAt(b, 0)
	if err != io.EOF {
		require.NoError(t, err)
	}
	return b
}

func writeFile(t testing.TB, fs vfs.FS, name string, b []byte) {
	t.Helper()
	f, err := fs.Create(name)
	require.NoError(t, err)
	_, err = f.Write(b)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// verifyDB is a small random database for the verification tests, every
// level populated.
func verifyDB(t testing.TB, seed uint64) (*lsm, *Env) {
	rng := rand.New(rand.NewPCG(seed, 6))
	cfg := defaultLSMConfig()
	cfg.cacheSize = 0
	db := buildLSM(t, rng, cfg)
	return db, &Env{FS: db.fs, Dir: testDir, Stats: db.stats}
}

func allFiles(v *View) []*manifest.FileMetadata {
	var files []*manifest.FileMetadata
	for _, level := range v.Version.Levels {
		files = append(files, level...)
	}
	return files
}

func TestVerifyCleanDatabase(t *testing.T) {
	db, env := verifyDB(t, 1)
	var total uint64
	for _, f := range allFiles(db.view) {
		total += f.Size
	}
	ctx := context.Background()
	for _, mmap := range []bool{false, true} {
		env.Mmap = mmap
		for _, readahead := range []int64{0, 100, 1000} {
			renv := readEnv()
			renv.ReadaheadSize = readahead
			before := db.stats.TickerCount(statistics.VerifyChecksumReadBytes)
			require.NoError(t, VerifyFileChecksums(ctx, env, db.view, renv))
			require.Equal(t, total, db.stats.TickerCount(statistics.VerifyChecksumReadBytes)-before,
				"VerifyFileChecksums reads every table exactly once")

			before = db.stats.TickerCount(statistics.VerifyChecksumReadBytes)
			checks := db.stats.TickerCount(statistics.BlockChecksumComputeCount)
			require.NoError(t, VerifyChecksum(ctx, env, db.view, renv))
			require.GreaterOrEqual(t, db.stats.TickerCount(statistics.VerifyChecksumReadBytes)-before, total)
			require.Greater(t, db.stats.TickerCount(statistics.BlockChecksumComputeCount), checks)
		}
	}
	// The memtables are not verified; a View without tables verifies
	// nothing.
	require.NoError(t, VerifyChecksum(ctx, env, &View{Mems: db.view.Mems}, readEnv()))
	require.NoError(t, VerifyFileChecksums(ctx, env, &View{Mems: db.view.Mems}, readEnv()))
}

func TestVerifyDetectsDataBlockCorruption(t *testing.T) {
	db, env := verifyDB(t, 2)
	files := allFiles(db.view)
	f := files[len(files)/2]
	path := manifest.TableFileName(testDir, f.FileNum)
	b := readFile(t, db.fs, path)
	b[7] ^= 0x10 // inside the first data block
	writeFile(t, db.fs, path, b)

	ctx := context.Background()
	err := VerifyChecksum(ctx, env, db.view, readEnv())
	require.Error(t, err)
	require.True(t, base.IsCorruption(err), "%v", err)
	require.Contains(t, err.Error(), path)
	require.Contains(t, err.Error(), "checksum mismatch")
	require.EqualValues(t, 1, db.stats.TickerCount(statistics.BlockChecksumMismatchCount))

	err = VerifyFileChecksums(ctx, env, db.view, readEnv())
	require.Error(t, err)
	require.True(t, base.IsCorruption(err))
	want := fmt.Sprintf("%s file checksum mismatch, expecting %X, but actual %X", path, f.FileChecksum, crc.Value(b))
	require.Equal(t, want, err.Error())

	// The verifications stop at the first bad file: the files after it are
	// not read.
	last := files[len(files)-1]
	rec := &ioRecorder{}
	env.FS = errorfs.WrapObserver(db.fs, rec.observe)
	require.Error(t, VerifyFileChecksums(ctx, env, db.view, readEnv()))
	for _, op := range rec.take() {
		require.NotEqual(t, manifest.TableFileName(testDir, last.FileNum), op.Path)
	}
}

func TestVerifyDetectsFooterCorruption(t *testing.T) {
	db, env := verifyDB(t, 3)
	f := db.view.Version.Levels[0][0]
	path := manifest.TableFileName(testDir, f.FileNum)
	orig := readFile(t, db.fs, path)
	ctx := context.Background()
	for i := len(orig) - sstable.FooterLen; i < len(orig); i++ {
		b := append([]byte(nil), orig...)
		b[i] ^= 1 << (i % 8)
		writeFile(t, db.fs, path, b)
		err := VerifyChecksum(ctx, env, db.view, readEnv())
		require.Error(t, err, "footer byte %d", i)
		require.True(t, base.IsCorruption(err), "footer byte %d: %v", i, err)
		require.Contains(t, err.Error(), path)
		err = VerifyFileChecksums(ctx, env, db.view, readEnv())
		require.True(t, base.IsCorruption(err), "footer byte %d: %v", i, err)
		require.Contains(t, err.Error(), "file checksum mismatch")
	}
	writeFile(t, db.fs, path, orig)
	require.NoError(t, VerifyChecksum(ctx, env, db.view, readEnv()))
}

func TestVerifyFileChecksumFunctions(t *testing.T) {
	db, env := verifyDB(t, 4)
	ctx := context.Background()
	files := allFiles(db.view)
	// Files without a recorded checksum are skipped, even when corrupt.
	f := files[0]
	path := manifest.TableFileName(testDir, f.FileNum)
	orig := readFile(t, db.fs, path)
	b := append([]byte(nil), orig...)
	b[3] ^= 1
	writeFile(t, db.fs, path, b)
	saved := *f
	f.FileChecksumFunc, f.FileChecksum = "", nil
	require.NoError(t, VerifyFileChecksums(ctx, env, db.view, readEnv()))
	*f = saved
	require.True(t, base.IsCorruption(VerifyFileChecksums(ctx, env, db.view, readEnv())))
	writeFile(t, db.fs, path, orig)

	// An unknown function is an invalid argument naming it.
	f = files[1]
	saved = *f
	f.FileChecksumFunc = "FileChecksumSha1"
	err := VerifyFileChecksums(ctx, env, db.view, readEnv())
	require.ErrorIs(t, err, base.ErrInvalidArgument)
	require.Contains(t, err.Error(), "FileChecksumSha1")
	*f = saved

	// A checksum of the wrong length is corrupt metadata.
	f = files[2]
	saved = *f
	f.FileChecksum = f.FileChecksum[:3]
	require.True(t, base.IsCorruption(VerifyFileChecksums(ctx, env, db.view, readEnv())))
	*f = saved
}

func TestVerifyContextCancellation(t *testing.T) {
	db, env := verifyDB(t, 5)
	files := allFiles(db.view)
	first := manifest.TableFileName(testDir, files[0].FileNum)
	second := manifest.TableFileName(testDir, files[1].FileNum)
	for _, api := range []struct {
		name string
		run  func(ctx context.Context, env *Env, renv sstable.ReadEnv) error
	}{
		{"VerifyChecksum", func(ctx context.Context, env *Env, renv sstable.ReadEnv) error {
			return VerifyChecksum(ctx, env, db.view, renv)
		}},
		{"VerifyFileChecksums", func(ctx context.Context, env *Env, renv sstable.ReadEnv) error {
			return VerifyFileChecksums(ctx, env, db.view, renv)
		}},
	} {
		t.Run(api.name+"/between-files", func(t *testing.T) {
			// Cancel as the first file is closed: the second is never
			// opened.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var opened []string
			fs := errorfs.WrapObserver(db.fs, func(op errorfs.Op) {
				switch {
				case op.Kind == errorfs.OpOpen:
					opened = append(opened, op.Path)
				case op.Kind == errorfs.OpFileClose && op.Path == first:
					cancel()
				}
			})
			e := *env
			e.FS = fs
			err := api.run(ctx, &e, readEnv())
			require.ErrorIs(t, err, context.Canceled)
			require.Equal(t, []string{first}, opened)
			require.NotContains(t, opened, second)
		})
		t.Run(api.name+"/within-file", func(t *testing.T) {
			// Cancel at the first read: reading stops at the next one.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			reads := 0
			fs := errorfs.WrapObserver(db.fs, func(op errorfs.Op) {
				if op.Kind == errorfs.OpFileRead {
					reads++
					cancel()
				}
			})
			e := *env
			e.FS = fs
			renv := readEnv()
			renv.ReadaheadSize = 64 // many chunks per file
			err := api.run(ctx, &e, renv)
			require.ErrorIs(t, err, context.Canceled)
			require.Equal(t, 1, reads)
		})
	}
}

func TestVerifyMissingFile(t *testing.T) {
	db, env := verifyDB(t, 6)
	f := allFiles(db.view)[0]
	require.NoError(t, db.fs.Remove(manifest.TableFileName(testDir, f.FileNum)))
	err := VerifyChecksum(context.Background(), env, db.view, readEnv())
	require.Error(t, err)
	require.Contains(t, err.Error(), manifest.TableFileName(testDir, f.FileNum))
	err = VerifyFileChecksums(context.Background(), env, db.view, readEnv())
	require.Error(t, err)
	require.Contains(t, err.Error(), manifest.TableFileName(testDir, f.FileNum))
}

// TestVerifyReadCounts pins the number of file reads per table that the
// package doc states (each is one rate-limiter request when it is no larger
// than the limiter's burst).
func TestVerifyReadCounts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  sstable.WriterOptions
		kvs   []string
		reads int // VerifyChecksum's reads of the table
	}{
		{"filter", sstable.WriterOptions{BloomBitsPerKey: 10}, []string{"a@1=x", "b@2=y"}, 5 + 5},
		{"no-filter", sstable.WriterOptions{}, []string{"a@1=x", "b@2=y"}, 4 + 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			v, _ := buildHandLSM(t, fs, []testFile{{level: 1, kvs: tc.kvs}}, nil, tc.opts)
			rec := &ioRecorder{}
			env := &Env{FS: errorfs.WrapObserver(fs, rec.observe), Dir: testDir}
			require.NoError(t, VerifyChecksum(context.Background(), env, v, readEnv()))
			require.Len(t, rec.take(), tc.reads)

			size := int(v.Version.Levels[1][0].Size)
			for _, chunk := range []int{0, 1, 7, size - 1, size, size + 1} {
				renv := readEnv()
				renv.ReadaheadSize = int64(chunk)
				require.NoError(t, VerifyFileChecksums(context.Background(), env, v, renv))
				want := 1
				if chunk > 0 {
					want = (size + chunk - 1) / chunk
				}
				require.Len(t, rec.take(), want, "chunk %d of a %d-byte table", chunk, size)
			}
		})
	}
}
