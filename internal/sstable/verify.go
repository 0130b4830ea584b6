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
// the index, and every data block the index lists, the data blocks through a
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

// dataVisitor is called by walk with each data block, decoded, and its
// index separator (valid only during the call).
type dataVisitor func(sep []byte, h block.Handle, data []byte) error

// walk reads and verifies every block of the table as VerifyChecksums
// describes, calling visit (if set) with each decoded data block.
func (r *Reader) walk(ctx context.Context, env ReadEnv, visit dataVisitor) error {
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
		if _, _, err := r.readRaw(ctx, env.IO, m.h, limit, true, nil, &buf); err != nil {
			return errors.Wrapf(err, "sstable: verifying meta block %s", m.name)
		}
	}

	index, err := r.readVerified(ctx, env, r.footer.Index, limit, &buf, &dec)
	if err != nil {
		return errors.Wrap(err, "sstable: verifying index block")
	}
	// The index is kept while the data blocks are decoded into dec.
	index = bytes.Clone(index)
	var it block.Iter
	if err := it.Init(base.CompareEncoded, index); err != nil {
		return r.wrapBlockErr(err, "index", r.footer.Index)
	}
	readahead := env.ReadaheadSize
	if readahead <= 0 {
		readahead = verifyReadahead
	}
	pf := fileio.NewPrefetchBuffer(r.file, int(min(readahead, maxBlockLen)), 0, 0, false)
	defer pf.Close()
	for ok := it.First(); ok; ok = it.Next() {
		h, err := decodeHandleExact(it.Value())
		if err != nil {
			return r.wrapBlockErr(err, "index", r.footer.Index)
		}
		raw, ct, err := r.readRaw(ctx, env.IO, h, r.dataEnd, true, pf, nil)
		if err != nil {
			return errors.Wrap(err, "sstable: verifying data block")
		}
		if visit == nil {
			continue
		}
		data := raw
		if ct != compress.None {
			if data, err = r.decompressTo(ct, raw, h, &dec); err != nil {
				return err
			}
		}
		if err := visit(it.Key(), h, data); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return r.wrapBlockErr(err, "index", r.footer.Index)
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
