package engine

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/wal"
)

// Background errors, as RocksDB's ErrorHandler treats them.
//
// A failed WAL write, memtable insert, flush or compaction becomes the
// database's background error (d.mu.bgErr, a *bgError), classified by
// severity:
//
//   - soft: a compaction ran out of space (ENOSPC or EDQUOT). Compactions
//     pause; writes and flushes go on (until L0 fills and a write would
//     wait for a compaction: it then fails with the error). The compaction
//     loop retries with backoff; any compaction that succeeds clears it.
//   - hard: a flush or a WAL write ran out of space. Writes stop. The flush
//     loop retries with backoff: it flushes every immutable memtable and,
//     after a WAL failure, only then starts a new WAL (see walFailedLocked);
//     when that succeeds the error is cleared and writes go on, without a
//     reopen.
//   - fatal: anything else (an IO error other than no space, corruption, a
//     failed memtable insert) and any failure once a MANIFEST edit has
//     failed (d.mu.manifestFailed: the edit may or may not be durable, the
//     MANIFEST is not written again, and no file may be deleted until a
//     reopen finds one state or the other). Writes, flushes and compactions
//     stop until the database is reopened.
//
// DB.Resume retries at once instead of waiting for the backoff, and reports
// the outcome.

// bgRetryMin and bgRetryMax bound the backoff between retries of the work
// whose failure for lack of space stopped writes or paused compactions: it
// doubles from the first to the second. RocksDB retries a no-space error
// every second by default (bgerror_resume_retry_interval).
const (
	bgRetryMin = 20 * time.Millisecond
	bgRetryMax = time.Second
)

// bgReason is the work whose failure made a background error.
type bgReason uint8

const (
	reasonWAL bgReason = iota
	reasonMemtable
	reasonFlush
	reasonCompaction
)

func (r bgReason) String() string {
	switch r {
	case reasonWAL:
		return "WAL write"
	case reasonMemtable:
		return "memtable insert"
	case reasonFlush:
		return "flush"
	case reasonCompaction:
		return "compaction"
	}
	return "work"
}

// bgSeverity orders background errors; a worse one replaces a milder one.
type bgSeverity uint8

const (
	severitySoft bgSeverity = iota + 1
	severityHard
	severityFatal
)

// bgError is a background error. It is immutable once made, so callers may
// keep and print it; the state of the retries is in rec, guarded by d.mu
// and shared by every bgError of one episode (until the error clears).
type bgError struct {
	reason   bgReason
	severity bgSeverity
	// noSpace and corrupt describe the cause, for the message.
	noSpace, corrupt bool
	// manifest is set when a MANIFEST edit has failed.
	manifest bool
	cause    error
	rec      *bgRecovery
}

// bgRecovery is the state of the retries of one episode of background
// errors. Guarded by d.mu.
type bgRecovery struct {
	// due is set when a retry may start (the backoff elapsed, or Resume).
	due bool
	// now asks for the next retry at once, for Resume.
	now   bool
	timer *time.Timer
	// running counts the retries in progress, ended those that finished,
	// and failures those that failed (the backoff grows with them).
	running, ended, failures int
	// walLog is the WAL to create once every immutable memtable is flushed,
	// after a WAL write failed; 0 when none is due.
	walLog manifest.FileNum
}

// Error says what failed, what it stops, and what to do about it.
func (e *bgError) Error() string { return e.message() + ": " + e.cause.Error() }

// Unwrap returns the cause, so errors.Is(err, syscall.ENOSPC) and the
// corruption class hold through it.
func (e *bgError) Unwrap() error { return e.cause }

// Format prints the cause's details (stack traces with %+v).
func (e *bgError) Format(s fmt.State, verb rune) { errors.FormatError(e, s, verb) }

// SafeFormatError lets cockroachdb/errors print the message before the
// cause under %+v.
func (e *bgError) SafeFormatError(p errors.Printer) (next error) {
	p.Print(e.message())
	return e.cause
}

func (e *bgError) message() string {
	what := "engine: background " + e.reason.String() + " failed"
	switch {
	case e.noSpace:
		what += " (no space left on device)"
	case e.corrupt:
		what += " (corruption)"
	}
	switch {
	case e.manifest:
		return what + ", and a MANIFEST edit may or may not be durable: writes, flushes, compactions " +
			"and file deletions are stopped until the database is reopened (after freeing space, if it is full)"
	case e.severity == severitySoft:
		return what + ": compactions are paused until space is freed; the database retries them by " +
			"itself with backoff, or call DB.Resume to retry now; writes go on until L0 fills"
	case e.severity == severityHard && e.reason == reasonWAL:
		return what + ": writes are stopped until space is freed; the database flushes the memtables " +
			"and switches to a new WAL by itself, retrying with backoff, and resumes writes once that " +
			"succeeds, or call DB.Resume to retry now; a write that returns this error was not applied"
	case e.severity == severityHard:
		return what + ": writes are stopped until space is freed; the database retries the flush by " +
			"itself with backoff and resumes writes once it succeeds, or call DB.Resume to retry now"
	case e.corrupt:
		return what + ": writes are stopped until the database is reopened; run DB.Check then"
	}
	return what + ": writes are stopped until the database is reopened"
}

// stopsWrites reports whether writes (and Flush, and Compact) fail with e.
func (e *bgError) stopsWrites() bool { return e.severity >= severityHard }

// isNoSpace reports whether err is the file system's "no space left on
// device" or "disk quota exceeded", which freeing space cures.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// newBGErrorLocked classifies err, the failure of the work reason, as a
// background error (see the severities above). d.mu is held.
func (d *database) newBGErrorLocked(reason bgReason, err error) *bgError {
	e := &bgError{reason: reason, cause: err, noSpace: isNoSpace(err), corrupt: base.IsCorruption(err),
		manifest: d.mu.manifestFailed}
	switch {
	case e.manifest || e.corrupt || !e.noSpace || reason == reasonMemtable:
		e.severity = severityFatal
	case reason == reasonCompaction:
		e.severity = severitySoft
	default:
		e.severity = severityHard
	}
	return e
}

// bgErrorLocked returns the background error, or nil. d.mu is held.
func (d *database) bgErrorLocked() *bgError { return d.mu.bgErr }

// setBackgroundErrorLocked makes err, the failure of the work reason, the
// background error, unless the one in place is as bad or worse, and returns
// the classified error (the caller's to return). A retryable error starts
// the retries' backoff. d.mu is held.
func (d *database) setBackgroundErrorLocked(reason bgReason, err error) *bgError {
	e := d.newBGErrorLocked(reason, err)
	cur := d.bgErrorLocked()
	if cur != nil {
		e.rec = cur.rec
		if cur.severity >= e.severity {
			return e
		}
	} else {
		e.rec = &bgRecovery{}
	}
	d.mu.bgErr = e
	d.notifyBackgroundError(e)
	if e.severity == severityFatal {
		e.rec.stopTimer()
	} else {
		// A new episode, or a soft error turned hard: the retry that is due
		// is now the hard error's.
		d.scheduleRetryLocked(e.rec)
	}
	d.notifyLocked()
	return e
}

// clearBackgroundErrorLocked ends the episode of rec if its error still has
// severity sev (a retry of a soft error does not clear a hard one that came
// meanwhile): writes and background work go on. d.mu is held.
func (d *database) clearBackgroundErrorLocked(rec *bgRecovery, sev bgSeverity) {
	e := d.bgErrorLocked()
	if e == nil || e.rec != rec || e.severity != sev {
		return
	}
	rec.stopTimer()
	d.mu.bgErr = nil
	d.notifyLocked()
	d.maybeScheduleLocked()
}

// scheduleRetryLocked arms the next retry of rec's episode: at once when
// Resume asked for one, otherwise after the backoff. d.mu is held.
func (d *database) scheduleRetryLocked(rec *bgRecovery) {
	rec.stopTimer()
	if rec.now {
		rec.due = true
		d.maybeScheduleLocked()
		return
	}
	rec.due = false
	delay := bgRetryMax
	if rec.failures < 16 {
		delay = min(bgRetryMin<<rec.failures, bgRetryMax)
	}
	rec.timer = time.AfterFunc(delay, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if e := d.bgErrorLocked(); e != nil && e.rec == rec && !d.mu.closing {
			rec.due = true
			d.maybeScheduleLocked()
		}
	})
}

func (rec *bgRecovery) stopTimer() {
	if rec.timer != nil {
		rec.timer.Stop()
		rec.timer = nil
	}
}

// startRetryLocked reports whether a retry of the background error, if it
// has severity sev, is due, and if so counts it as running. d.mu is held.
func (d *database) startRetryLocked(sev bgSeverity) (*bgRecovery, bool) {
	e := d.bgErrorLocked()
	if e == nil || e.severity != sev || !e.rec.due || d.mu.closing {
		return nil, false
	}
	e.rec.due, e.rec.now = false, false
	e.rec.running++
	return e.rec, true
}

// retryEndedLocked records the end of a retry of rec's episode. A failed
// retry's error is already the background error (or a milder one was
// kept); the next retry is scheduled unless the episode ended or turned
// fatal. d.mu is held.
func (d *database) retryEndedLocked(rec *bgRecovery, failed bool) {
	rec.running--
	rec.ended++
	if failed {
		rec.failures++
		if e := d.bgErrorLocked(); e != nil && e.rec == rec && e.severity != severityFatal {
			d.scheduleRetryLocked(rec)
		}
	}
	d.notifyLocked()
}

// walFailedLocked handles a failed write or sync of the current WAL, by the
// write leader (nothing else touches the WAL meanwhile). The WAL may now end
// in a torn record, so nothing is appended to it again: the memtable whose
// writes it holds becomes immutable, and the new mutable memtable names a
// WAL that is numbered now but created only once every immutable memtable
// is flushed (by the retry, see recoverHard). Until then no WAL follows the
// torn one: a reopen meanwhile finds it the newest, whose torn tail
// recovery tolerates, where a newer WAL would make it damage. Writes
// acknowledged before the failure are in the memtables, and the flush makes
// them durable. The failed WAL stays d.commit's until then, unused (writes
// are stopped), so that Close reports its failure. It returns the
// background error for the failed write. d.mu is held.
func (d *database) walFailedLocked(err error) error {
	e := d.setBackgroundErrorLocked(reasonWAL, err)
	if e.rec.walLog != 0 {
		return e // already switched away from the failed WAL
	}
	logNum := d.vs.NewFileNum()
	if d.mu.mem.Empty() {
		d.mu.mem.unref()
	} else {
		d.mu.imm = append(d.mu.imm, d.mu.mem)
	}
	d.mu.mem = d.newMutableMemTableLocked(nil, logNum)
	d.updateReadStateLocked()
	e.rec.walLog = logNum
	return e
}

// recoverHard retries the work of a hard background error, in the flush
// loop: it flushes every immutable memtable, creates the WAL that
// walFailedLocked numbered, if any, and clears the error. It reports whether
// it cleared the error.
func (d *database) recoverHard(ctx context.Context, rec *bgRecovery) bool {
	for {
		d.mu.Lock()
		pending, walLog := len(d.mu.imm), rec.walLog
		if pending == 0 && walLog == 0 {
			d.retryEndedLocked(rec, false)
			d.clearBackgroundErrorLocked(rec, severityHard)
			d.mu.Unlock()
			return true
		}
		d.mu.Unlock()
		var err error
		if pending > 0 {
			// A failure is the background error already (or a milder one).
			_, err = d.flushOldest(ctx)
		} else if err = d.installWAL(walLog); err != nil {
			d.mu.Lock()
			d.setBackgroundErrorLocked(reasonWAL, err)
			d.mu.Unlock()
		}
		if err != nil {
			d.mu.Lock()
			d.retryEndedLocked(rec, true)
			d.mu.Unlock()
			return false
		}
	}
}

// installWAL creates WAL logNum, which the mutable memtable already names,
// and makes it the one writes append to. It runs while writes are stopped,
// so no write leader is using d.commit.
func (d *database) installWAL(logNum manifest.FileNum) error {
	f, err := d.createLog(logNum)
	if err != nil {
		return err
	}
	wf := newWALFile(f)
	d.mu.Lock()
	failed := d.commit.logFile
	d.commit.log = wal.NewWriter(wf)
	d.commit.logFile = wf
	d.commit.logNum = logNum
	d.commit.logBytes = 0
	if e := d.bgErrorLocked(); e != nil && e.rec.walLog == logNum {
		e.rec.walLog = 0
	}
	d.mu.Unlock()
	if failed != nil {
		// Closing reports the failure that was handled: ignore it.
		_ = failed.Close()
	}
	return nil
}

// Resume retries, now, the work whose failure for lack of space stopped
// writes (a flush, or a WAL write: then the memtables are flushed and a new
// WAL started) or paused compactions, instead of waiting for the next
// automatic retry, and waits for the outcome: nil once the database is
// writable and compacting again, or the background error if the retry
// failed (free space and call it again). Without a background error it
// returns nil at once. An error that a retry cannot cure (an IO error other
// than no space, corruption, a failed MANIFEST edit) is returned as it is:
// the database must be reopened. It honours ctx while waiting. RocksDB's
// DB::Resume.
func (d *database) Resume(ctx context.Context) error {
	if err := d.checkOpen(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.bgErrorLocked()
	if e == nil {
		return nil
	}
	if e.severity == severityFatal {
		return e
	}
	// Wait for the first retry to start from now on: after the running
	// one, if any.
	rec := e.rec
	want := rec.ended + rec.running + 1
	rec.now = true
	if rec.running == 0 {
		d.scheduleRetryLocked(rec)
	}
	for {
		e = d.bgErrorLocked()
		switch {
		case e == nil:
			return nil
		case e.rec != rec || e.severity == severityFatal:
			return e
		case rec.ended >= want:
			return e
		case d.mu.closing:
			return base.Mark(errors.New("engine: database is closing"), ErrClosed)
		}
		ch := d.mu.changed
		d.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			d.mu.Lock()
			return errors.Wrap(ctx.Err(), "engine: Resume")
		}
		d.mu.Lock()
	}
}
