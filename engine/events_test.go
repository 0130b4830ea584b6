package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/memtable"
	"github.com/shaledb/shale/vfs"
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
	case <-time.After(2 * time.Minute):
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

// TestEventHelpers: the helpers the call sites use turn the engine's values
// into events and counters.
func TestEventHelpers(t *testing.T) {
	db, fs := openTestDB(t, nil)
	rec := &recorder{}
	db.setEventListener(rec.listener())

	mem := memtable.New(64 << 10)
	require.NoError(t, mem.Add(1, base.KindSet, []byte("a"), []byte("1")))
	fe := db.startFlushEvent(mem)
	db.endFlushEvent(fe, &tableWriter{meta: &manifest.FileMetadata{FileNum: 70, Size: 1234}}, nil)
	fe = db.startFlushEvent(mem)
	db.endFlushEvent(fe, nil, errors.New("flush failed"))

	in0 := &manifest.FileMetadata{FileNum: 70, Size: 1234}
	in1 := &manifest.FileMetadata{FileNum: 50, Size: 4000}
	c := &compact.Compaction{Level: 0, OutputLevel: 1, Inputs: [2][]*manifest.FileMetadata{{in0}, {in1}}}
	ce := db.startCompactionEvent(c)
	db.endCompactionEvent(ce, tableOutputs{{meta: &manifest.FileMetadata{FileNum: 71, Size: 5000}}}, nil)
	mv := &compact.Compaction{Level: 1, OutputLevel: 2, TrivialMove: true, Inputs: [2][]*manifest.FileMetadata{{in1}}}
	ce = db.startCompactionEvent(mv)
	db.endCompactionEvent(ce, nil, nil)

	f, err := fs.Create("/db/000070.sst")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	db.removeObsoleteFile(manifest.FileKindTable, 70, "000070.sst")
	_, err = fs.Stat("/db/000070.sst")
	require.Error(t, err, "removed")
	db.removeObsoleteFile(manifest.FileKindTable, 70, "000070.sst") // already gone: reported with its error
	m, merr := db.Metrics(context.Background())
	require.NoError(t, merr)
	require.Equal(t, uint64(1234), m.Levels[0].BytesFlushed)
	require.Equal(t, uint64(1234), m.Levels[0].BytesRead)
	require.Equal(t, uint64(4000), m.Levels[1].BytesRead)
	require.Equal(t, uint64(5000), m.Levels[1].BytesWritten)
	require.Equal(t, uint64(1), m.Flushes.Done)
	require.Equal(t, uint64(2), m.Compactions.Done)
	db.closeEvents()

	require.Equal(t, []string{"FlushBegin", "TableCreated", "FlushEnd", "FlushBegin", "FlushEnd",
		"CompactionBegin", "TableCreated", "CompactionEnd", "CompactionBegin", "CompactionEnd",
		"TableDeleted", "TableDeleted"}, rec.events)
	begin := rec.infos[0].(FlushInfo)
	require.Equal(t, uint64(1), begin.InputEntries)
	require.Positive(t, begin.InputBytes)
	require.Equal(t, TableInfo{FileNum: 70, Level: 0, Size: 1234, Reason: "flush"}, rec.infos[1])
	end := rec.infos[2].(FlushInfo)
	require.Equal(t, &TableInfo{FileNum: 70, Level: 0, Size: 1234, Reason: "flush"}, end.Output)
	require.NoError(t, end.Err)
	failed := rec.infos[4].(FlushInfo)
	require.Nil(t, failed.Output)
	require.Error(t, failed.Err)

	cend := rec.infos[7].(CompactionInfo)
	require.Equal(t, []TableInfo{{FileNum: 70, Level: 0, Size: 1234}, {FileNum: 50, Level: 1, Size: 4000}}, cend.Inputs)
	require.Equal(t, []TableInfo{{FileNum: 71, Level: 1, Size: 5000, Reason: "compaction"}}, cend.Outputs)
	require.Equal(t, uint64(5234), cend.BytesRead)
	require.Equal(t, uint64(5000), cend.BytesWritten)
	moved := rec.infos[9].(CompactionInfo)
	require.True(t, moved.TrivialMove)
	require.Zero(t, moved.BytesRead)
	require.Empty(t, moved.Outputs)
	require.NoError(t, rec.infos[10].(TableDeleteInfo).Err)
	require.Error(t, rec.infos[11].(TableDeleteInfo).Err)
}

// TestEventsFromEngine checks the whole chain once the call sites are in
// place (Options.EventListener, and the hooks in open.go, flush.go,
// compaction.go, write.go and bgerror.go): a flush, a compaction, the
// tables they create and delete, and the WAL each memtable switch creates.
// Until Options has the field, it skips.
func TestEventsFromEngine(t *testing.T) {
	fs := vfs.NewMem()
	opts := smallOptions(fs)
	field := reflect.ValueOf(opts).Elem().FieldByName("EventListener")
	if !field.IsValid() {
		t.Skip("engine.Options has no EventListener field yet")
	}
	rec := &recorder{}
	field.Set(reflect.ValueOf(rec.listener()))
	db, err := openDatabase("/db", opts)
	require.NoError(t, err)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		require.NoError(t, db.Put(ctx, key(i), value(rng, 100)))
	}
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.Compact(ctx, nil, nil))
	require.NoError(t, db.Close())

	count := map[string]int{}
	for _, e := range rec.events {
		count[e]++
	}
	for _, name := range []string{"FlushBegin", "FlushEnd", "CompactionBegin", "CompactionEnd", "TableCreated",
		"TableDeleted", "WALCreated"} {
		require.Positive(t, count[name], "%s in %v", name, count)
	}
	require.Equal(t, count["FlushBegin"], count["FlushEnd"])
	require.Equal(t, count["CompactionBegin"], count["CompactionEnd"])
}
