package driver

import (
	"context"
	"errors"
	"io"

	"github.com/shaledb/shale/ioctx"
)

// This file holds the reads that do not hand out a copy of the value: Has,
// ValueSize and GetPinned, shared by DB, Conn, Tx and Snapshot. Each uses
// the driver's optional interface when it has one and falls back to its
// Get otherwise, so every driver offers them and a driver that implements
// the interfaces just makes them cheaper.

// valueSize is ValueSize over g (the DriverConn, DriverTx or
// DriverSnapshot) and vs, g as a ValueSizer (nil when it is not one).
func valueSize(ctx context.Context, g getter, vs ValueSizer, req ioctx.ReadRequest, key []byte) (int, error) {
	if vs != nil {
		n, err := vs.ValueSize(ctx, req, key)
		if err == nil || !errors.Is(err, ErrSkip) {
			return n, err
		}
	}
	v, err := g.Get(ctx, req, key)
	if err != nil {
		return 0, err
	}
	return len(v), nil
}

// has is Has over h, g as a Haser (nil when it is not one), else valueSize:
// a key that is not found is false, not an error.
func has(ctx context.Context, g getter, h Haser, vs ValueSizer, req ioctx.ReadRequest, key []byte) (bool, error) {
	if h != nil {
		ok, err := h.Has(ctx, req, key)
		if err == nil || !errors.Is(err, ErrSkip) {
			return ok, err
		}
	}
	_, err := valueSize(ctx, g, vs, req, key)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotFound):
		return false, nil
	}
	return false, err
}

// getPinned is GetPinned over g and pg, g as a PinnedGetter (nil when it is
// not one).
func getPinned(ctx context.Context, g getter, pg PinnedGetter, req ioctx.ReadRequest, key []byte) ([]byte, io.Closer, error) {
	if pg != nil {
		v, c, err := pg.GetPinned(ctx, req, key)
		if err == nil || !errors.Is(err, ErrSkip) {
			if err != nil {
				return nil, nil, err
			}
			if c == nil {
				c = nopCloser{}
			}
			return v, c, nil
		}
	}
	v, err := g.Get(ctx, req, key)
	if err != nil {
		return nil, nil, err
	}
	return v, nopCloser{}, nil
}

// nopCloser is the Closer of a value that needs no release: the fallback's
// copy, which is the caller's. A zero-size value, so returning it in an
// io.Closer does not allocate.
type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// Has reports whether key has a value, without copying the value (see
// [Haser] and [ValueSizer]; a driver without either is asked for a copy,
// which is dropped).
// The read is tagged ActivityGet, as a Get. key is not retained.
func (db *DB) Has(ctx context.Context, key []byte) (bool, error) {
	return db.has(ctx, nil, key)
}

// ValueSize returns the size in bytes of key's value, or an error matching
// ErrNotFound, without copying the value (see [ValueSizer]). The read is
// tagged ActivityGet. key is not retained.
func (db *DB) ValueSize(ctx context.Context, key []byte) (int, error) {
	return db.valueSize(ctx, nil, key)
}

// GetPinned returns key's value without copying it where the driver can
// (see [PinnedGetter]), or an error matching ErrNotFound. The value is valid
// until closer.Close, which the caller must call once it is done with it —
// also after DB.Close, which does not invalidate it; until then the value
// may hold memory the database would otherwise release, such as a cached
// block. The first Close returns nil; a second releases nothing and returns
// nil or an error matching ErrClosed. The value must not be modified. The
// read is tagged ActivityGet. key is not retained.
//
// It pays where values are large: a 256 KiB value read with Get is a
// 256 KiB allocation and copy; with GetPinned from shale's engine it is
// neither when the value's block is on the Go heap.
func (db *DB) GetPinned(ctx context.Context, key []byte) (value []byte, closer io.Closer, err error) {
	return db.getPinned(ctx, nil, key)
}

func (db *DB) has(ctx context.Context, sess *Conn, key []byte) (bool, error) {
	cs, req, err := db.startRead(ctx, sess, "Get", ioctx.ActivityGet)
	if err != nil {
		return false, err
	}
	defer db.exit()
	return has(ctx, cs.conn, cs.haser, cs.valueSizer, req, key)
}

func (db *DB) valueSize(ctx context.Context, sess *Conn, key []byte) (int, error) {
	cs, req, err := db.startRead(ctx, sess, "Get", ioctx.ActivityGet)
	if err != nil {
		return 0, err
	}
	defer db.exit()
	return valueSize(ctx, cs.conn, cs.valueSizer, req, key)
}

func (db *DB) getPinned(ctx context.Context, sess *Conn, key []byte) ([]byte, io.Closer, error) {
	cs, req, err := db.startRead(ctx, sess, "Get", ioctx.ActivityGet)
	if err != nil {
		return nil, nil, err
	}
	defer db.exit()
	return getPinned(ctx, cs.conn, cs.pinnedGetter, req, key)
}

// Has is [DB.Has] in the session.
func (c *Conn) Has(ctx context.Context, key []byte) (bool, error) { return c.db.has(ctx, c, key) }

// ValueSize is [DB.ValueSize] in the session.
func (c *Conn) ValueSize(ctx context.Context, key []byte) (int, error) {
	return c.db.valueSize(ctx, c, key)
}

// GetPinned is [DB.GetPinned] in the session.
func (c *Conn) GetPinned(ctx context.Context, key []byte) ([]byte, io.Closer, error) {
	return c.db.getPinned(ctx, c, key)
}

// Has is [DB.Has] as the transaction sees key.
func (tx *Tx) Has(ctx context.Context, key []byte) (bool, error) {
	req, err := tx.startRead(ctx, "Get", ioctx.ActivityGet)
	if err != nil {
		return false, err
	}
	defer tx.db.exit()
	return has(ctx, tx.tx, tx.haser, tx.valueSizer, req, key)
}

// ValueSize is [DB.ValueSize] as the transaction sees key.
func (tx *Tx) ValueSize(ctx context.Context, key []byte) (int, error) {
	req, err := tx.startRead(ctx, "Get", ioctx.ActivityGet)
	if err != nil {
		return 0, err
	}
	defer tx.db.exit()
	return valueSize(ctx, tx.tx, tx.valueSizer, req, key)
}

// GetPinned is [DB.GetPinned] as the transaction sees key. The value stays
// valid until its closer's Close, also after Commit or Rollback.
func (tx *Tx) GetPinned(ctx context.Context, key []byte) ([]byte, io.Closer, error) {
	req, err := tx.startRead(ctx, "Get", ioctx.ActivityGet)
	if err != nil {
		return nil, nil, err
	}
	defer tx.db.exit()
	return getPinned(ctx, tx.tx, tx.pinnedGetter, req, key)
}

// Has is [DB.Has] in the snapshot.
func (s *Snapshot) Has(ctx context.Context, key []byte) (bool, error) {
	req, err := s.startRead(ctx, "Get", ioctx.ActivityGet)
	if err != nil {
		return false, err
	}
	defer s.db.exit()
	return has(ctx, s.snap, s.haser, s.valueSizer, req, key)
}

// ValueSize is [DB.ValueSize] in the snapshot.
func (s *Snapshot) ValueSize(ctx context.Context, key []byte) (int, error) {
	req, err := s.startRead(ctx, "Get", ioctx.ActivityGet)
	if err != nil {
		return 0, err
	}
	defer s.db.exit()
	return valueSize(ctx, s.snap, s.valueSizer, req, key)
}

// GetPinned is [DB.GetPinned] in the snapshot. The value stays valid until
// its closer's Close, also after the snapshot's.
func (s *Snapshot) GetPinned(ctx context.Context, key []byte) ([]byte, io.Closer, error) {
	req, err := s.startRead(ctx, "Get", ioctx.ActivityGet)
	if err != nil {
		return nil, nil, err
	}
	defer s.db.exit()
	return getPinned(ctx, s.snap, s.pinnedGetter, req, key)
}
