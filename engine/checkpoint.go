package engine

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/vfs"
)

// Checkpoint writes a consistent, openable copy of the database into dir
// (RocksDB's Checkpoint::CreateCheckpoint), through the database's
// filesystem (Options.FS):
//
//  1. A writable database is flushed first, so that every write acknowledged
//     before the call, DisableWAL writes included, is in a table file. The
//     checkpoint holds no WAL.
//  2. The current version is pinned (its tables cannot be deleted while the
//     checkpoint copies them) with the last sequence number.
//  3. Each table is hard-linked into dir when the filesystem can (a table is
//     never modified once written), and copied and synced otherwise (another
//     device: EXDEV; a filesystem without links).
//  4. A fresh MANIFEST describing exactly the pinned version is written and
//     synced, then CURRENT naming it, then the directory is synced: a crash
//     before CURRENT exists leaves no openable database at dir. The engine
//     writes no OPTIONS file, so there is none to copy.
//
// A read-only database is not flushed: the WALs it replayed are copied
// instead, and the checkpoint replays them when it is opened.
//
// The checkpoint holds the writes of some point between the call and its
// return: everything acknowledged before the call, and none of the writes
// that start after it returns. Concurrent writes may or may not be in it.
//
// dir must not exist, or be an empty directory; anything else is an error
// marked ErrInvalidArgument. On failure Checkpoint removes everything in dir
// (and dir itself if it created it) and the database is unchanged, apart
// from the flush.
func (d *database) Checkpoint(ctx context.Context, dir string) (err error) {
	if err := d.checkOpen(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return errors.Wrap(err, "engine: checkpoint")
	}
	if dir == "" {
		return base.InvalidArgumentf("engine: Checkpoint into an empty directory name")
	}
	createdDir, err := d.prepareCheckpointDir(dir)
	if err != nil {
		return err
	}
	cp := &checkpoint{d: d, dir: dir}
	defer func() {
		if err != nil {
			cp.abandon(createdDir)
			err = errors.Wrapf(err, "engine: checkpoint into %s", dir)
		}
	}()
	if !d.opts.ReadOnly {
		if err := d.Flush(ctx); err != nil {
			return err
		}
	}
	return cp.run(ctx)
}

// prepareCheckpointDir makes sure dir does not exist, creating it, or is an
// empty directory. created reports that it made dir.
func (d *database) prepareCheckpointDir(dir string) (created bool, err error) {
	st, err := d.fs.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := d.fs.MkdirAll(dir, 0o755); err != nil {
			return false, errors.Wrapf(err, "engine: creating checkpoint directory %s", dir)
		}
		return true, nil
	case err != nil:
		return false, errors.Wrapf(err, "engine: checkpoint directory %s", dir)
	case !st.IsDir():
		return false, base.InvalidArgumentf("engine: checkpoint destination %s exists and is not a directory", dir)
	}
	names, err := d.fs.List(dir)
	if err != nil {
		return false, errors.Wrapf(err, "engine: listing checkpoint directory %s", dir)
	}
	if len(names) > 0 {
		return false, base.InvalidArgumentf("engine: checkpoint directory %s is not empty (it holds %s)", dir, names[0])
	}
	return false, nil
}

// checkpoint is one Checkpoint under way.
type checkpoint struct {
	d   *database
	dir string
}

func (cp *checkpoint) run(ctx context.Context) error {
	d := cp.d
	if d.sec != nil {
		// The version and the replayed WAL prefixes must not move apart.
		d.sec.mu.Lock()
		defer d.sec.mu.Unlock()
	}
	// No version edit runs under manifestMu, so the version and the
	// counters read here agree.
	d.manifestMu.Lock()
	v := d.vs.Current()
	lastSeq := d.vs.LastSeqNum()
	logNum := d.vs.LogNumber()
	d.manifestMu.Unlock()
	defer v.Unref()

	e := &manifest.VersionEdit{}
	var maxNum manifest.FileNum
	for level, files := range v.Levels {
		for _, f := range files {
			if err := ctx.Err(); err != nil {
				return err
			}
			src := manifest.TableFileName(d.dirname, f.FileNum)
			dst := manifest.TableFileName(cp.dir, f.FileNum)
			if err := cp.linkOrCopy(src, dst); err != nil {
				if d.sec != nil && errors.Is(err, os.ErrNotExist) {
					return errTableRemoved(f.FileNum, err)
				}
				return err
			}
			e.AddFile(level, f)
			maxNum = max(maxNum, f.FileNum)
			lastSeq = max(lastSeq, f.LargestSeqNum)
		}
	}
	if d.opts.ReadOnly {
		// The replayed WALs are the memtable's only durable copy.
		copyLogs := cp.copyLogs
		if d.sec != nil {
			copyLogs = cp.copySecondaryLogs
		}
		logs, err := copyLogs(ctx, logNum)
		if err != nil {
			return err
		}
		maxNum = max(maxNum, logs)
	} else {
		// Every write is in a table: the checkpoint replays no WAL.
		logNum = 0
	}
	if err := cp.copyMergeOperatorFile(); err != nil {
		return err
	}
	e.SetLogNumber(logNum)
	e.SetNextFileNumber(maxNum + 1)
	e.SetLastSeqNum(lastSeq)
	return cp.writeManifest(e)
}

// copyLogs copies the WALs numbered from logNum on, and returns the largest
// number copied.
func (cp *checkpoint) copyLogs(ctx context.Context, logNum manifest.FileNum) (manifest.FileNum, error) {
	d := cp.d
	names, err := d.fs.List(d.dirname)
	if err != nil {
		return 0, errors.Wrapf(err, "engine: listing %s", d.dirname)
	}
	var maxNum manifest.FileNum
	for _, name := range names {
		kind, num, ok := manifest.ParseFileName(name)
		if !ok || kind != manifest.FileKindLog || num < logNum {
			continue
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if err := cp.copyFile(filepath.Join(d.dirname, name), filepath.Join(cp.dir, name)); err != nil {
			return 0, err
		}
		maxNum = max(maxNum, num)
	}
	return maxNum, nil
}

// writeManifest writes a MANIFEST holding e and CURRENT naming it, syncing
// both and the directory (manifest.VersionSet.Start).
func (cp *checkpoint) writeManifest(e *manifest.VersionEdit) error {
	vs := manifest.New(cp.d.fs, cp.dir, manifest.WithComparer(cp.d.opts.Comparer))
	_, err := vs.Start(e)
	if cerr := vs.Close(); err == nil {
		err = cerr
	}
	return err
}

// linkOrCopy hard-links src to dst when the filesystem can (vfs.Linker), and
// copies it otherwise.
func (cp *checkpoint) linkOrCopy(src, dst string) error {
	if l, ok := cp.d.fs.(vfs.Linker); ok {
		err := l.Link(src, dst)
		if err == nil {
			return nil
		}
		if !cannotLink(err) {
			return errors.Wrapf(err, "engine: linking %s", src)
		}
	}
	return cp.copyFile(src, dst)
}

// cannotLink reports whether a failed link means that this filesystem
// cannot link these files (another device, no hard links, too many links),
// which a copy works around, rather than a failure to report.
func cannotLink(err error) bool {
	return errors.Is(err, syscall.EXDEV) || errors.Is(err, syscall.EPERM) ||
		errors.Is(err, syscall.EMLINK) || errors.Is(err, syscall.ENOTSUP) ||
		errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, errors.ErrUnsupported)
}

// checkpointCopyChunk is the size of each read of a copy.
const checkpointCopyChunk = 1 << 20

// copyFile copies src to a new file dst and syncs it.
func (cp *checkpoint) copyFile(src, dst string) (err error) {
	fs := cp.d.fs
	in, err := fs.Open(src)
	if err != nil {
		return errors.Wrapf(err, "engine: opening %s", src)
	}
	defer func() {
		// A failed close of the source is reported too: every error the
		// filesystem returns fails the checkpoint, none is ignored.
		if cerr := in.Close(); err == nil && cerr != nil {
			err = errors.Wrapf(cerr, "engine: closing %s", src)
		}
	}()
	out, err := fs.Create(dst)
	if err != nil {
		return errors.Wrapf(err, "engine: creating %s", dst)
	}
	defer func() {
		if cerr := out.Close(); err == nil && cerr != nil {
			err = errors.Wrapf(cerr, "engine: closing %s", dst)
		}
	}()
	buf := make([]byte, checkpointCopyChunk)
	for off := int64(0); ; {
		n, rerr := in.ReadAt(buf, off)
		if n > 0 {
			if _, werr := out.Write(buf[:n]); werr != nil {
				return errors.Wrapf(werr, "engine: writing %s at offset %d", dst, off)
			}
			off += int64(n)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return errors.Wrapf(rerr, "engine: reading %s at offset %d", src, off)
		}
	}
	if err := out.Sync(); err != nil {
		return errors.Wrapf(err, "engine: syncing %s", dst)
	}
	return nil
}

// abandon removes everything in dir, which was empty or missing when the
// checkpoint began, and dir itself if Checkpoint created it. Best effort:
// the checkpoint's error has been returned.
func (cp *checkpoint) abandon(createdDir bool) {
	fs := cp.d.fs
	if names, err := fs.List(cp.dir); err == nil {
		for _, name := range names {
			_ = fs.Remove(filepath.Join(cp.dir, name))
		}
	}
	if createdDir {
		_ = fs.Remove(cp.dir)
	}
}
