package etcd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// member is a cluster member as the verifications name it.
type member struct {
	id   uint64
	name string
	url  string // the first client URL
}

func (m member) String() string {
	return fmt.Sprintf("member %s (ID %x, %s)", m.name, m.id, m.url)
}

// maintenanceRPC runs one RPC of a verification, timed as its read and its
// response charged to the rate limiter.
func (c *conn) maintenanceRPC(ctx context.Context, req ioctx.ReadRequest, op string,
	rpc func(ctx context.Context) (message, error)) error {
	rctx, cancel := c.rpcContext(ctx, req.IO.Timeout, req.Deadline)
	defer cancel()
	sw := c.startRead(req.IO)
	resp, err := rpc(rctx)
	sw.Stop()
	if err != nil {
		return rpcError(ctx, rctx, op, err, readRPC)
	}
	return c.chargeResponse(ctx, req, op, resp)
}

// members lists the cluster's voting members that have a client URL.
func (c *conn) members(ctx context.Context, req ioctx.ReadRequest, op string) ([]member, error) {
	var resp *clientv3.MemberListResponse
	err := c.maintenanceRPC(ctx, req, op+": MemberList", func(ctx context.Context) (message, error) {
		var err error
		resp, err = c.client.MemberList(ctx)
		return (*etcdserverpb.MemberListResponse)(resp), err
	})
	if err != nil {
		return nil, err
	}
	var ms []member
	for _, m := range resp.Members {
		if m.IsLearner || len(m.ClientURLs) == 0 {
			continue
		}
		ms = append(ms, member{id: m.ID, name: m.Name, url: m.ClientURLs[0]})
	}
	return ms, nil
}

// hashRetryWait is how long VerifyChecksum waits before asking again when
// a member has not applied the revision yet, or the members' compacted
// revisions differ (a compaction is being applied).
const (
	hashRetryWait = 10 * time.Millisecond
	hashAttempts  = 200
)

// VerifyChecksum asks every voting member for the hash of its key-value
// store (HashKV) at one revision, the current one, and compares them. A
// member whose hash differs from the others' is reported in an error
// matching driver.ErrCorruption that names it; a member that cannot answer
// fails the verification with its error (ErrUnavailable when it is down).
// The hash covers the whole cluster's keys, not only this DB's namespace.
func (c *conn) VerifyChecksum(ctx context.Context, req ioctx.ReadRequest) error {
	ms, err := c.members(ctx, req, "VerifyChecksum")
	if err != nil {
		return err
	}
	var rev int64
	err = c.maintenanceRPC(ctx, req, "VerifyChecksum: revision", func(ctx context.Context) (message, error) {
		resp, err := c.kv.Range(ctx, &etcdserverpb.RangeRequest{Key: c.prefix, CountOnly: true}, c.callOpts...)
		if err == nil {
			rev = resp.GetHeader().GetRevision()
		}
		return resp, err
	})
	if err != nil {
		return err
	}
	for range hashAttempts {
		hashes, retry, err := c.hashes(ctx, req, ms, rev)
		if err != nil {
			return err
		}
		if !retry {
			return compareHashes(ms, hashes, rev)
		}
		if err := sleepCtx(ctx, req.Deadline, hashRetryWait); err != nil {
			return newError("etcd: VerifyChecksum", err)
		}
	}
	return newError(fmt.Sprintf("etcd: VerifyChecksum: after %d attempts the members still had not all applied "+
		"revision %d with the same compacted revision", hashAttempts, rev), nil, ErrUnavailable)
}

// hashes returns each member's HashKV at rev. retry reports a state that
// passes: a member that has not applied rev yet, or compacted revisions
// that differ.
func (c *conn) hashes(ctx context.Context, req ioctx.ReadRequest, ms []member, rev int64) (
	resps []*etcdserverpb.HashKVResponse, retry bool, err error) {
	resps = make([]*etcdserverpb.HashKVResponse, len(ms))
	for i, m := range ms {
		err := c.maintenanceRPC(ctx, req, "VerifyChecksum: HashKV of "+m.String(),
			func(ctx context.Context) (message, error) {
				resp, err := c.hashKV(ctx, m.url, rev)
				resps[i] = resp
				return resp, err
			})
		if errors.Is(err, rpctypes.ErrFutureRev) {
			return nil, true, nil
		}
		if err != nil {
			return nil, false, err
		}
	}
	for _, r := range resps[1:] {
		if r.CompactRevision != resps[0].CompactRevision {
			return nil, true, nil
		}
	}
	return resps, false, nil
}

// hashKV asks the member at url for its HashKV at rev. It fails at once
// when the member is down (the client's own HashKV waits for it until the
// deadline), and is not retried: a verification reports a missing member
// rather than waiting for it.
func (c *conn) hashKV(ctx context.Context, url string, rev int64) (*etcdserverpb.HashKVResponse, error) {
	cc, err := c.client.Dial(url)
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	return etcdserverpb.NewMaintenanceClient(cc).HashKV(ctx, &etcdserverpb.HashKVRequest{Revision: rev},
		grpc.WaitForReady(false))
}

// compareHashes reports the members whose hash differs from the majority's,
// or every member when no hash has a majority.
func compareHashes(ms []member, hashes []*etcdserverpb.HashKVResponse, rev int64) error {
	count := make(map[uint32]int)
	for _, h := range hashes {
		count[h.Hash]++
	}
	if len(count) == 1 {
		return nil
	}
	var majority uint32
	best := 0
	for h, n := range count {
		if n > best {
			majority, best = h, n
		}
	}
	var bad []string
	for i, h := range hashes {
		if best*2 <= len(hashes) || h.Hash != majority {
			bad = append(bad, fmt.Sprintf("%s has hash %08x", ms[i], h.Hash))
		}
	}
	slices.Sort(bad)
	what := "the members' key-value hashes disagree with no majority"
	if best*2 > len(hashes) {
		what = fmt.Sprintf("%d of %d members agree on hash %08x, but", best, len(hashes), majority)
	}
	return newError(fmt.Sprintf("etcd: VerifyChecksum at revision %d: %s %s", rev, what, strings.Join(bad, ", ")),
		nil, driver.ErrCorruption)
}

// VerifyFileChecksums checks the cluster's alarms: a CORRUPT alarm, raised
// by a member's own corruption check, is an error matching
// driver.ErrCorruption that names the member.
func (c *conn) VerifyFileChecksums(ctx context.Context, req ioctx.ReadRequest) error {
	var alarms []*etcdserverpb.AlarmMember
	err := c.maintenanceRPC(ctx, req, "VerifyFileChecksums: AlarmList", func(ctx context.Context) (message, error) {
		resp, err := c.client.AlarmList(ctx)
		if err != nil {
			return nil, err
		}
		alarms = resp.Alarms
		return (*etcdserverpb.AlarmResponse)(resp), nil
	})
	if err != nil {
		return err
	}
	var corrupt []uint64
	for _, a := range alarms {
		if a.Alarm == etcdserverpb.AlarmType_CORRUPT {
			corrupt = append(corrupt, a.MemberID)
		}
	}
	if len(corrupt) == 0 {
		return nil
	}
	names := make(map[uint64]string)
	if ms, err := c.members(ctx, req, "VerifyFileChecksums"); err == nil {
		for _, m := range ms {
			names[m.id] = m.String()
		}
	}
	var bad []string
	for _, id := range corrupt {
		n, ok := names[id]
		if !ok {
			n = fmt.Sprintf("member ID %x", id)
		}
		bad = append(bad, n)
	}
	return newError("etcd: VerifyFileChecksums: the cluster has a CORRUPT alarm for "+strings.Join(bad, ", "),
		nil, driver.ErrCorruption)
}

// sleepCtx sleeps for d, or until ctx is done or deadline (zero: none)
// passes, which it reports as an error.
func sleepCtx(ctx context.Context, deadline time.Time, d time.Duration) error {
	if !deadline.IsZero() && time.Until(deadline) < d {
		return driver.TimeoutError("Deadline exceeded")
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
