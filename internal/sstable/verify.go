package sstable

import (
	"bytes"
	"context"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/compress"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/sstable/block"
)

// verifyReadahead is the data-block readahead of VerifyChecksums when
// ReadEnv.ReadaheadSize is 0: RocksDB's max_auto_readahead_size.
const verifyReadahead = fileio.DefaultMaxReadahead

// VerifyChecksums reads every block of the table from the file and checks
// its trailer: the metaindex, each meta block it lists (properties, filter),
// the index, and every data block the index lists (for a partitioned table:
// the top-level index, then each partition's filter and index, each before
// the data blocks it lists), the data blocks through a
// readahead buffer of env.ReadaheadSize bytes (256 KiB when 0). It bypasses
// the block cache and verifies whatever env.VerifyChecksums says; every
// read uses env.IO. See Reader for the number of reads.
//
// It ticks BlockChecksumComputeCount for every block checked and
// BlockChecksumMismatchCount for a mismatch, and returns the first
// corruption: an error marked base.ErrCorruption naming the file and the
// block's offset (for a mismatch, both checksums, in RocksDB's words). A
// table written without checksums (checksum type none) has nothing to
// verify; its blocks are still read.
func (r *Reader) VerifyChecksums(ctx context.Context, env ReadEnv) error {
	return r.walk(ctx, env, nil)
}

// walk reads and verifies every block of the table as VerifyChecksums
// describes, and has c (if set) check each partition and each decoded data
// block.
func (r *Reader) walk(ctx context.Context, env ReadEnv, c *checker) error {
	limit := uint64(r.file.Size()) - FooterLen
	var buf, dec []byte

	meta, err := r.readVerified(ctx, env, r.footer.MetaIndex, limit, &buf, &dec)
	if err != nil {
		return errors.Wrap(err, "sstable: verifying metaindex block")
	}
	// The meta blocks are read from the metaindex just read, so that a
	// change since Open is seen.
	var handles []metaHandle
	var mi block.Iter
	if err := mi.Init(bytes.Compare, meta); err != nil {
		return r.wrapBlockErr(err, "metaindex", r.footer.MetaIndex)
	}
	for ok := mi.First(); ok; ok = mi.Next() {
		h, err := decodeHandleExact(mi.Value())
		if err != nil {
			return r.wrapBlockErr(err, "metaindex entry "+string(mi.Key())+" of", r.footer.MetaIndex)
		}
		handles = append(handles, metaHandle{name: string(mi.Key()), h: h})
	}
	if err := mi.Error(); err != nil {
		return r.wrapBlockErr(err, "metaindex", r.footer.MetaIndex)
	}
	for _, m := range handles {
		raw, _, err := r.readRaw(ctx, env.IO, m.h, limit, true, nil, &buf)
		if err != nil {
			return errors.Wrapf(err, "sstable: verifying meta block %s", m.name)
		}
		if c != nil && m.name == MetaFilterName {
			c.setFilter(raw, "filter", m.h)
		}
	}

	readahead := env.ReadaheadSize
	if readahead <= 0 {
		readahead = verifyReadahead
	}
	w := walker{r: r, ctx: ctx, env: env, limit: limit, c: c, buf: &buf, dec: &dec}
	w.pf = fileio.NewPrefetchBuffer(r.file, int(min(readahead, maxBlockLen)), 0, 0, false)
	defer w.pf.Close()
	if r.top != nil {
		return w.partitions()
	}
	index, err := r.readVerified(ctx, env, r.footer.Index, limit, &buf, &dec)
	if err != nil {
		return errors.Wrap(err, "sstable: verifying index block")
	}
	if c != nil {
		c.indexSize = r.footer.Index.Length + block.TrailerLen
	}
	return w.index("index", r.footer.Index, index)
}

// walker is the state of one walk.
type walker struct {
	r        *Reader
	ctx      context.Context
	env      ReadEnv
	limit    uint64
	c        *checker
	pf       *fileio.PrefetchBuffer
	buf, dec *[]byte
}

// partitions verifies a partitioned table's top-level index, then each
// partition's filter and index and the data blocks the index lists, in
// order. The top-level index is read from the file again, so that a change
// since Open is seen.
func (w *walker) partitions() error {
	r := w.r
	top, err := r.readVerified(w.ctx, w.env, r.footer.Index, w.limit, w.buf, w.dec)
	if err != nil {
		return errors.Wrap(err, "sstable: verifying top-level index block")
	}
	top = bytes.Clone(top)
	var it block.Iter
	if err := it.Init(base.CompareEncoded, top); err != nil {
		return r.wrapBlockErr(err, "top-level index", r.footer.Index)
	}
	if w.c != nil {
		w.c.indexSize = r.footer.Index.Length + block.TrailerLen
	}
	p := 0
	for ok := it.First(); ok; ok = it.Next() {
		ih, fh, hasFilter, err := DecodeTopIndexValue(it.Value())
		if err != nil {
			return r.wrapBlockErr(err, "top-level index", r.footer.Index)
		}
		if hasFilter {
			raw, _, err := r.readRaw(w.ctx, w.env.IO, fh, w.limit, true, nil, w.buf)
			if err != nil {
				return errors.Wrapf(err, "sstable: verifying %s block", partName("filter", p))
			}
			if w.c != nil {
				w.c.setFilter(raw, partName("filter", p), fh)
			}
		}
		index, err := r.readVerified(w.ctx, w.env, ih, w.limit, w.buf, w.dec)
		if err != nil {
			return errors.Wrapf(err, "sstable: verifying %s block", partName("index", p))
		}
		if w.c != nil {
			if err := w.c.partition(p, it.Key(), index, ih, fh, hasFilter); err != nil {
				return err
			}
		}
		if err := w.index(partName("index", p), ih, index); err != nil {
			return err
		}
		p++
	}
	if err := it.Error(); err != nil {
		return r.wrapBlockErr(err, "top-level index", r.footer.Index)
	}
	return nil
}

// index verifies the data blocks that the index block (or partition) at h,
// decoded as index, lists, and visits them when checking.
func (w *walker) index(what string, h block.Handle, index []byte) error {
	r := w.r
	// The index is kept while the data blocks are decoded into dec.
	index = bytes.Clone(index)
	var it block.Iter
	if err := it.Init(base.CompareEncoded, index); err != nil {
		return r.wrapBlockErr(err, what, h)
	}
	for ok := it.First(); ok; ok = it.Next() {
		dh, err := decodeHandleExact(it.Value())
		if err != nil {
			return r.wrapBlockErr(err, what, h)
		}
		raw, ct, err := r.readRaw(w.ctx, w.env.IO, dh, r.dataEnd, true, w.pf, nil)
		if err != nil {
			return errors.Wrap(err, "sstable: verifying data block")
		}
		if w.c == nil {
			continue
		}
		data := raw
		if ct != compress.None {
			if data, err = r.decompressTo(ct, raw, dh, w.dec); err != nil {
				return err
			}
		}
		if err := w.c.visit(it.Key(), dh, data); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return r.wrapBlockErr(err, what, h)
	}
	return nil
}

// readVerified reads and verifies the block at h and returns it decoded, in
// *buf, *dec or the mapping.
func (r *Reader) readVerified(ctx context.Context, env ReadEnv, h block.Handle, limit uint64, buf, dec *[]byte) ([]byte, error) {
	raw, ct, err := r.readRaw(ctx, env.IO, h, limit, true, nil, buf)
	if err != nil {
		return nil, err
	}
	if ct == compress.None {
		return raw, nil
	}
	return r.decompressTo(ct, raw, h, dec)
}
