package statistics

import (
	"encoding/json"
	"expvar"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// expvarDecoded is Expvar's JSON as a reader of /debug/vars decodes it.
type expvarDecoded struct {
	Level      string                                `json:"level"`
	Tickers    map[string]uint64                     `json:"tickers"`
	Histograms map[string]map[string]json.RawMessage `json:"histograms"`
}

func decodeExpvar(t *testing.T, s string) expvarDecoded {
	t.Helper()
	var d expvarDecoded
	require.NoError(t, json.Unmarshal([]byte(s), &d), "%s", s)
	return d
}

// TestExpvarJSON checks the published layout: the level's DSN spelling, the
// enabled tickers and histograms by name with their values, empty histograms
// with min and max 0, and a fresh read on every String.
func TestExpvarJSON(t *testing.T) {
	s := New(DefaultLevel)
	s.RecordTick(BlockCacheHit, 12)
	for _, v := range []uint64{1, 2, 3, 4} {
		s.ReportTimeToHistogram(SSTReadMicros, v)
	}
	v := Expvar(s)
	d := decodeExpvar(t, v.String())

	require.Equal(t, "except_detailed_timers", d.Level)
	require.Len(t, d.Tickers, int(NumTickers)-1, "all but DBMutexWaitMicros")
	require.Equal(t, uint64(12), d.Tickers["shale.block.cache.hit"])
	require.NotContains(t, d.Tickers, "shale.db.mutex.wait.micros")
	require.Contains(t, d.Histograms, "shale.file.read.flush.micros")
	require.NotContains(t, d.Histograms, "shale.file.read.get.micros", "a detailed timer, off at the default level")

	sst := d.Histograms["shale.sst.read.micros"]
	for field, want := range map[string]string{
		"count": "4", "sum": "10", "min": "1", "max": "4",
		"average": "2.5", "p50": "2", "p95": "3.8", "p99": "3.96",
	} {
		require.Equal(t, want, string(sst[field]), "sst.read.micros %s", field)
	}
	require.Len(t, sst, 8)
	get := d.Histograms["shale.db.get.micros"]
	require.Equal(t, "0", string(get["min"]), "an empty histogram's min reads 0, not 1.3e19")
	require.Equal(t, "0", string(get["max"]))

	// Each read is fresh: the level and the counts move.
	s.SetLevel(LevelAll)
	s.RecordTick(BlockCacheHit, 1)
	d = decodeExpvar(t, v.String())
	require.Equal(t, "all", d.Level)
	require.Equal(t, uint64(13), d.Tickers["shale.block.cache.hit"])
	require.Contains(t, d.Histograms, "shale.file.read.get.micros")
	require.Contains(t, d.Tickers, "shale.db.mutex.wait.micros")
}

func TestExpvarNil(t *testing.T) {
	require.JSONEq(t, `{"level": "disable_all", "tickers": {}, "histograms": {}}`, Expvar(nil).String())
}

// Publish several databases' statistics for /debug/vars under one expvar
// name, an entry per database; read one back as a client of the endpoint
// would.
func ExampleExpvar() {
	stats := New(DefaultLevel) // in a program: db.Statistics()
	stats.RecordTick(BlockCacheHit, 5)
	stats.ReportTimeToHistogram(DBGet, 120)

	dbs := new(expvar.Map).Init() // in a program, once: dbs := expvar.NewMap("shale")
	dbs.Set("orders", Expvar(stats))

	var v struct {
		Level      string
		Tickers    map[string]uint64
		Histograms map[string]struct{ Count, Sum uint64 }
	}
	if err := json.Unmarshal([]byte(dbs.Get("orders").String()), &v); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(v.Level, v.Tickers["shale.block.cache.hit"], v.Histograms["shale.db.get.micros"])
	// Output:
	// except_detailed_timers 5 {1 120}
}
