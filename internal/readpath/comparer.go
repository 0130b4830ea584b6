package readpath

import (
	"bytes"
	"context"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/shaledb/shale/internal/sstable"
)

// WrittenAfterKey is WrittenAfter for the one user key key: whether an
// entry of key, or a range tombstone covering it, has a sequence number
// above after. WrittenAfter takes a point as the range [key, key+"\x00"),
// which is the key alone only in bytewise order; this works in any order.
func WrittenAfterKey(ctx context.Context, v *View, env sstable.ReadEnv, key []byte, after base.SeqNum) (bool, error) {
	for _, m := range v.Mems {
		if coveredAfter(m.RangeDeletions(), key, after) {
			return true, nil
		}
		if _, _, seq, found := m.GetEntry(key, base.MaxSeqNum); found && seq > after {
			return true, nil
		}
	}
	if v.Version == nil {
		return false, nil
	}
	for level, files := range v.Version.Levels {
		for _, f := range files {
			if f.LargestSeqNum <= after || !containsKey(v.Cmp, f, key) {
				continue
			}
			if err := ctxErr(ctx, env.Deadline, "WrittenAfterKey: before", f.FileNum); err != nil {
				return false, err
			}
			t, err := v.Tables.Acquire(ctx, env, f, level)
			if err != nil {
				return false, errors.Wrapf(err, "readpath: WrittenAfterKey: acquiring table %s", f.FileNum)
			}
			found, err := keyWrittenInTable(ctx, env, t, key, after)
			t.Release()
			if found || err != nil {
				return found, errors.Wrapf(err, "readpath: WrittenAfterKey in table %s", f.FileNum)
			}
		}
	}
	return false, nil
}

// coveredAfter reports whether a tombstone of s above after covers key.
func coveredAfter(s *rangedel.Set, key []byte, after base.SeqNum) bool {
	if s == nil {
		return false
	}
	_, f := s.Covering(key, base.MaxSeqNum)
	return f != nil && f.Seqs[0] > after
}

func keyWrittenInTable(ctx context.Context, env sstable.ReadEnv, t TableRef, key []byte, after base.SeqNum) (bool, error) {
	if coveredAfter(t.Reader.RangeDeletions(), key, after) {
		return true, nil
	}
	it, err := t.Reader.NewIter(ctx, env, key, nil)
	if err != nil {
		return false, err
	}
	found := false
	for kv := it.SeekGE(key); kv != nil && bytes.Equal(kv.K.UserKey, key); kv = it.Next() {
		if kv.K.SeqNum() > after {
			found = true
			break
		}
	}
	return found, errors.CombineErrors(it.Error(), it.Close())
}
