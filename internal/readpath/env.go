package readpath

import (
	"context"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
)

// Env is what reads need from the database itself, fixed at open: where the
// table files are and how the verifications, which bypass the table cache,
// open them. The engine builds it once; nothing here changes it, so it is
// safe to share between concurrent calls.
type Env struct {
	// FS holds the database directory.
	FS vfs.FS
	// Dir is the database directory; tables are manifest.TableFileName(Dir, n).
	Dir string
	// Stats receives the verifications' tickers and, through the file
	// readers they open, the file-read histograms; nil records nothing.
	Stats *statistics.Statistics
	// Limiter is charged for the verifications' reads made at a priority
	// other than ioctx.PriorityTotal; nil charges nothing.
	Limiter ratelimit.Limiter
	// Mmap opens tables memory-mapped (the mmap_reads option).
	Mmap bool
	// Comparer is the database's key order, which each table records and
	// its reader checks; nil is bytewise.
	Comparer *base.Comparer
}

// tablePath returns the name of table n.
func (e *Env) tablePath(n manifest.FileNum) string { return manifest.TableFileName(e.Dir, n) }

// openFile opens table n, which is in level, for a verification, bypassing
// the table cache, as RocksDB's VerifyChecksum and VerifyFileChecksums do.
// Its reads count in the last-level read tickers when level is the last, as
// the table cache's do.
func (e *Env) openFile(n manifest.FileNum, level int) (*fileio.Reader, error) {
	return fileio.Open(e.FS, e.tablePath(n), fileio.Options{Stats: e.Stats, Limiter: e.Limiter, Mmap: e.Mmap,
		LastLevel: level == manifest.NumLevels-1})
}

// ctxErr returns nil while ctx is live and deadline (the request's own,
// which ctx does not carry; zero for none) has not passed, and otherwise an
// error that names what was about to happen and for which errors.Is(err,
// ctx.Err()) holds, or, past the deadline, errors.Is(err,
// context.DeadlineExceeded) and ErrTimedOut. It reads the clock only when
// there is a deadline.
func ctxErr(ctx context.Context, deadline time.Time, what string, n manifest.FileNum) error {
	err := ctx.Err()
	if err == nil {
		if err = ioctx.CheckDeadline(deadline); err == nil {
			return nil
		}
	}
	return errors.Wrapf(err, "readpath: %s table %s", what, n)
}
