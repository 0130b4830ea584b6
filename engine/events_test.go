package engine

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// recorder is a listener that logs every event by name.
type recorder struct {
	mu     sync.Mutex
	events []string
	infos  []any
}

func (r *recorder) add(name string, info any) {
	r.mu.Lock()
	r.events = append(r.events, name)
	r.infos = append(r.infos, info)
	r.mu.Unlock()
}

func (r *recorder) listener() *EventListener {
	return &EventListener{
		FlushBegin:      func(i FlushInfo) { r.add("FlushBegin", i) },
		FlushEnd:        func(i FlushInfo) { r.add("FlushEnd", i) },
		CompactionBegin: func(i CompactionInfo) { r.add("CompactionBegin", i) },
		CompactionEnd:   func(i CompactionInfo) { r.add("CompactionEnd", i) },
		TableCreated:    func(i TableInfo) { r.add("TableCreated", i) },
		TableDeleted:    func(i TableDeleteInfo) { r.add("TableDeleted", i) },
		WALCreated:      func(i WALCreateInfo) { r.add("WALCreated", i) },
		WriteStallBegin: func(i WriteStallBeginInfo) { r.add("WriteStallBegin", i) },
		WriteStallEnd:   func(i WriteStallEndInfo) { r.add("WriteStallEnd", i) },
		BackgroundError: func(i BackgroundErrorInfo) { r.add("BackgroundError", i) },
		EventsDropped:   func(n uint64) { r.add("EventsDropped", n) },
	}
}

// TestEventsDeliveredInOrder: every notify function reaches its listener
// field, in order, with its info; closeEvents delivers what is queued
// before it returns.
func TestEventsDeliveredInOrder(t *testing.T) {
	db, _ := openTestDB(t, nil)
	rec := &recorder{}
	db.setEventListener(rec.listener())

	out := TableInfo{FileNum: 9, Level: 0, Size: 1000, Reason: "flush"}
	db.notifyWALCreated(8)
	db.notifyFlushBegin(FlushInfo{InputBytes: 4096, InputEntries: 10})
	db.notifyTableCreated(out)
	db.notifyFlushEnd(FlushInfo{InputBytes: 4096, InputEntries: 10, Output: &out, Duration: time.Millisecond})
	comp := CompactionInfo{Level: 0, OutputLevel: 1,
		Inputs:  []TableInfo{{FileNum: 9, Level: 0, Size: 1000}, {FileNum: 5, Level: 1, Size: 3000}},
		Outputs: []TableInfo{{FileNum: 11, Level: 1, Size: 3500}}, BytesRead: 4000, BytesWritten: 3500}
	db.notifyCompactionBegin(comp)
	db.notifyCompactionEnd(comp)
	db.notifyTableDeleted(9, nil)
	db.notifyStallBegin("L0 has too many tables")
	db.notifyStallEnd("L0 has too many tables", 2*time.Millisecond)
	db.mu.Lock()
	bg := db.newBGErrorLocked(reasonFlush, errors.New("disk on fire"))
	db.mu.Unlock()
	db.notifyBackgroundError(bg)
	db.closeEvents()

	require.Equal(t, []string{"WALCreated", "FlushBegin", "TableCreated", "FlushEnd", "CompactionBegin",
		"CompactionEnd", "TableDeleted", "WriteStallBegin", "WriteStallEnd", "BackgroundError"}, rec.events)
	require.Equal(t, WALCreateInfo{FileNum: 8}, rec.infos[0])
	require.Equal(t, &out, rec.infos[3].(FlushInfo).Output)
	require.Equal(t, comp, rec.infos[5])
	require.Equal(t, WriteStallEndInfo{Reason: "L0 has too many tables", Duration: 2 * time.Millisecond}, rec.infos[8])
	bgInfo := rec.infos[9].(BackgroundErrorInfo)
	require.Equal(t, "flush", bgInfo.Reason)
	require.NotEmpty(t, bgInfo.Severity)
	require.ErrorContains(t, bgInfo.Err, "disk on fire")

	// After closeEvents, events are no longer delivered (nor do they block).
	db.notifyWALCreated(12)
	require.Len(t, rec.events, 10)
}

// TestSlowListenerDoesNotBlock: a listener that never returns does not
// block a notify, with or without d.mu held; what does not fit in the queue
// is dropped and counted, and reported once the listener catches up.
func TestSlowListenerDoesNotBlock(t *testing.T) {
	db, _ := openTestDB(t, nil)
	release := make(chan struct{})
	var mu sync.Mutex
	var dropped uint64
	var delivered int
	db.setEventListener(&EventListener{
		WALCreated: func(WALCreateInfo) {
			<-release
			mu.Lock()
			delivered++
			mu.Unlock()
		},
		EventsDropped: func(n uint64) {
			mu.Lock()
			dropped += n
			mu.Unlock()
		},
	})
	const n = EventQueueLen + 100
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.mu.Lock() // as a stall or a background error is reported
		for i := range n {
			db.notifyWALCreated(0)
			_ = i
		}
		db.mu.Unlock()
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("notify blocked on a slow listener")
	}
	close(release)
	db.closeEvents()
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, uint64(n), uint64(delivered)+dropped, "every event delivered or counted as dropped")
	require.Positive(t, dropped)
	require.GreaterOrEqual(t, delivered, EventQueueLen)
}

// TestNoListener: without a listener nothing is queued, and the counters
// still move.
func TestNoListener(t *testing.T) {
	db, _ := openTestDB(t, nil)
	db.notifyFlushBegin(FlushInfo{})
	require.Nil(t, db.obs().events)
	require.Equal(t, int64(1), db.obs().flushesRunning.Load())
	db.notifyFlushEnd(FlushInfo{})
	require.Zero(t, db.obs().flushesRunning.Load())
	require.Equal(t, uint64(1), db.obs().flushesDone.Load())
	db.closeEvents()
}
