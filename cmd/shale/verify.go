package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/internal/fileio"
	"github.com/shaledb/shale/internal/sstable"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
	"github.com/shaledb/shale/vfs"
)

const verifyUsage = `verify [-dsn] DSN [-rate-limit 8MiB] [-priority low] [-files] [-progress]`

const verifyDoc = `
Opens the database read-only (a database another process holds open as a
secondary instance, as stderr says) and runs VerifyChecksum, which reads every block
of every live table and checks its checksum; with -files, then also
VerifyFileChecksums, which reads every table whole and compares its CRC32C
with the one recorded in the MANIFEST.

The reads are charged to the DSN's rate limiter (-rate-limit sets DSN
rate_limit) at -priority, carried in the context's ReadOptions as a
background job would. -progress shows the bytes verified so far, sampled
from the statistics ticker shale.verify_checksum.read.bytes every 200ms: a
bar on a terminal, otherwise a plain line every second. VerifyChecksum
reads more than the table files hold: each table's blocks once, and, to
open it, its footer and the meta blocks an open keeps (index, filter,
properties) once more; -progress finds that total by opening each table
first, which reads those meta blocks a third time.

Exit code 0: no corruption. 1: corruption found (the message names the file
and, for a block, its offset and both checksums), including damage that
stops the database from opening: a directory of tables without CURRENT, a
MANIFEST naming a table that is missing or has another size, a damaged WAL.
3: the database cannot be opened or read for another reason (it does not
exist, permissions, IO errors).`

func runVerify(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, verifyUsage, verifyDoc)
	dsn := fs.String("dsn", "", "the database's `DSN` (or give it as the argument)")
	rateLimit := sizeFlag{}
	fs.Var(&rateLimit, "rate-limit", "rate limiter `bytes` per second (DSN rate_limit); 0: the DSN's own, if any")
	priority := fs.String("priority", "low", "rate-limiter `priority` of the reads: total (not charged), low, mid, high or user")
	files := fs.Bool("files", false, "also verify whole-file checksums (VerifyFileChecksums)")
	showProgress := fs.Bool("progress", false, "show progress on stderr")
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	if err := dsnArgument(fs, dsn); err != nil {
		return err
	}
	if rateLimit.n < 0 {
		return usageErrorf("invalid -rate-limit %d: must not be negative", rateLimit.n)
	}
	pri, err := parsePriority(*priority)
	if err != nil {
		return err
	}
	d, err := parseDSNBuilder(*dsn)
	if err != nil {
		return err
	}
	if rateLimit.n > 0 {
		d.set("rate_limit", strconv.FormatInt(rateLimit.n, 10))
	}
	// Read-only: a verification must not change what it verifies, nor
	// replay the WAL into new tables or start compactions.
	db, _, cfg, secondary, err := openInspect(ctx, env, d)
	if err != nil {
		return err
	}
	defer db.Close()
	verifyChecksum, verifyFileChecksums := db.VerifyChecksum, db.VerifyFileChecksums
	if secondary {
		verifyChecksum, verifyFileChecksums = retryRemoved(db, verifyChecksum), retryRemoved(db, verifyFileChecksums)
	}

	mode := progressOff
	if *showProgress {
		mode = progressLines
		if isTerminal(env.stderr) {
			mode = progressBar
		}
	}
	tables, size := tableFiles(cfg.Dir)
	fmt.Fprintf(env.stdout, "verifying %s: %d table files, %s", cfg.Dir, tables, formatBytes(size))
	if cfg.RateLimit > 0 {
		fmt.Fprintf(env.stdout, ", rate limit %s/s at priority %s", formatBytes(cfg.RateLimit), pri)
	}
	fmt.Fprintln(env.stdout)

	ctx = ioctx.WithReadOptions(ctx, ioctx.ReadOptions{RateLimiterPriority: pri})
	st := db.Statistics()
	type step struct {
		name string
		fn   func(context.Context) error
	}
	steps := []step{{"VerifyChecksum", verifyChecksum}}
	if *files {
		steps = append(steps, step{"VerifyFileChecksums", verifyFileChecksums})
	}
	for i, s := range steps {
		total := size
		if i == 0 && mode != progressOff {
			total = verifyChecksumBytes(ctx, cfg.Dir)
		}
		if err := verifyStep(ctx, env, mode, st, total, s.name, s.fn); err != nil {
			return err
		}
	}
	if st != nil && cfg.RateLimit > 0 {
		fmt.Fprintf(env.stdout, "rate limiter: %d requests, %s, %d delayed\n",
			st.TickerCount(statistics.RateLimiterRequestsRead),
			formatBytes(int64(st.TickerCount(statistics.RateLimiterBytesRead))),
			st.TickerCount(statistics.RateLimiterDelayedRequestsRead))
	}
	fmt.Fprintln(env.stdout, "OK")
	return nil
}

// verifyChecksumBytes returns how many bytes VerifyChecksum reads from the
// table files in dir, the total its progress counts towards: more than the
// files' sizes, since it opens each table anew, reading its footer and the
// meta blocks the open keeps (metaindex, properties, filter, index), and
// then reads every block but the footer, those meta blocks again included.
// It finds what an open reads by opening each table the same way, which
// costs those reads once more (only with -progress). A table that does not
// open counts its size: the verification reports it.
func verifyChecksumBytes(ctx context.Context, dir string) int64 {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var total int64
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".sst") {
			continue
		}
		fr, err := fileio.Open(vfs.Default, filepath.Join(dir, e.Name()), fileio.Options{})
		if err != nil {
			continue
		}
		size := fr.Size()
		// In the built-in order the table records, as sstdump reads it:
		// the total is what opening reads, whatever the database's order.
		r, err := sstable.Open(ctx, fr, sstable.ReadEnv{VerifyChecksums: true}, sstable.ReaderOptions{BuiltinComparer: true})
		if err != nil {
			total += size
			continue
		}
		total += size - sstable.FooterLen + fr.BytesRead()
		_ = r.Close()
	}
	return total
}

// verifyStep runs one verification with progress sampled from the
// VerifyChecksumReadBytes ticker (which the engine ticks after each table),
// against total, the bytes of the table files.
func verifyStep(ctx context.Context, env *cmdEnv, mode progressMode, st *statistics.Statistics, total int64,
	name string, fn func(context.Context) error) error {
	var base uint64
	if st != nil {
		base = st.TickerCount(statistics.VerifyChecksumReadBytes)
	}
	read := func() uint64 {
		if st == nil {
			return 0
		}
		return st.TickerCount(statistics.VerifyChecksumReadBytes) - base
	}
	pr := startProgress(env.stderr, mode, name, func() (float64, string) {
		if st == nil || total <= 0 {
			return -1, "(statistics disabled: no byte count)"
		}
		n := read()
		return float64(n) / float64(total), formatBytes(int64(n)) + " of " + formatBytes(total)
	})
	start := time.Now()
	err := fn(ctx)
	pr.stop()
	el := time.Since(start)
	if err != nil {
		if errors.Is(err, driver.ErrCorruption) {
			return problem(errors.Wrapf(err, "%s found corruption", name))
		}
		if ctx.Err() != nil {
			return &exitError{code: exitFailure, err: errors.Wrapf(err, "%s interrupted", name)}
		}
		return &exitError{code: exitFailure, err: errors.Wrapf(err, "%s failed", name)}
	}
	fmt.Fprintf(env.stdout, "%s: ok, %s in %s", name, formatBytes(int64(read())), roundDuration(el))
	if st != nil {
		fmt.Fprintf(env.stdout, " (%s MiB/s)", formatRate(float64(read())/(1<<20), el))
	}
	fmt.Fprintln(env.stdout)
	return nil
}
