package engine

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/memtable"
)

// EventListener is told about the database's background work: flushes and
// compactions (begin and end), tables created and deleted, WALs created,
// write stalls (begin and end) and background errors. Set it in
// Options.EventListener (a typed option: a DSN cannot carry code). Every
// field is optional; a nil one is skipped.
//
// # Delivery
//
// Events are delivered in the order they happened, one at a time, on one
// goroutine per database that only delivers events: never on a goroutine
// writing to or reading from the database, and never with a lock of the
// database held, so a listener may call the database (Metrics, Get; not
// Close). Reporting an event never blocks: the database puts it in a queue
// of EventQueueLen events and goes on. A listener that falls that far behind
// makes the database drop the events that do not fit, rather than slow it
// down: it counts them and calls EventsDropped with the count before the
// next event it delivers. So a slow listener never stalls a write, a flush
// or a compaction; it only delays the events after it, and loses some when
// it is slower than the database for long. Close waits for the events
// already queued to be delivered.
//
// Because delivery is asynchronous, the database may have moved on when a
// listener hears of an event: a table reported created may already be
// compacted away.
type EventListener struct {
	FlushBegin      func(FlushInfo)           // a flush starts
	FlushEnd        func(FlushInfo)           // a flush ends, written or failed
	CompactionBegin func(CompactionInfo)      // a compaction starts
	CompactionEnd   func(CompactionInfo)      // a compaction ends, installed or failed
	TableCreated    func(TableInfo)           // a flush or compaction wrote a table, or an ingest added one
	TableDeleted    func(TableDeleteInfo)     // an obsolete table file was deleted
	WALCreated      func(WALCreateInfo)       // a new WAL file was created
	WriteStallBegin func(WriteStallBeginInfo) // a write starts waiting for background work
	WriteStallEnd   func(WriteStallEndInfo)   // that wait ends
	BackgroundError func(BackgroundErrorInfo) // background work failed
	// EventsDropped is called with the number of events dropped since the
	// last call because the queue was full (see Delivery).
	EventsDropped func(n uint64)
}

// EventQueueLen is how many undelivered events a database holds for its
// listener before it drops new ones.
const EventQueueLen = 1024

// TableInfo describes a table: its file number, its level and its size in
// bytes. In a TableCreated event, Reason says what wrote it ("flush" or
// "compaction") or that an ingest added it ("ingest"); elsewhere it is
// empty.
type TableInfo struct {
	FileNum uint64 // the NNNNNN of NNNNNN.sst
	Level   int    // 0 to 6
	Size    uint64 // the file's size in bytes
	Reason  string // "flush", "compaction" or "ingest" in TableCreated; else empty
}

// FlushInfo describes a flush of one immutable memtable. FlushBegin gets
// the input; FlushEnd the output, duration and error too.
type FlushInfo struct {
	// InputBytes is the memtable's size and InputEntries its entries.
	InputBytes   uint64
	InputEntries uint64 // the memtable's entries
	// Output is the table written, if the memtable held anything to write
	// and the flush succeeded; nil otherwise.
	Output   *TableInfo
	Duration time.Duration // FlushEnd: how long the flush took
	Err      error         // FlushEnd: why the flush failed; nil on success
}

// CompactionInfo describes a compaction from Level into OutputLevel.
// CompactionBegin gets the inputs; CompactionEnd the outputs, bytes,
// duration and error too.
type CompactionInfo struct {
	Level, OutputLevel int // the input level and the output level
	// Inputs are the tables read, from Level then from OutputLevel.
	Inputs []TableInfo
	// Outputs are the tables written (none for a trivial move, which only
	// moves the input to OutputLevel, or on failure).
	Outputs []TableInfo
	// TrivialMove says the compaction moved its one input table down
	// without reading or writing it.
	TrivialMove bool
	// BytesRead and BytesWritten are the input and output bytes (0 for a
	// trivial move).
	BytesRead, BytesWritten uint64
	Manual                  bool          // started by Compact, not by the engine
	Duration                time.Duration // CompactionEnd: how long it took
	Err                     error         // CompactionEnd: why it failed; nil on success
}

// TableDeleteInfo describes a table file deleted because no version names
// it any more. Err is the deletion's error, if it failed.
type TableDeleteInfo struct {
	FileNum uint64 // the NNNNNN of NNNNNN.sst
	Err     error  // the deletion's error; nil when the file is gone
}

// WALCreateInfo describes a new WAL file.
type WALCreateInfo struct {
	FileNum uint64 // the NNNNNN of NNNNNN.log
}

// WriteStallBeginInfo describes a write that had to wait for background
// work, and why ("memtables wait for a flush", "L0 has too many tables").
type WriteStallBeginInfo struct {
	Reason string // why the write waits
}

// WriteStallEndInfo describes the end of one write-stall wait.
type WriteStallEndInfo struct {
	Reason   string        // why the write waited, as in WriteStallBeginInfo
	Duration time.Duration // how long it waited
}

// BackgroundErrorInfo describes a failure of background work: Reason is
// the work ("WAL write", "memtable insert", "flush", "compaction"), Severity what it
// stops ("soft": compactions pause; "hard": writes stop until a retry
// succeeds; "fatal": writes stop until the database is reopened).
type BackgroundErrorInfo struct {
	Reason   string // the work that failed
	Severity string // "soft", "hard" or "fatal"
	Err      error  // the failure
}

// eventQueue delivers one database's events to its listener.
type eventQueue struct {
	l       *EventListener
	ch      chan func(*EventListener)
	dropped atomic.Uint64
	done    chan struct{}
	closed  atomic.Bool
	closeMu sync.RWMutex // held shared while sending, so close does not race a send
}

func newEventQueue(l *EventListener) *eventQueue {
	q := &eventQueue{l: l, ch: make(chan func(*EventListener), EventQueueLen), done: make(chan struct{})}
	go q.run()
	return q
}

func (q *eventQueue) run() {
	defer close(q.done)
	for ev := range q.ch {
		if n := q.dropped.Swap(0); n > 0 && q.l.EventsDropped != nil {
			q.l.EventsDropped(n)
		}
		ev(q.l)
	}
	if n := q.dropped.Swap(0); n > 0 && q.l.EventsDropped != nil {
		q.l.EventsDropped(n)
	}
}

// post queues ev without blocking; a full or closed queue drops it.
func (q *eventQueue) post(ev func(*EventListener)) {
	q.closeMu.RLock()
	defer q.closeMu.RUnlock()
	if q.closed.Load() {
		return
	}
	select {
	case q.ch <- ev:
	default:
		q.dropped.Add(1)
	}
}

// close stops accepting events and waits for the queued ones to be
// delivered.
func (q *eventQueue) close() {
	q.closeMu.Lock()
	if !q.closed.Swap(true) {
		close(q.ch)
	}
	q.closeMu.Unlock()
	<-q.done
}

// observability is what a DB keeps for its listener and for Metrics: the
// event queue (nil without a listener) and the counters that only the
// events' call sites know (bytes by level, compactions running, stalls).
//
// It is kept in a table keyed by the DB (obsByDB) rather than in a field of
// DB so that this file carries the whole feature; setEventListener, called
// at open, creates it and closeEvents, called at Close, removes it.
type observability struct {
	events *eventQueue

	levels [manifest.NumLevels]struct {
		bytesRead, bytesWritten, bytesFlushed, tablesWritten atomic.Uint64
	}
	compactionsRunning, flushesRunning atomic.Int64
	compactionsDone, flushesDone       atomic.Uint64
	stalls                             atomic.Uint64
	stallNanos                         atomic.Int64
	stalling                           atomic.Int64
	walsCreated                        atomic.Uint64
	tablesDeleted                      atomic.Uint64
	bgErrors                           atomic.Uint64
}

var obsByDB sync.Map // *DB → *observability

// obs returns d's observability, creating it if setEventListener has not
// run (a DB opened before the hook was in place, or a test's).
func (d *database) obs() *observability {
	if o, ok := obsByDB.Load(d); ok {
		return o.(*observability)
	}
	o, _ := obsByDB.LoadOrStore(d, &observability{})
	return o.(*observability)
}

// setEventListener starts delivering d's events to l (nil: none). Open
// calls it before it creates any file.
func (d *database) setEventListener(l *EventListener) {
	o := &observability{}
	if l != nil {
		o.events = newEventQueue(l)
	}
	if prev, loaded := obsByDB.Swap(d, o); loaded && prev.(*observability).events != nil {
		prev.(*observability).events.close()
	}
}

// closeEvents delivers the events still queued and forgets d's
// observability. Close calls it once the background goroutines are done.
func (d *database) closeEvents() {
	if o, ok := obsByDB.LoadAndDelete(d); ok && o.(*observability).events != nil {
		o.(*observability).events.close()
	}
}

// post queues an event for d's listener, if it has one.
func (d *database) post(ev func(*EventListener)) {
	if q := d.obs().events; q != nil {
		q.post(ev)
	}
}

// tableInfos describes files of level.
func tableInfos(level int, files []*manifest.FileMetadata) []TableInfo {
	out := make([]TableInfo, 0, len(files))
	for _, f := range files {
		out = append(out, tableInfo(level, f, ""))
	}
	return out
}

// tableInfo describes file f of level, written for reason ("" for an
// existing table).
func tableInfo(level int, f *manifest.FileMetadata, reason string) TableInfo {
	return TableInfo{FileNum: uint64(f.FileNum), Level: level, Size: f.Size, Reason: reason}
}

// The notify functions are the events' call sites: each updates the
// counters Metrics reports and queues the event. None blocks, so each may
// be called with d.mu held.

// notifyFlushBegin reports that a flush of a memtable of the given size and
// entries is starting.
func (d *database) notifyFlushBegin(info FlushInfo) {
	d.obs().flushesRunning.Add(1)
	d.post(func(l *EventListener) {
		if l.FlushBegin != nil {
			l.FlushBegin(info)
		}
	})
}

// notifyFlushEnd reports a flush's end; info.Output is the table written,
// if any.
func (d *database) notifyFlushEnd(info FlushInfo) {
	o := d.obs()
	o.flushesRunning.Add(-1)
	if info.Err == nil {
		o.flushesDone.Add(1)
		if info.Output != nil {
			o.levels[0].bytesFlushed.Add(info.Output.Size)
			o.levels[0].tablesWritten.Add(1)
		}
	}
	d.post(func(l *EventListener) {
		if l.FlushEnd != nil {
			l.FlushEnd(info)
		}
	})
}

// notifyCompactionBegin reports that a compaction is starting.
func (d *database) notifyCompactionBegin(info CompactionInfo) {
	d.obs().compactionsRunning.Add(1)
	d.post(func(l *EventListener) {
		if l.CompactionBegin != nil {
			l.CompactionBegin(info)
		}
	})
}

// notifyCompactionEnd reports a compaction's end. Unless it failed or was
// a trivial move, its input bytes count as read from their levels and its
// outputs as written into OutputLevel.
func (d *database) notifyCompactionEnd(info CompactionInfo) {
	o := d.obs()
	o.compactionsRunning.Add(-1)
	if info.Err == nil {
		o.compactionsDone.Add(1)
		if !info.TrivialMove {
			for _, t := range info.Inputs {
				if t.Level >= 0 && t.Level < manifest.NumLevels {
					o.levels[t.Level].bytesRead.Add(t.Size)
				}
			}
			if lv := info.OutputLevel; lv >= 0 && lv < manifest.NumLevels {
				for _, t := range info.Outputs {
					o.levels[lv].bytesWritten.Add(t.Size)
					o.levels[lv].tablesWritten.Add(1)
				}
			}
		}
	}
	d.post(func(l *EventListener) {
		if l.CompactionEnd != nil {
			l.CompactionEnd(info)
		}
	})
}

// notifyTableCreated reports a table written by a flush or a compaction.
func (d *database) notifyTableCreated(info TableInfo) {
	d.post(func(l *EventListener) {
		if l.TableCreated != nil {
			l.TableCreated(info)
		}
	})
}

// notifyTableDeleted reports an obsolete table file deleted (err: the
// deletion failed).
func (d *database) notifyTableDeleted(fileNum manifest.FileNum, err error) {
	d.obs().tablesDeleted.Add(1)
	info := TableDeleteInfo{FileNum: uint64(fileNum), Err: err}
	d.post(func(l *EventListener) {
		if l.TableDeleted != nil {
			l.TableDeleted(info)
		}
	})
}

// notifyWALCreated reports a new WAL file.
func (d *database) notifyWALCreated(logNum manifest.FileNum) {
	d.obs().walsCreated.Add(1)
	info := WALCreateInfo{FileNum: uint64(logNum)}
	d.post(func(l *EventListener) {
		if l.WALCreated != nil {
			l.WALCreated(info)
		}
	})
}

// notifyStallBegin reports that a write starts waiting for background work.
func (d *database) notifyStallBegin(reason string) {
	o := d.obs()
	o.stalls.Add(1)
	o.stalling.Add(1)
	d.post(func(l *EventListener) {
		if l.WriteStallBegin != nil {
			l.WriteStallBegin(WriteStallBeginInfo{Reason: reason})
		}
	})
}

// notifyStallEnd reports the end of a stall wait that took stalled.
func (d *database) notifyStallEnd(reason string, stalled time.Duration) {
	o := d.obs()
	o.stalling.Add(-1)
	o.stallNanos.Add(int64(stalled))
	d.post(func(l *EventListener) {
		if l.WriteStallEnd != nil {
			l.WriteStallEnd(WriteStallEndInfo{Reason: reason, Duration: stalled})
		}
	})
}

// notifyBackgroundError reports a background error as classified.
func (d *database) notifyBackgroundError(e *bgError) {
	d.obs().bgErrors.Add(1)
	info := BackgroundErrorInfo{Reason: e.reason.String(), Severity: severityName(e.severity), Err: e}
	d.post(func(l *EventListener) {
		if l.BackgroundError != nil {
			l.BackgroundError(info)
		}
	})
}

// severityName names a background error's severity for BackgroundErrorInfo.
func severityName(s bgSeverity) string {
	switch s {
	case severitySoft:
		return "soft"
	case severityHard:
		return "hard"
	case severityFatal:
		return "fatal"
	}
	return "none"
}

// The helpers below turn the engine's own values into events, so that each
// call site in flush.go, compaction.go and open.go is one line.

// flushEvent is a flush in progress, for endFlushEvent.
type flushEvent struct {
	info  FlushInfo
	start time.Time
}

// startFlushEvent reports the start of a background flush of mem.
func (d *database) startFlushEvent(mem *memtable.MemTable) flushEvent {
	ev := flushEvent{info: FlushInfo{InputBytes: uint64(mem.ApproximateSize()), InputEntries: uint64(mem.Count())},
		start: time.Now()}
	d.notifyFlushBegin(ev.info)
	return ev
}

// endFlushEvent reports the end of the flush ev: its table (tw, nil when
// the memtable held nothing to write) when err is nil.
func (d *database) endFlushEvent(ev flushEvent, tw *tableWriter, err error) {
	info := ev.info
	info.Duration = time.Since(ev.start)
	info.Err = err
	if err == nil && tw != nil && tw.meta != nil {
		out := tableInfo(0, tw.meta, "flush")
		d.notifyTableCreated(out)
		info.Output = &out
	}
	d.notifyFlushEnd(info)
}

// compactionEvent is a compaction in progress, for endCompactionEvent.
type compactionEvent struct {
	info  CompactionInfo
	start time.Time
}

// startCompactionEvent reports the start of compaction c.
func (d *database) startCompactionEvent(c *compact.Compaction) compactionEvent {
	info := CompactionInfo{Level: c.Level, OutputLevel: c.OutputLevel, TrivialMove: c.TrivialMove, Manual: c.Manual}
	info.Inputs = append(tableInfos(c.Level, c.Inputs[0]), tableInfos(c.OutputLevel, c.Inputs[1])...)
	if !c.TrivialMove {
		for _, t := range info.Inputs {
			info.BytesRead += t.Size
		}
	}
	d.notifyCompactionBegin(info)
	return compactionEvent{info: info, start: time.Now()}
}

// endCompactionEvent reports the end of the compaction ev, whose outputs
// (none for a trivial move) are installed when err is nil.
func (d *database) endCompactionEvent(ev compactionEvent, outputs tableOutputs, err error) {
	info := ev.info
	info.Duration = time.Since(ev.start)
	info.Err = err
	if err == nil {
		for _, tw := range outputs {
			if tw.meta == nil {
				continue
			}
			out := tableInfo(info.OutputLevel, tw.meta, "compaction")
			d.notifyTableCreated(out)
			info.Outputs = append(info.Outputs, out)
			info.BytesWritten += out.Size
		}
	} else {
		info.BytesRead = 0
	}
	d.notifyCompactionEnd(info)
}
