package engine

import (
	"context"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/sstable"
)

// checkReadEnv tags the consistency check's reads Unknown: it is a tool, not
// one of the public read APIs, so its reads count only in the aggregate.
var checkReadEnv = sstable.ReadEnv{VerifyChecksums: true}

// Check verifies the database's structure: the current version's levels
// (L0 ordering, no overlap within L1 and below), every table's blocks and
// checksums and the order of its keys, that each table's first and last keys
// match the MANIFEST, and that keys are in order across the tables of each
// level. It returns the first problem found, naming the table. Tests run it
// after every engine test; the command-line tool's verify runs it too.
func (d *database) Check(ctx context.Context) error {
	if err := d.checkOpen(); err != nil {
		return err
	}
	rs, err := d.loadReadState()
	if err != nil {
		return err
	}
	defer rs.unref()
	v := rs.current
	if err := v.CheckConsistency(); err != nil {
		return errors.Wrap(err, "engine: check")
	}
	// CheckConsistency has checked key order and overlap across the tables
	// (of L1 and below, by user key); each table is checked on its own here.
	for level, files := range v.Levels {
		for _, f := range files {
			if err := ctx.Err(); err != nil {
				return errors.Wrap(err, "engine: check")
			}
			if err := d.checkTable(ctx, level, f); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *database) checkTable(ctx context.Context, level int, f *manifest.FileMetadata) error {
	ref, err := d.tables.Acquire(ctx, checkReadEnv, f, level)
	if err != nil {
		return errors.Wrapf(err, "engine: check: L%d table %s", level, f.FileNum)
	}
	defer ref.Release()
	r := ref.Reader
	if err := r.Check(ctx, checkReadEnv); err != nil {
		return errors.Wrapf(err, "engine: check: L%d table %s", level, f.FileNum)
	}
	it, err := r.NewIter(ctx, checkReadEnv, nil, nil)
	if err != nil {
		return errors.Wrapf(err, "engine: check: L%d table %s", level, f.FileNum)
	}
	defer it.Close()
	// A table with range tombstones may start or end at a tombstone, or hold
	// no points at all, so the bounds are checked against both; the first
	// key is cloned because Last moves the iterator off its block.
	var first *base.InternalKV
	if kv := it.First(); kv != nil {
		first = &base.InternalKV{K: kv.K.Clone()}
	} else if err := it.Error(); err != nil {
		return errors.Wrapf(err, "engine: check: L%d table %s", level, f.FileNum)
	}
	var last *base.InternalKV
	if first != nil {
		if last = it.Last(); last == nil {
			if err := it.Error(); err != nil {
				return errors.Wrapf(err, "engine: check: L%d table %s", level, f.FileNum)
			}
			return base.CorruptionErrorf("engine: check: L%d table %s has a first key but no last", level, f.FileNum)
		}
	}
	return checkTableBounds(level, f, r, first, last)
}
