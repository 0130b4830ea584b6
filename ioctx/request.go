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
	// carry (it is earlier than the context's, or the context has none).
	// The read path checks it, by value, wherever it checks the context:
	// before each table and each file read (IO.Deadline, which also holds
	// the context's), and an iterator before each move; no context is
	// derived for it, so it costs no allocation. Zero when the context's
	// deadline, if any, already bounds the request.
	Deadline time.Time
}

// ResolveRead resolves the read options of one call of the public read API
// api, whose own activity is want:
//
//  1. a done ctx is an error for which errors.Is(err, ctx.Err()) holds;
//  2. the ReadOptions ctx carries are merged over defaults (a session's, or
//     nil) with [Merge];
//  3. the activity is checked and tagged (Unknown becomes the API's own activity; any other is an error marked InvalidArgument);
//  4. the earlier of the options' and the context's deadline becomes the
//     IO timeout, a deadline already past an error marked ErrTimedOut.
//
// It reads the context once, and the clock only when there is a deadline.
// It allocates only for an error.
func ResolveRead(ctx context.Context, defaults *ReadOptions, api string, want Activity) (req ReadRequest, err error) {
	if err := resolveReadInto(ctx, defaults, api, want, &req); err != nil {
		return ReadRequest{}, err
	}
	return req, nil
}

// resolveReadInto is ResolveRead filling *req in place. On an error *req is
// unspecified.
func resolveReadInto(ctx context.Context, defaults *ReadOptions, api string, want Activity, req *ReadRequest) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ro := readOptionsIn(ctx)
	if defaults != nil {
		merged := Merge(*defaults, *ro)
		ro = &merged
	}
	activity := ro.Activity
	switch activity {
	case want:
	case ActivityUnknown:
		activity = want
	default:
		return activityError(api, want, activity)
	}
	return resolve(ctx, ro, activity, req)
}

// resolve converts ro, tagged with activity, folding ctx's deadline in.
// It reads the context's deadline once, and the clock only when there is a
// deadline. It does not modify ro, reads it through its pointer and fills
// *req, the caller's result, in place: copying the structs by value
// (through IOOptions' value receiver, temporaries and a returned struct)
// stalled on store forwarding and was most of a Get's resolution
// (BenchmarkResolveRead, ctx=background: 77-102 ns before, 31-48 after,
// interleaved on a loaded machine, 24a2e6d).
func resolve(ctx context.Context, ro *ReadOptions, activity Activity, req *ReadRequest) error {
	deadline, own := ro.Deadline, ro.Deadline
	if d, ok := ctx.Deadline(); ok && (own.IsZero() || !own.Before(d)) {
		// The context expires first: it bounds the request, and the IO
		// timeout is computed from its deadline.
		deadline, own = d, time.Time{}
	}
	if err := fillIOOptions(&req.IO, ro, activity, deadline, time.Now); err != nil {
		return err
	}
	req.VerifyChecksums = !ro.DontVerifyChecksums
	req.FillCache = !ro.DontFillCache
	req.AsyncIO = ro.AsyncIO
	req.ReadaheadSize = ro.ReadaheadSize
	req.Deadline = own
	return nil
}
