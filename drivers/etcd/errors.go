package etcd

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/shaledb/shale/driver"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The error classes of this driver, beside package driver's. Test them with
// errors.Is: the errors the driver returns carry their own messages and match
// one or more classes.
var (
	// ErrSnapshotCompacted matches a read at a revision that someone else
	// compacted away: an iterator's next page, a transaction's read, or a
	// MultiGet's later chunk. DB.Compact never compacts past a revision
	// that an open iterator or transaction of the same DB reads at; another
	// client, another DB on the same cluster, or the cluster's
	// auto-compaction can.
	ErrSnapshotCompacted = errors.New("etcd: the revision read at has been compacted")

	// ErrUnavailable matches a call the cluster could not serve: no leader
	// (quorum lost, or an election in progress) with require_leader=true,
	// or a member that stopped or timed out serving it. Retrying later may
	// succeed.
	ErrUnavailable = errors.New("etcd: the cluster is unavailable")

	// ErrOutcomeUnknown matches a write or a transaction's Commit that
	// failed in a way that does not tell whether the cluster applied it:
	// a timeout, a cancelled context or a lost connection after the
	// request was sent. The write may or may not be visible; read the keys
	// to find out.
	ErrOutcomeUnknown = errors.New("etcd: the outcome of the write is unknown")
)

// classError is an error with its own message that matches a cause (through
// Unwrap) and any number of classes (through Is).
type classError struct {
	msg     string
	cause   error
	classes []error
}

func (e *classError) Error() string { return e.msg }
func (e *classError) Unwrap() error { return e.cause }
func (e *classError) Is(target error) bool {
	return target != nil && slices.Contains(e.classes, target)
}

// newError returns an error with message msg (followed by cause's, if any)
// that matches cause and classes.
func newError(msg string, cause error, classes ...error) error {
	if cause != nil {
		msg += ": " + cause.Error()
	}
	return &classError{msg: msg, cause: cause, classes: classes}
}

func invalidArgument(msg string) error { return newError(msg, nil, driver.ErrInvalidArgument) }

// rpcKind says what a failed RPC may have done to the database.
type rpcKind uint8

const (
	// readRPC changes nothing.
	readRPC rpcKind = iota
	// unsentWrite is a write that reached no member: no attempt of it got
	// a connection, so it cannot have been applied.
	unsentWrite
	// unreachableWrite is an unsentWrite made while the client had a
	// connection to no member.
	unreachableWrite
	// sentWrite is a write that a member may have received.
	sentWrite
)

// rpcError translates the error of an RPC made with rctx, a context derived
// from the caller's ctx by rpcContext, into one of the driver's classes. op
// names the call for the message ("Get", "Commit"). A sentWrite whose
// failure does not prove the request was refused also matches
// ErrOutcomeUnknown; an unsent one says it was not applied and, when no
// member was reachable, matches ErrUnavailable.
func rpcError(ctx, rctx context.Context, op string, err error, kind rpcKind) error {
	err = clientv3.ContextError(rctx, err)
	msg := "etcd: " + op
	var classes []error
	unknown := kind == sentWrite
	unsent := kind == unsentWrite || kind == unreachableWrite
	switch {
	case ctx.Err() != nil:
		// The caller's context: keep its error as the cause, so
		// errors.Is(err, ctx.Err()) holds.
		err = ctx.Err()
	case kind == unreachableWrite && (rctx.Err() != nil || errors.Is(err, context.DeadlineExceeded)):
		// The request's own deadline came while no member could be
		// reached (every connection down, or being made).
		err = driver.TimeoutError("no connection to any member before the request's deadline " +
			"(request_timeout; dial_timeout bounds each connection attempt)")
		classes = append(classes, ErrUnavailable)
	case rctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		// The request's own deadline (request_timeout, the IO timeout or
		// the ReadOptions deadline): a timeout, matching
		// context.DeadlineExceeded as the engine's timeouts do.
		err = driver.TimeoutError("no response before the request's deadline " +
			"(request_timeout, or the ReadOptions' deadline or IO timeout)")
	case errors.Is(err, rpctypes.ErrCompacted):
		msg += " (the revision read at was compacted by another client, another DB or the cluster's " +
			"auto-compaction)"
		classes = append(classes, ErrSnapshotCompacted)
		unknown = false
	case errors.Is(err, rpctypes.ErrNoLeader):
		// The member refused before doing anything: nothing was applied.
		classes = append(classes, ErrUnavailable)
		unknown = false
	case errors.Is(err, rpctypes.ErrTooManyOps):
		msg += " (the server's --max-txn-ops is below the DSN's max_txn_ops)"
		classes = append(classes, driver.ErrInvalidArgument)
		unknown = false
	case errors.Is(err, rpctypes.ErrRequestTooLarge):
		msg += " (the server's --max-request-bytes is below the DSN's max_request_bytes)"
		classes = append(classes, driver.ErrInvalidArgument)
		unknown = false
	case errors.Is(err, rpctypes.ErrCorrupt):
		// A cluster with a CORRUPT alarm applies nothing.
		classes = append(classes, driver.ErrCorruption)
		unknown = false
	default:
		switch code := grpcCode(err); code {
		case codes.Unavailable:
			classes = append(classes, ErrUnavailable)
			if !unknown {
				// A connection that failed: say why, without gRPC's
				// wrapping.
				err = &classError{msg: dialCause(err), cause: err}
			}
		case codes.InvalidArgument:
			classes = append(classes, driver.ErrInvalidArgument)
			unknown = false
		case codes.PermissionDenied, codes.Unauthenticated, codes.FailedPrecondition,
			codes.ResourceExhausted, codes.OutOfRange:
			// Refused before it was applied.
			unknown = false
		default:
			if kind == unreachableWrite {
				classes = append(classes, ErrUnavailable)
			}
		}
	}
	switch {
	case unknown:
		msg += " (outcome unknown: the cluster may or may not have applied it)"
		classes = append(classes, ErrOutcomeUnknown)
	case unsent:
		msg += " (not applied: it reached no member)"
	}
	return newError(msg, err, classes...)
}

// grpcCode returns the gRPC code of err, an etcd server error or a gRPC
// status; codes.Unknown for anything else.
func grpcCode(err error) codes.Code {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code()
	}
	if s, ok := status.FromError(err); ok {
		return s.Code()
	}
	return codes.Unknown
}

// dialCause returns the message of err, a failed connection's error, without
// gRPC's wrapping: "dial tcp 127.0.0.1:2379: connect: connection refused"
// rather than `rpc error: code = Unavailable desc = connection error: desc =
// "transport: Error while dialing: dial tcp ...`.
func dialCause(err error) string {
	msg := err.Error()
	if s, ok := status.FromError(err); ok {
		msg = s.Message()
	}
	const dialing = "Error while dialing: "
	if i := strings.Index(msg, dialing); i >= 0 {
		msg = strings.TrimSuffix(msg[i+len(dialing):], `"`)
	}
	return msg
}
