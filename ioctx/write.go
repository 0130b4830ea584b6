package ioctx

import "context"

// WriteOptions are the per-request options of a write (RocksDB's
// WriteOptions). The zero value is RocksDB's default: the write is not
// synced (it survives a process crash once in the operating system, not a
// machine crash), it goes to the write-ahead log, and its WAL bytes are not
// charged to the rate limiter.
//
// WriteOptions is a small value: pass it by value.
type WriteOptions struct {
	// Sync makes the write wait until its WAL record, and every record
	// before it, is on stable storage (fsync), so it survives a machine
	// crash or power loss. A database may sync every write regardless (the
	// engine's DSN key sync).
	Sync bool

	// DisableWAL applies the write to the memtable only. Such a write is
	// lost by any crash until the memtable holding it is flushed to a table
	// file; a later synced write does not make it durable. Setting Sync as
	// well is an error matching ErrInvalidArgument (RocksDB: "Sync writes
	// has to enable WAL"); a database's own sync-every-write setting does
	// not apply to it.
	DisableWAL bool

	// RateLimiterPriority is the priority at which the write's WAL bytes are
	// charged to the database's rate limiter, when the limiter's mode covers
	// writes. PriorityTotal, the zero value, does not charge them.
	RateLimiterPriority Priority
}

// MergeWrite returns defaults overridden by over: Sync and DisableWAL are
// set when either sets them, and a priority of over other than Total
// replaces the default's. A session (driver.Conn) merges the context's
// write options over its own defaults this way.
func MergeWrite(defaults, over WriteOptions) WriteOptions {
	wo := defaults
	wo.Sync = wo.Sync || over.Sync
	wo.DisableWAL = wo.DisableWAL || over.DisableWAL
	if over.RateLimiterPriority != PriorityTotal {
		wo.RateLimiterPriority = over.RateLimiterPriority
	}
	return wo
}

// writeKey is the context key of WriteOptions. It has no fields, so
// converting it to an interface for ctx.Value does not allocate.
type writeKey struct{}

// WithWriteOptions returns a copy of ctx that carries wo. Writes made with
// the returned context use wo; a later WithWriteOptions replaces them.
func WithWriteOptions(ctx context.Context, wo WriteOptions) context.Context {
	return context.WithValue(ctx, writeKey{}, wo)
}

// WriteOptionsFrom returns the WriteOptions ctx carries, or the zero
// WriteOptions (RocksDB's defaults) when it carries none. It does not
// allocate. Call it once per API call, at the API boundary.
func WriteOptionsFrom(ctx context.Context) WriteOptions {
	wo, _ := ctx.Value(writeKey{}).(WriteOptions)
	return wo
}
