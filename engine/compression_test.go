package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

func TestCompressionFor(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want [manifest.NumLevels]Compression
	}{
		{Options{}, [7]Compression{1, 1, 1, 1, 1, 1, 1}},
		{Options{Compression: CompressionZstd}, [7]Compression{3, 3, 3, 3, 3, 3, 3}},
		{Options{BottommostCompression: CompressionZstd}, [7]Compression{1, 1, 1, 1, 1, 1, 3}},
		// Fewer entries than levels: the last one applies to the rest.
		{Options{CompressionPerLevel: []Compression{CompressionNone, CompressionSnappy, CompressionZstd}},
			[7]Compression{2, 1, 3, 3, 3, 3, 3}},
		{Options{CompressionPerLevel: []Compression{CompressionNone}, BottommostCompression: CompressionZstd},
			[7]Compression{2, 2, 2, 2, 2, 2, 3}},
		// A default entry means Compression.
		{Options{Compression: CompressionZstd, CompressionPerLevel: []Compression{CompressionNone, CompressionDefault}},
			[7]Compression{2, 3, 3, 3, 3, 3, 3}},
	} {
		o := tc.o
		o.EnsureDefaults()
		require.NoError(t, o.Validate())
		for level := range manifest.NumLevels {
			require.Equal(t, tc.want[level], o.compressionFor(level), "%+v L%d", tc.o, level)
		}
	}
}

func TestCompressionOptionsInvalid(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Compression: 9}, "compression 9 (Compression) is not snappy, none or zstd"},
		{Options{CompressionPerLevel: make([]Compression, 8)}, "compression_per_level has 8 entries"},
		{Options{CompressionPerLevel: []Compression{CompressionNone, 7}}, "compression_per_level entry 1, 7 (CompressionPerLevel[1])"},
		{Options{BottommostCompression: 5}, "bottommost_compression 5 (BottommostCompression)"},
		{Options{ZstdLevel: 23}, "zstd_level 23 (ZstdLevel) is not within 1 to 22"},
		{Options{ZstdLevel: -1}, "zstd_level -1 (ZstdLevel) is not within 1 to 22"},
	} {
		err := tc.o.EnsureDefaults().Validate()
		require.ErrorIs(t, err, ErrInvalidArgument)
		require.ErrorContains(t, err, tc.want)
	}
}

func TestCompressionDSN(t *testing.T) {
	dir, o, err := ParseDSN("/db?compression=zstd&compression_per_level=none:kSnappyCompression:kZSTD" +
		"&bottommost_compression=snappy&zstd_level=19")
	require.NoError(t, err)
	require.Equal(t, CompressionZstd, o.Compression)
	require.Equal(t, []Compression{CompressionNone, CompressionSnappy, CompressionZstd}, o.CompressionPerLevel)
	require.Equal(t, CompressionSnappy, o.BottommostCompression)
	require.Equal(t, 19, o.ZstdLevel)
	// driver.FormatDSN escapes the colons; ParseDSN takes either.
	require.Equal(t, "/db?compression=zstd&compression_per_level=none%3Asnappy%3Azstd&bottommost_compression=snappy&zstd_level=19",
		FormatDSN(dir, o))
	for _, dsn := range []string{
		"/db?compression=zstd",
		"/db?compression_per_level=zstd",
		"/db?compression_per_level=none:none:snappy:snappy:zstd:zstd:zstd",
		"/db?bottommost_compression=zstd&zstd_level=1",
		"/db?compression=none&bottommost_compression=zstd&zstd_level=22",
	} {
		dir, c, err := ParseDSN(dsn)
		require.NoError(t, err, dsn)
		require.Equal(t, strings.ReplaceAll(dsn, ":", "%3A"), FormatDSN(dir, c))
		_, again, err := ParseDSN(FormatDSN(dir, c))
		require.NoError(t, err)
		require.Equal(t, c, again)
	}
	// The defaults print nothing.
	dir, o, err = ParseDSN("/db?compression_per_level=default&bottommost_compression=default")
	require.NoError(t, err)
	require.Equal(t, "/db", FormatDSN(dir, o))
	// Typed options with a default entry round-trip too.
	o = &Options{CompressionPerLevel: []Compression{CompressionNone, CompressionDefault}}
	_, again, err := ParseDSN(FormatDSN("/db", o))
	require.NoError(t, err)
	require.Equal(t, o, again)

	for _, tc := range []struct{ dsn, want string }{
		{"/db?compression=lz4", `bad value for compression: "lz4" is not snappy, none or zstd`},
		{"/db?compression=default", "bad value for compression"},
		{"/db?compression_per_level=none:gzip", `entry 1 of "none:gzip", "gzip", is not snappy, none or zstd`},
		{"/db?compression_per_level=", "bad value for compression_per_level"},
		{"/db?compression_per_level=none:none:none:none:none:none:none:none", "more than the 7 levels"},
		{"/db?bottommost_compression=bzip2", "bad value for bottommost_compression"},
		{"/db?zstd_level=0", `bad value for zstd_level: "0" is not a positive integer`},
		{"/db?zstd_level=23", `bad value for zstd_level: "23" is not within 1 to 22`},
		{"/db?zstd_level=fast", "bad value for zstd_level"},
	} {
		_, _, err := ParseDSN(tc.dsn)
		require.ErrorIs(t, err, ErrInvalidArgument, tc.dsn)
		require.ErrorContains(t, err, tc.want, tc.dsn)
	}
}

// TestCompressionPerLevel writes a database whose levels use different
// codecs, and checks that every table has its level's (flush: L0's;
// compaction: its output level's), and that the data survives flushes,
// compactions, reopening and Check.
func TestCompressionPerLevel(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	opts := smallOptions(fs)
	opts.CompressionPerLevel = []Compression{CompressionNone, CompressionSnappy, CompressionZstd}
	opts.BottommostCompression = CompressionZstd
	opts.ZstdLevel = 9
	db, err := openDatabase("/db", opts)
	require.NoError(t, err)
	h := checkDB(t, db)

	rng := rand.New(rand.NewPCG(3, 4))
	want := map[string][]byte{}
	put := func(n int) {
		for range n {
			k := fmt.Appendf(nil, "key%06d", rng.IntN(20000))
			// Half text, half random: compressible, not trivially.
			v := append(fmt.Appendf(nil, "value of %s, value of %s ", k, k), value(rng, 48)...)
			require.NoError(t, db.Put(ctx, k, v))
			want[string(k)] = v
		}
	}
	check := func(db *database) {
		t.Helper()
		for k, v := range want {
			got, err := db.Get(ctx, []byte(k))
			require.NoError(t, err, k)
			require.Equal(t, v, got, k)
		}
		require.NoError(t, db.Check(ctx))
	}
	put(4000)
	require.NoError(t, db.Compact(ctx, nil, nil))
	// Flushes and background compactions fill L0 to L2 or so. Wait until
	// they are done — nothing running and nothing due, which leaves fewer
	// L0 tables than the trigger — and then, if L0 is empty, flush one more
	// table there, which stays: one table is below the trigger. (Waiting
	// for L0 to empty could wait forever: a lone table below the trigger
	// is never compacted.)
	put(6000)
	require.NoError(t, db.Flush(ctx))
	require.Eventually(t, func() bool { return backgroundIdle(db) }, 2*time.Minute, 5*time.Millisecond)
	if rs := mustReadState(t, db); rs.current.NumFiles(0) == 0 {
		rs.unref()
		put(200)
		require.NoError(t, db.Flush(ctx))
	} else {
		rs.unref()
	}
	check(db)

	seen := map[int]bool{}
	rs := mustReadState(t, db)
	for level, files := range rs.current.Levels {
		for _, meta := range files {
			got := tableCompression(t, fs, meta.FileNum)
			require.Equal(t, opts.compressionFor(level).internal(), got, "L%d table %s", level, meta.FileNum)
			seen[level] = true
		}
	}
	rs.unref()
	t.Logf("levels with tables: %v", seen)
	require.True(t, seen[0] && seen[manifest.NumLevels-1], "levels with tables: %v", seen)

	require.NoError(t, db.Close())
	// Reopened with other compression options: the tables read as they
	// were written, and new ones follow the new options.
	opts2 := smallOptions(fs)
	opts2.Compression = CompressionSnappy
	db, err = openDatabase("/db", opts2)
	require.NoError(t, err)
	h.db = db
	check(db)
	put(100)
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.Compact(ctx, nil, nil))
	check(db)
	rs = mustReadState(t, db)
	for _, meta := range rs.current.Levels[manifest.NumLevels-1] {
		require.Equal(t, compress.Snappy, tableCompression(t, fs, meta.FileNum))
	}
	rs.unref()
}

// tableCompression returns the compression table n records in its
// properties.
func tableCompression(t *testing.T, fs vfs.FS, n manifest.FileNum) compress.Type {
	t.Helper()
	f, err := fileio.Open(fs, manifest.TableFileName("/db", n), fileio.Options{})
	require.NoError(t, err)
	r, err := sstable.Open(context.Background(), f, sstable.ReadEnv{VerifyChecksums: true}, sstable.ReaderOptions{})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	return r.Properties().Compression
}

// backgroundIdle reports whether db has no flush or compaction running and
// none due (every level's compaction score below 1). It runs on
// Eventually's goroutine, so it reports a failed Metrics as not idle
// rather than failing the test there.
func backgroundIdle(db *database) bool {
	m, err := db.Metrics(context.Background())
	if err != nil {
		return false
	}
	if m.Flushes.InProgress > 0 || m.Compactions.InProgress > 0 {
		return false
	}
	for _, l := range m.Levels {
		if l.Score >= 1 {
			return false
		}
	}
	return true
}
