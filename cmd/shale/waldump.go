package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/batch"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/vfs"
)

const walDumpUsage = `wal dump [-values] [-hex] FILE.log`

const walDumpDoc = `
Prints each record of a write-ahead log: its offset, the sequence number and
operation count of the write batch it holds, and the batch's operations
(PUT key and value length, or DEL key); -values prints the values too.

Exit code 0 when the log is whole. 1 when it is damaged: mid-log corruption
(an error, as database recovery reports it), a torn tail (a record cut short
at the end of the log, which recovery drops: the report gives the offset
where the valid prefix ends), or a record that is not a valid batch. The
message is the log reader's, with the file offset. Also 1 when the file is
not a WAL: a table file (recognised by its footer), or a file whose first
record does not decode. 3 when the file cannot be read.`

func runWALDump(_ context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, walDumpUsage, walDumpDoc)
	values := fs.Bool("values", false, "print values (cut at 64 bytes)")
	hexOut := fs.Bool("hex", false, "print keys and values in hex")
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("want exactly one log file, got %d arguments", fs.NArg())
	}
	d := walDumper{w: env.stdout, hex: *hexOut, values: *values}
	return d.dump(vfs.Default, fs.Arg(0))
}

// walDumper prints one log file. It is not safe for concurrent use.
type walDumper struct {
	w      io.Writer
	hex    bool
	values bool
}

// namedReader reads a file sequentially and names it, so the log reader's
// messages name the file. Like the io.SectionReader it wraps, it is not safe
// for concurrent use.
type namedReader struct {
	*io.SectionReader
	name string
}

func (r namedReader) Name() string { return r.name }

func (d *walDumper) dump(fs vfs.FS, name string) error {
	f, err := fs.Open(name)
	if err != nil {
		return &exitError{code: exitFailure, err: err}
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return &exitError{code: exitFailure, err: errors.Wrapf(err, "stat %s", name)}
	}
	size := info.Size()
	if isTableFile(f, size) {
		return problemf("%s is a table file, not a WAL file (\"shale sst dump\" prints tables)", name)
	}
	fmt.Fprintf(d.w, "file %s: %d bytes\n\n", name, size)
	r := wal.NewReader(namedReader{io.NewSectionReader(f, 0, size), name}, wal.TolerateCorruptedTailRecords)
	var (
		records, ops     int
		firstSeq, maxSeq base.SeqNum
		b                batch.Batch
	)
	for {
		start := recordStart(r.Offset())
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			d.summary(records, ops, firstSeq, maxSeq)
			if records == 0 && start == 0 && !zeroHeader(f) {
				return notAWAL(name, err)
			}
			if errors.Is(err, base.ErrCorruption) {
				return errors.Wrapf(err, "after %d good records, at or after offset %d", records, start)
			}
			return &exitError{code: exitFailure, err: err}
		}
		if err := b.SetRepr(rec); err != nil {
			d.summary(records, ops, firstSeq, maxSeq)
			return errors.Wrapf(err, "%s: record %d at offset %d (%d bytes) is not a valid batch",
				name, records+1, start, len(rec))
		}
		records++
		seq, count := b.SeqNum(), b.Count()
		if records == 1 {
			firstSeq = seq
		}
		if count > 0 {
			maxSeq = max(maxSeq, seq+base.SeqNum(count)-1)
		}
		fmt.Fprintf(d.w, "record %d @%d: seq %d, count %d, %d bytes\n", records, start, seq, count, len(rec))
		br := b.Reader()
		for {
			kind, key, value, ok, err := br.Next()
			if err != nil {
				return errors.Wrapf(err, "%s: record %d at offset %d", name, records, start)
			}
			if !ok {
				break
			}
			ops++
			switch kind {
			case base.KindSet:
				if d.values {
					fmt.Fprintf(d.w, "  PUT %s = %s\n", formatKey(key, d.hex), d.value(value))
				} else {
					fmt.Fprintf(d.w, "  PUT %s (%d bytes)\n", formatKey(key, d.hex), len(value))
				}
			case base.KindMerge:
				if d.values {
					fmt.Fprintf(d.w, "  MERGE %s = %s\n", formatKey(key, d.hex), d.value(value))
				} else {
					fmt.Fprintf(d.w, "  MERGE %s (%d bytes)\n", formatKey(key, d.hex), len(value))
				}
			case base.KindDelete:
				fmt.Fprintf(d.w, "  DEL %s\n", formatKey(key, d.hex))
			case base.KindRangeDelete:
				fmt.Fprintf(d.w, "  DELRANGE [%s, %s)\n", formatKey(key, d.hex), formatKey(value, d.hex))
			default:
				fmt.Fprintf(d.w, "  %s %s\n", kind, formatKey(key, d.hex))
			}
		}
	}
	d.summary(records, ops, firstSeq, maxSeq)
	if off, reason := r.Stopped(); reason != nil {
		if records == 0 && off == 0 && !zeroHeader(f) {
			return notAWAL(name, reason)
		}
		return errors.Wrapf(reason, "%s: torn tail: the valid log ends at offset %d of %d; "+
			"recovery drops the rest if it is an incomplete final record, and otherwise follows wal_recovery_mode", name, off, size)
	}
	fmt.Fprintf(d.w, "the log ends cleanly at offset %d\n", r.Offset())
	return nil
}

// isTableFile reports whether f, of size bytes, ends in a table footer's
// magic number.
func isTableFile(f io.ReaderAt, size int64) bool {
	if size < sstable.FooterLen {
		return false
	}
	var m [8]byte
	if _, err := f.ReadAt(m[:], size-8); err != nil {
		return false
	}
	return binary.LittleEndian.Uint64(m[:]) == sstable.Magic
}

// zeroHeader reports whether the first chunk header of f is zeros (or
// missing): a log created, maybe preallocated, and never written, which is
// a log with nothing in it rather than another kind of file.
func zeroHeader(f io.ReaderAt) bool {
	var h [chunkHeaderLen]byte
	n, _ := f.ReadAt(h[:], 0)
	return bytes.Count(h[:n], []byte{0}) == n
}

// notAWAL is the error of a file whose first record does not decode and
// does not start with zeros: it is not a log, or is damaged from its first
// byte on. Exit code 1, as for a damaged log.
func notAWAL(name string, err error) error {
	return problem(errors.Wrapf(err, "%s is not a WAL file (or is damaged from its first byte): its first record does not decode", name))
}

// chunkHeaderLen is the size of a log chunk header (see package wal's
// format: checksum 4, length 2, type 1). Part of the WAL format.
const chunkHeaderLen = 7

// recordStart returns where the record after one that ended at prevEnd
// starts: there, unless fewer than a chunk header's bytes remain in the
// block, which the writer pads with zeros and skips. (The log reader
// reports only where records end.)
func recordStart(prevEnd int64) int64 {
	if rem := wal.BlockSize - prevEnd%wal.BlockSize; rem < chunkHeaderLen {
		return prevEnd + rem
	}
	return prevEnd
}

func (d *walDumper) summary(records, ops int, first, last base.SeqNum) {
	fmt.Fprintf(d.w, "\n%d records, %d operations", records, ops)
	if records > 0 {
		fmt.Fprintf(d.w, ", sequence numbers %d to %d", first, last)
	}
	fmt.Fprintln(d.w)
}

func (d *walDumper) value(v []byte) string {
	if len(v) <= maxValuePrint {
		return formatKey(v, d.hex)
	}
	return formatKey(v[:maxValuePrint], d.hex) + "... (" + strconv.Itoa(len(v)) + " bytes)"
}
