package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/statistics"
)

const statsUsage = `stats [-dsn] DSN [-scan] [-full] [-json]`

const statsDoc = `
Opens the database read-only (at stats_level all unless the DSN sets one) and
prints its statistics; a database another process holds open is read as a
secondary instance (DSN secondary=true), as stderr says. Opening alone reads each table's footer, index,
filter and properties, which shows in shale.file.read.db.open.micros.

With -scan it first reads the whole database the way an application would: a
full scan with an iterator, then VerifyChecksum; each lands in its own
per-activity histogram (db.iterator and verify.db.checksum), and corruption
met on the way exits with code 1.

The output is the database's disk usage (DB.DiskUsage: every file, MANIFEST
and WALs included), the LSM shape, the per-activity file-read table and the
key tickers; -full
prints every ticker and histogram instead (Statistics.String, RocksDB's
layout); -json prints everything as one JSON object, described below.
` + statsJSONDoc

func runStats(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, statsUsage, statsDoc)
	dsn := fs.String("dsn", "", "the database's `DSN` (or give it as the argument)")
	scan := fs.Bool("scan", false, "scan every key and verify every block checksum before printing")
	full := fs.Bool("full", false, "print every ticker and histogram (RocksDB's layout)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	if err := dsnArgument(fs, dsn); err != nil {
		return err
	}
	d, err := parseDSNBuilder(*dsn)
	if err != nil {
		return err
	}
	if v, ok := d.get("statistics"); ok {
		if off, err := driver.ParseBool(v); err == nil && !off {
			return usageErrorf("the DSN disables statistics (statistics=%s): there is nothing to print", v)
		}
	}
	d.setDefault("stats_level", "all")
	start := time.Now()
	db, final, cfg, _, err := openInspect(ctx, env, d)
	if err != nil {
		return err
	}
	defer db.Close()
	rep := statsReport{Dir: cfg.Dir, DSN: final, OpenMicros: time.Since(start).Microseconds()}
	rep.Tables, rep.TableBytes = tableFiles(cfg.Dir)
	if *scan {
		s, err := scanAndVerify(ctx, db)
		if err != nil {
			return err
		}
		rep.Scan = &s
	}
	st := db.Statistics()
	if du, err := db.DiskUsage(ctx); err == nil {
		rep.DiskUsage = &du
	} else if !errors.Is(err, driver.ErrNotSupported) {
		return err
	}
	lsm, err := lsmMetrics(ctx, db)
	if err != nil {
		return err
	}
	rep.LSM = toLSMJSON(lsm)
	if *asJSON {
		return writeStatsJSON(env.stdout, &rep, st)
	}
	w := env.stdout
	fmt.Fprintf(w, "database %s: %d table files, %s; opened read-only in %s\n",
		rep.Dir, rep.Tables, formatBytes(rep.TableBytes), roundDuration(time.Duration(rep.OpenMicros)*time.Microsecond))
	if rep.DiskUsage != nil {
		fmt.Fprintf(w, "disk usage: %s (every file of the database: tables, WALs, MANIFEST and the rest)\n",
			formatBytes(int64(*rep.DiskUsage)))
	}
	if s := rep.Scan; s != nil {
		fmt.Fprintf(w, "scan: %d keys, %s of keys and values in %s\n", s.Keys, formatBytes(s.Bytes),
			roundDuration(time.Duration(s.ScanMicros)*time.Microsecond))
		fmt.Fprintf(w, "VerifyChecksum: ok in %s\n", roundDuration(time.Duration(s.VerifyMicros)*time.Microsecond))
	}
	if lsm != nil {
		fmt.Fprintf(w, "\nLSM shape\n%s", lsm)
	}
	fmt.Fprintln(w)
	if *full {
		_, err := io.WriteString(w, st.String())
		return err
	}
	return printActivityTable(w, st)
}

// statsReport is the JSON form of "shale stats" (with the statistics added
// by writeStatsJSON). Field names are part of the tool's output contract,
// described by statsJSONDoc and pinned by a golden test. It and the two
// types below are plain values.
type statsReport struct {
	Dir        string `json:"dir"`
	DSN        string `json:"dsn"`
	OpenMicros int64  `json:"open_micros"`
	Tables     int    `json:"table_files"`
	TableBytes int64  `json:"table_bytes"`
	// DiskUsage is DB.DiskUsage, when the driver reports it.
	DiskUsage *uint64     `json:"disk_usage_bytes,omitempty"`
	Scan      *scanResult `json:"scan,omitempty"`
	// LSM is the driver's LSM metrics, when it reports them.
	LSM *lsmJSON `json:"lsm,omitempty"`
}

type scanResult struct {
	Keys         int64 `json:"keys"`
	Bytes        int64 `json:"bytes"`
	ScanMicros   int64 `json:"scan_micros"`
	VerifyMicros int64 `json:"verify_micros"`
}

// scanAndVerify reads every key with an iterator, then runs VerifyChecksum.
// Corruption is a problem found (exit 1).
func scanAndVerify(ctx context.Context, db *driver.DB) (scanResult, error) {
	var s scanResult
	start := time.Now()
	it, err := db.NewIterator(ctx, nil)
	if err != nil {
		return s, classifyReadErr(err, "scan")
	}
	for ok := it.First(); ok; ok = it.Next() {
		s.Keys++
		s.Bytes += int64(len(it.Key()) + len(it.Value()))
	}
	if err := it.Close(); err != nil {
		return s, classifyReadErr(err, "scan")
	}
	s.ScanMicros = time.Since(start).Microseconds()
	start = time.Now()
	if err := db.VerifyChecksum(ctx); err != nil {
		return s, classifyReadErr(err, "VerifyChecksum")
	}
	s.VerifyMicros = time.Since(start).Microseconds()
	return s, nil
}

// classifyReadErr gives a read error its exit code: corruption is a problem
// found, anything else a failure.
func classifyReadErr(err error, what string) error {
	err = errors.Wrap(err, what)
	if errors.Is(err, driver.ErrCorruption) {
		return problem(err)
	}
	return &exitError{code: exitFailure, err: err}
}

// histogramJSON is one histogram's summary in the JSON output.
type histogramJSON struct {
	Count   uint64  `json:"count"`
	Sum     uint64  `json:"sum"`
	Min     uint64  `json:"min"`
	Max     uint64  `json:"max"`
	Average float64 `json:"average"`
	StdDev  float64 `json:"stddev"`
	P50     float64 `json:"p50"`
	P95     float64 `json:"p95"`
	P99     float64 `json:"p99"`
}

func writeStatsJSON(w io.Writer, rep *statsReport, st *statistics.Statistics) error {
	out := struct {
		*statsReport
		Level      string                   `json:"stats_level"`
		Tickers    map[string]uint64        `json:"tickers"`
		Histograms map[string]histogramJSON `json:"histograms"`
	}{statsReport: rep, Level: st.Level().String(), Tickers: st.TickerMap(),
		Histograms: make(map[string]histogramJSON, statistics.NumHistograms)}
	for h := range statistics.NumHistograms {
		d := st.HistogramData(h)
		if d.Count == 0 {
			// RocksDB's raw Min of an empty histogram is its last bucket
			// limit; 0 reads better and says the same with count 0.
			d.Min = 0
		}
		out.Histograms[h.String()] = histogramJSON{Count: d.Count, Sum: d.Sum, Min: d.Min, Max: d.Max,
			Average: d.Average, StdDev: d.StdDev, P50: d.Median, P95: d.P95, P99: d.P99}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
