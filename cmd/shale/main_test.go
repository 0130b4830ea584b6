package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compress"
	"github.com/stretchr/testify/require"
)

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		code int
		// stderr must match; "" checks that stderr is empty.
		stderr string
		stdout string
	}{
		{"no command", nil, exitUsage, `(?s)^Usage:|Commands:.*bench.*sst dump.*wal dump`, ""},
		{"unknown command", []string{"frobnicate"}, exitUsage, `shale: unknown command "frobnicate"`, ""},
		{"unknown sub-command", []string{"sst", "load"}, exitUsage, `^shale: unknown command "sst load": did you mean "shale sst dump"\?\n$`, ""},
		{"group alone", []string{"sst"}, exitUsage, `^shale: "sst" needs a subcommand: "shale sst dump" \("shale help sst dump" for its usage\)\n$`, ""},
		{"wal alone", []string{"wal"}, exitUsage, `^shale: "wal" needs a subcommand: "shale wal dump"`, ""},
		{"help", []string{"help"}, exitOK, "", `(?s)Commands:.*bench.*stats.*verify.*sst dump.*wal dump.*dsn.*version.*help`},
		{"help help", []string{"help", "help"}, exitOK, "", `(?s)^Usage: shale help \[command\].*its usage and flags`},
		{"help -h", []string{"help", "-h"}, exitOK, "", `^Usage: shale help \[command\]`},
		{"help version", []string{"help", "version"}, exitOK, "", `^Usage: shale version`},
		{"help group", []string{"help", "sst"}, exitOK, "", `^Usage: shale sst dump`},
		{"help unknown sub-command", []string{"help", "wal", "x"}, exitUsage, `^shale help: unknown command "wal x": did you mean "shale wal dump"\?`, ""},
		{"-h", []string{"-h"}, exitOK, "", `Commands:`},
		{"help bench", []string{"help", "bench"}, exitOK, "", `(?s)Usage: shale bench.*-max-data.*-duration-per-phase`},
		{"help sst dump", []string{"help", "sst", "dump"}, exitOK, "", `(?s)Usage: shale sst dump.*-blocks`},
		{"help unknown", []string{"help", "nope"}, exitUsage, `shale help: unknown command "nope"`, ""},
		{"bench -h", []string{"bench", "-h"}, exitOK, "", `-stats-level`},
		{"verify -h", []string{"verify", "-h"}, exitOK, "", `-rate-limit`},
		{"unknown flag", []string{"bench", "-nope"}, exitUsage,
			`^shale bench: flag provided but not defined: -nope \(run "shale help bench" for usage\)\n$`, ""},
		{"bad size", []string{"bench", "-max-data", "12QB"}, exitUsage, `shale bench: invalid value "12QB" for flag -max-data: .*unknown unit "QB"`, ""},
		{"bad dsn param", []string{"bench", "-dir", dir, "-dsn-params", "nosuch=1"}, exitUsage, `shale bench: .*unknown key "nosuch"`, ""},
		{"bad dsn value", []string{"bench", "-dir", dir, "-stats-level", "loud"}, exitUsage, `shale bench: .*stats_level`, ""},
		{"bad threads", []string{"bench", "-threads", "0"}, exitUsage, `shale bench: invalid -threads 0`, ""},
		{"bad key size", []string{"bench", "-key-size", "4"}, exitUsage, `invalid -key-size 4`, ""},
		{"tiny max-data", []string{"bench", "-max-data", "10"}, exitUsage, `invalid -max-data 10`, ""},
		{"bad priority", []string{"bench", "-priority", "urgent"}, exitUsage, `invalid -priority "urgent"`, ""},
		{"bench argument", []string{"bench", "extra"}, exitUsage, `unexpected argument "extra"`, ""},
		{"verify without dsn", []string{"verify"}, exitUsage, `shale verify: a DSN is required`, ""},
		{"verify two dsns", []string{"verify", "-dsn", dir, dir}, exitUsage, `shale verify: the DSN is given twice`, ""},
		{"verify extra argument", []string{"verify", dir, "x"}, exitUsage, `shale verify: unexpected argument "x"`, ""},
		{"verify bad dsn", []string{"verify", "-dsn", dir + "?bogus=1"}, exitUsage, `shale verify: .*unknown key "bogus"`, ""},
		{"verify malformed dsn", []string{"verify", "-dsn", dir + "?a=%zz"}, exitUsage, `shale verify: .*invalid DSN`, ""},
		{"stats without dsn", []string{"stats"}, exitUsage, `shale stats: a DSN is required`, ""},
		{"stats without statistics", []string{"stats", "-dsn", dir + "?statistics=false"}, exitUsage, `disables statistics`, ""},
		{"sst dump no file", []string{"sst", "dump"}, exitUsage, `shale sst dump: want exactly one table file, got 0`, ""},
		{"wal dump two files", []string{"wal", "dump", "a", "b"}, exitUsage, `shale wal dump: want exactly one log file, got 2`, ""},
		{"dsn argument", []string{"dsn", "x"}, exitUsage, `shale dsn: unexpected argument "x"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runTool(t, tc.args...)
			require.Equal(t, tc.code, r.code, "%s", r)
			if tc.stderr == "" {
				require.Empty(t, r.stderr)
			} else {
				require.Regexp(t, tc.stderr, r.stderr)
			}
			if tc.stdout != "" {
				require.Regexp(t, tc.stdout, r.stdout)
			}
		})
	}
}

func TestDSNCommand(t *testing.T) {
	r := runTool(t, "dsn")
	require.Equal(t, exitOK, r.code, "%s", r)
	require.Regexp(t, `^KEY +DEFAULT +MEANING\n`, r.stdout)
	for _, key := range []string{"create_if_missing", "stats_level", "block_cache_size", "rate_limit", "read_only"} {
		require.Regexp(t, `(?m)^`+key+` +\S+ +\S`, r.stdout)
	}
}

// benchArgs are the flags of a bench run small enough for a test: every
// file read misses the (disabled) block cache, so every per-activity
// histogram gets samples, and a generous rate limit charges the reads at
// priority user without slowing them much.
func benchArgs(extra ...string) []string {
	return append([]string{"bench", "-max-data", "512KiB", "-duration-per-phase", "25ms", "-threads", "2",
		"-dsn-params", "block_cache_size=0&write_buffer_size=128KiB&target_file_size_base=128KiB",
		"-rate-limit", "256MiB"}, extra...)
}

func TestBench(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "bench.svg")
	r := runTool(t, benchArgs("-svg", svg)...)
	require.Equal(t, exitOK, r.code, "%s", r)
	require.Empty(t, r.stderr, "no progress on a non-terminal")
	out := r.stdout

	// The header, then the load.
	require.Regexp(t, `(?m)^  keys: +1927 x \(16 B key \+ 256 B value\) = 512 KiB$`, out)
	require.Regexp(t, `(?m)^  phases: +25ms each, 2 thread\(s\), reads at priority User$`, out)
	require.Regexp(t, `(?m)^fill +1927 keys, 512 KiB in \S+: \S+ MiB/s`, out)
	require.Regexp(t, `(?m)^flush +\S+$`, out)
	require.Regexp(t, `(?m)^compact +\S+: [1-9]\d* table files`, out)

	// The timed phases, in order, each with ops, ops/s, p50 and p99.
	phaseRE := regexp.MustCompile(`(?m)^(get|get-miss|multiget|seek|next|verify-checksum|verify-file-checksums) +(\d+) +([\d.]+) +([\d.]+) +([\d.]+)(  .*)?$`)
	var names []string
	for _, m := range phaseRE.FindAllStringSubmatch(out, -1) {
		names = append(names, m[1])
		ops, _ := strconv.Atoi(m[2])
		require.Positive(t, ops, "phase %s", m[1])
		p50, _ := strconv.ParseFloat(m[4], 64)
		p99, _ := strconv.ParseFloat(m[5], 64)
		require.LessOrEqual(t, p50, p99, "phase %s", m[1])
	}
	require.Equal(t, []string{"get", "get-miss", "multiget", "seek", "next", "verify-checksum", "verify-file-checksums"}, names)
	require.Regexp(t, `(?m)^multiget .*  16 keys/op, [\d.]+ keys/s$`, out)
	require.Regexp(t, `(?m)^verify-checksum .*  [\d.]+ MiB/s verified$`, out)

	// The per-activity table: every user read landed in its own histogram,
	// and the breakdown adds up to the aggregate.
	count := func(name string) int {
		f := fieldsOf(t, out, name+" ")
		n, err := strconv.Atoi(f[1])
		require.NoError(t, err)
		return n
	}
	total := count("shale.sst.read.micros")
	sum := 0
	for _, h := range []string{"flush", "compaction", "db.open", "get", "multiget", "db.iterator", "verify.db.checksum", "verify.file.checksums"} {
		n := count("shale.file.read." + h + ".micros")
		if h != "db.open" && h != "compaction" {
			require.Positive(t, n, "shale.file.read.%s.micros", h)
		}
		sum += n
	}
	require.Equal(t, total, sum)
	require.Equal(t, strconv.Itoa(sum), fieldsOf(t, out, "  (sum of the 8 breakdowns)")[5])
	for _, tk := range []string{"shale.rate.limiter.requests.read", "shale.bloom.filter.useful", "shale.verify_checksum.read.bytes"} {
		n, err := strconv.Atoi(fieldsOf(t, out, tk+" ")[1])
		require.NoError(t, err)
		require.Positive(t, n, tk)
	}

	// The temporary directory is gone.
	dir := strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(lineWith(t, out, "  dir:"), "  dir:")), " (temporary)")
	_, err := os.Stat(dir)
	require.ErrorIs(t, err, os.ErrNotExist, "bench must remove its temporary directory %s", dir)

	// The SVG is well-formed XML with a CDF line per phase and a bar pair
	// per histogram with samples.
	data, err := os.ReadFile(svg)
	require.NoError(t, err)
	require.Contains(t, out, "wrote "+svg)
	checkSVG(t, data, 7)
}

// checkSVG parses an SVG and counts its CDF lines and bars.
func checkSVG(t *testing.T, data []byte, phases int) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(string(data)))
	var lines, p50, p99 int
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		for _, a := range se.Attr {
			if a.Name.Local != "class" {
				continue
			}
			switch a.Value {
			case "cdf":
				lines++
			case "p50":
				p50++
			case "p99":
				p99++
			}
		}
	}
	require.Equal(t, phases, lines)
	require.Positive(t, p50)
	require.Equal(t, p50, p99)
}

func TestBenchDirAndKeep(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	// A -dir that does not exist yet is created and kept.
	r := runTool(t, "bench", "-dir", dir, "-max-data", "64KiB", "-duration-per-phase", "5ms", "-stats-level", "except_detailed_timers")
	require.Equal(t, exitOK, r.code, "%s", r)
	require.Regexp(t, `(?m)^  dir: +`+regexp.QuoteMeta(dir)+`$`, r.stdout)
	require.Contains(t, r.stdout, "note: the Get, MultiGet, iterator and verify breakdowns need stats_level")
	require.Equal(t, "0", fieldsOf(t, r.stdout, "shale.file.read.get.micros")[1], "gated at except_detailed_timers")
	require.NotEmpty(t, filesWithSuffix(t, dir, ".sst"))

	// error_if_exists protects it from a second run.
	r = runTool(t, "bench", "-dir", dir, "-max-data", "64KiB", "-duration-per-phase", "5ms")
	require.Equal(t, exitFailure, r.code, "%s", r)
	require.Regexp(t, `^shale bench: .*already exists`, r.stderr)

	// -keep keeps a temporary directory and says where.
	r = runTool(t, "bench", "-max-data", "64KiB", "-duration-per-phase", "5ms", "-keep", "-dsn-params", "statistics=false")
	require.Equal(t, exitOK, r.code, "%s", r)
	require.Contains(t, r.stdout, "statistics are disabled")
	kept := strings.TrimPrefix(lineWith(t, r.stdout, "kept the database in "), "kept the database in ")
	require.NotEmpty(t, filesWithSuffix(t, kept, ".sst"))
	require.NoError(t, os.RemoveAll(kept))
}

func TestVerify(t *testing.T) {
	dir := t.TempDir()
	makeDB(t, dir, dbSpec{tables: [][2]int{{0, 1000}, {1000, 2000}}, logged: [2]int{2000, 2100}})

	r := runTool(t, "verify", "-dsn", dir)
	require.Equal(t, exitOK, r.code, "%s", r)
	require.Regexp(t, `(?m)^verifying .*: 2 table files, `, r.stdout)
	// The DSN may be the argument, as checkpoint's directories are.
	byArg := runTool(t, "verify", dir)
	require.Equal(t, exitOK, byArg.code, "%s", byArg)
	require.Regexp(t, `(?m)^OK$`, byArg.stdout)
	require.Regexp(t, `(?m)^VerifyChecksum: ok, `, r.stdout)
	require.NotContains(t, r.stdout, "VerifyFileChecksums")
	require.Regexp(t, `(?m)^OK$`, r.stdout)
	require.Empty(t, r.stderr)

	// Rate-limited at low priority, both verifications, with progress as
	// plain lines (stderr is not a terminal).
	r = runTool(t, "verify", "-dsn", dir, "-files", "-progress", "-rate-limit", "64MiB", "-priority", "low")
	require.Equal(t, exitOK, r.code, "%s", r)
	require.Regexp(t, `(?m)^verifying .*rate limit 64.0 MiB/s at priority Low$`, r.stdout)
	require.Regexp(t, `(?m)^VerifyFileChecksums: ok, `, r.stdout)
	require.Regexp(t, `(?m)^rate limiter: [1-9]\d* requests, `, r.stdout)
	require.Regexp(t, `(?m)^VerifyChecksum +\d+% .* \(done\)$`, r.stderr)
	require.Regexp(t, `(?m)^VerifyFileChecksums +100% .* \(done\)$`, r.stderr)

	// At priority total nothing is charged.
	r = runTool(t, "verify", "-dsn", dir, "-rate-limit", "64MiB", "-priority", "total")
	require.Equal(t, exitOK, r.code, "%s", r)
	require.Regexp(t, `(?m)^rate limiter: 0 requests, `, r.stdout)

	// A database that does not exist cannot be opened.
	r = runTool(t, "verify", "-dsn", filepath.Join(dir, "missing"))
	require.Equal(t, exitFailure, r.code, "%s", r)
	require.Regexp(t, `^shale verify: .*does not exist`, r.stderr)
}

func TestVerifyCorruption(t *testing.T) {
	for _, tc := range []struct {
		name string
		// damage damages the first of the two tables.
		damage func(t *testing.T, table string)
		files  bool
		want   string
	}{
		// The first data block starts at offset 0; its checksum fails.
		{"data block", func(t *testing.T, table string) { flipByte(t, table, 20) }, false,
			`VerifyChecksum found corruption: .*block checksum mismatch: stored = \d+, computed = \d+, type = 3 +in \S+ offset 0 size \d+`},
		// The footer is read when the database opens: the open fails with
		// corruption, which is still exit code 1.
		{"footer", func(t *testing.T, table string) { flipByte(t, table, -1) }, false, `bad magic number`},
		// A changed value whose block checksum was recomputed passes
		// VerifyChecksum; only the whole-file checksum sees it.
		{"data block with its checksum fixed", rewriteValueByte, true,
			`(?s)VerifyFileChecksums found corruption: .*file checksum mismatch, expecting [0-9A-F]{8}, but actual [0-9A-F]{8}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			makeDB(t, dir, dbSpec{tables: [][2]int{{0, 1000}, {1000, 2000}}, noCompression: true})
			tables := filesWithSuffix(t, dir, ".sst")
			require.Len(t, tables, 2)
			tc.damage(t, tables[0])
			args := []string{"verify", "-dsn", dir}
			if tc.files {
				args = append(args, "-files")
			}
			r := runTool(t, args...)
			require.Equal(t, exitProblem, r.code, "%s", r)
			require.Regexp(t, `^shale verify: `, r.stderr)
			require.Regexp(t, tc.want, r.stderr)
			require.Contains(t, r.stderr, filepath.Base(tables[0]), "the message names the file")
			require.NotRegexp(t, `(?m)^OK$`, r.stdout)
		})
	}
}

// rewriteValueByte changes a byte of the first data block of an
// uncompressed table and recomputes the block's checksum, as a bug that
// wrote wrong data with a right checksum would.
func rewriteValueByte(t *testing.T, table string) {
	r := runTool(t, "sst", "dump", "-keys", "0", table)
	require.Equal(t, exitOK, r.code, "%s", r)
	m := regexp.MustCompile(`(?m)^  block 0: \(0, (\d+)\)`).FindStringSubmatch(r.stdout)
	require.NotNil(t, m, r.stdout)
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	data, err := os.ReadFile(table)
	require.NoError(t, err)
	// The first entry's value ends just before the second entry; 'a' is
	// the value byte (the block is not compressed).
	i := bytes.Index(data[:n], []byte("aaaa"))
	require.Positive(t, i)
	data[i] = 'A'
	require.Equal(t, byte(compress.None), data[n], "the test needs an uncompressed block")
	binary.LittleEndian.PutUint32(data[n+1:], checksum.Compute(checksum.XXHash64, data[:n+1]))
	require.NoError(t, os.WriteFile(table, data, 0o644))
}

func TestStats(t *testing.T) {
	dir := t.TempDir()
	makeDB(t, dir, dbSpec{tables: [][2]int{{0, 500}, {500, 1000}}, logged: [2]int{1000, 1100}})

	r := runTool(t, "stats", "-dsn", dir)
	require.Equal(t, exitOK, r.code, "%s", r)
	require.Regexp(t, `(?m)^database .*: 2 table files, .*; opened read-only in `, r.stdout)
	require.Contains(t, r.stdout, "per-activity file reads (stats_level all; latencies in µs)")
	openReads, err := strconv.Atoi(fieldsOf(t, r.stdout, "shale.file.read.db.open.micros")[1])
	require.NoError(t, err)
	require.Positive(t, openReads, "opening reads each table's footer and meta blocks")
	require.Equal(t, "0", fieldsOf(t, r.stdout, "shale.file.read.db.iterator.micros")[1])

	// -scan reads every key (1100, the WAL's included) and verifies.
	r = runTool(t, "stats", "-dsn", dir, "-scan")
	require.Equal(t, exitOK, r.code, "%s", r)
	require.Regexp(t, `(?m)^scan: 1100 keys, `, r.stdout)
	require.Regexp(t, `(?m)^VerifyChecksum: ok in `, r.stdout)
	for _, h := range []string{"db.iterator", "verify.db.checksum"} {
		n, err := strconv.Atoi(fieldsOf(t, r.stdout, "shale.file.read."+h+".micros")[1])
		require.NoError(t, err)
		require.Positive(t, n, h)
	}

	// -full is RocksDB's layout.
	r = runTool(t, "stats", "-dsn", dir, "-full")
	require.Equal(t, exitOK, r.code, "%s", r)
	require.Regexp(t, `(?m)^shale\.block\.cache\.miss COUNT : \d+$`, r.stdout)
	require.Regexp(t, `(?m)^shale\.sst\.read\.micros P50 : [\d.]+ P95 : [\d.]+ P99 : [\d.]+ P100 : [\d.]+ COUNT : \d+ SUM : \d+$`, r.stdout)

	// -json is one object.
	r = runTool(t, "stats", "-dsn", dir+"?stats_level=except_time_for_mutex", "-json", "-scan")
	require.Equal(t, exitOK, r.code, "%s", r)
	var js struct {
		Dir        string            `json:"dir"`
		Tables     int               `json:"table_files"`
		Level      string            `json:"stats_level"`
		Scan       *scanResult       `json:"scan"`
		Tickers    map[string]uint64 `json:"tickers"`
		Histograms map[string]histogramJSON
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &js), r.stdout)
	require.Equal(t, dir, js.Dir)
	require.Equal(t, 2, js.Tables)
	require.Equal(t, "except_time_for_mutex", js.Level, "a stats_level in the DSN wins")
	require.NotNil(t, js.Scan)
	require.EqualValues(t, 1100, js.Scan.Keys)
	require.Contains(t, js.Tickers, "shale.block.cache.miss")
	require.Positive(t, js.Histograms["shale.file.read.db.iterator.micros"].Count)
	require.Zero(t, js.Histograms["shale.file.read.get.micros"].Min, "empty histograms print min 0")

	// Corruption met by the scan is a problem found.
	flipByte(t, filesWithSuffix(t, dir, ".sst")[0], 20)
	r = runTool(t, "stats", "-dsn", dir, "-scan")
	require.Equal(t, exitProblem, r.code, "%s", r)
	require.Regexp(t, `^shale stats: scan: .*checksum mismatch`, r.stderr)
}

func TestSSTDump(t *testing.T) {
	dir := t.TempDir()
	makeDB(t, dir, dbSpec{tables: [][2]int{{0, 300}}})
	table := onlyTable(t, dir)

	r := runTool(t, "sst", "dump", table)
	require.Equal(t, exitOK, r.code, "%s", r)
	out := r.stdout
	require.Regexp(t, `^file `+regexp.QuoteMeta(table)+`: \d+ bytes\n\nfooter\n`, out)
	require.Regexp(t, `(?m)^  checksum: +xxh64$`, out)
	require.Regexp(t, `(?m)^  index block: +\(\d+, \d+\)$`, out)
	require.Regexp(t, `(?m)^  format version: +1$`, out)
	require.Regexp(t, `(?m)^  shale\.num\.entries: 300$`, out)
	require.Regexp(t, `(?m)^  block 0: \(0, \d+\)  separator "key\d+"#\d+,SET$`, out)
	blocks := regexp.MustCompile(`(?m)^  block \d+: `).FindAllString(out, -1)
	require.Regexp(t, `(?m)^  \(`+strconv.Itoa(len(blocks))+` data blocks\)$`, out)
	require.Equal(t, fieldsOf(t, out, "  shale.num.data.blocks:")[1], strconv.Itoa(len(blocks)))
	require.Regexp(t, `(?m)^entries\n  "key000000"#1,SET -> "aaaa`, out)
	require.Len(t, regexp.MustCompile(`(?m)^  "key\d+"#\d+,SET -> `).FindAllString(out, -1), 10, "the first 10 entries by default")
	require.Contains(t, out, `... (100 bytes)`)

	// All entries, in hex, with every block checked.
	r = runTool(t, "sst", "dump", "-keys", "-1", "-hex", "-blocks", table)
	require.Equal(t, exitOK, r.code, "%s", r)
	require.Len(t, regexp.MustCompile(`(?m)^  6b6579\w+#\d+,SET -> `).FindAllString(r.stdout, -1), 300)
	require.Len(t, regexp.MustCompile(`(?m)^ +checksum ok, \w+, \d+ bytes decoded, \d+ entries$`).FindAllString(r.stdout, -1), len(blocks))

	// -keys 0 prints no entries.
	r = runTool(t, "sst", "dump", "-keys", "0", table)
	require.Equal(t, exitOK, r.code, "%s", r)
	require.NotContains(t, r.stdout, "entries\n")

	// A damaged data block: -blocks reports it and goes on; exit 1.
	flipByte(t, table, 20)
	r = runTool(t, "sst", "dump", "-blocks", "-keys", "0", table)
	require.Equal(t, exitProblem, r.code, "%s", r)
	require.Regexp(t, `(?m)^ +DAMAGED: block checksum mismatch: .* offset 0 `, r.stdout)
	require.Regexp(t, `(?m)^  \(\d+ data blocks\)$`, r.stdout, "the rest of the index is still printed")
	require.Regexp(t, `^shale sst dump: .*`+regexp.QuoteMeta(filepath.Base(table))+`: 1 damaged data block\(s\)`, r.stderr)

	// Without -blocks, reading the entries meets the damage.
	r = runTool(t, "sst", "dump", table)
	require.Equal(t, exitProblem, r.code, "%s", r)
	require.Regexp(t, `^shale sst dump: .*checksum mismatch`, r.stderr)

	// Not a table at all, and no file at all.
	junk := filepath.Join(dir, "junk.sst")
	require.NoError(t, os.WriteFile(junk, []byte(strings.Repeat("not a table ", 10)), 0o644))
	r = runTool(t, "sst", "dump", junk)
	require.Equal(t, exitProblem, r.code, "%s", r)
	require.Regexp(t, `^shale sst dump: .*bad magic number`, r.stderr)
	r = runTool(t, "sst", "dump", filepath.Join(dir, "missing.sst"))
	require.Equal(t, exitFailure, r.code, "%s", r)
	require.Regexp(t, `^shale sst dump: .*no such file`, r.stderr)
}

func TestWALDump(t *testing.T) {
	dir := t.TempDir()
	makeDB(t, dir, dbSpec{tables: [][2]int{{0, 10}}, logged: [2]int{10, 20}, deleted: []int{3, 15}})
	// The newest WAL holds the writes after the flush; the one before it
	// is kept until another MANIFEST edit follows the flush's.
	logs := filesWithSuffix(t, dir, ".log")
	require.NotEmpty(t, logs)
	log := logs[len(logs)-1]

	r := runTool(t, "wal", "dump", log)
	require.Equal(t, exitOK, r.code, "%s", r)
	out := r.stdout
	require.Regexp(t, `(?m)^record 1 @0: seq 11, count 1, \d+ bytes\n  PUT "key000010" \(100 bytes\)$`, out)
	require.Regexp(t, `(?m)^record 12 @\d+: seq 22, count 1, \d+ bytes\n  DEL "key000015"$`, out)
	require.Regexp(t, `(?m)^12 records, 12 operations, sequence numbers 11 to 22$`, out)
	require.Regexp(t, `(?m)^the log ends cleanly at offset \d+$`, out)

	r = runTool(t, "wal", "dump", "-values", "-hex", log)
	require.Equal(t, exitOK, r.code, "%s", r)
	require.Regexp(t, `(?m)^  PUT 6b6579303030303130 = (6b){64}\.\.\. \(100 bytes\)$`, r.stdout)

	// A torn tail: the last record cut short.
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	torn := filepath.Join(dir, "torn.log")
	require.NoError(t, os.WriteFile(torn, data[:len(data)-5], 0o644))
	r = runTool(t, "wal", "dump", torn)
	require.Equal(t, exitProblem, r.code, "%s", r)
	require.Regexp(t, `(?m)^11 records, 11 operations`, r.stdout)
	require.Regexp(t, `^shale wal dump: .*torn\.log: torn tail: the valid log ends at offset \d+ of \d+`, r.stderr)

	// Mid-log corruption: a payload byte of the first record.
	mid := filepath.Join(dir, "mid.log")
	data[10] ^= 0xff
	require.NoError(t, os.WriteFile(mid, data, 0o644))
	r = runTool(t, "wal", "dump", mid)
	require.Equal(t, exitProblem, r.code, "%s", r)
	require.Regexp(t, `(?m)^0 records, 0 operations$`, r.stdout)
	require.Regexp(t, `^shale wal dump: .*checksum`, r.stderr)
	require.Contains(t, r.stderr, "mid.log")

	r = runTool(t, "wal", "dump", filepath.Join(dir, "missing.log"))
	require.Equal(t, exitFailure, r.code, "%s", r)
}
