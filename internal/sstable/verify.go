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
// readahead buffer of env.ReadaheadSize bytes (256 KiB when 0) bounded at
// the data region, so that it reads every byte of the table but the footer
// exactly once. It bypasses
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

	meta, err := r.readWhat(ctx, env, blockWhat{name: "metaindex"}, r.footer.MetaIndex, limit, &buf, &dec)
	if err != nil {
		return err
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
		raw, _, err := r.verifyRaw(ctx, env, metaBlockWhat(m.name), m.h, limit, nil, &buf)
		if err != nil {
			return err
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
	// The data blocks are read once each, and the meta blocks after them
	// on their own: readahead that went past the data region or read a
	// straddling block again would read bytes twice.
	w.pf.Bound(int64(r.dataEnd))
	defer w.pf.Close()
	if r.top != nil {
		return w.partitions()
	}
	index, err := r.readWhat(ctx, env, blockWhat{name: "index"}, r.footer.Index, limit, &buf, &dec)
	if err != nil {
		return err
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
	top, err := r.readWhat(w.ctx, w.env, blockWhat{name: "top-level index"}, r.footer.Index, w.limit, w.buf, w.dec)
	if err != nil {
		return err
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
			raw, _, err := r.verifyRaw(w.ctx, w.env, metaWhat(metaBlock{part: p}), fh, w.limit, nil, w.buf)
			if err != nil {
				return err
			}
			if w.c != nil {
				w.c.setFilter(raw, partName("filter", p), fh)
			}
		}
		index, err := r.readWhat(w.ctx, w.env, metaWhat(metaBlock{index: true, part: p}), ih, w.limit, w.buf, w.dec)
		if err != nil {
			return err
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
		raw, ct, err := r.verifyRaw(w.ctx, w.env, dataWhat, dh, r.dataEnd, w.pf, nil)
		if err != nil {
			return err
		}
		if w.c == nil {
			continue
		}
		data, err := r.decodeVerified(dataWhat, ct, raw, dh, w.dec)
		if err != nil {
			return err
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

// dataWhat names a data block in the walk's errors.
var dataWhat = blockWhat{name: "data"}

// metaBlockWhat names the meta block that the metaindex lists as name in
// the walk's errors, in Open's words where Open reads it.
func metaBlockWhat(name string) blockWhat {
	switch name {
	case MetaPropertiesName:
		return blockWhat{name: "properties"}
	case MetaFilterName:
		return blockWhat{name: "filter"}
	case MetaRangeDelName:
		return blockWhat{name: "range deletion"}
	}
	return blockWhat{name: "meta " + name}
}

// verifyRaw is readRaw (verifying the checksum) of the block at h, which
// what names, with errors that say "sstable:", the file and the block once:
// a handle beyond limit is "sstable: FILE: WHAT block H ... ends beyond
// LIMIT" (readRaw's own check would not name the block, and wrapped it
// said "sstable:" twice), and a failed read or checksum, whose error from
// the file reader or block.ValidateChecksum names the file and the offset
// (with both checksums), is "sstable: verifying WHAT block: ...".
func (r *Reader) verifyRaw(
	ctx context.Context, env ReadEnv, what blockWhat, h block.Handle, limit uint64,
	pf *fileio.PrefetchBuffer, buf *[]byte,
) ([]byte, compress.Type, error) {
	if err := r.checkBounds(what, h, limit); err != nil {
		return nil, 0, err
	}
	raw, ct, err := r.readRaw(ctx, env.IO, h, limit, true, pf, buf)
	if err != nil {
		return nil, 0, errors.Wrapf(err, "sstable: verifying %s", what.block())
	}
	return raw, ct, nil
}

// decodeVerified decompresses raw, the block at h that what names (stored
// with compression ct), into *dec, grown as needed; an uncompressed block
// is raw itself. Its errors name the file and the block once
// ("sstable: FILE: WHAT block H: ...").
func (r *Reader) decodeVerified(what blockWhat, ct compress.Type, raw []byte, h block.Handle, dec *[]byte) ([]byte, error) {
	if ct == compress.None {
		return raw, nil
	}
	n, err := r.decodedLen(what, ct, raw, h)
	if err != nil {
		return nil, err
	}
	return r.decompressInto(what, ct, raw, h, grow(dec, n))
}

// readWhat reads and verifies the block at h, which what names, and
// returns it decoded, in *buf, *dec or the mapping.
func (r *Reader) readWhat(ctx context.Context, env ReadEnv, what blockWhat, h block.Handle, limit uint64, buf, dec *[]byte) ([]byte, error) {
	raw, ct, err := r.verifyRaw(ctx, env, what, h, limit, nil, buf)
	if err != nil {
		return nil, err
	}
	return r.decodeVerified(what, ct, raw, h, dec)
}
