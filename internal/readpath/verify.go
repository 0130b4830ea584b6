package readpath

import (
	"context"
	"encoding/binary"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/crc"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/statistics"
)

// fileChecksumChunk is VerifyFileChecksums' read size when
// ReadEnv.ReadaheadSize is 0: RocksDB's 256 KiB.
const fileChecksumChunk = 256 << 10

// VerifyChecksum reads and checks every block of every table of v (RocksDB's
// DB::VerifyChecksum): level by level, file by file in level order, each file
// opened anew, bypassing the table cache and the block cache, with
// fileio.Open(env.FS, manifest.TableFileName(env.Dir, n), {env.Stats,
// env.Limiter, env.Mmap}) and sstable.Open with renv, so the open's reads
// (footer, metaindex, properties, filter, index) carry the caller's activity
// and priority as RocksDB's do since its PR #11444; then
// sstable.Reader.VerifyChecksums with renv. Every block is verified whatever
// renv.VerifyChecksums says. The memtables are not read.
//
// It stops at the first failure and returns it wrapped with the file's name;
// corruption stays marked base.ErrCorruption (a block checksum mismatch
// names the offset and both checksums). The context is checked between
// files, and by the reads inside them.
//
// After each file, failed or not, it ticks VerifyChecksumReadBytes (in
// env.Stats) with the bytes that file's reader read. See the package doc for
// the number of reads (and rate-limiter requests) per file.
func VerifyChecksum(ctx context.Context, env *Env, v *View, renv sstable.ReadEnv) error {
	if v.Version == nil {
		return nil
	}
	for level := range v.Version.Levels {
		for _, f := range v.Version.Levels[level] {
			if err := ctxErr(ctx, renv.Deadline, "VerifyChecksum: before", f.FileNum); err != nil {
				return err
			}
			if err := verifyTable(ctx, env, renv, f, level); err != nil {
				return err
			}
		}
	}
	return nil
}

func verifyTable(ctx context.Context, env *Env, renv sstable.ReadEnv, f *manifest.FileMetadata, level int) error {
	path := env.tablePath(f.FileNum)
	fr, err := env.openFile(f.FileNum, level)
	if err != nil {
		return errors.Wrapf(err, "readpath: VerifyChecksum: opening %s", path)
	}
	// Counted after the Reader's Close too: BytesRead stays readable.
	defer func() { env.Stats.RecordTick(statistics.VerifyChecksumReadBytes, uint64(fr.BytesRead())) }()
	r, err := sstable.Open(ctx, fr, renv, sstable.ReaderOptions{FileNum: uint64(f.FileNum), Stats: env.Stats, Comparer: env.Comparer})
	if err != nil {
		return errors.Wrapf(err, "readpath: VerifyChecksum: %s", path)
	}
	err = r.VerifyChecksums(ctx, renv)
	if cerr := r.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return errors.Wrapf(err, "readpath: VerifyChecksum: %s", path)
	}
	return nil
}

// VerifyFileChecksums reads every table of v whole and compares its CRC-32C
// with the one the MANIFEST recorded (RocksDB's DB::VerifyFileChecksums with
// its built-in FileChecksumCrc32c): level by level, file by file, each file
// opened anew as VerifyChecksum does and read sequentially, in chunks of
// renv.ReadaheadSize bytes (256 KiB when 0), each chunk one
// fileio.Reader.Read with renv.IO (so it is tagged, charged to the rate
// limiter, and timed). The checksum is the unmasked CRC-32C of the whole
// file (crc.CRC extended chunk by chunk), compared with
// FileMetadata.FileChecksum, 4 bytes big-endian.
//
// A file whose FileChecksumFunc is "" has no recorded checksum and is
// skipped; a function other than manifest.ChecksumFuncCRC32C is an error
// marked base.ErrInvalidArgument that names it. A mismatch is an error marked
// base.ErrCorruption whose text is exactly RocksDB's:
//
//	<path> file checksum mismatch, expecting <HEX>, but actual <HEX>
//
// with the 4 bytes in upper-case hex without separators. A read error is
// returned wrapped with "<path>: file read failed" and keeps its own marks
// (a done context matches errors.Is(err, ctx.Err())); RocksDB marks it
// corruption. It stops at the first failure; the context is checked between
// files and before every chunk.
//
// After each file read, failed or not, it ticks VerifyChecksumReadBytes with
// the bytes read, so after a clean run the ticker has grown by exactly the
// sum of the table sizes.
func VerifyFileChecksums(ctx context.Context, env *Env, v *View, renv sstable.ReadEnv) error {
	if v.Version == nil {
		return nil
	}
	chunk := renv.ReadaheadSize
	if chunk <= 0 {
		chunk = fileChecksumChunk
	}
	var buf []byte
	for level := range v.Version.Levels {
		for _, f := range v.Version.Levels[level] {
			switch f.FileChecksumFunc {
			case "":
				continue
			case manifest.ChecksumFuncCRC32C:
			default:
				return base.InvalidArgumentf("readpath: VerifyFileChecksums: %s: unknown file checksum function %q",
					env.tablePath(f.FileNum), f.FileChecksumFunc)
			}
			if err := ctxErr(ctx, renv.Deadline, "VerifyFileChecksums: before", f.FileNum); err != nil {
				return err
			}
			if err := verifyFileChecksum(ctx, env, renv, f, level, chunk, &buf); err != nil {
				return err
			}
		}
	}
	return nil
}

func verifyFileChecksum(
	ctx context.Context, env *Env, renv sstable.ReadEnv, f *manifest.FileMetadata, level int, chunk int64, buf *[]byte,
) error {
	path := env.tablePath(f.FileNum)
	if len(f.FileChecksum) != 4 {
		return base.CorruptionErrorf("readpath: VerifyFileChecksums: %s: the MANIFEST's %s checksum has %d bytes, want 4",
			path, f.FileChecksumFunc, len(f.FileChecksum))
	}
	fr, err := env.openFile(f.FileNum, level)
	if err != nil {
		return errors.Wrapf(err, "readpath: VerifyFileChecksums: opening %s", path)
	}
	sum, err := checksumFile(ctx, fr, renv, chunk, buf)
	env.Stats.RecordTick(statistics.VerifyChecksumReadBytes, uint64(fr.BytesRead()))
	if cerr := fr.Close(); err == nil && cerr != nil {
		err = errors.Wrapf(cerr, "readpath: VerifyFileChecksums: closing %s", path)
	}
	if err != nil {
		return errors.Wrapf(err, "%s: file read failed", path)
	}
	if expected := binary.BigEndian.Uint32(f.FileChecksum); sum != expected {
		return base.CorruptionErrorf("%s file checksum mismatch, expecting %08X, but actual %08X", path, expected, sum)
	}
	return nil
}

// checksumFile returns the unmasked CRC-32C of fr's whole file, read in
// chunks of chunk bytes into *buf (grown as needed; a mapped file needs
// none).
func checksumFile(ctx context.Context, fr *fileio.Reader, renv sstable.ReadEnv, chunk int64, buf *[]byte) (uint32, error) {
	var sum crc.CRC
	size := fr.Size()
	for off := int64(0); off < size; {
		n := int(min(chunk, size-off))
		var scratch []byte
		if !fr.Mapped() {
			if cap(*buf) < n {
				*buf = make([]byte, n)
			}
			scratch = (*buf)[:n]
		}
		// Read fails at once, with the context's error, when it is done.
		b, err := fr.Read(ctx, renv.IO, off, n, scratch)
		if err != nil {
			return 0, err
		}
		sum = sum.Update(b)
		off += int64(n)
	}
	return uint32(sum), nil
}
