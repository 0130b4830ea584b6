// refgen.c is the independent oracle for the golden files in this directory.
// It implements RocksDB's histogram (monitoring/histogram.cc) and the
// StatisticsImpl::ToString layout exactly as the spec
// (/work/shared/reference/rocksdb-io-activity.md §4.6, §4.7) describes them,
// in C with C's printf, so the Go code's output is compared with values it
// did not compute. Regenerate with:
//
//	cc -O0 -std=c99 -o /tmp/refgen refgen.c -lm && /tmp/refgen
//
// which rewrites bucket_limits.golden, histogram_string.golden and
// statistics_string.golden in the current directory. The sample sets below
// must stay identical to the ones in golden_test.go.
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXB 200
static uint64_t limits[MAXB];
static int nlimits;

static void init_limits(void) {
  limits[0] = 1;
  limits[1] = 2;
  nlimits = 2;
  double v = 2.0;
  while ((v = 1.5 * v) <= (double)UINT64_MAX) {
    uint64_t x = (uint64_t)v;
    uint64_t pow10 = 1;
    while (x / 10 > 10) {
      x /= 10;
      pow10 *= 10;
    }
    limits[nlimits++] = x * pow10;
  }
}

static int index_for(uint64_t v) {
  if (v >= limits[nlimits - 1]) return nlimits - 1;
  int i = 0;
  while (limits[i] < v) i++; /* lower_bound */
  return i;
}

typedef struct {
  uint64_t min, max, num, sum, sumsq;
  uint64_t b[MAXB];
} hist;

static void h_clear(hist* h) {
  memset(h, 0, sizeof(*h));
  h->min = limits[nlimits - 1];
}

static void h_add(hist* h, uint64_t v) {
  h->b[index_for(v)]++;
  if (v < h->min) h->min = v;
  if (v > h->max) h->max = v;
  h->num++;
  h->sum += v;
  h->sumsq += v * v;
}

static double h_pct(const hist* h, double p) {
  double threshold = (double)h->num * (p / 100.0);
  uint64_t cum = 0;
  for (int b = 0; b < nlimits; b++) {
    uint64_t bv = h->b[b];
    cum += bv;
    if ((double)cum >= threshold) {
      uint64_t left = b == 0 ? 0 : limits[b - 1];
      uint64_t right = limits[b];
      uint64_t left_sum = cum - bv;
      double pos = 0;
      if (cum - left_sum != 0) pos = (threshold - (double)left_sum) / (double)(cum - left_sum);
      double r = (double)left + (double)(right - left) * pos;
      if (r < (double)h->min) r = (double)h->min;
      if (r > (double)h->max) r = (double)h->max;
      return r;
    }
  }
  return (double)h->max;
}

static double h_avg(const hist* h) {
  if (h->num == 0) return 0;
  return (double)h->sum / (double)h->num;
}

static double h_stddev(const hist* h) {
  if (h->num == 0) return 0;
  double n = (double)h->num, s = (double)h->sum, sq = (double)h->sumsq;
  double var = (sq * n - s * s) / (n * n);
  return sqrt(var > 0 ? var : 0);
}

static void h_tostring(FILE* f, const hist* h) {
  fprintf(f, "Count: %" PRIu64 " Average: %.4f  StdDev: %.2f\n", h->num, h_avg(h), h_stddev(h));
  fprintf(f, "Min: %" PRIu64 "  Median: %.4f  Max: %" PRIu64 "\n", h->num == 0 ? 0 : h->min,
          h_pct(h, 50), h->num == 0 ? 0 : h->max);
  fprintf(f, "Percentiles: P50: %.2f P75: %.2f P99: %.2f P99.9: %.2f P99.99: %.2f\n", h_pct(h, 50),
          h_pct(h, 75), h_pct(h, 99), h_pct(h, 99.9), h_pct(h, 99.99));
  fprintf(f, "------------------------------------------------------\n");
  if (h->num == 0) return;
  double mult = 100.0 / (double)h->num;
  uint64_t cum = 0;
  for (int b = 0; b < nlimits; b++) {
    uint64_t bv = h->b[b];
    if (bv == 0) continue;
    cum += bv;
    fprintf(f, "%c %7" PRIu64 ", %7" PRIu64 " ] %8" PRIu64 " %7.3f%% %7.3f%% ", b == 0 ? '[' : '(',
            b == 0 ? 0 : limits[b - 1], limits[b], bv, mult * (double)bv, mult * (double)cum);
    size_t marks = (size_t)(mult * (double)bv / 5 + 0.5);
    for (size_t i = 0; i < marks; i++) fputc('#', f);
    fputc('\n', f);
  }
}

// Data() fields, printed with %.17g so the Go test can compare exactly.
static void h_data(FILE* f, const char* name, const hist* h) {
  fprintf(f,
          "%s count=%" PRIu64 " sum=%" PRIu64 " min=%" PRIu64 " max=%" PRIu64
          " avg=%.17g stddev=%.17g median=%.17g p95=%.17g p99=%.17g\n",
          name, h->num, h->sum, h->min, h->max, h_avg(h), h_stddev(h), h_pct(h, 50), h_pct(h, 95),
          h_pct(h, 99));
}

// The sample sets; golden_test.go has the same ones.
static uint64_t lcg_state;
static uint64_t lcg_next(void) {
  lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return lcg_state >> 33;
}

static void fill_case(hist* h, int c) {
  h_clear(h);
  switch (c) {
    case 0: /* empty */
      break;
    case 1:
      for (uint64_t v = 1; v <= 4; v++) h_add(h, v);
      break;
    case 2:
      h_add(h, 100);
      break;
    case 3:
      for (uint64_t v = 0; v < 1000; v++) h_add(h, v);
      break;
    case 4:
      lcg_state = 42;
      for (int i = 0; i < 10000; i++) h_add(h, lcg_next() % 1000000);
      break;
    case 5:
      h_add(h, 0);
      h_add(h, UINT64_MAX);
      h_add(h, (uint64_t)1 << 63);
      break;
    case 6:
      h_add(h, UINT64_MAX);
      h_add(h, UINT64_MAX);
      break;
    case 7: /* latency-like: mostly small, a long tail */
      lcg_state = 7;
      for (int i = 0; i < 5000; i++) {
        uint64_t r = lcg_next();
        uint64_t v = r % 100 < 90 ? 20 + r % 80 : (r % 100 < 99 ? 1000 + r % 9000 : 100000 + r % 900000);
        h_add(h, v);
      }
      break;
  }
}
#define NCASES 8
static const char* case_names[NCASES] = {"empty", "one-to-four", "single-100", "zero-to-999",
                                         "lcg-uniform", "extremes", "two-max", "latency-tail"};

static const char* tickers[] = {
    "block.cache.miss", "block.cache.hit", "block.cache.add", "block.cache.add.failures",
    "block.cache.bytes.read", "block.cache.bytes.write", "block.cache.index.hit",
    "block.cache.data.miss", "block.cache.data.hit", "bloom.filter.useful",
    "bloom.filter.full.positive", "bloom.filter.full.true.positive", "memtable.hit",
    "memtable.miss", "l0.hit", "l1.hit", "l2andup.hit", "number.keys.written", "number.keys.read",
    "bytes.written", "bytes.read", "number.db.seek", "number.db.next", "number.db.prev",
    "number.db.seek.found", "number.db.next.found", "number.db.prev.found", "db.iter.bytes.read",
    "number.multiget.get", "number.multiget.keys.read", "number.multiget.bytes.read",
    "number.multiget.keys.found", "wal.synced", "wal.bytes", "write.self", "write.other",
    "write.wal", "compact.read.bytes", "compact.write.bytes", "flush.write.bytes",
    "compaction.key.drop.new", "compaction.key.drop.obsolete", "no.file.opens", "no.file.errors",
    "stall.micros", "block.checksum.compute.count", "block.checksum.mismatch.count",
    "verify_checksum.read.bytes", "number.rate_limiter.drains", "last.level.read.bytes",
    "last.level.read.count", "non.last.level.read.bytes", "non.last.level.read.count",
    "read.async.micros", "async.read.error.count", "number.block.compressed",
    "number.block.decompressed", "db.mutex.wait.micros", "txn.conflicts",
    "rate.limiter.requests.read", "rate.limiter.bytes.read", "rate.limiter.delayed.requests.read",
    "rate.limiter.requests.write", "rate.limiter.bytes.write", "rate.limiter.delayed.requests.write",
    "wal.recovery.dropped.records", "wal.recovery.dropped.bytes", "block.cache.index.miss",
    "block.cache.filter.miss", "block.cache.filter.hit", "bloom.filter.prefix.checked",
    "bloom.filter.prefix.useful", "ingest.bytes", "ingest.files", "merge.operation.time.nanos",
    "number.merge.failures"};
static const char* histograms[] = {
    "db.get.micros", "db.write.micros", "compaction.times.micros", "table.open.io.micros",
    "db.multiget.micros", "db.seek.micros", "db.write.stall", "sst.read.micros",
    "file.read.flush.micros", "file.read.compaction.micros", "file.read.db.open.micros",
    "file.read.get.micros", "file.read.multiget.micros", "file.read.db.iterator.micros",
    "file.read.verify.db.checksum.micros", "file.read.verify.file.checksums.micros",
    "sst.write.micros", "wal.file.sync.micros", "db.flush.micros", "bytes.per.read",
    "bytes.per.write", "bytes.per.multiget", "numfiles.in.singlecompaction",
    "multiget.io.batch.size", "async.read.bytes", "compression.times.nanos",
    "decompression.times.nanos", "rate.limiter.wait.micros"};
#define NT (int)(sizeof(tickers) / sizeof(tickers[0]))
#define NH (int)(sizeof(histograms) / sizeof(histograms[0]))

int main(void) {
  init_limits();
  FILE* f = fopen("bucket_limits.golden", "w");
  fprintf(f, "%d\n", nlimits);
  for (int i = 0; i < nlimits; i++) fprintf(f, "%" PRIu64 "\n", limits[i]);
  fclose(f);

  hist h;
  f = fopen("histogram_string.golden", "w");
  for (int c = 0; c < NCASES; c++) {
    fill_case(&h, c);
    fprintf(f, "=== %s\n", case_names[c]);
    h_tostring(f, &h);
  }
  fclose(f);

  f = fopen("histogram_data.golden", "w");
  for (int c = 0; c < NCASES; c++) {
    fill_case(&h, c);
    h_data(f, case_names[c], &h);
  }
  fclose(f);

  // Statistics: ticker t gets t*t+1 added in t+1 calls of 1 plus one of t*t-t
  // (the sum is what matters): the Go test records t*t+1 as (t+1) ticks of 1
  // and one tick of t*t-t. Histogram i (odd i only; even ones stay empty)
  // gets 50*i samples v_k = (k*k*(i+1)) % (1000*(i+1)) + i for k < 50*i.
  f = fopen("statistics_string.golden", "w");
  for (int t = 0; t < NT; t++) {
    uint64_t n = (uint64_t)t * t + 1;
    fprintf(f, "shale.%s COUNT : %" PRIu64 "\n", tickers[t], n);
  }
  for (int i = 0; i < NH; i++) {
    h_clear(&h);
    if (i % 2 == 1) {
      for (uint64_t k = 0; k < (uint64_t)(50 * i); k++) h_add(&h, (k * k * (i + 1)) % (1000 * (i + 1)) + i);
    }
    fprintf(f, "shale.%s P50 : %f P95 : %f P99 : %f P100 : %f COUNT : %" PRIu64 " SUM : %" PRIu64 "\n",
            histograms[i], h_pct(&h, 50), h_pct(&h, 95), h_pct(&h, 99), (double)h.max, h.num, h.sum);
  }
  fclose(f);
  return 0;
}
