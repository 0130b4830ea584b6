package etcd

import (
	"bytes"
	"context"
	"slices"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// iter is a DB's (or, under a transaction's overlay, a transaction's)
// iterator: it reads the namespace at one revision, a page of page_size keys
// per Range, and keeps the page it last fetched. Moves within the page make
// no RPC.
//
// A page is a run of keys the iterator knows completely: every key of the
// snapshot (within the bounds) from lo to hi is in it. Forward pages are
// one Range (limit page_size) from a key up. etcd sorts a descending Range
// by reading every key of the range first, so a backward page (Last, SeekLT,
// or Prev off the start of a page) is two RPCs: a keys-only descending Range
// of [lower bound, k), which costs the server a walk of its in-memory index
// over the whole range but sends only page_size keys, then a forward Range
// of values from the smallest of them. A full backward scan of n keys thus
// costs the server O(n²/page_size) index steps; forward scans are O(n).
type iter struct {
	c   *conn
	ctx context.Context
	req ioctx.ReadRequest
	// rev is the revision the iterator reads at; pin keeps Compact of this
	// DB from passing it (nil for a transaction's iterator, whose
	// transaction holds the pin).
	rev int64
	pin *pin

	// lower and upper are the bounds; nil means open on that side.
	lower, upper []byte

	// The page: kvs ascending, and the run of keys they are all of.
	kvs []*mvccpb.KeyValue
	// lo is the page's first key, inclusive, unless loStart says the page
	// starts at the lower bound; hi is the key after the page's last,
	// exclusive, unless hiEnd says it ends at the upper bound.
	lo, hi         []byte
	loStart, hiEnd bool
	havePage       bool

	pos   int // index in kvs, valid when valid
	valid bool
	err   error

	// Local counts, added to the statistics at Close as the engine does.
	nNext, nNextFound, nPrev, nPrevFound, bytesRead uint64
}

var _ driver.Iter = (*iter)(nil)

// NewIterator reads the first page now, which fixes the revision the
// iterator reads at (the revision of the moment NewIterator runs), and pins
// that revision until Close.
func (c *conn) NewIterator(ctx context.Context, req ioctx.ReadRequest, opts driver.IterOptions) (driver.Iter, error) {
	it := c.newIter(ctx, req, opts, 0)
	if it.emptyBounds() {
		it.havePage, it.loStart, it.hiEnd = true, true, true
		return it, nil
	}
	it.pin = c.pins.add()
	if !it.fetchForward(it.lowerKey()) {
		c.pins.remove(it.pin)
		return nil, it.err
	}
	return it, nil
}

// newIter returns an iterator at rev (0: the revision of its first page)
// that has fetched nothing.
func (c *conn) newIter(ctx context.Context, req ioctx.ReadRequest, opts driver.IterOptions, rev int64) *iter {
	return &iter{c: c, ctx: ctx, req: req, rev: rev, lower: opts.LowerBound, upper: opts.UpperBound}
}

// emptyBounds reports whether no key can lie within the bounds.
func (it *iter) emptyBounds() bool {
	return it.upper != nil && bytes.Compare(it.lowerKey(), it.upper) >= 0
}

// lowerKey is the lower bound, or the smallest key.
func (it *iter) lowerKey() []byte {
	if it.lower == nil {
		return []byte{}
	}
	return it.lower
}

// rangeEnd is the etcd key that ends a Range at the user key k; k nil
// means the upper bound (or the namespace's end).
func (it *iter) rangeEnd(k []byte) []byte {
	if k == nil {
		k = it.upper
	}
	if k == nil {
		return it.c.end
	}
	return it.c.key(k)
}

// fetch runs one Range of the iteration at the iterator's revision (and
// fixes that revision on the first). It sets it.err and returns nil on
// failure.
func (it *iter) fetch(r *pb.RangeRequest) *pb.RangeResponse {
	r.Revision = it.rev
	resp, err := it.c.readRange(it.ctx, it.req, "iterator", r)
	if err != nil {
		it.fail(err)
		return nil
	}
	if it.rev == 0 {
		it.rev = resp.GetHeader().GetRevision()
		if it.pin != nil {
			it.c.pins.resolve(it.pin, it.rev)
		}
	}
	return resp
}

func (it *iter) fail(err error) {
	it.err = err
	it.valid = false
	it.kvs, it.havePage = nil, false
}

// fetchForward makes the page of the keys from `from` (>= the lower bound)
// up, at most page_size of them.
func (it *iter) fetchForward(from []byte) bool {
	resp := it.fetch(&pb.RangeRequest{Key: it.c.key(from), RangeEnd: it.rangeEnd(nil), Limit: int64(it.c.cfg.PageSize)})
	if resp == nil {
		return false
	}
	it.kvs = resp.Kvs
	it.lo, it.loStart = bytes.Clone(from), bytes.Equal(from, it.lowerKey())
	it.hi, it.hiEnd = nil, !resp.More
	if resp.More {
		it.hi = append(slices.Clip(it.c.userKey(it.kvs[len(it.kvs)-1].Key)), 0)
	}
	it.havePage = true
	return true
}

// fetchBackward makes the page of the keys below to (nil: the upper bound),
// at most page_size of them: a keys-only descending Range finds the page's
// first key, and a forward Range reads the page.
func (it *iter) fetchBackward(to []byte) bool {
	end := it.rangeEnd(to)
	keys := it.fetch(&pb.RangeRequest{Key: it.c.key(it.lowerKey()), RangeEnd: end, Limit: int64(it.c.cfg.PageSize),
		SortOrder: pb.RangeRequest_DESCEND, SortTarget: pb.RangeRequest_KEY, KeysOnly: true})
	if keys == nil {
		return false
	}
	it.hi, it.hiEnd = bytes.Clone(to), to == nil || it.upper != nil && bytes.Equal(to, it.upper)
	it.havePage = true
	if len(keys.Kvs) == 0 {
		it.kvs, it.lo, it.loStart = nil, nil, true
		return true
	}
	first := keys.Kvs[len(keys.Kvs)-1].Key
	resp := it.fetch(&pb.RangeRequest{Key: first, RangeEnd: end, Limit: int64(it.c.cfg.PageSize)})
	if resp == nil {
		return false
	}
	it.kvs = resp.Kvs
	it.lo, it.loStart = it.c.userKey(first), !keys.More
	return true
}

// coversFrom reports whether the page holds every key >= k up to its end.
func (it *iter) coversFrom(k []byte) bool {
	return it.havePage && (it.loStart || bytes.Compare(it.lo, k) <= 0) && (it.hiEnd || bytes.Compare(k, it.hi) < 0)
}

// coversBelow reports whether the page holds every key < k down to its
// start (k nil: the upper bound).
func (it *iter) coversBelow(k []byte) bool {
	if !it.havePage {
		return false
	}
	if k == nil {
		return it.hiEnd
	}
	return (it.hiEnd || bytes.Compare(k, it.hi) <= 0) && (it.loStart || bytes.Compare(it.lo, k) < 0)
}

// seekGE positions at the first key >= k within the bounds.
func (it *iter) seekGE(k []byte) bool {
	it.err = nil
	if it.lower != nil && bytes.Compare(k, it.lower) < 0 {
		k = it.lower
	}
	if it.upper != nil && bytes.Compare(k, it.upper) >= 0 {
		it.valid = false
		return false
	}
	if it.coversFrom(k) {
		i := it.searchGE(k)
		if i < len(it.kvs) {
			return it.at(i)
		}
		if it.hiEnd {
			it.valid = false
			return false
		}
		k = it.hi
	}
	if !it.fetchForward(k) {
		return false
	}
	return it.at(0)
}

// seekLT positions at the last key < k within the bounds (k nil: the last
// key).
func (it *iter) seekLT(k []byte) bool {
	it.err = nil
	if k != nil && it.upper != nil && bytes.Compare(k, it.upper) > 0 {
		k = it.upper
	}
	if k != nil && bytes.Compare(k, it.lowerKey()) <= 0 {
		it.valid = false
		return false
	}
	if k == nil && it.upper != nil {
		k = it.upper
	}
	if it.coversBelow(k) {
		j := len(it.kvs) - 1
		if k != nil {
			j = it.searchGE(k) - 1
		}
		if j >= 0 {
			return it.at(j)
		}
		if it.loStart {
			it.valid = false
			return false
		}
		k = it.lo
	}
	if !it.fetchBackward(k) {
		return false
	}
	return it.at(len(it.kvs) - 1)
}

// searchGE returns the index of the first key of the page >= k.
func (it *iter) searchGE(k []byte) int {
	i, _ := slices.BinarySearchFunc(it.kvs, k, func(kv *mvccpb.KeyValue, k []byte) int {
		return bytes.Compare(it.c.userKey(kv.Key), k)
	})
	return i
}

// at positions at kvs[i], or reports exhaustion when i is outside the page.
func (it *iter) at(i int) bool {
	it.valid = i >= 0 && i < len(it.kvs)
	it.pos = i
	return it.valid
}

func (it *iter) next() bool {
	if it.pos+1 < len(it.kvs) {
		return it.at(it.pos + 1)
	}
	if it.hiEnd {
		it.valid = false
		return false
	}
	if !it.fetchForward(it.hi) {
		return false
	}
	return it.at(0)
}

func (it *iter) prev() bool {
	if it.pos > 0 {
		return it.at(it.pos - 1)
	}
	if it.loStart {
		it.valid = false
		return false
	}
	if !it.fetchBackward(it.lo) {
		return false
	}
	return it.at(len(it.kvs) - 1)
}

// The moves record the engine's iterator statistics: seeks (and found
// seeks) for First, Last, SeekGE and SeekLT, the DBSeek latency of the two
// seeks, steps and found steps both ways, and the bytes of every key and
// value shown.

func (it *iter) First() bool { return it.recordSeek(it.seekGE(it.lowerKey())) }
func (it *iter) Last() bool  { return it.recordSeek(it.seekLT(nil)) }

func (it *iter) SeekGE(key []byte) bool {
	sw := it.c.stats.StartStopWatch(statistics.DBSeek, statistics.HistogramNone)
	ok := it.seekGE(key)
	sw.Stop()
	return it.recordSeek(ok)
}

func (it *iter) SeekLT(key []byte) bool {
	sw := it.c.stats.StartStopWatch(statistics.DBSeek, statistics.HistogramNone)
	ok := it.seekLT(key)
	sw.Stop()
	return it.recordSeek(ok)
}

func (it *iter) Next() bool {
	it.nNext++
	if !it.valid || !it.next() {
		return false
	}
	it.nNextFound++
	it.bytesRead += it.shownBytes()
	return true
}

func (it *iter) Prev() bool {
	it.nPrev++
	if !it.valid || !it.prev() {
		return false
	}
	it.nPrevFound++
	it.bytesRead += it.shownBytes()
	return true
}

func (it *iter) recordSeek(ok bool) bool {
	it.c.stats.RecordTick(statistics.NumberDBSeek, 1)
	if ok {
		it.c.stats.RecordTick(statistics.NumberDBSeekFound, 1)
		it.c.stats.RecordTick(statistics.IterBytesRead, it.shownBytes())
	}
	return ok
}

func (it *iter) shownBytes() uint64 { return uint64(len(it.Key()) + len(it.Value())) }

func (it *iter) Key() []byte {
	if !it.valid {
		return nil
	}
	return it.c.userKey(it.kvs[it.pos].Key)
}

func (it *iter) Value() []byte {
	if !it.valid {
		return nil
	}
	return valueOf(it.kvs[it.pos])
}

func (it *iter) Error() error { return it.err }

// Close unpins the iterator's revision and records its statistics.
func (it *iter) Close() error {
	it.c.pins.remove(it.pin)
	it.pin = nil
	st := it.c.stats
	st.RecordTick(statistics.NumberDBNext, it.nNext)
	st.RecordTick(statistics.NumberDBNextFound, it.nNextFound)
	st.RecordTick(statistics.NumberDBPrev, it.nPrev)
	st.RecordTick(statistics.NumberDBPrevFound, it.nPrevFound)
	st.RecordTick(statistics.IterBytesRead, it.bytesRead)
	it.valid, it.kvs = false, nil
	return it.err
}
