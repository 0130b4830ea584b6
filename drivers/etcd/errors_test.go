package etcd

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shale/driver"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestRPCErrorClasses pins how RPC failures are classified, and which
// writes are of unknown outcome.
func TestRPCErrorClasses(t *testing.T) {
	cancelled, cancel := context.WithCancel(bg)
	cancel()
	expired, cancel2 := context.WithDeadline(bg, time.Now().Add(-time.Second))
	defer cancel2()
	for _, tc := range []struct {
		name       string
		ctx, rctx  context.Context
		err        error
		kind       rpcKind
		match      []error
		notMatch   []error
		msgContain string
	}{
		{"no leader, write", bg, bg, rpctypes.ErrGRPCNoLeader, sentWrite,
			[]error{ErrUnavailable}, []error{ErrOutcomeUnknown}, "no leader"},
		{"server timeout, write", bg, bg, rpctypes.ErrGRPCTimeout, sentWrite,
			[]error{ErrUnavailable, ErrOutcomeUnknown}, nil, "outcome unknown"},
		{"leader changed, read", bg, bg, rpctypes.ErrGRPCLeaderChanged, readRPC,
			[]error{ErrUnavailable}, []error{ErrOutcomeUnknown}, ""},
		{"connection refused, read", bg, bg, status.Error(codes.Unavailable, "connection refused"), readRPC,
			[]error{ErrUnavailable}, nil, ""},
		{"compacted", bg, bg, rpctypes.ErrGRPCCompacted, readRPC, []error{ErrSnapshotCompacted}, nil, "compacted"},
		{"too many ops", bg, bg, rpctypes.ErrGRPCTooManyOps, sentWrite, []error{driver.ErrInvalidArgument},
			[]error{ErrOutcomeUnknown}, "max_txn_ops"},
		{"request too large", bg, bg, rpctypes.ErrGRPCRequestTooLarge, sentWrite, []error{driver.ErrInvalidArgument},
			[]error{ErrOutcomeUnknown}, "max_request_bytes"},
		{"corrupt cluster, write", bg, bg, rpctypes.ErrGRPCCorrupt, sentWrite, []error{driver.ErrCorruption},
			[]error{ErrOutcomeUnknown}, ""},
		{"permission denied, write", bg, bg, rpctypes.ErrGRPCPermissionDenied, sentWrite, nil,
			[]error{ErrOutcomeUnknown, ErrUnavailable}, "permission denied"},
		{"caller cancelled, write", cancelled, cancelled, status.Error(codes.Canceled, "context canceled"), sentWrite,
			[]error{context.Canceled, ErrOutcomeUnknown}, nil, ""},
		{"caller's deadline, read", expired, expired, status.Error(codes.DeadlineExceeded, "deadline"), readRPC,
			[]error{context.DeadlineExceeded}, []error{ErrOutcomeUnknown}, ""},
		{"request's own deadline, write", bg, expired, status.Error(codes.DeadlineExceeded, "deadline"), sentWrite,
			[]error{context.DeadlineExceeded, driver.ErrTimedOut, ErrOutcomeUnknown}, nil, "deadline"},
		{"connection refused, unsent write", bg, bg, status.Error(codes.Unavailable,
			`connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`),
			unreachableWrite, []error{ErrUnavailable}, []error{ErrOutcomeUnknown},
			"not applied: it reached no member): dial tcp 127.0.0.1:1: connect: connection refused"},
		{"no connection before the request's deadline, unsent write", bg, expired,
			status.Error(codes.DeadlineExceeded, "context deadline exceeded while waiting for connections to become ready"),
			unreachableWrite, []error{ErrUnavailable, context.DeadlineExceeded}, []error{ErrOutcomeUnknown}, "not applied"},
		{"request's own deadline before a connection was picked, unsent write", bg, expired,
			status.Error(codes.DeadlineExceeded, "context deadline exceeded"), unsentWrite,
			[]error{context.DeadlineExceeded}, []error{ErrOutcomeUnknown, ErrUnavailable}, "not applied"},
		{"caller cancelled, unsent write", cancelled, cancelled, status.Error(codes.Canceled, "context canceled"),
			unsentWrite, []error{context.Canceled}, []error{ErrOutcomeUnknown}, "not applied"},
		{"connection lost after sending, write", bg, bg, status.Error(codes.Unavailable, "error reading from server: EOF"),
			sentWrite, []error{ErrUnavailable, ErrOutcomeUnknown}, nil, "outcome unknown"},
	} {
		err := rpcError(tc.ctx, tc.rctx, "Op", tc.err, tc.kind)
		for _, m := range tc.match {
			if !errors.Is(err, m) {
				t.Errorf("%s: %v does not match %v", tc.name, err, m)
			}
		}
		for _, m := range tc.notMatch {
			if errors.Is(err, m) {
				t.Errorf("%s: %v matches %v", tc.name, err, m)
			}
		}
		if !strings.HasPrefix(err.Error(), "etcd: Op") || !strings.Contains(err.Error(), tc.msgContain) {
			t.Errorf("%s: message %q; want it to start with the call and mention %q", tc.name, err, tc.msgContain)
		}
	}
}
