package readpath

import (
	"context"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/sstable"
)

// levelIter is an internal iterator over a run of tables whose user-key
// ranges do not overlap, sorted by key: the files of one level >= 1, or a
// single L0 table. It opens tables lazily, through the TableSource, as it
// crosses file boundaries, and keeps one open at a time: the one it is
// positioned in. Only files that overlap the bounds are in files, so tables
// outside them are never acquired; each table iterator gets the bounds too,
// so blocks outside them are never read.
//
// Errors (a failed Acquire, a table iterator's error, a done context) stop
// it: every later move returns nil, and Error and Close return the error.
// It implements base.InternalIterator; it is not safe for concurrent use.
type levelIter struct {
	ctx    context.Context
	env    sstable.ReadEnv
	tables TableSource
	// level is for error messages and the table cache.
	level        int
	files        []*manifest.FileMetadata
	lower, upper []byte

	// cur is the index in files of the open table, whose reference is ref
	// and iterator iter; -1 and nil when none is open.
	cur  int
	ref  TableRef
	iter *sstable.Iter
	err  error
	// closeAtEnd closes the last table as soon as a forward move exhausts
	// it (see NewCompactionIter).
	closeAtEnd bool
	cmp        base.Compare // the files' order; nil is bytewise
}

var _ base.InternalIterator = (*levelIter)(nil)

// NewCompactionIter returns an iterator over files, tables of level whose
// user-key ranges do not overlap, sorted by key (the inputs of a compaction
// from one level >= 1, or one L0 table), reading them with env. It keeps
// one table open at a time, as a DB iterator's level does: a forward scan
// closes each table's iterator, with its readahead buffer (which grows to
// 256 KiB on a scan) and its pinned blocks, when it moves to the next
// table, and the last one as soon as it is exhausted. So a compaction
// holds one table iterator per input level and per L0 input, however many
// files it reads; an iterator per input file, each kept until the whole
// compaction ended, made its memory grow with its size.
//
// The tables are acquired through tables as the scan reaches them (and
// released as it leaves them). Once a forward move has returned nil, Next
// and Prev return nil until a First, Last or seek, as the contract of an
// sstable.Iter (and the merging iterator's use of its children) has it.
func NewCompactionIter(ctx context.Context, env sstable.ReadEnv, tables TableSource, level int,
	files []*manifest.FileMetadata) base.InternalIterator {
	return NewCompactionIterCmp(ctx, env, tables, level, files, nil)
}

// NewCompactionIterCmp is NewCompactionIter over files ordered by cmp
// (bytewise when nil).
func NewCompactionIterCmp(ctx context.Context, env sstable.ReadEnv, tables TableSource, level int,
	files []*manifest.FileMetadata, cmp base.Compare) base.InternalIterator {
	l := &levelIter{}
	l.init(ctx, env, tables, level, files, nil, nil, cmp)
	l.closeAtEnd = true
	return l
}

// init makes l iterate over files (sorted, non-overlapping) within
// [lower, upper); the files outside the bounds are dropped here.
func (l *levelIter) init(
	ctx context.Context, env sstable.ReadEnv, tables TableSource, level int,
	files []*manifest.FileMetadata, lower, upper []byte, cmp base.Compare,
) {
	start, end := 0, len(files)
	if lower != nil {
		start = findFile(cmp, files, lower)
	}
	if upper != nil {
		end = findFileLT(cmp, files, upper)
	}
	if end < start {
		end = start
	}
	*l = levelIter{ctx: ctx, env: env, tables: tables, level: level, files: files[start:end],
		lower: lower, upper: upper, cur: -1, cmp: cmp}
}

// open makes files[i] the open table. It reports false, with l failed, on an
// error.
func (l *levelIter) open(i int) bool {
	if i == l.cur {
		return true
	}
	l.closeTable()
	f := l.files[i]
	if err := ctxErr(l.ctx, l.env.Deadline, "iterator: before", f.FileNum); err != nil {
		l.err = err
		return false
	}
	t, err := l.tables.Acquire(l.ctx, l.env, f, l.level)
	if err != nil {
		l.err = errors.Wrapf(err, "readpath: iterator: acquiring table %s of L%d", f.FileNum, l.level)
		return false
	}
	it, err := t.Reader.NewIter(l.ctx, l.env, l.lower, l.upper)
	if err != nil {
		t.Release()
		l.err = errors.Wrapf(err, "readpath: iterator over table %s of L%d", f.FileNum, l.level)
		return false
	}
	l.cur, l.ref, l.iter = i, t, it
	return true
}

// closeTable closes the open table's iterator and releases the table.
func (l *levelIter) closeTable() {
	if l.iter == nil {
		return
	}
	// The iterator's error, if any, has already stopped l.
	_ = l.iter.Close()
	l.ref.Release()
	l.cur, l.ref, l.iter = -1, TableRef{}, nil
}

func (l *levelIter) SeekGE(key []byte) *base.InternalKV {
	if l.err != nil {
		return nil
	}
	i := findFile(l.cmp, l.files, key)
	if i == len(l.files) || !l.open(i) {
		return nil
	}
	return l.skipForward(l.iter.SeekGE(key))
}

func (l *levelIter) SeekLT(key []byte) *base.InternalKV {
	if l.err != nil {
		return nil
	}
	i := findFileLT(l.cmp, l.files, key) - 1
	if i < 0 || !l.open(i) {
		return nil
	}
	return l.skipBackward(l.iter.SeekLT(key))
}

func (l *levelIter) First() *base.InternalKV {
	if l.err != nil || len(l.files) == 0 || !l.open(0) {
		return nil
	}
	return l.skipForward(l.iter.First())
}

func (l *levelIter) Last() *base.InternalKV {
	if l.err != nil || len(l.files) == 0 || !l.open(len(l.files)-1) {
		return nil
	}
	return l.skipBackward(l.iter.Last())
}

func (l *levelIter) Next() *base.InternalKV {
	if l.err != nil || l.iter == nil {
		return nil
	}
	// Most steps stay within the table: return without the call to
	// skipForward, which the compiler does not inline.
	if kv := l.iter.Next(); kv != nil {
		return kv
	}
	return l.skipForward(nil)
}

func (l *levelIter) Prev() *base.InternalKV {
	if l.err != nil || l.iter == nil {
		return nil
	}
	if kv := l.iter.Prev(); kv != nil {
		return kv
	}
	return l.skipBackward(nil)
}

// skipForward returns kv, or, when the open table has nothing more going
// forward, the first entry of the following tables.
func (l *levelIter) skipForward(kv *base.InternalKV) *base.InternalKV {
	for kv == nil {
		if err := l.iter.Error(); err != nil {
			return l.fail(err)
		}
		if l.cur+1 >= len(l.files) {
			if l.closeAtEnd {
				l.closeTable()
			}
			return nil
		}
		if !l.open(l.cur + 1) {
			return nil
		}
		kv = l.iter.First()
	}
	return kv
}

// skipBackward returns kv, or, when the open table has nothing more going
// backward, the last entry of the preceding tables.
func (l *levelIter) skipBackward(kv *base.InternalKV) *base.InternalKV {
	for kv == nil {
		if err := l.iter.Error(); err != nil {
			return l.fail(err)
		}
		if l.cur == 0 {
			return nil
		}
		if !l.open(l.cur - 1) {
			return nil
		}
		kv = l.iter.Last()
	}
	return kv
}

func (l *levelIter) fail(err error) *base.InternalKV {
	l.err = errors.Wrapf(err, "readpath: iterator over table %s of L%d", l.files[l.cur].FileNum, l.level)
	return nil
}

func (l *levelIter) Error() error { return l.err }

func (l *levelIter) Close() error {
	l.closeTable()
	return l.err
}

// overlapsBounds reports whether f has user keys in [lower, upper).
func overlapsBounds(cmp base.Compare, f *manifest.FileMetadata, lower, upper []byte) bool {
	return (lower == nil || base.CompareUser(cmp, f.Largest.UserKey, lower) >= 0) &&
		(upper == nil || base.CompareUser(cmp, f.Smallest.UserKey, upper) < 0)
}
