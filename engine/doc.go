// Package engine is shale's storage engine, a log-structured merge tree
// (LSM) on local files, and the driver that offers it to programs: the
// driver named "shale" ([DriverName]) of the [driver] package. Programs use
// the engine only through that façade, as database/sql programs use a SQL
// driver: importing this package registers the driver, and everything a
// program reads or writes goes through a [driver.DB].
//
// # Opening
//
// With a DSN, a directory (or [MemoryPath], ":memory:", for a database that
// lives in memory and disappears when closed) and URL-style parameters named
// after RocksDB's options:
//
//	import (
//		"github.com/shaledb/shale/driver"
//		_ "github.com/shaledb/shale/engine"
//	)
//
//	db, err := driver.Open("shale", "/var/lib/app/db?block_cache_size=32MiB&sync=true")
//	if err != nil {
//		return err // a bad DSN: nothing is opened yet
//	}
//	defer db.Close()
//	if err := db.Ping(ctx); err != nil {
//		return err // the database could not be opened (in use, missing, damaged)
//	}
//
// Open only parses the DSN; Ping, or the first call, opens the database, and
// a failed open is retried by the next call, as in database/sql. [DSNKeys]
// lists every DSN parameter with its default (the README's DSN table is
// generated from it); [ParseDSN] and [FormatDSN] convert between a DSN and
// [Options].
//
// A ":memory:" database takes its in-memory filesystem with it when it is
// closed. A program that wants the files to outlive Close, to reopen the
// database in a test, simulate a crash or inject faults, opens it with
// [NewConnector] on a filesystem of its own, Options.FS = [vfs.NewMem]()
// (see package [vfs], and package errorfs under it for injected faults).
//
// With typed options, for what a DSN cannot carry (an [EventListener], a
// filesystem, a logger, a statistics object or rate limiter shared between
// databases), build a connector:
//
//	db := driver.OpenDB(engine.NewConnector("/var/lib/app/db", &engine.Options{
//		BlockCacheSize: 32 << 20,
//		EventListener:  &engine.EventListener{FlushEnd: func(info engine.FlushInfo) { ... }},
//	}))
//
// The zero [Options] are the defaults; each field's comment gives its
// default and its DSN key.
//
// # What the driver implements
//
// Beyond the required [driver.DriverConn], the engine's connection
// implements the optional interfaces the façade looks for, so every
// [driver.DB] method does the engine's own work rather than a fallback:
// MultiGetter, RangeDeleter, Snapshotter (snapshots with MultiGet, ValueSize
// and GetPinned), TxBeginner (optimistic transactions, with MultiGet,
// ValueSize and DeleteRange), Flusher, Compacter, WALSyncer, Checkpointer,
// Verifier, StatsReporter, MetricsReporter (the LSM's shape: levels,
// tables, compactions, stalls), ValueSizer and PinnedGetter (DB.Has,
// DB.ValueSize and DB.GetPinned without copying the value; a pinned value
// stays valid until its Closer's Close, also after the database's Close),
// Checker (DB.Check: the tree's structure and every block), Resumer
// (DB.Resume after a background error stopped writes), CatchUpper
// (DB.CatchUp of a secondary instance, DSN secondary=true: a read-only view
// of a database another process holds open; see Options.Secondary) and
// Ingester (DB.Ingest of tables written by [TableWriter], a bulk load).
//
// Errors match the [driver] package's sentinels with errors.Is
// ([driver.ErrNotFound], [driver.ErrCorruption], ...); this package's
// ErrNotFound and the other error names are deprecated aliases of them.
//
// # On disk
//
// A database is one directory. Writes go to a write-ahead log (NNNNNN.log,
// LevelDB's 32 KiB record framing with checksums) and to an in-memory
// memtable; a full memtable is flushed to a table file (NNNNNN.sst: data
// blocks with restart points, an index, a bloom filter, a properties block
// and a footer with a magic number and a format version; each block ends
// with a compression type and a checksum) in level 0, and background
// compactions merge tables down through levels 1 to 6. A MANIFEST-NNNNNN
// file logs the set of live tables, with each table's whole-file CRC32C, and
// CURRENT names the MANIFEST in use; a LOCK file keeps a second open, by
// this process or another, from succeeding. Files that a recovery could not
// account for are renamed aside (NNNNNN.sst.orphan, NNNNNN.log.corrupt)
// rather than deleted. The table format is specified in the documentation
// of the internal sstable package.
package engine
