package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/bloom"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/internal/sstable/block"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/vfs"
)

const sstDumpUsage = `sst dump [-blocks] [-keys N] [-hex] FILE.sst`

const sstDumpDoc = `
Prints a table file: its footer (checksum type, metaindex and index block
handles, format version), its properties, its index (one entry per data
block: the block's handle and its separator key), its range deletions (one
fragment a line: [start, end) #seqs, highest first) and its first N entries
as key#seq,KIND -> value. With -blocks it also reads every data block, checks
its checksum and prints its compression and entry count, and reports every
damaged block rather than stopping at the first.

For a table with a partitioned index and filters (format version 3, written
with partition_index_and_filters) the index part is three sections: the
top-level index, one partition a line (its index partition's handle, its
filter partition's if the table has a filter, and its last separator), then
each filter partition, checked and described (size, lines, probes), then the
index one partition at a time, its data blocks numbered across partitions.
A damaged partition stops the dump after the footer: the table cannot be
opened without it.

Keys and values print as quoted Go strings (hex with -hex); values longer
than 64 bytes are cut, with their length. Exit code 1 when the file is
damaged (the message says where); 3 when it cannot be read.`

// maxValuePrint is how many bytes of a value sst dump prints.
const maxValuePrint = 64

func runSSTDump(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, sstDumpUsage, sstDumpDoc)
	blocks := fs.Bool("blocks", false, "read and check every data block")
	keys := fs.Int("keys", 10, "`number` of entries to print; -1 for all")
	hexOut := fs.Bool("hex", false, "print keys and values in hex")
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("want exactly one table file, got %d arguments", fs.NArg())
	}
	d := sstDumper{w: env.stdout, hex: *hexOut}
	return d.dump(ctx, vfs.Default, fs.Arg(0), *blocks, *keys)
}

// sstDumper prints one table file. It is not safe for concurrent use.
type sstDumper struct {
	w   io.Writer
	hex bool
}

// dump prints the table at name on fs. Damage is an error marked
// corruption; the caller maps it to exit code 1.
func (d *sstDumper) dump(ctx context.Context, fs vfs.FS, name string, blocks bool, keys int) error {
	fr, err := fileio.Open(fs, name, fileio.Options{})
	if err != nil {
		return &exitError{code: exitFailure, err: err}
	}
	size := fr.Size()
	fmt.Fprintf(d.w, "file %s: %d bytes\n\n", name, size)
	if size < sstable.FooterLen {
		_ = fr.Close()
		_, err := sstable.DecodeFooter(nil, uint64(size))
		return errors.Wrapf(err, "%s", name)
	}
	var scratch [sstable.FooterLen]byte
	raw, err := fr.Read(ctx, ioctx.IOOptions{}, size-sstable.FooterLen, sstable.FooterLen, scratch[:])
	if err != nil {
		_ = fr.Close()
		return errors.Wrapf(err, "%s: reading the footer", name)
	}
	footer, err := sstable.DecodeFooter(raw, uint64(size))
	if err != nil {
		_ = fr.Close()
		return errors.Wrapf(err, "%s", name)
	}
	fmt.Fprintf(d.w, "footer\n")
	fmt.Fprintf(d.w, "  checksum:        %s\n", footer.Checksum)
	fmt.Fprintf(d.w, "  metaindex block: %s\n", footer.MetaIndex)
	fmt.Fprintf(d.w, "  index block:     %s\n", footer.Index)
	fmt.Fprintf(d.w, "  format version:  %d\n\n", footer.FormatVersion)

	// Open verifies and decodes the meta blocks; it takes fr.
	env := sstable.ReadEnv{VerifyChecksums: true}
	r, err := sstable.Open(ctx, fr, env, sstable.ReaderOptions{BuiltinComparer: true})
	if err != nil {
		return err
	}
	defer r.Close()
	fmt.Fprintf(d.w, "properties\n")
	for _, line := range strings.Split(strings.TrimRight(r.Properties().String(), "\n"), "\n") {
		fmt.Fprintf(d.w, "  %s\n", line)
	}
	fmt.Fprintln(d.w)

	// fr stays readable until r.Close: the index is read again here, raw,
	// because the Reader keeps its decoded copy to itself.
	dumpIndex, what := d.dumpIndex, "index block"
	if footer.FormatVersion == sstable.FormatVersionPartitioned {
		dumpIndex, what = d.dumpPartitioned, "top-level index block"
	}
	index, _, err := readBlock(ctx, fr, footer, footer.Index, name)
	if err != nil {
		return errors.Wrap(err, what)
	}
	damaged, err := dumpIndex(ctx, fr, footer, index, name, blocks)
	if err != nil {
		return err
	}
	d.dumpRangeDels(r)
	if keys != 0 {
		if err := d.dumpEntries(ctx, r, env, keys); err != nil {
			return err
		}
	}
	if damaged > 0 {
		return base.CorruptionErrorf("%s: %d damaged data block(s)", name, damaged)
	}
	return nil
}

// dumpIndex prints the index entries of an unpartitioned table and, with
// blocks, checks each data block. It returns the number of damaged data
// blocks.
func (d *sstDumper) dumpIndex(ctx context.Context, fr *fileio.Reader, footer sstable.Footer, index []byte,
	name string, blocks bool) (damaged int, _ error) {
	fmt.Fprintf(d.w, "index\n")
	n, damaged, err := d.dumpIndexEntries(ctx, fr, footer, index, "index", 0, name, blocks)
	if err != nil {
		return damaged, err
	}
	fmt.Fprintf(d.w, "  (%d data blocks)\n\n", n)
	return damaged, nil
}

// dumpIndexEntries prints the entries of the index block (or index
// partition) index, numbering its data blocks from first, and with blocks
// checks each data block. what names the block in errors ("index", "index
// partition 3"). It returns the number of entries and of damaged data
// blocks.
func (d *sstDumper) dumpIndexEntries(ctx context.Context, fr *fileio.Reader, footer sstable.Footer, index []byte,
	what string, first int, name string, blocks bool) (n, damaged int, _ error) {
	var it block.Iter
	if err := it.Init(base.CompareEncoded, index); err != nil {
		return 0, 0, errors.Wrapf(err, "%s block", what)
	}
	for ok := it.First(); ok; ok = it.Next() {
		h, hn, err := block.DecodeHandle(it.Value())
		if err == nil && hn != len(it.Value()) {
			err = base.CorruptionErrorf("%d trailing bytes after the handle", len(it.Value())-hn)
		}
		if err != nil {
			return n, damaged, errors.Wrapf(err, "%s entry %d", what, n)
		}
		sep, err := decodeSeparator(it.Key(), what, n)
		if err != nil {
			return n, damaged, err
		}
		fmt.Fprintf(d.w, "  block %d: %s  separator %s\n", first+n, h, d.internalKey(sep))
		if blocks {
			if status, err := d.checkDataBlock(ctx, fr, footer, h, name); err != nil {
				damaged++
				fmt.Fprintf(d.w, "           DAMAGED: %s\n", oneLine(err))
			} else {
				fmt.Fprintf(d.w, "           %s\n", status)
			}
		}
		n++
	}
	if err := it.Error(); err != nil {
		return n, damaged, errors.Wrapf(err, "%s block", what)
	}
	return n, damaged, nil
}

// decodeSeparator decodes the key of entry n of the index block (or
// partition) what names.
func decodeSeparator(k []byte, what string, n int) (base.InternalKey, error) {
	sep, ok := base.DecodeInternalKey(k)
	if !ok {
		return base.InternalKey{}, base.CorruptionErrorf("%s entry %d: separator of %d bytes is too short for an internal key",
			what, n, len(k))
	}
	return sep, nil
}

// partition is one entry of a partitioned table's top-level index.
type partition struct {
	index, filter block.Handle
	hasFilter     bool
}

// dumpPartitioned prints a partitioned table's top-level index (top),
// checks and describes its filter partitions, then prints the entries of
// every index partition as dumpIndex prints a whole index, numbering the
// data blocks across partitions. With blocks it checks each data block; it
// returns the number of damaged ones.
func (d *sstDumper) dumpPartitioned(ctx context.Context, fr *fileio.Reader, footer sstable.Footer, top []byte,
	name string, blocks bool) (damaged int, _ error) {
	parts, err := d.dumpTopIndex(top)
	if err != nil {
		return 0, err
	}
	if err := d.dumpFilterPartitions(ctx, fr, footer, parts, name); err != nil {
		return 0, err
	}
	fmt.Fprintf(d.w, "index\n")
	n := 0
	for p, part := range parts {
		what := "index partition " + strconv.Itoa(p)
		fmt.Fprintf(d.w, "  partition %d: %s\n", p, part.index)
		index, _, err := readBlock(ctx, fr, footer, part.index, name)
		if err != nil {
			return damaged, errors.Wrapf(err, "%s block", what)
		}
		k, dmg, err := d.dumpIndexEntries(ctx, fr, footer, index, what, n, name, blocks)
		damaged += dmg
		if err != nil {
			return damaged, err
		}
		if k == 0 {
			// The writer never writes an empty partition: the top-level
			// entry would name a last separator it does not hold.
			return damaged, base.CorruptionErrorf("%s block %s has no entries", what, part.index)
		}
		n += k
	}
	fmt.Fprintf(d.w, "  (%d data blocks)\n\n", n)
	return damaged, nil
}

// dumpTopIndex prints the entries of a top-level index, one partition a
// line, and returns them.
func (d *sstDumper) dumpTopIndex(top []byte) ([]partition, error) {
	var it block.Iter
	if err := it.Init(base.CompareEncoded, top); err != nil {
		return nil, errors.Wrap(err, "top-level index block")
	}
	fmt.Fprintf(d.w, "top-level index\n")
	var parts []partition
	for ok := it.First(); ok; ok = it.Next() {
		p := len(parts)
		var part partition
		var err error
		part.index, part.filter, part.hasFilter, err = sstable.DecodeTopIndexValue(it.Value())
		if err != nil {
			return nil, errors.Wrapf(err, "top-level index entry %d", p)
		}
		if p > 0 && part.hasFilter != parts[0].hasFilter {
			return nil, base.CorruptionErrorf("top-level index entry %d has a filter handle: %t, but entry 0 has one: %t",
				p, part.hasFilter, parts[0].hasFilter)
		}
		sep, err := decodeSeparator(it.Key(), "top-level index", p)
		if err != nil {
			return nil, err
		}
		filter := ""
		if part.hasFilter {
			filter = "  filter " + part.filter.String()
		}
		fmt.Fprintf(d.w, "  partition %d: index %s%s  last separator %s\n", p, part.index, filter, d.internalKey(sep))
		parts = append(parts, part)
	}
	if err := it.Error(); err != nil {
		return nil, errors.Wrap(err, "top-level index block")
	}
	if len(parts) == 0 {
		return nil, base.CorruptionErrorf("top-level index has no partitions")
	}
	fmt.Fprintf(d.w, "  (%d partitions)\n\n", len(parts))
	return parts, nil
}

// dumpFilterPartitions reads each filter partition, verifying its checksum
// as the table reader does at open, and describes it.
func (d *sstDumper) dumpFilterPartitions(ctx context.Context, fr *fileio.Reader, footer sstable.Footer,
	parts []partition, name string) error {
	if !parts[0].hasFilter {
		return nil
	}
	fmt.Fprintf(d.w, "filter partitions\n")
	for p, part := range parts {
		data, comp, err := readBlock(ctx, fr, footer, part.filter, name)
		if err != nil {
			return errors.Wrapf(err, "filter partition %d block", p)
		}
		fmt.Fprintf(d.w, "  partition %d: %s  checksum ok, %s, %s\n", p, part.filter, comp, describeFilter(data))
	}
	fmt.Fprintln(d.w)
	return nil
}

// describeFilter describes a bloom filter's encoding (package bloom): its
// lines of bloom.LineSize bytes, then its probe count and encoding bytes.
// A filter not in that encoding is not an error for the reader, which
// takes it to match every key; so it is described, not reported.
func describeFilter(f []byte) string {
	// maxProbes is bloom's bound on the probe count: a filter with more is
	// malformed to the reader.
	const maxProbes = 30
	n := len(f) - 2
	if n < bloom.LineSize || n%bloom.LineSize != 0 || f[n+1] != bloom.EncodingBlocked || f[n] == 0 || f[n] > maxProbes {
		return fmt.Sprintf("%d bytes, not a blocked bloom filter: matches every key", len(f))
	}
	return fmt.Sprintf("%d bytes, %d lines, %d probes", len(f), n/bloom.LineSize, f[n])
}

// checkDataBlock reads the data block at h, verifies its checksum and
// decodes it, and describes it.
func (d *sstDumper) checkDataBlock(ctx context.Context, fr *fileio.Reader, footer sstable.Footer, h block.Handle,
	name string) (string, error) {
	data, comp, err := readBlock(ctx, fr, footer, h, name)
	if err != nil {
		return "", err
	}
	var it block.Iter
	if err := it.Init(base.CompareEncoded, data); err != nil {
		return "", err
	}
	entries := 0
	for ok := it.First(); ok; ok = it.Next() {
		entries++
	}
	if err := it.Error(); err != nil {
		return "", err
	}
	return fmt.Sprintf("checksum ok, %s, %d bytes decoded, %d entries", comp, len(data), entries), nil
}

// dumpRangeDels prints the range deletion block, if the table has one: one
// fragment a line, [start, end) and its tombstones' sequence numbers.
func (d *sstDumper) dumpRangeDels(r *sstable.Reader) {
	frags := r.RangeDeletions().Fragments()
	if len(frags) == 0 {
		return
	}
	fmt.Fprintf(d.w, "range deletions (%d fragments)\n", len(frags))
	for _, f := range frags {
		seqs := make([]string, len(f.Seqs))
		for i, q := range f.Seqs {
			seqs[i] = q.String()
		}
		fmt.Fprintf(d.w, "  [%s, %s) #%s\n", d.bytes(f.Start), d.bytes(f.End), strings.Join(seqs, ","))
	}
	fmt.Fprintln(d.w)
}

// dumpEntries prints the first n entries (all when n < 0).
func (d *sstDumper) dumpEntries(ctx context.Context, r *sstable.Reader, env sstable.ReadEnv, n int) error {
	it, err := r.NewIter(ctx, env, nil, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.w, "entries\n")
	i := 0
	for kv := it.First(); kv != nil && (n < 0 || i < n); kv = it.Next() {
		fmt.Fprintf(d.w, "  %s -> %s\n", d.internalKey(kv.K), d.value(kv.V))
		i++
	}
	if err := it.Close(); err != nil {
		return errors.Wrapf(err, "after entry %d", i)
	}
	if i == 0 {
		fmt.Fprintf(d.w, "  (none)\n")
	}
	return nil
}

// readRaw reads the block at h with its trailer and returns it and the
// compression its trailer names.
func readRaw(ctx context.Context, fr *fileio.Reader, h block.Handle) ([]byte, compress.Type, error) {
	size := uint64(fr.Size())
	// Checked in this order so that nothing overflows.
	if h.Length > size || h.Length+block.TrailerLen > size || h.Offset > size-h.Length-block.TrailerLen {
		return nil, 0, base.CorruptionErrorf("block %s with its trailer ends beyond the file's %d bytes", h, size)
	}
	n := h.Length + block.TrailerLen
	raw, err := fr.Read(ctx, ioctx.IOOptions{}, int64(h.Offset), int(n), make([]byte, n))
	if err != nil {
		return nil, 0, err
	}
	if uint64(len(raw)) != n {
		return nil, 0, base.CorruptionErrorf("block %s: read %d bytes, want %d", h, len(raw), n)
	}
	_, comp, err := block.SplitTrailer(raw)
	return raw, comp, err
}

// readBlock reads the block at h, verifies its checksum and returns its
// decompressed contents, which the caller owns, and its compression.
func readBlock(ctx context.Context, fr *fileio.Reader, footer sstable.Footer, h block.Handle, name string) (
	[]byte, compress.Type, error) {
	raw, comp, err := readRaw(ctx, fr, h)
	if err != nil {
		return nil, 0, err
	}
	if err := block.ValidateChecksum(footer.Checksum, raw, name, h.Offset); err != nil {
		return nil, 0, err
	}
	data := raw[:len(raw)-block.TrailerLen]
	n, err := compress.DecodedLen(comp, data)
	if err != nil {
		return nil, 0, errors.Wrapf(err, "block %s", h)
	}
	// As in the table reader: a block decoding to more than 256 MiB, or a
	// snappy block claiming more than its densest possible expansion (a
	// 3-byte copy element yields 64 bytes), is corrupt and not allocated.
	const maxBlock, maxSnappyExpansion = 256 << 20, 32
	if n > maxBlock || (comp == compress.Snappy && n > maxSnappyExpansion*len(data)+64) {
		return nil, 0, base.CorruptionErrorf("block %s: decoded length %d is implausible", h, n)
	}
	out, err := compress.DecompressInto(comp, make([]byte, n), data)
	return out, comp, err
}

// internalKey formats k as key#seq,KIND; index separators, which carry the
// largest sequence number, print it as "max".
func (d *sstDumper) internalKey(k base.InternalKey) string {
	seq := "max"
	if k.SeqNum() != base.MaxSeqNum {
		seq = strconv.FormatUint(uint64(k.SeqNum()), 10)
	}
	return d.bytes(k.UserKey) + "#" + seq + "," + k.Kind().String()
}

func (d *sstDumper) value(v []byte) string {
	if len(v) <= maxValuePrint {
		return d.bytes(v)
	}
	return d.bytes(v[:maxValuePrint]) + "... (" + strconv.Itoa(len(v)) + " bytes)"
}

func (d *sstDumper) bytes(b []byte) string {
	return formatKey(b, d.hex)
}

// formatKey prints b as a quoted Go string, or in hex.
func formatKey(b []byte, asHex bool) string {
	if asHex {
		return hex.EncodeToString(b)
	}
	return strconv.Quote(string(b))
}
