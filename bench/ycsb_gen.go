package main

// YCSB's generators, ported from its core package (site.ycsb.generator and
// site.ycsb.workloads.CoreWorkload, YCSB 0.17) so that the request
// distributions, key names and operation mixes are YCSB's own, constants
// and quirks included. Each thread owns its generators and its random
// source (seeded, so a run is repeatable); what YCSB shares between
// threads and must stay shared, the insert counter, is shared here too.

import (
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
)

// YCSB's constants.
const (
	// zipfianConstant is ZipfianGenerator.ZIPFIAN_CONSTANT.
	zipfianConstant = 0.99
	// scrambledItems and scrambledZetan are ScrambledZipfianGenerator's
	// ITEM_COUNT and ZETAN: the scrambled generator draws from a zipfian
	// over ten billion items, whose zeta(0.99) YCSB precomputed, and hashes
	// the rank into the key space.
	scrambledItems = 10_000_000_000
	scrambledZetan = 26.46902820178302

	fnvOffsetBasis64 = -3750763034362895579 // 0xCBF29CE484222325 as Java's long
	fnvPrime64       = 1099511628211
)

// fnvhash64 is YCSB's Utils.fnvhash64: FNV-1a over the eight bytes of v,
// low byte first, then Math.abs (which leaves math.MinInt64 negative, as
// Java's does).
func fnvhash64(v int64) int64 {
	h := int64(fnvOffsetBasis64)
	for range 8 {
		octet := v & 0xff
		v >>= 8
		h ^= octet
		h *= fnvPrime64
	}
	if h < 0 {
		h = -h
	}
	return h
}

// ycsbKey appends YCSB's key for record keynum to buf: CoreWorkload's
// buildKeyName with insertorder=hashed (the default) and zeropadding=1,
// "user" followed by the decimal fnvhash64 of the record number.
func ycsbKey(buf []byte, keynum int64) []byte {
	return strconv.AppendInt(append(buf[:0], "user"...), fnvhash64(keynum), 10)
}

// zetaSum is ZipfianGenerator.zetastatic: initial + Σ 1/(i+1)^theta for i
// in [st, n).
func zetaSum(st, n int64, theta, initial float64) float64 {
	sum := initial
	for i := st; i < n; i++ {
		sum += 1 / math.Pow(float64(i+1), theta)
	}
	return sum
}

// zipfian is YCSB's ZipfianGenerator (Gray et al.'s "Quickly generating
// billion-record synthetic databases"): item 0 the most popular, item i
// drawn with probability about 1/(i+1)^theta / zeta(n). It is not safe for
// concurrent use: each thread has its own copy.
type zipfian struct {
	items        int64
	base         int64
	theta        float64
	zeta2theta   float64
	alpha        float64
	zetan        float64
	eta          float64
	countForZeta int64
}

// newZipfian is ZipfianGenerator(min, max, theta, zetan).
func newZipfian(lo, hi int64, theta, zetan float64) *zipfian {
	z := &zipfian{items: hi - lo + 1, base: lo, theta: theta}
	z.zeta2theta = zetaSum(0, 2, theta, 0)
	z.alpha = 1 / (1 - theta)
	z.zetan = zetan
	z.countForZeta = z.items
	z.eta = (1 - math.Pow(2/float64(z.items), 1-theta)) / (1 - z.zeta2theta/z.zetan)
	return z
}

// newZipfianItems is ZipfianGenerator(items): [0, items) at 0.99, its zeta
// computed (items pow calls: 20 ms for a million).
func newZipfianItems(items int64) *zipfian {
	return newZipfian(0, items-1, zipfianConstant, zetaSum(0, items, zipfianConstant, 0))
}

// nextLong is ZipfianGenerator.nextLong(itemcount) with u, a uniform
// double in [0, 1). When the item count has grown (the latest
// distribution's inserts), zeta is extended incrementally; eta is then
// recomputed from the constructor's item count, not the new one, as
// YCSB does.
func (z *zipfian) nextLong(u float64, itemcount int64) int64 {
	if itemcount > z.countForZeta {
		z.zetan = zetaSum(z.countForZeta, itemcount, z.theta, z.zetan)
		z.countForZeta = itemcount
		z.eta = (1 - math.Pow(2/float64(z.items), 1-z.theta)) / (1 - z.zeta2theta/z.zetan)
	}
	uz := u * z.zetan
	if uz < 1 {
		return z.base
	}
	if uz < 1+math.Pow(0.5, z.theta) {
		return z.base + 1
	}
	return z.base + int64(float64(itemcount)*math.Pow(z.eta*u-z.eta+1, z.alpha))
}

// keyChooser draws a record number to operate on.
type keyChooser interface {
	next(rng *rand.Rand) int64
}

// scrambledZipfian is YCSB's ScrambledZipfianGenerator(min, max) at 0.99:
// a zipfian rank over ten billion items hashed into [min, max], so that
// the popular records are spread over the key space instead of being its
// first ones.
type scrambledZipfian struct {
	lo, itemcount int64
	gen           *zipfian
}

func newScrambledZipfian(lo, hi int64) *scrambledZipfian {
	return &scrambledZipfian{lo: lo, itemcount: hi - lo + 1,
		gen: newZipfian(0, scrambledItems, zipfianConstant, scrambledZetan)}
}

func (s *scrambledZipfian) next(rng *rand.Rand) int64 {
	r := s.gen.nextLong(rng.Float64(), s.gen.items)
	return s.lo + fnvhash64(r)%s.itemcount
}

// skewedLatest is YCSB's SkewedLatestGenerator: the most recently inserted
// record is the most popular, popularity falling off zipfian with age.
type skewedLatest struct {
	basis *ackCounter
	z     *zipfian
}

// newSkewedLatest builds one thread's generator over basis; z0, shared
// read-only, spares each thread the zeta computation.
func newSkewedLatest(basis *ackCounter, z0 *zipfian) *skewedLatest {
	z := *z0
	return &skewedLatest{basis: basis, z: &z}
}

func (s *skewedLatest) next(rng *rand.Rand) int64 {
	mx := s.basis.lastValue()
	return mx - s.z.nextLong(rng.Float64(), mx)
}

// uniformKeys is YCSB's UniformLongGenerator over [lo, hi].
type uniformKeys struct{ lo, hi int64 }

func (u uniformKeys) next(rng *rand.Rand) int64 { return u.lo + rng.Int64N(u.hi-u.lo+1) }

// ackCounter is YCSB's AcknowledgedCounterGenerator, the transaction
// phase's insert key sequence: next hands out record numbers, acknowledge
// marks one written, and lastValue is the highest number below which every
// record is written, the bound reads draw under (a read never asks for a
// record whose insert is still in flight).
type ackCounter struct {
	counter atomic.Int64
	limit   atomic.Int64
	mu      sync.Mutex
	pending map[int64]bool
}

// newAckCounter starts the sequence at start: records below it exist.
func newAckCounter(start int64) *ackCounter {
	c := &ackCounter{pending: map[int64]bool{}}
	c.counter.Store(start)
	c.limit.Store(start - 1)
	return c
}

func (c *ackCounter) next() int64      { return c.counter.Add(1) - 1 }
func (c *ackCounter) lastValue() int64 { return c.limit.Load() }

// count is the number of records handed out so far.
func (c *ackCounter) count() int64 { return c.counter.Load() }

func (c *ackCounter) acknowledge(v int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending[v] = true
	l := c.limit.Load()
	for c.pending[l+1] {
		delete(c.pending, l+1)
		l++
	}
	c.limit.Store(l)
}

// YCSB's operations.
type ycsbOp int

const (
	opRead ycsbOp = iota
	opUpdate
	opInsert
	opScan
	opRMW
	numYCSBOps
)

var ycsbOpNames = [numYCSBOps]string{"read", "update", "insert", "scan", "read-modify-write"}

// ycsbWorkload is one of YCSB's core workloads (workloads/workloada …
// workloadf): the operation proportions and the request distribution.
// Every core workload reads all fields (readallfields=true) and updates
// one (writeallfields=false); scans are 1 to 100 records long, uniform.
type ycsbWorkload struct {
	name         string
	proportions  [numYCSBOps]float64
	distribution string // zipfian or latest
	about        string
}

var ycsbWorkloads = []ycsbWorkload{
	{"A", [numYCSBOps]float64{opRead: 0.5, opUpdate: 0.5}, "zipfian", "update heavy: 50% read, 50% update"},
	{"B", [numYCSBOps]float64{opRead: 0.95, opUpdate: 0.05}, "zipfian", "read mostly: 95% read, 5% update"},
	{"C", [numYCSBOps]float64{opRead: 1}, "zipfian", "read only"},
	{"D", [numYCSBOps]float64{opRead: 0.95, opInsert: 0.05}, "latest", "read latest: 95% read, 5% insert, reads skewed to the newest records"},
	{"E", [numYCSBOps]float64{opScan: 0.95, opInsert: 0.05}, "zipfian", "short ranges: 95% scan of 1–100 records, 5% insert"},
	{"F", [numYCSBOps]float64{opRead: 0.5, opRMW: 0.5}, "zipfian", "read-modify-write: 50% read, 50% read-modify-write"},
}

// ycsbRunOrder is the order the workloads run in on one database, YCSB's
// recommended sequence (A, B, C, F, D: D's inserts last among them), with
// E, whose inserts YCSB would reload the database for, after D.
var ycsbRunOrder = []string{"A", "B", "C", "F", "D", "E"}

// ycsbMaxScanLength is CoreWorkload's maxscanlength default.
const ycsbMaxScanLength = 100

// chooseOp is YCSB's DiscreteGenerator over the workload's proportions,
// in the order CoreWorkload adds them (read, update, insert, scan,
// read-modify-write).
func (w *ycsbWorkload) chooseOp(rng *rand.Rand) ycsbOp {
	sum := 0.0
	for _, p := range w.proportions {
		sum += p
	}
	val := rng.Float64()
	last := opRead
	for op, p := range w.proportions {
		if p == 0 {
			continue
		}
		last = ycsbOp(op)
		if pw := p / sum; val < pw {
			return ycsbOp(op)
		} else {
			val -= pw
		}
	}
	return last
}

// keyChooser returns one thread's request distribution for w over records
// [0, records) with ops operations to come: CoreWorkload's choice, a
// scrambled zipfian over the records plus twice the expected inserts (so
// that inserts do not change which records are popular; draws above the
// acknowledged ones are redrawn), or the latest distribution over basis.
func (w *ycsbWorkload) keyChooser(records, ops int64, basis *ackCounter, latest0 *zipfian) keyChooser {
	if w.distribution == "latest" {
		return newSkewedLatest(basis, latest0)
	}
	expectedNew := int64(float64(ops) * w.proportions[opInsert] * 2)
	return newScrambledZipfian(0, records+expectedNew)
}

// nextKeynum is CoreWorkload.nextKeynum: a draw of kc at or below the
// highest acknowledged record.
func nextKeynum(kc keyChooser, rng *rand.Rand, basis *ackCounter) int64 {
	for {
		if k := kc.next(rng); k <= basis.lastValue() {
			return k
		}
	}
}

// scanLength is CoreWorkload's uniform scan length, 1 to maxscanlength.
func scanLength(rng *rand.Rand) int { return 1 + rng.IntN(ycsbMaxScanLength) }
