package ioctx

import (
	"context"
	"time"
)

// ReadRequest is a public read resolved once, at the API boundary, by
// [ResolveRead]: options merged over the session's defaults, checked and
// tagged with the API's activity, the context's deadline folded in, and the
// IOOptions every file read of the request carries. It is the only thing
// that crosses from the façade to a driver and from the engine to its read
// path (RocksDB's ReadOptions plus the IOOptions of
// PrepareIOFromReadOptions, computed once). Pass it by value.
type ReadRequest struct {
	// IO is passed to every file read: activity, rate-limiter priority and
	// timeout (the time left before the deadline, or IOTimeout).
	IO IOOptions
	// VerifyChecksums verifies the trailer of every block read from a file
	// (blocks found in the cache were checked, or not, when they were read).
	// Explicit verification always verifies.
	VerifyChecksums bool
	// FillCache adds the blocks read to the block cache. Blocks already
	// cached are used either way.
	FillCache bool
	// AsyncIO lets MultiGet read tables concurrently and iterators read the
	// next readahead chunk while the current one is consumed.
	AsyncIO bool
	// ReadaheadSize is the iterator readahead in bytes; 0 is automatic
	// (from the second sequential block read on, 8 KiB doubling up to
	// 256 KiB). Verification reads this much at a time, or 256 KiB when 0.
	ReadaheadSize int64
	// Deadline is a deadline of the ReadOptions that the context does not
	// carry (it is earlier than the context's, or the context has none):
	// code that runs long after resolution, an iterator, derives a context
	// that expires at it. Zero when the context's deadline, if any, already
	// bounds the request.
	Deadline time.Time
}

// ResolveRead resolves the read options of one call of the public read API
// api, whose own activity is want:
//
//  1. a done ctx is an error for which errors.Is(err, ctx.Err()) holds;
//  2. the ReadOptions ctx carries are merged over defaults (a session's, or
//     nil) with [Merge];
//  3. the activity is checked and tagged ([ReadOptions.CheckAndTag]);
//  4. the earlier of the options' and the context's deadline becomes the
//     IO timeout, a deadline already past an error marked ErrTimedOut.
//
// It reads the context once, and the clock only when there is a deadline.
// It allocates only for an error.
func ResolveRead(ctx context.Context, defaults *ReadOptions, api string, want Activity) (ReadRequest, error) {
	if err := ctx.Err(); err != nil {
		return ReadRequest{}, err
	}
	// One ReadOptions lives in this frame and is changed in place: a Get
	// resolves its options on every call, and each by-value copy of them
	// is measurable there (BenchmarkResolveRead).
	ro := ReadOptionsFrom(ctx)
	if defaults != nil {
		ro = Merge(*defaults, ro)
	}
	switch ro.Activity {
	case want:
	case ActivityUnknown:
		ro.Activity = want
	default:
		return ReadRequest{}, ActivityError(api, want, ro.Activity)
	}
	return resolve(ctx, &ro)
}

// Resolve is ResolveRead's last step, for options already checked and
// tagged: internal reads made on behalf of a public call (a transaction's
// conflict check) and tests.
func (ro ReadOptions) Resolve(ctx context.Context) (ReadRequest, error) {
	return resolve(ctx, &ro)
}

// resolve folds ctx's deadline into ro and converts it. It reads the
// context's deadline once, and the clock only when there is a deadline.
func resolve(ctx context.Context, ro *ReadOptions) (ReadRequest, error) {
	own := ro.Deadline
	if d, ok := ctx.Deadline(); ok && (own.IsZero() || !own.Before(d)) {
		// The context expires first: it bounds the request, and the IO
		// timeout is computed from its deadline.
		ro.Deadline, own = d, time.Time{}
	}
	io, err := ro.IOOptions()
	if err != nil {
		return ReadRequest{}, err
	}
	return ReadRequest{
		IO:              io,
		VerifyChecksums: !ro.DontVerifyChecksums,
		FillCache:       !ro.DontFillCache,
		AsyncIO:         ro.AsyncIO,
		ReadaheadSize:   ro.ReadaheadSize,
		Deadline:        own,
	}, nil
}
