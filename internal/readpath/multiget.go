package readpath

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

// Result is one key's outcome of a MultiGet. When Found, Value holds the
// value (pinned as Get's is); Err is the key's own failure, such as a corrupt
// block in the table that holds it. The caller releases every Result's
// Value (a no-op when not Found).
type Result struct {
	Value Value
	Found bool
	Err   error
}

// maxAsyncTables bounds the goroutines that read the tables of one level
// concurrently for a MultiGet with ReadEnv.AsyncIO (the calling goroutine
// included). A few overlap the IO of a batch well; more would only contend
// for the file reader and the rate limiter.
const maxAsyncTables = 4

// MultiGet looks up keys at seq and writes one Result per key, in the
// caller's order, into out, which must have len(keys) entries (it is
// overwritten). keys may come in any order and repeat; the caller owns them
// and they are only read during the call.
//
// The keys are sorted and de-duplicated (duplicates share one lookup and
// their Values share one pin, each released separately). Every key is looked
// up in the memtables, newest first; the keys they do not resolve go down
// the levels. Each L0 table, newest first, and in each level >= 1 each table
// whose range holds some of the remaining keys, gets one
// sstable.Reader.MultiGet with all of its keys: one filter pass, one index
// pass, and one MultiRead for the uncached blocks. A key is resolved by the
// first source holding an entry of it (a tombstone resolves it as not
// found), by its table's failure (its Err), and is then skipped by older
// sources. With env.AsyncIO the tables of a level >= 1 are read concurrently
// by up to maxAsyncTables goroutines; the results are the same either way.
//
// The context is checked before every table. The returned error is a failure
// of the whole call: a done context (errors.Is(err, ctx.Err()) holds), or out
// of the wrong length. Then every key not yet resolved has that error as its
// Err; keys already resolved keep their results, which must still be
// released.
//
// Tickers (View.Stats): NumberMultiGetCalls (1), NumberMultiGetKeysRead
// (len(keys)), NumberMultiGetKeysFound and NumberMultiGetBytesRead (per key
// of the caller's, duplicates included), and the BytesPerMultiGet histogram,
// as RocksDB's MultiGetImpl records them.
func MultiGet(ctx context.Context, v *View, env sstable.ReadEnv, keys [][]byte, seq base.SeqNum, out []Result) error {
	if len(out) != len(keys) {
		return base.InvalidArgumentf("readpath: MultiGet of %d keys into %d results", len(keys), len(out))
	}
	clear(out)
	ms := mgStates.Get().(*mgState)
	// The pooled state holds env, so that the goroutines of an AsyncIO
	// MultiGet can share it without it escaping on every call.
	ms.env = env
	ms.prepare(v.Cmp, keys)
	err := ms.lookup(ctx, v, &ms.env, seq)
	ms.resolveMerges(ctx, v, seq)
	found, n := ms.fill(out, err)
	ms.reset()
	mgStates.Put(ms)

	st := v.Stats
	st.RecordTick(statistics.NumberMultiGetCalls, 1)
	st.RecordTick(statistics.NumberMultiGetKeysRead, uint64(len(keys)))
	st.RecordTick(statistics.NumberMultiGetKeysFound, found)
	st.RecordTick(statistics.NumberMultiGetBytesRead, n)
	st.RecordInHistogram(statistics.BytesPerMultiGet, n)
	return err
}

// keyState is where a MultiGet key's lookup stands.
type keyState uint8

const (
	keyPending keyState = iota // not resolved yet: look further down
	keyFound                   // value holds the value
	keyAbsent                  // a tombstone hides it
	keyFailed                  // err says why
	keyMerge                   // its newest entry is a merge operand: resolveMerges
)

// mgKey is one distinct key of a MultiGet.
type mgKey struct {
	key  []byte
	hash uint32
	// order[first:first+n] are the caller's indices of the key.
	first, n int32
	state    keyState
	value    Value
	err      error
}

// mgGroup is one table's share of a round of lookups: batch[start:end].
type mgGroup struct {
	f          *manifest.FileMetadata
	level      int
	start, end int
	ref        TableRef
	err        error
}

// mgState is the per-call state of a MultiGet, pooled.
type mgState struct {
	env   sstable.ReadEnv
	order []int32
	keys  []mgKey
	// batch holds the current round's lookups, table by table (see groups);
	// batchKey[i] is the index in keys of batch[i].
	batch    []sstable.MultiGetKey
	batchKey []int32
	groups   []mgGroup
}

var mgStates = sync.Pool{New: func() any { return new(mgState) }}

// prepare sorts the caller's keys into distinct keys.
func (ms *mgState) prepare(cmp base.Compare, keys [][]byte) {
	for i := range keys {
		ms.order = append(ms.order, int32(i))
	}
	// Stable, so that a key's caller indices stay in the caller's order.
	slices.SortStableFunc(ms.order, func(a, b int32) int { return base.CompareUser(cmp, keys[a], keys[b]) })
	for i, idx := range ms.order {
		if n := len(ms.keys); n > 0 && bytes.Equal(ms.keys[n-1].key, keys[idx]) {
			ms.keys[n-1].n++
			continue
		}
		ms.keys = append(ms.keys, mgKey{key: keys[idx], first: int32(i), n: 1})
	}
}

func (ms *mgState) reset() {
	clear(ms.keys)
	clear(ms.groups)
	ms.order, ms.keys, ms.groups = ms.order[:0], ms.keys[:0], ms.groups[:0]
	ms.clearBatch()
}

func (ms *mgState) clearBatch() {
	clear(ms.batch)
	ms.batch, ms.batchKey = ms.batch[:0], ms.batchKey[:0]
}

// lookup resolves the keys, newest source first. It returns the error that
// stopped the whole call, if any.
func (ms *mgState) lookup(ctx context.Context, v *View, env *sstable.ReadEnv, seq base.SeqNum) error {
	pending := len(ms.keys)
	for i := range ms.keys {
		k := &ms.keys[i]
		for _, m := range v.Mems {
			var data []byte
			var kind base.Kind
			var found bool
			if dels := m.RangeDeletions(); dels == nil {
				data, kind, found = m.Get(k.key, seq)
			} else {
				// As in Get: a covering tombstone above the point decides.
				tseq, _ := dels.Covering(k.key, seq)
				var pseq base.SeqNum
				data, kind, pseq, found = m.GetEntry(k.key, seq)
				if tseq > 0 && (!found || pseq < tseq) {
					data, kind, found = nil, base.KindRangeDelete, true
				}
			}
			if !found {
				continue
			}
			if kind == base.KindSet {
				k.state, k.value = keyFound, Value{Data: data}
			} else if kind == base.KindMerge {
				k.state = keyMerge
			} else {
				k.state = keyAbsent
			}
			pending--
			break
		}
	}
	if pending == 0 || v.Version == nil {
		return nil
	}
	for i := range ms.keys {
		if k := &ms.keys[i]; k.state == keyPending {
			k.hash = bloom.Hash(k.key)
		}
	}
	for level := range v.Version.Levels {
		files := v.Version.Levels[level]
		if level == 0 {
			for _, f := range files {
				ms.groups = ms.groups[:0]
				ms.clearBatch()
				for i := range ms.keys {
					if k := &ms.keys[i]; k.state == keyPending && containsKey(v.Cmp, f, k.key) {
						ms.add(f, 0, i, seq)
					}
				}
				if len(ms.groups) == 0 {
					continue
				}
				ms.runGroup(ctx, v, env, &ms.groups[0])
				if err := ms.finish(ctx, env.Deadline); err != nil {
					return err
				}
			}
			continue
		}
		ms.groups = ms.groups[:0]
		ms.clearBatch()
		from := 0
		for i := range ms.keys {
			k := &ms.keys[i]
			if k.state != keyPending {
				continue
			}
			// The keys are sorted, so each one's file is at or after the
			// previous one's.
			from += findFile(v.Cmp, files[from:], k.key)
			if from == len(files) {
				break
			}
			if base.CompareUser(v.Cmp, files[from].Smallest.UserKey, k.key) > 0 {
				continue
			}
			ms.add(files[from], level, i, seq)
		}
		if len(ms.groups) == 0 {
			continue
		}
		ms.runGroups(ctx, v, env)
		if err := ms.finish(ctx, env.Deadline); err != nil {
			return err
		}
	}
	return nil
}

// add appends key i to the lookups of table f of level, which is the
// current group's or a new one's.
func (ms *mgState) add(f *manifest.FileMetadata, level, i int, seq base.SeqNum) {
	if n := len(ms.groups); n == 0 || ms.groups[n-1].f != f {
		ms.groups = append(ms.groups, mgGroup{f: f, level: level, start: len(ms.batch), end: len(ms.batch)})
	}
	k := &ms.keys[i]
	ms.batch = append(ms.batch, sstable.MultiGetKey{Key: k.key, Hash: k.hash, Seq: seq})
	ms.batchKey = append(ms.batchKey, int32(i))
	ms.groups[len(ms.groups)-1].end++
}

// runGroups runs the round's groups: one after the other, or with
// env.AsyncIO on up to maxAsyncTables goroutines. Each group writes only its
// own mgGroup and batch range.
func (ms *mgState) runGroups(ctx context.Context, v *View, env *sstable.ReadEnv) {
	n := len(ms.groups)
	if !env.AsyncIO || n == 1 {
		for i := range ms.groups {
			ms.runGroup(ctx, v, env, &ms.groups[i])
		}
		return
	}
	var next atomic.Int32
	work := func() {
		for {
			i := int(next.Add(1)) - 1
			if i >= n {
				return
			}
			ms.runGroup(ctx, v, env, &ms.groups[i])
		}
	}
	var wg sync.WaitGroup
	for range min(n, maxAsyncTables) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
}

// runGroup acquires g's table and looks its keys up.
func (ms *mgState) runGroup(ctx context.Context, v *View, env *sstable.ReadEnv, g *mgGroup) {
	if g.err = ctxErr(ctx, env.Deadline, "MultiGet: before", g.f.FileNum); g.err != nil {
		return
	}
	t, err := v.Tables.Acquire(ctx, *env, g.f, g.level)
	if err != nil {
		g.err = errors.Wrapf(err, "readpath: MultiGet: acquiring table %s", g.f.FileNum)
		return
	}
	g.ref = t
	if err := t.Reader.MultiGet(ctx, *env, ms.batch[g.start:g.end]); err != nil {
		g.err = errors.Wrapf(err, "readpath: MultiGet in table %s", g.f.FileNum)
	}
}

// finish takes the round's results into the keys and releases what is not
// kept. It returns the error that stops the whole call: the context's, if
// it is done, or the request's own deadline (which ctx does not carry) has
// passed, and a table failed.
func (ms *mgState) finish(ctx context.Context, deadline time.Time) error {
	var callErr error
	for gi := range ms.groups {
		g := &ms.groups[gi]
		if g.err != nil {
			// The reader holds no pins after a failed MultiGet.
			g.ref.Release()
			cerr := ctx.Err()
			if cerr == nil {
				cerr = ioctx.CheckDeadline(deadline)
			}
			if cerr != nil {
				if callErr == nil {
					if callErr = g.err; !errors.Is(callErr, cerr) {
						callErr = errors.Wrap(cerr, "readpath: MultiGet")
					}
				}
				continue
			}
			for b := g.start; b < g.end; b++ {
				k := &ms.keys[ms.batchKey[b]]
				k.state, k.err = keyFailed, g.err
			}
			continue
		}
		// The found values share the table reference through h, which the
		// round holds one reference of until it is done with the table.
		var h *holder
		dels := g.ref.Reader.RangeDeletions()
		for b := g.start; b < g.end; b++ {
			mk := &ms.batch[b]
			k := &ms.keys[ms.batchKey[b]]
			var tseq base.SeqNum
			if dels != nil && mk.Err == nil {
				tseq, _ = dels.Covering(mk.Key, mk.Seq)
			}
			switch {
			case mk.Err != nil:
				mk.Pin.Release()
				k.state, k.err = keyFailed, errors.Wrapf(mk.Err, "readpath: MultiGet in table %s", g.f.FileNum)
			case tseq > 0 && (!mk.Found || mk.EntrySeq < tseq):
				// A covering tombstone above the point decides, as in Get.
				mk.Pin.Release()
				k.state = keyAbsent
			case !mk.Found:
			case mk.Kind == base.KindMerge:
				mk.Pin.Release()
				k.state = keyMerge
			case mk.Kind != base.KindSet:
				mk.Pin.Release()
				k.state = keyAbsent
			default:
				if h == nil {
					h = newHolder(1, sstable.BlockPin{}, g.ref, nil)
				}
				h.refs.Add(1)
				k.state, k.value = keyFound, Value{Data: mk.Value, pin: mk.Pin, hold: h}
			}
		}
		if h != nil {
			h.unref()
		} else {
			g.ref.Release()
		}
		g.ref = TableRef{}
	}
	return callErr
}

// fill writes the results into out, in the caller's order, and returns the
// number of the caller's keys found and their bytes. A key still pending
// after a failed call gets callErr.
func (ms *mgState) fill(out []Result, callErr error) (found, n uint64) {
	for i := range ms.keys {
		k := &ms.keys[i]
		idx := ms.order[k.first : k.first+k.n]
		switch k.state {
		case keyFound:
			found += uint64(k.n)
			n += uint64(k.n) * uint64(len(k.value.Data))
			if k.n == 1 || k.value.hold == nil {
				// The only caller index, or a memtable value that needs no
				// release: every duplicate can have a copy.
				for _, j := range idx {
					out[j] = Result{Value: k.value, Found: true}
				}
				continue
			}
			shared := newHolder(k.n, k.value.pin, TableRef{}, k.value.hold)
			for _, j := range idx {
				out[j] = Result{Value: Value{Data: k.value.Data, hold: shared}, Found: true}
			}
		case keyFailed:
			for _, j := range idx {
				out[j].Err = k.err
			}
		case keyPending:
			if callErr != nil {
				for _, j := range idx {
					out[j].Err = callErr
				}
			}
		}
	}
	return found, n
}

// resolveMerges gives each key whose newest entry is a merge operand its
// merged value (or failure), as Get does.
func (ms *mgState) resolveMerges(ctx context.Context, v *View, seq base.SeqNum) {
	for i := range ms.keys {
		k := &ms.keys[i]
		if k.state != keyMerge {
			continue
		}
		val, err := resolveMerge(ctx, v, ms.env, k.key, seq)
		switch {
		case err == nil:
			k.state, k.value = keyFound, val
		case errors.Is(err, base.ErrNotFound):
			k.state = keyAbsent
		default:
			k.state, k.err = keyFailed, err
		}
	}
}
