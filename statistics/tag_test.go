package statistics

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTagGating pins the level of per-tag statistics: that of the detailed
// timers, FileReadGetMicros's.
func TestTagGating(t *testing.T) {
	require.Equal(t, FileReadGetMicros.MinLevel(), TagMinLevel)
	for l := LevelDisableAll; l <= LevelAll; l++ {
		s := New(l)
		ts := s.Tag(0x80, "tenant_a")
		require.Equal(t, l >= TagMinLevel, ts != nil, "level %s", l)
		ts.RecordTick(TagBytesRead, 10) // nil-safe below the level
		ts.RecordReadMicros(5)
	}
	var nilStats *Statistics
	require.Nil(t, nilStats.Tag(0x80, "x"))
	s := New(LevelAll)
	require.Nil(t, s.Tag(0xFF, "none"), "0xFF is no tag (kUnknown)")
	require.Nil(t, s.Tag(0x7F, "builtin"))
	require.NotNil(t, s.Tag(0xFE, "last"))
}

func TestTagRecordAndExport(t *testing.T) {
	s := New(LevelAll)
	a := s.Tag(0x81, "tenant_a")
	require.Same(t, a, s.Tag(0x81, "ignored"), "one TagStats per tag")
	require.Equal(t, "tenant_a", a.Name())
	b := s.Tag(0x80, "tenant_b")

	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				a.RecordTick(TagBytesRead, 4096)
				a.RecordTick(TagBlockCacheHit, 1)
				a.RecordReadMicros(uint64(i % 100))
			}
		}()
	}
	wg.Wait()
	b.RecordTick(TagBlockCacheMiss, 3)
	b.RecordTick(TagRateLimiterWaitMicros, 600)
	b.RecordRead(0, 0, 100) // a wait, and a read of no bytes (a failed one)

	require.Equal(t, uint64(4000*4096), a.TickerCount(TagBytesRead))
	require.Equal(t, uint64(4000), a.TickerCount(TagBlockCacheHit))
	require.Equal(t, uint64(4000), a.HistogramSnapshot().Count)
	require.Equal(t, uint64(1), b.HistogramSnapshot().Count, "the failed read")

	tags := s.Tags()
	require.Len(t, tags, 2)
	require.Equal(t, "tenant_b", tags[0].Name(), "ordered by value")

	e := s.Export()
	require.Len(t, e.Tags, 2)
	require.Equal(t, TagValue{Value: 0x80, Name: "tenant_b",
		Tickers:        [NumTagTickers]uint64{TagBlockCacheMiss: 3, TagRateLimiterWaitMicros: 700},
		FileReadMicros: b.HistogramSnapshot()}, e.Tags[0])
	require.Equal(t, uint64(1), e.Tags[0].FileReadMicros.Count)
	require.Equal(t, uint64(4000), e.Tags[1].FileReadMicros.Count)

	str := s.String()
	require.Contains(t, str, "\nshale.tag.tenant_a.bytes.read COUNT : 16384000\n")
	require.Contains(t, str, "\nshale.tag.tenant_b.rate.limiter.wait.micros COUNT : 700\n")
	require.Contains(t, str, "\nshale.tag.tenant_a.file.read.micros P50 : ")
	require.Less(t, strings.Index(str, "shale.tag.tenant_b."), strings.Index(str, "shale.tag.tenant_a."),
		"tags print in order of value")
	require.Less(t, strings.Index(str, "shale.sst.read.micros"), strings.Index(str, "shale.tag."),
		"tags print after the histograms")

	// Below TagMinLevel an exporter shows no tags: they are not measured.
	s.SetLevel(DefaultLevel)
	require.Empty(t, s.Export().Tags)

	s.Reset()
	require.Zero(t, a.TickerCount(TagBytesRead))
	require.Zero(t, a.HistogramSnapshot().Count)
}

// TestTagRecordingDoesNotAllocate: after a tag's first use, recording for
// it allocates nothing.
func TestTagRecordingDoesNotAllocate(t *testing.T) {
	skipIfRace(t)
	s := New(LevelAll)
	allocs := testing.AllocsPerRun(100, func() {
		ts := s.Tag(0x90, "job")
		ts.RecordTick(TagBytesRead, 100)
		ts.RecordTick(TagBlockCacheHit, 1)
		ts.RecordReadMicros(12)
		ts.RecordRead(12, 4096, 3)
	})
	require.Zero(t, allocs)
}

func BenchmarkTagRecord(b *testing.B) {
	s := New(LevelAll)
	for b.Loop() {
		ts := s.Tag(0x80, "t")
		ts.RecordTick(TagBytesRead, 4096)
		ts.RecordReadMicros(12)
	}
}

// TestTagExpvar: expvar shows each tag under String's names, from the tags'
// level up.
func TestTagExpvar(t *testing.T) {
	s := New(LevelAll)
	ts := s.Tag(0x85, "tenant_c")
	ts.RecordRead(40, 8192, 0)
	ts.RecordTick(TagBlockCacheMiss, 2)
	v := Expvar(s)
	d := decodeExpvar(t, v.String())
	require.Equal(t, uint64(8192), d.Tickers["shale.tag.tenant_c.bytes.read"])
	require.Equal(t, uint64(2), d.Tickers["shale.tag.tenant_c.block.cache.miss"])
	require.Equal(t, "1", string(d.Histograms["shale.tag.tenant_c.file.read.micros"]["count"]))
	require.Equal(t, "40", string(d.Histograms["shale.tag.tenant_c.file.read.micros"]["max"]))

	s.SetLevel(DefaultLevel)
	d = decodeExpvar(t, v.String())
	require.NotContains(t, d.Tickers, "shale.tag.tenant_c.bytes.read")
}
