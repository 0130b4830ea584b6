// Package etcd is the "etcd" driver of shale's façade: a DB is one namespace
// of an etcd cluster, read and written through the etcd v3 client. Importing
// the package registers the driver:
//
//	import (
//		"github.com/shaledb/shale/driver"
//		_ "github.com/shaledb/shale/drivers/etcd"
//	)
//
//	db, err := driver.Open("etcd", "10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379/app")
//	if err != nil { ... }
//	if err := db.Ping(ctx); err != nil { ... } // a member answered within dial_timeout
//
// Everything package driver documents holds: the read path (the façade
// checks and tags each read's activity and hands the driver a resolved
// ioctx.ReadRequest), the error classes, Close. What follows is what is
// particular to etcd.
//
// # Data source names
//
//	host:port[,host:port...]/namespace[?key=value&...]
//
// The path lists the members' client addresses and, after the first '/',
// the namespace (which may itself hold '/'). Every key of the DB is stored
// in etcd as the namespace, a zero byte, and the key, so two DBs of
// different namespaces never see each other's keys, even when one
// namespace is a prefix of the other. The parameters ([DSNKeys] lists them
// with their defaults):
//
//   - dial_timeout (5s): bounds the connect, which asks a member for its
//     status (and authenticates first when username is set): the DB's
//     first call, Ping being the one to make, fails with an error matching
//     [ErrUnavailable] naming the endpoints when no member answers, at once
//     when they all refuse the connection, and the next call tries again.
//   - request_timeout (10s): bounds each RPC, within the caller's context
//     and the read's ReadOptions deadline or IO timeout; 0 leaves RPCs to
//     those.
//   - username, password_file: authenticate as username with the password
//     in the file (read at connect).
//   - tls_ca, tls_cert, tls_key: PEM files; any of them turns TLS on.
//   - max_txn_ops (128), max_request_bytes (1536KiB): the server's
//     --max-txn-ops and --max-request-bytes. The driver checks writes
//     against them before sending anything; set them to the cluster's.
//   - page_size (256): keys an iterator fetches per RPC.
//   - require_leader (true): an RPC that reaches a member without a leader
//     fails at once with an error matching [ErrUnavailable] instead of
//     waiting for one until its deadline.
//   - statistics (true), stats_level (except_detailed_timers): as the
//     engine's.
//   - rate_limit (0: none): bytes per second of read responses, charged at
//     each read's priority.
//
// An unknown key (an engine key such as block_cache_size included), a bad
// value or a bad combination is an error matching driver.ErrInvalidArgument
// that names it, returned by driver.Open. [NewConnector] takes a [Config]
// instead of a DSN, and [NewClientConnector] an etcd client the caller owns.
//
// # Operations
//
// Get, Put and Delete are one RPC each. A found empty value is a non-nil
// empty slice.
//
// Write sends a batch as one Txn: it applies entirely or not at all. etcd
// refuses a Txn that writes a key twice or puts a key one of its deletions
// covers, so the Txn holds the batch's effect rather than its list: the last
// write of each key, and its range deletions merged and cut around the keys
// put after them (a put before a range deletion covering it is dropped, as
// the deletion erases it). A batch whose Txn would hold more operations than
// max_txn_ops, or that is larger than max_request_bytes, fails with an error
// matching ErrInvalidArgument that names the limit, before anything is sent.
//
// DeleteRange is one etcd DeleteRange RPC of [start, end) within the
// namespace: one write, whatever the number of keys. A nil end (every key
// from start on) becomes the namespace's end, the first etcd key after all
// of the DB's, and a nil start its first key, so DeleteRange(ctx, nil, nil)
// empties the namespace and no other; the same holds in a batch and in a
// transaction.
//
// # Reads without a copy
//
// DB.Has, DB.ValueSize and DB.GetPinned work, through the façade's copying
// fallback: the driver implements neither driver.ValueSizer nor
// driver.PinnedGetter. etcd cannot tell a value's size without sending the
// value (a Range with count_only says how many keys exist, keys_only drops
// the value and its size with it), and the value arrives in a gRPC message
// that the client decodes into memory of its own, so there is nothing to
// pin: a Get costs what a Has would.
//
// # Durability and write options
//
// A write that returns was committed by a quorum of members, each of which
// appended it to its write-ahead log and, unless the cluster runs with
// --unsafe-no-fsync, fsynced it first. So every write is what
// WriteOptions.Sync asks for, and Sync changes nothing; SyncWAL has nothing
// to sync and returns nil once a linearizable read shows the cluster
// reachable with a leader. WriteOptions.DisableWAL asks for a write that
// skips the log, which etcd cannot do: a Put, Delete, DeleteRange or Write
// with it, or a read-write BeginTx whose commit would carry it, fails with an
// error matching driver.ErrNotSupported and writes nothing, rather than
// silently being durable. WriteOptions.RateLimiterPriority changes nothing
// (the rate limiter charges reads only).
//
// # Merge
//
// The driver does not implement driver.Merger: DB.Merge, and DB.Write of a
// batch holding a merge (driver.Batch.Merge), return an error matching
// driver.ErrNotSupported and write nothing. etcd has no merge operands: a
// merge would be a read-modify-write of the key in a Txn guarded by its
// mod revision, retried on conflict, which is atomic but costs a round trip
// per attempt and livelocks under contention on a hot key, the case merge
// operators exist for; and the operator would have to be configured, and
// recorded in the namespace, for every client of it to apply the same one.
// A client that wants it writes that loop itself with BeginTx.
//
// # Snapshots and checkpoints
//
// NewSnapshot reads the current revision (one linearizable read) and pins
// it: the snapshot's Get, MultiGet and iterators read at that revision,
// from etcd's history. Compact of this DB stays below it until the snapshot
// and its iterators are closed; a compaction by anyone else past it makes
// the snapshot's reads fail with an error matching [ErrSnapshotCompacted].
// An open snapshot costs the cluster the history it keeps from compaction.
//
// Checkpoint is not implemented (DB.Checkpoint returns an error matching
// driver.ErrNotSupported): the contract is a copy in a directory that the
// same driver opens as a database, and an etcd DB is a namespace of a
// cluster, not a directory. etcd's own backup, a snapshot of a member's
// whole key space (every namespace) that etcdutl restores into a new
// cluster, is `etcdctl snapshot save` (the client's Maintenance.Snapshot).
//
// Ingest is not implemented (DB.Ingest returns an error matching
// driver.ErrNotSupported): a bulk load adds table files of an LSM engine,
// written by that engine's own writer, and etcd has no such files; load
// etcd with batched writes (each at most max_txn_ops operations).
//
// MultiGet sends Txns of at most max_txn_ops Ranges; every Txn after the
// first reads at the first's revision, so the result is one snapshot, in
// the caller's order, duplicates included.
//
// An iterator reads at the revision current when NewIterator runs (which
// fetches the first page), in pages of page_size keys, within [LowerBound,
// UpperBound), both ways. A prefix scan (driver.IterOptions.Prefix) works:
// the façade narrows the bounds to the prefix, which is what etcd's own
// prefix Range does (etcd has no filters to consult). Moves within the page held make no RPC. A forward
// page is one Range. etcd sorts a descending Range by reading the whole
// range first, so a backward page (Last, SeekLT, or Prev past the start of
// the page held) is two RPCs: a keys-only descending Range of [LowerBound,
// k), which walks the server's in-memory index over every key of that
// range but sends only page_size keys, and a forward Range of the page's
// values. A backward scan of n keys thus costs the server O(n²/page_size)
// index steps, where a forward one costs O(n).
//
// A transaction reads at the revision of BeginTx, merged with its own
// writes, which it buffers. Commit sends them as one Txn that compares the
// ModRevision of every key the transaction read (with Get or MultiGet) or
// wrote with the one the key had at the begin revision — 0 for a key absent
// then, as etcd compares an absent key — and fails, applying nothing, with
// an error matching driver.ErrConflict that names the keys that changed.
// Keys only scanned by the transaction's iterators are not compared. A
// transaction's DeleteRange hides its range from the transaction's reads
// and adds to Commit one comparison over the whole range — every key in it
// must have a ModRevision no later than the begin revision — so a key that
// another writer created or changed in the range since BeginTx is a
// conflict (a key it deleted there is not: the transaction deletes it too,
// with the same outcome). etcd evaluates that comparison by visiting every
// key of the range, so it costs the Commit time in proportion to the keys
// the range holds. A transaction touching more keys (plus deleted ranges)
// than max_txn_ops cannot commit (etcd compares them in one Txn); it fails
// with ErrInvalidArgument. A Commit, or
// a write, whose outcome is unknown — it timed out, its context was
// cancelled, or the connection was lost after it was sent to a member —
// fails with an error matching [ErrOutcomeUnknown], never as a success. One
// that never reached a member (no attempt of it got a connection) says "not
// applied" and does not match ErrOutcomeUnknown.
//
// Flush does nothing: a write that returned was committed by a quorum.
//
// Compact compacts the cluster's revision history to the current revision,
// but never past the revision an open iterator, transaction or multi-Txn
// MultiGet of this DB reads at, and waits for the members to apply it.
// Revision compaction is cluster-wide: the start and end keys do not limit
// it, and it drops old revisions of every namespace. Members' database files
// are not defragmented (etcdctl defrag does that). A compaction by someone
// else (another client, another DB, the cluster's auto-compaction) past an
// open iterator's or transaction's revision makes its next read fail with
// an error matching [ErrSnapshotCompacted].
//
// VerifyChecksum asks every voting member for its HashKV at one revision
// and compares them; a member whose hash differs from the majority's is an
// error matching driver.ErrCorruption that names it. The hash covers the
// whole key space, not only the namespace. A member that cannot answer
// fails the verification (with ErrUnavailable when it is down).
// VerifyFileChecksums reports the cluster's CORRUPT alarms, which etcd's own
// corruption check (--corrupt-check-time) raises, as ErrCorruption naming
// the member. Note that reads are served by whichever member the client
// reaches: a member with damaged data serves it until it is found.
//
// # Availability
//
// With require_leader (the default), when the member an RPC reaches has no
// leader (the cluster lost quorum, or is electing one), the RPC fails at
// once with an error matching ErrUnavailable; a write refused that way was
// not applied. Without it, reads and writes wait for a leader until their
// deadline. A stopped member is skipped: the client sends RPCs to the
// others. When the client has a connection to no member (every endpoint
// refuses, or none connected within dial_timeout), a call fails at once
// with an error matching ErrUnavailable instead of waiting for one until
// request_timeout; a write so failed was not applied. The client tries a
// member that failed again after 100 ms, backing off to 2 s. Every call's context reaches its RPCs, and a read's ReadOptions
// deadline bounds them as well.
//
// # Statistics and rate limiting
//
// An RPC is this driver's IO. Each read RPC is timed into SSTReadMicros and
// into its activity's FileRead*Micros histogram
// (statistics.FileReadHistogram, with the engine's gating), its response
// (wire size) is charged to the rate limiter at the read's priority, and the
// DB-level histograms and tickers (DBGet, DBMultiGet, DBSeek, DBWrite,
// NumberKeysRead, BytesRead, NumberMultiGet*, NumberDB*, IterBytesRead,
// NumberKeysWritten, BytesWritten, TxnConflicts) are recorded as the engine
// records them. RPCs made on no read's behalf — BeginTx's and Compact's
// reads of the current revision, Commit's read of the written keys'
// revisions — carry activity Unknown and count in SSTReadMicros only.
package etcd
