package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/perf/benchfmt"
)

// TestFnvhash64: YCSB's hash is FNV-1a 64 over the record number's eight
// bytes, low byte first, made non-negative; keys are "user" + its decimal.
func TestFnvhash64(t *testing.T) {
	for _, v := range []int64{0, 1, 2, 255, 256, 999999, 1 << 40, math.MaxInt64} {
		h := fnv.New64a()
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		h.Write(b[:])
		want := int64(h.Sum64())
		if want < 0 {
			want = -want
		}
		require.Equal(t, want, fnvhash64(v), "record %d", v)
		require.Equal(t, "user"+strconv.FormatInt(want, 10), string(ycsbKey(nil, v)))
	}
	// The first key of every YCSB load (record 0), as YCSB's own runs name it.
	require.Equal(t, "user6284781860667377211", string(ycsbKey(nil, 0)))
}

// draw returns how often each value of gen's n draws came up.
func draw(n int, gen func() int64) map[int64]int {
	counts := map[int64]int{}
	for range n {
		counts[gen()]++
	}
	return counts
}

func hottest(counts map[int64]int) (int64, int) {
	var k int64 = -1
	best := -1
	for v, c := range counts {
		if c > best || c == best && v < k {
			k, best = v, c
		}
	}
	return k, best
}

// TestScrambledZipfian: the hottest record is the one rank 0 hashes to,
// drawn with rank 0's probability 1/zetan (3.78%) plus the little of the
// other ranks that hash to it; the second is rank 1's (0.5^0.99 of that);
// no draw leaves the key space.
func TestScrambledZipfian(t *testing.T) {
	const n, draws = 1000, 400000
	z := newScrambledZipfian(0, n-1)
	rng := rand.New(rand.NewPCG(1, 2))
	counts := draw(draws, func() int64 { return z.next(rng) })
	for v := range counts {
		require.True(t, v >= 0 && v < n, "draw %d outside [0, %d)", v, n)
	}
	hot, c := hottest(counts)
	require.Equal(t, fnvhash64(0)%n, hot)
	share := float64(c) / draws
	require.InDelta(t, 1/scrambledZetan+1.0/n, share, 0.004, "hottest record's share")
	second := float64(counts[fnvhash64(1)%n]) / draws
	require.InDelta(t, math.Pow(0.5, zipfianConstant)/scrambledZetan+1.0/n, second, 0.003, "rank 1's share")
	// Scrambling spreads the hot records: the ten hottest are not the
	// first ten records.
	low := 0
	for v := range int64(10) {
		low += counts[v]
	}
	require.Less(t, float64(low)/draws, 0.1)
}

// TestZipfian: YCSB's unscrambled generator draws item 0 with probability
// 1/zeta(n) and item 1 with 0.5^theta of that.
func TestZipfian(t *testing.T) {
	const n, draws = 1000, 400000
	z := newZipfianItems(n)
	rng := rand.New(rand.NewPCG(3, 4))
	counts := draw(draws, func() int64 { return z.nextLong(rng.Float64(), n) })
	zeta := zetaSum(0, n, zipfianConstant, 0)
	require.InDelta(t, 1/zeta, float64(counts[0])/draws, 0.005)
	require.InDelta(t, math.Pow(0.5, zipfianConstant)/zeta, float64(counts[1])/draws, 0.004)
	for v := range counts {
		require.True(t, v >= 0 && v <= n, "draw %d", v)
	}
}

// TestSkewedLatest: the newest acknowledged record is the hottest, and
// stays so as inserts are acknowledged; nothing above it is drawn.
func TestSkewedLatest(t *testing.T) {
	const records, draws = 1000, 200000
	c := newAckCounter(records)
	g := newSkewedLatest(c, newZipfianItems(c.lastValue()))
	rng := rand.New(rand.NewPCG(5, 6))
	counts := draw(draws, func() int64 { return g.next(rng) })
	hot, n := hottest(counts)
	require.Equal(t, int64(records-1), hot)
	require.InDelta(t, 1/zetaSum(0, records-1, zipfianConstant, 0), float64(n)/draws, 0.006)
	for range 100 {
		c.acknowledge(c.next())
	}
	counts = draw(draws, func() int64 { return g.next(rng) })
	hot, _ = hottest(counts)
	require.Equal(t, int64(records+99), hot)
	for v := range counts {
		require.True(t, v >= 0 && v <= records+99, "draw %d", v)
	}
}

// TestGeneratorsDeterministic: with the same seed a thread draws the same
// sequence, with another a different one.
func TestGeneratorsDeterministic(t *testing.T) {
	seq := func(seed uint64, latest bool) []int64 {
		c := newAckCounter(5000)
		var kc keyChooser = newScrambledZipfian(0, 5000)
		if latest {
			kc = newSkewedLatest(c, newZipfianItems(c.lastValue()))
		}
		rng := rand.New(rand.NewPCG(seed, 0))
		out := make([]int64, 1000)
		for i := range out {
			out[i] = nextKeynum(kc, rng, c)
		}
		return out
	}
	for _, latest := range []bool{false, true} {
		require.Equal(t, seq(7, latest), seq(7, latest))
		require.NotEqual(t, seq(7, latest), seq(8, latest))
	}
}

// TestAckCounter: the limit reads draw under advances only over records
// acknowledged without a gap below them.
func TestAckCounter(t *testing.T) {
	c := newAckCounter(10)
	require.Equal(t, int64(9), c.lastValue())
	a, b, d := c.next(), c.next(), c.next()
	require.Equal(t, []int64{10, 11, 12}, []int64{a, b, d})
	c.acknowledge(b)
	require.Equal(t, int64(9), c.lastValue())
	c.acknowledge(a)
	require.Equal(t, int64(11), c.lastValue())
	c.acknowledge(d)
	require.Equal(t, int64(12), c.lastValue())
	require.Equal(t, int64(13), c.count())
}

// TestWorkloadMix: each workload draws its operations in YCSB's
// proportions and no other; scans are 1 to 100 records, uniform; the
// zipfian key space leaves room for twice the expected inserts.
func TestWorkloadMix(t *testing.T) {
	want := map[string]map[ycsbOp]float64{
		"A": {opRead: 0.5, opUpdate: 0.5},
		"B": {opRead: 0.95, opUpdate: 0.05},
		"C": {opRead: 1},
		"D": {opRead: 0.95, opInsert: 0.05},
		"E": {opScan: 0.95, opInsert: 0.05},
		"F": {opRead: 0.5, opRMW: 0.5},
	}
	const draws = 200000
	for name, mix := range want {
		w := ycsbWorkloadNamed(name)
		require.NotNil(t, w)
		require.Equal(t, name == "D", w.distribution == "latest", name)
		rng := rand.New(rand.NewPCG(9, 9))
		var counts [numYCSBOps]int
		for range draws {
			counts[w.chooseOp(rng)]++
		}
		for op := range numYCSBOps {
			require.InDelta(t, mix[op], float64(counts[op])/draws, 0.005, "workload %s, %s", name, ycsbOpNames[op])
			if mix[op] == 0 {
				require.Zero(t, counts[op], "workload %s, %s", name, ycsbOpNames[op])
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 1))
	var seen [ycsbMaxScanLength + 2]int
	sum := 0
	for range draws {
		n := scanLength(rng)
		seen[n]++
		sum += n
	}
	require.Zero(t, seen[0])
	require.Zero(t, seen[ycsbMaxScanLength+1])
	require.Positive(t, seen[1])
	require.Positive(t, seen[ycsbMaxScanLength])
	require.InDelta(t, 50.5, float64(sum)/draws, 0.3)

	kc := ycsbWorkloadNamed("E").keyChooser(1000, 1000, newAckCounter(1000), nil).(*scrambledZipfian)
	require.Equal(t, int64(1000+100+1), kc.itemcount)
	kc = ycsbWorkloadNamed("C").keyChooser(1000, 1000, newAckCounter(1000), nil).(*scrambledZipfian)
	require.Equal(t, int64(1000+1), kc.itemcount)
}

// TestLatencyHist: percentiles within the buckets' 3% of the exact ones,
// and every value inside its bucket.
func TestLatencyHist(t *testing.T) {
	for _, v := range []int64{0, 1, 31, 32, 33, 63, 64, 1000, 123456, 1 << 40, math.MaxInt64} {
		i := histBucket(v)
		require.Less(t, i, histBuckets)
		require.GreaterOrEqual(t, bucketHigh(i), v, "value %d", v)
		if i > 0 {
			require.Less(t, bucketHigh(i-1), v, "value %d", v)
		}
	}
	var h latencyHist
	rng := rand.New(rand.NewPCG(2, 3))
	vals := make([]float64, 100000)
	for i := range vals {
		vals[i] = math.Exp(rng.NormFloat64()*1.5 + 9) // log-normal around 8 µs
		h.record(time.Duration(vals[i]))
	}
	var h2 latencyHist
	h2.merge(&h)
	for _, p := range []float64{50, 99, 99.9} {
		exact := percentile(sortedInts(vals), p)
		require.InEpsilon(t, exact, h2.percentile(p), 0.035, "p%v", p)
	}
}

func sortedInts(v []float64) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(time.Duration(x))
	}
	slices.Sort(out)
	return out
}

// TestYCSBRow: a row is ten named fields of 100 B; updating a field keeps
// its shape; a damaged one is caught.
func TestYCSBRow(t *testing.T) {
	row := ycsbRow(make([]byte, ycsbRowSize), 42)
	require.Len(t, row, 1140)
	require.True(t, ycsbRowOK(row))
	before := bytes.Clone(row)
	ycsbSetField(row, 3, 7)
	require.True(t, ycsbRowOK(row))
	require.NotEqual(t, before, row)
	require.Equal(t, before[:3*ycsbFieldSize], row[:3*ycsbFieldSize])
	require.Equal(t, before[4*ycsbFieldSize:], row[4*ycsbFieldSize:])
	row[5*ycsbFieldSize+9] = 'x'
	require.False(t, ycsbRowOK(row))
	require.False(t, ycsbRowOK(row[:100]))
}

// TestYCSBSuite runs the suite end to end at a tiny size, one round on
// shale and Pebble at 1 and 4 threads, every job in-process as its child
// would run it, and checks the report: every workload's rows with a
// ratio under Pebble, every line readable by benchstat, the README
// section rewritten, and -from-json printing the same report again.
func TestYCSBSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("runs shale and Pebble")
	}
	dir := t.TempDir()
	readme := filepath.Join(dir, "README.md")
	require.NoError(t, os.WriteFile(readme, []byte("# x\n\n"+ycsbReadmeBegin+"\nold\n"+ycsbReadmeEnd+"\n\nafter\n"), 0o644))
	out, js := filepath.Join(dir, "out.md"), filepath.Join(dir, "run.json")
	cfg, err := parseFlags([]string{"-suite=ycsb", "-ycsb-records=300", "-ycsb-ops=300", "-rounds=1",
		"-engines=shale,pebble", "-dir=" + dir, "-out=" + out, "-json=" + js, "-readme=" + readme})
	require.NoError(t, err)
	var ran []string
	require.NoError(t, ycsbRounds(cfg, io.Discard, func(j ycsbJob) (*suiteResult, error) {
		c := *cfg
		c.suiteJob = j.id()
		var buf bytes.Buffer
		if err := runYCSBChild(&c, &buf); err != nil {
			return nil, err
		}
		r := &suiteResult{}
		ran = append(ran, j.id())
		return r, json.Unmarshal(buf.Bytes(), r)
	}))
	require.ElementsMatch(t, []string{"shale/t1", "pebble/t1", "shale/t4", "pebble/t4"}, ran)

	report, err := os.ReadFile(out)
	require.NoError(t, err)
	text := string(report)
	for _, phase := range []string{"load", "A", "B", "C", "D", "E", "F"} {
		for _, th := range []string{"1 thread", "4 threads"} {
			require.Contains(t, text, "| **"+phase+"**, "+th+": throughput (ops/s) |")
		}
	}
	for _, op := range ycsbOpNames {
		require.Contains(t, text, "| … "+op+" p99 (µs) |")
	}
	require.NotContains(t, text, "| — |")
	rows := strings.Count(text, "\n| ") - 1 // less the header
	require.Equal(t, rows, strings.Count(text, "<br>**"), "every Pebble cell has its ratio")
	require.Regexp(t, `- shale: [1-9][0-9]* point reads found their row, [1-9][0-9]* scanned rows checked in order, 0 misses`, text)
	require.Regexp(t, `- Pebble: [1-9][0-9]* point reads found their row, [1-9][0-9]* scanned rows checked in order, 0 misses`, text)

	r := benchfmt.NewReader(bytes.NewReader(report), "out.md")
	n := 0
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.Result:
			require.Contains(t, string(rec.Name), "/engine=")
			require.GreaterOrEqual(t, len(rec.Values), 6)
			n++
		case *benchfmt.SyntaxError:
			t.Fatalf("benchstat cannot read the report: %v", rec)
		}
	}
	require.NoError(t, r.Err())
	require.Equal(t, 7*2*2, n, "one line per phase, thread count and engine")

	doc, err := os.ReadFile(readme)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(doc), "# x\n\n"+ycsbReadmeBegin+"\nGenerated by "))
	require.True(t, strings.HasSuffix(string(doc), ycsbReadmeEnd+"\n\nafter\n"))
	require.NotContains(t, string(doc), "\nold\n")
	require.NotContains(t, string(doc), "```", "the README gets the table, not the benchstat lines")

	again, err := parseFlags([]string{"-suite=ycsb", "-from-json=" + js, "-out=" + filepath.Join(dir, "again.md")})
	require.NoError(t, err)
	require.NoError(t, ycsbFromJSON(again, io.Discard))
	b, err := os.ReadFile(filepath.Join(dir, "again.md"))
	require.NoError(t, err)
	require.Equal(t, text, string(b))
}

// TestYCSBMissFails: a read of a record that is not there fails the
// workload (no core workload deletes).
func TestYCSBMissFails(t *testing.T) {
	if testing.Short() {
		t.Skip("opens shale")
	}
	s, err := openShale(t.TempDir(), storeConfig{cacheSize: 8 << 20, memtableSize: 4 << 20, bloomBits: 10, shaleStats: "default"})
	require.NoError(t, err)
	defer s.close()
	_, err = ycsbLoad(s, 1, 100, 1)
	require.NoError(t, err)
	// The counter claims 200 records: draws above 100 find nothing.
	r, err := ycsbTransactions(s, ycsbWorkloadNamed("C"), 2, 500, newAckCounter(200), 1)
	require.NoError(t, err)
	require.Positive(t, r.tally.misses)
	require.ErrorContains(t, r.check("shale", "workload C"), "missed an acknowledged record")
	r, err = ycsbTransactions(s, ycsbWorkloadNamed("E"), 1, 200, newAckCounter(100), 1)
	require.NoError(t, err)
	require.NoError(t, r.check("shale", "workload E"))
	require.Positive(t, r.tally.scanRows)
}

// disorderedStore's scans return first (the start key when nil), then
// "user0" for every further row: keys that do not ascend.
type disorderedStore struct {
	store
	row   []byte
	first []byte
}

func (d disorderedStore) scan(start []byte, n int, visit func(k, v []byte)) error {
	if d.first != nil {
		start = d.first
	}
	visit(start, d.row)
	for i := 1; i < n; i++ {
		visit([]byte("user0"), d.row)
	}
	return nil
}

// TestYCSBScanOrderChecked: a scan whose keys do not ascend, or that does
// not start at its key, fails the workload; one in order passes.
func TestYCSBScanOrderChecked(t *testing.T) {
	row := ycsbRow(make([]byte, ycsbRowSize), 1)
	require.Greater(t, string(ycsbKey(nil, 5)), "user0")
	for _, tc := range []struct {
		n          int
		first      []byte
		misses     int64
		outOfOrder int64
	}{
		{n: 1},
		{n: 3, outOfOrder: 2}, // "user0" is below the start key, then equal to itself
		{n: 1, first: []byte("user9"), misses: 1},
	} {
		var tally ycsbTally
		c := newYCSBClient(disorderedStore{row: row, first: tc.first}, 1, &tally)
		require.NoError(t, c.scan(5, tc.n))
		require.Equal(t, tc.misses, tally.misses)
		require.Equal(t, tc.outOfOrder, tally.outOfOrder)
		require.Equal(t, int64(tc.n), tally.scanRows)
		r := ycsbPhaseResult{tally: tally}
		if tc.misses == 0 && tc.outOfOrder == 0 {
			require.NoError(t, r.check("fake", "workload E"))
		} else {
			require.Error(t, r.check("fake", "workload E"))
		}
	}
}
