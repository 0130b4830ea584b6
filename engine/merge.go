package engine

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/merge"
	"github.com/shaledb/shale/ioctx"
)

// MergeOperator combines the merge operands a key receives (driver.DB.Merge,
// driver.Batch.Merge) into its value, as RocksDB's MergeOperator does. Reads
// call FullMerge with the key's existing value, if any, and its operands
// oldest first; flushes and compactions call it too, and PartialMerge, to
// combine operands no snapshot tells apart. Its methods must be safe for
// concurrent use and deterministic.
//
// An operator may also implement CheckOperand(operand []byte) error: a
// write whose operand it refuses fails at once with that error (marked
// ErrInvalidArgument by the operator) instead of every later read.
//
// The built-in operators are named by the DSN key merge_operator
// ([ParseMergeOperator]).
type MergeOperator interface {
	// Name identifies the operator. It is recorded in the database's
	// MERGE_OPERATOR file by the first merge written, and every later
	// open must give an operator of the same name (see FORMAT.md).
	Name() string
	// FullMerge returns key's value from its existing value (when
	// hasExisting) and operands, oldest first. The arguments are only
	// valid during the call. An error fails the read, naming the key.
	FullMerge(key, existing []byte, hasExisting bool, operands [][]byte) ([]byte, error)
	// PartialMerge combines two adjacent operands, older then newer, into
	// one; ok false keeps them apart.
	PartialMerge(key, older, newer []byte) (merged []byte, ok bool)
}

// ParseMergeOperator returns the built-in merge operator of a DSN value:
// "stringappend" (RocksDB's StringAppendOperator: the existing value and the
// operands joined with ','), "stringappend:D" (joined with D, any string,
// possibly empty), "uint64add" (RocksDB's UInt64AddOperator: 8-byte
// little-endian integers added with wrap-around; an operand of another
// length is refused at its write, a base value of another length fails the
// reads of its key), "max" (RocksDB's MaxOperator: the bytewise largest),
// or "none" / "" for none.
func ParseMergeOperator(s string) (MergeOperator, error) {
	if s == "" || s == "none" {
		return nil, nil
	}
	op, ok := merge.Builtin(s)
	if !ok {
		return nil, errors.Newf("%q is not none, stringappend, stringappend:DELIM, uint64add or max", s)
	}
	return op, nil
}

// mergeOperatorName returns op's name, "none" for none.
func mergeOperatorName(op MergeOperator) string {
	if op == nil {
		return "none"
	}
	return op.Name()
}

// mergeOperatorFile is the file that names the merge operator of the
// database's merge operands (see FORMAT.md).
const mergeOperatorFile = "MERGE_OPERATOR"

// checkMergeOperatorFile compares the operator named in MERGE_OPERATOR, if
// the database has one, with the configured one: merge operands written
// with one operator must never be read with another, or without one.
func (d *database) checkMergeOperatorFile() error {
	f, err := d.fs.Open(filepath.Join(d.dirname, mergeOperatorFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return errors.Wrapf(err, "engine: opening %s", mergeOperatorFile)
	}
	data, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<16))
	_ = f.Close()
	if err != nil {
		return errors.Wrapf(err, "engine: reading %s", mergeOperatorFile)
	}
	name, ok := strings.CutSuffix(string(data), "\n")
	if !ok || name == "" {
		return base.CorruptionErrorf("engine: %s holds %q, not an operator name and a newline", mergeOperatorFile, data)
	}
	if got := mergeOperatorName(d.opts.MergeOperator); got != name {
		return base.InvalidArgumentf("engine: the database holds merge operands of the merge operator %q "+
			"(recorded in %s) but was opened with merge_operator %q: open it with %q", name, mergeOperatorFile, got, name)
	}
	d.mergeRecorded.Store(true)
	return nil
}

// recordMergeOperator writes MERGE_OPERATOR, durably, before the first
// merge operand reaches the WAL: a database holding operands always names
// their operator.
func (d *database) recordMergeOperator() error {
	if d.mergeRecorded.Load() {
		return nil
	}
	d.mergeFileMu.Lock()
	defer d.mergeFileMu.Unlock()
	if d.mergeRecorded.Load() {
		return nil
	}
	name := filepath.Join(d.dirname, mergeOperatorFile)
	tmp := name + ".tmp"
	f, err := d.fs.Create(tmp)
	if err != nil {
		return errors.Wrapf(err, "engine: creating %s", tmp)
	}
	_, err = f.Write([]byte(d.opts.MergeOperator.Name() + "\n"))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.fs.Rename(tmp, name)
	}
	if err == nil {
		err = d.syncDir()
	}
	if err != nil {
		return errors.Wrapf(err, "engine: recording the merge operator in %s", mergeOperatorFile)
	}
	d.mergeRecorded.Store(true)
	return nil
}

// errNoMergeOperator is the error of a merge written to a database without
// a merge operator.
var errNoMergeOperator = base.InvalidArgumentf("engine: merge: no merge operator configured (DSN merge_operator, Options.MergeOperator)")

// checkOperand runs the operator's CheckOperand, when it has one.
func (d *database) checkOperand(operand []byte) error {
	if c, ok := d.opts.MergeOperator.(merge.OperandChecker); ok {
		return c.CheckOperand(operand)
	}
	return nil
}

// prepareMerges checks a batch holding merge operands before it is
// written: an operator is configured, it accepts every operand, and it is
// recorded in MERGE_OPERATOR.
func (d *database) prepareMerges(ctx context.Context, b *writeBatch) error {
	if d.opts.MergeOperator == nil {
		return errNoMergeOperator
	}
	if b.mergeErr != nil {
		return b.mergeErr
	}
	if err := d.checkWritable(ctx); err != nil {
		return err
	}
	return d.recordMergeOperator()
}

// Merge adds a merge operand to the batch. key and operand are copied.
func (b *writeBatch) Merge(key, operand []byte) {
	b.b.Merge(key, operand)
	b.merges++
	if b.checker != nil && b.mergeErr == nil {
		if err := b.checker.CheckOperand(operand); err != nil {
			b.mergeErr = errors.Wrapf(err, "engine: merge of key %q", key)
		}
	}
}

// mergeImpl writes one merge operand.
func (d *database) mergeImpl(ctx context.Context, wo writeOptions, key, operand []byte) error {
	if d.opts.MergeOperator == nil {
		return errNoMergeOperator
	}
	if err := d.checkOperand(operand); err != nil {
		return errors.Wrapf(err, "engine: merge of key %q", key)
	}
	if err := d.checkWritable(ctx); err != nil {
		return err
	}
	if err := d.recordMergeOperator(); err != nil {
		return err
	}
	b := batchPool.Get().(*writeBatch)
	b.b.Merge(key, operand)
	err := d.writeOpts(ctx, &b.b, wo, nil)
	b.Reset()
	batchPool.Put(b)
	return err
}

// Merge writes a merge operand with the façade's write options
// (driver.Merger).
func (c *conn) Merge(ctx context.Context, wo ioctx.WriteOptions, key, operand []byte) error {
	return c.db.mergeImpl(ctx, wo, key, operand)
}

// copyMergeOperatorFile copies MERGE_OPERATOR into a checkpoint, if the
// database has one.
func (cp *checkpoint) copyMergeOperatorFile() error {
	if !cp.d.mergeRecorded.Load() {
		return nil
	}
	return cp.copyFile(filepath.Join(cp.d.dirname, mergeOperatorFile), filepath.Join(cp.dir, mergeOperatorFile))
}
