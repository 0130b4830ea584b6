// Package crashtest is shale's crash test at scale, after RocksDB's
// db_stress (its expected-state file) and tools/db_crashtest.py (its kill
// loop), through the driver façade only.
//
// A child process (RunChild) opens the database with
// driver.OpenDB(engine.NewConnector(dir, &engine.Options{FS: ...})) and runs
// a random concurrent workload over a fixed keyspace: writer goroutines
// doing Put, Delete, DeleteRange and batches (with range deletions), a
// quarter of them synced (all with Sync), now and then DisableWAL, Flush,
// Compact or SyncWAL; reader goroutines checking Gets against the newest
// acknowledged write and scans for values that were never written. Writes
// to a key are serialized by a per-key lock, and each write follows a
// write-ahead protocol on the expected-state file (state.go): the new
// version of every key it touches is recorded as pending before the write is
// issued, and its outcome after it returns — a synced acknowledgement makes
// it the key's durable base. The file is written with pwrite, so it
// survives kill -9.
//
// The parent (Run) kills the child with SIGKILL once it reports a random
// number of operations over its stdout (or while it opens the database,
// one round in eight), reopens the database, and verifies every key by Get
// and by a full scan: it must hold its durable base or one of its pending
// versions — a synced write is never lost, an unsynced one may be, and no
// value is ever one that was not written. What it found becomes the new
// base, and the next round starts. Nothing waits on wall-clock time except
// a generous stall bound that calls a silent child hung.
//
// With Faults, every other round injects filesystem faults through
// vfs/errorfs in windows of writes: ENOSPC on writes, short writes
// (a DiskFull budget just above the space used), failed syncs, creates and
// renames. A failed write is not acknowledged (its versions stay pending);
// when writes keep failing after a window closes, the child closes and
// reopens the database, which must succeed.
//
// TestCrash runs a few rounds in the suite, with and without sync=true.
// The long run is the command:
//
//	go run ./internal/crashtest/cmd/shalecrash -duration 10m -keys 10000 -v
//	go run ./internal/crashtest/cmd/shalecrash -rounds 300 -seed 7 -sync
//
// which prints, at the end, the operations, crashes, faults injected,
// keys verified and the writes lost (synced writes lost and wrong values
// must be 0). TestCrash and shalecrash add values of kilobytes and batches
// of hundreds of writes to the workload unless run with -large=false.
package crashtest
