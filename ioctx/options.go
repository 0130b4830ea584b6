package ioctx

import (
	"context"
	"time"
)

// ReadOptions are the per-request options of a read. The zero value is
// RocksDB's default ReadOptions: activity Unknown (the API tags it),
// priority Total (not charged to the rate limiter), no deadline, no per-IO
// timeout, checksums verified, blocks added to the block cache, synchronous
// IO and automatic readahead.
//
// ReadOptions is a small value: pass it by value, never by pointer, so a
// callee cannot change its caller's options.
type ReadOptions struct {
	// Activity tags every file read the request makes. Leave it Unknown: each
	// public API sets its own (Get, MultiGet, DBIterator, VerifyDBChecksum,
	// VerifyFileChecksums) and rejects any other.
	Activity Activity

	// RateLimiterPriority is the priority at which the request's file reads
	// are charged to the database's rate limiter. PriorityTotal, the default,
	// does not charge them.
	RateLimiterPriority Priority

	// Deadline, when not zero, bounds the whole call: a file read that would
	// start after it fails with an error for which errors.Is(err,
	// context.DeadlineExceeded) holds. A context's deadline counts as well
	// (see [ReadOptions.WithContextDeadline]).
	Deadline time.Time

	// IOTimeout, when not zero, bounds each file read: its waits (the rate
	// limiter, a concurrent load of the same block) give up after it, and a
	// read the operating system finishes later than that fails. A read
	// already issued to the operating system is not interrupted.
	IOTimeout time.Duration

	// DontVerifyChecksums skips verifying block checksums on read. Explicit
	// verification (VerifyChecksum) always verifies.
	DontVerifyChecksums bool

	// DontFillCache reads blocks without adding them to the block cache, for
	// scans that would evict the working set. Blocks already cached are used.
	DontFillCache bool

	// AsyncIO lets MultiGet read different tables concurrently and lets an
	// iterator read the next block while the caller consumes the current one.
	AsyncIO bool

	// ReadaheadSize is the iterator and verification readahead in bytes. Zero
	// means automatic: iterators start small and double on sequential access,
	// verification reads 256 KiB at a time.
	ReadaheadSize int64

	// Tag attributes the request's reads to a registered tag (a tenant, a
	// job; see [RegisterTag]), in addition to its activity: they count in
	// the tag's own statistics, are charged to the tag's budget if it has
	// one, and take the tag's default priority when RateLimiterPriority is
	// PriorityTotal. TagNone, the default, attributes them to no tag.
	Tag Tag

	// Perf, when not nil, receives what this request did (see
	// [PerfContext]). Nil, the default, costs one nil check per recording
	// site.
	Perf *PerfContext
}

// WithContextDeadline returns ro with its Deadline set to the earlier of its
// own and ctx's, so a context deadline bounds file reads the same way.
func (ro ReadOptions) WithContextDeadline(ctx context.Context) ReadOptions {
	if d, ok := ctx.Deadline(); ok && (ro.Deadline.IsZero() || d.Before(ro.Deadline)) {
		ro.Deadline = d
	}
	return ro
}

// Merge returns defaults overridden by every field that over sets: a
// non-Unknown activity, a priority other than Total, the earlier deadline,
// the smaller non-zero timeout, a non-zero readahead, a tag other than
// TagNone, a non-nil Perf, and each flag that is set in either. A session (driver.Conn) merges the context's options over its
// own defaults this way.
func Merge(defaults, over ReadOptions) ReadOptions {
	ro := defaults
	if over.Activity != ActivityUnknown {
		ro.Activity = over.Activity
	}
	if over.RateLimiterPriority != PriorityTotal {
		ro.RateLimiterPriority = over.RateLimiterPriority
	}
	if !over.Deadline.IsZero() && (ro.Deadline.IsZero() || over.Deadline.Before(ro.Deadline)) {
		ro.Deadline = over.Deadline
	}
	if over.IOTimeout != 0 && (ro.IOTimeout == 0 || over.IOTimeout < ro.IOTimeout) {
		ro.IOTimeout = over.IOTimeout
	}
	if over.ReadaheadSize != 0 {
		ro.ReadaheadSize = over.ReadaheadSize
	}
	if over.Tag != TagNone {
		ro.Tag = over.Tag
	}
	if over.Perf != nil {
		ro.Perf = over.Perf
	}
	ro.DontVerifyChecksums = ro.DontVerifyChecksums || over.DontVerifyChecksums
	ro.DontFillCache = ro.DontFillCache || over.DontFillCache
	ro.AsyncIO = ro.AsyncIO || over.AsyncIO
	return ro
}

// IOOptions are the options of one file read, derived from ReadOptions by
// [ReadOptions.IOOptions] (RocksDB's IOOptions).
type IOOptions struct {
	// Timeout bounds the read; zero means none.
	Timeout time.Duration
	// Deadline is the request's deadline (the earlier of the context's and
	// ReadOptions.Deadline), zero when it has none. Carried by value, it
	// costs a read nothing until it is checked: a file read that would
	// start at or after it fails with ErrTimedOut without reading, and its
	// Timeout is lowered to the time left, as RocksDB's file reader checks
	// its deadline per read.
	Deadline time.Time
	// RateLimiterPriority is the priority the read is charged at;
	// PriorityTotal means it is not charged.
	RateLimiterPriority Priority
	// Activity is the read's IO activity tag.
	Activity Activity
	// Tag is the tag the read is attributed to (TagNone for none).
	Tag Tag
	// Perf, when not nil, is the request's statistics sink.
	Perf *PerfContext
}

// IOOptions converts ro into the options of a file read at the current time.
// It reads the clock only when ro has a deadline.
func (ro ReadOptions) IOOptions() (IOOptions, error) {
	var io IOOptions
	if err := fillIOOptions(&io, &ro, ro.Activity, ro.Deadline, time.Now); err != nil {
		return IOOptions{}, err
	}
	return io, nil
}

// IOOptionsAt is IOOptions with the current time given:
//   - a deadline at or before now is an error (ErrTimedOut, which also
//     matches context.DeadlineExceeded);
//   - otherwise the timeout is the time left before the deadline, at least
//     one microsecond, lowered to IOTimeout when that is set and smaller;
//   - activity, tag and sink are copied, and the priority is
//     RateLimiterPriority, or the tag's default priority when that is
//     PriorityTotal.
func (ro ReadOptions) IOOptionsAt(now time.Time) (IOOptions, error) {
	var io IOOptions
	if err := fillIOOptions(&io, &ro, ro.Activity, ro.Deadline, func() time.Time { return now }); err != nil {
		return IOOptions{}, err
	}
	return io, nil
}

// fillIOOptions is the one conversion from ReadOptions to IOOptions
// (RocksDB's PrepareIOFromReadOptions), for IOOptions, IOOptionsAt and
// ResolveRead: ro, tagged with activity and bounded by deadline, into *io
// (see IOOptionsAt). It reads ro in place and calls now only when there is
// a deadline.
func fillIOOptions(io *IOOptions, ro *ReadOptions, activity Activity, deadline time.Time, now func() time.Time) error {
	io.Timeout = ro.IOTimeout
	io.Deadline = deadline
	if !deadline.IsZero() {
		left := deadline.Sub(now())
		if left <= 0 {
			return errDeadlineExceeded
		}
		// RocksDB keeps the timeout in whole microseconds, and zero would
		// mean "no timeout"; round the time left up so it never reaches zero.
		t := left.Round(time.Microsecond)
		if t < left {
			t += time.Microsecond
		}
		if ro.IOTimeout == 0 || t < ro.IOTimeout {
			io.Timeout = t
		}
	}
	io.RateLimiterPriority = ro.priority()
	io.Activity = activity
	io.Tag = ro.Tag
	io.Perf = ro.Perf
	return nil
}

// priority is the priority the request's reads are charged at: its own, or
// its tag's default when it leaves it at PriorityTotal.
func (ro ReadOptions) priority() Priority {
	if ro.RateLimiterPriority == PriorityTotal && ro.Tag != TagNone {
		return ro.Tag.Priority()
	}
	return ro.RateLimiterPriority
}

// CheckDeadline returns nil before deadline, or when it is zero, and
// otherwise RocksDB's "Deadline exceeded" error, marked ErrTimedOut and
// matching context.DeadlineExceeded. It reads the clock only when deadline
// is not zero and allocates nothing: readers call it between blocks and
// before each file read of a request whose deadline its context does not
// carry.
func CheckDeadline(deadline time.Time) error {
	// The zero test inlines into the caller; the clock is a call.
	if deadline.IsZero() {
		return nil
	}
	return checkDeadline(deadline)
}

func checkDeadline(deadline time.Time) error {
	if !time.Now().Before(deadline) {
		return errDeadlineExceeded
	}
	return nil
}
