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
		write      bool
		match      []error
		notMatch   []error
		msgContain string
	}{
		{"no leader, write", bg, bg, rpctypes.ErrGRPCNoLeader, true,
			[]error{ErrUnavailable}, []error{ErrOutcomeUnknown}, "no leader"},
		{"server timeout, write", bg, bg, rpctypes.ErrGRPCTimeout, true,
			[]error{ErrUnavailable, ErrOutcomeUnknown}, nil, "outcome unknown"},
		{"leader changed, read", bg, bg, rpctypes.ErrGRPCLeaderChanged, false,
			[]error{ErrUnavailable}, []error{ErrOutcomeUnknown}, ""},
		{"connection refused, read", bg, bg, status.Error(codes.Unavailable, "connection refused"), false,
			[]error{ErrUnavailable}, nil, ""},
		{"compacted", bg, bg, rpctypes.ErrGRPCCompacted, false, []error{ErrSnapshotCompacted}, nil, "compacted"},
		{"too many ops", bg, bg, rpctypes.ErrGRPCTooManyOps, true, []error{driver.ErrInvalidArgument},
			[]error{ErrOutcomeUnknown}, "max_txn_ops"},
		{"request too large", bg, bg, rpctypes.ErrGRPCRequestTooLarge, true, []error{driver.ErrInvalidArgument},
			[]error{ErrOutcomeUnknown}, "max_request_bytes"},
		{"corrupt cluster, write", bg, bg, rpctypes.ErrGRPCCorrupt, true, []error{driver.ErrCorruption},
			[]error{ErrOutcomeUnknown}, ""},
		{"permission denied, write", bg, bg, rpctypes.ErrGRPCPermissionDenied, true, nil,
			[]error{ErrOutcomeUnknown, ErrUnavailable}, "permission denied"},
		{"caller cancelled, write", cancelled, cancelled, status.Error(codes.Canceled, "context canceled"), true,
			[]error{context.Canceled, ErrOutcomeUnknown}, nil, ""},
		{"caller's deadline, read", expired, expired, status.Error(codes.DeadlineExceeded, "deadline"), false,
			[]error{context.DeadlineExceeded}, []error{ErrOutcomeUnknown}, ""},
		{"request's own deadline, write", bg, expired, status.Error(codes.DeadlineExceeded, "deadline"), true,
			[]error{context.DeadlineExceeded, driver.ErrTimedOut, ErrOutcomeUnknown}, nil, "deadline"},
	} {
		err := rpcError(tc.ctx, tc.rctx, "Op", tc.err, tc.write)
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
