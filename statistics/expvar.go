package statistics

import (
	"expvar"
)

// Expvar returns an [expvar.Var] whose value is s's [Statistics.Export] at
// the moment it is read (each /debug/vars request reads s afresh), as JSON:
//
//	{
//	  "level": "except_detailed_timers",
//	  "tickers": {"shale.block.cache.hit": 12, ...},
//	  "histograms": {
//	    "shale.sst.read.micros": {"count": 40, "sum": 700, "min": 3, "max": 51,
//	      "average": 17.5, "p50": 12.5, "p95": 48, "p99": 51},
//	    ...
//	  }
//	}
//
// The level is spelled as the stats_level DSN parameter spells it. Tickers
// and histograms are keyed by name ([Ticker.String], [Histogram.String]),
// and only those enabled at the level are present. Histogram values are in
// the histogram's own unit (microseconds, nanoseconds, bytes, ...; the name
// says which); min and max are 0 for an empty histogram, as
// [HistogramStat.String] prints them. From [TagMinLevel] up, each tag's
// tickers and histogram are there too, under the names String prints
// ("shale.tag.<name>.bytes.read", "shale.tag.<name>.file.read.micros"). A
// nil s reads as
// {"level": "disable_all", "tickers": {}, "histograms": {}}.
//
// It is the one way to serve statistics through expvar: publish it under a
// name of the program's choosing,
//
//	expvar.Publish("shale", statistics.Expvar(db.Statistics()))
//
// (served as JSON at /debug/vars by expvar's HTTP handler). expvar names
// are global to the process, cannot be unpublished, and expvar.Publish
// panics on a name already taken: a program that opens several databases,
// or reopens one, publishes one [expvar.Map] and sets an entry per database
// (Map.Set replaces an entry).
func Expvar(s *Statistics) expvar.Var {
	return expvar.Func(func() any { return newExpvarValue(s.Export()) })
}

// expvarValue is the JSON layout of Expvar.
type expvarValue struct {
	Level      string                     `json:"level"`
	Tickers    map[string]uint64          `json:"tickers"`
	Histograms map[string]expvarHistogram `json:"histograms"`
}

type expvarHistogram struct {
	Count   uint64  `json:"count"`
	Sum     uint64  `json:"sum"`
	Min     uint64  `json:"min"`
	Max     uint64  `json:"max"`
	Average float64 `json:"average"`
	P50     float64 `json:"p50"`
	P95     float64 `json:"p95"`
	P99     float64 `json:"p99"`
}

func newExpvarValue(e Export) expvarValue {
	v := expvarValue{
		Level:      e.Level.String(),
		Tickers:    make(map[string]uint64, len(e.Tickers)),
		Histograms: make(map[string]expvarHistogram, len(e.Histograms)),
	}
	for _, tv := range e.Tickers {
		v.Tickers[tv.Ticker.String()] = tv.Count
	}
	for _, hv := range e.Histograms {
		v.Histograms[hv.Histogram.String()] = newExpvarHistogram(&hv.HistogramSnapshot)
	}
	for i := range e.Tags {
		tv := &e.Tags[i]
		prefix := "shale.tag." + tv.Name + "."
		for t, n := range tv.Tickers {
			v.Tickers[prefix+TagTicker(t).Suffix()] = n
		}
		v.Histograms[prefix+TagHistogramSuffix] = newExpvarHistogram(&tv.FileReadMicros)
	}
	return v
}

func newExpvarHistogram(hs *HistogramSnapshot) expvarHistogram {
	d := hs.Data()
	h := expvarHistogram{
		Count: d.Count, Sum: d.Sum,
		Average: d.Average, P50: d.Median, P95: d.P95, P99: d.P99,
	}
	if d.Count != 0 {
		h.Min, h.Max = d.Min, d.Max
	}
	return h
}
