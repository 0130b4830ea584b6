package metamorphic

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// GenOptions size a generated history.
type GenOptions struct {
	Ops  int // about this many ops (a large batch or a reopen adds a few)
	Keys int // size of the key universe; 0 picks one from Ops
}

// generator draws a random history of every public operation, keeping
// track of the objects open so that every op it emits is valid: a batch is
// written once, a transaction's iterators are closed before it ends, and
// everything is closed before a reopen.
type generator struct {
	rng  *rand.Rand
	keys int
	ops  []Op

	ids     int
	vals    int
	batches []string
	snaps   []string
	txs     []string
	iters   []string
	owner   map[string]string // iterator -> "" (db), sN or tN
}

// Generate returns a random history drawn from seed.
func Generate(seed uint64, o GenOptions) *History {
	keys := o.Keys
	if keys <= 0 {
		keys = 50 + o.Ops/20
	}
	g := &generator{
		rng:   rand.New(rand.NewPCG(seed, 0x6d657461)),
		keys:  keys,
		owner: map[string]string{},
	}
	g.load()
	for len(g.ops) < o.Ops {
		g.step()
	}
	g.closeAll()
	// End with a full scan and a reopen, so every history also checks
	// what a clean close keeps.
	g.emit("", "scan")
	g.emit("", "reopen")
	g.emit("", "scan")
	return &History{
		Comment: []string{fmt.Sprintf("seed=%d ops=%d keys=%d", seed, o.Ops, keys)},
		Ops:     g.ops,
	}
}

func (g *generator) emit(obj, name string, args ...string) {
	g.ops = append(g.ops, Op{Obj: obj, Name: name, Args: args})
}

func (g *generator) id(prefix string) string {
	g.ids++
	return prefix + strconv.Itoa(g.ids)
}

func keyName(i int) string { return fmt.Sprintf("k%05d", i) }

// key draws a key: half the time from the hottest eighth of the universe,
// and now and then one between two keys of the universe.
func (g *generator) key() string {
	n := g.keys
	if g.rng.IntN(2) == 0 {
		n = max(1, g.keys/8)
	}
	k := keyName(g.rng.IntN(n))
	if g.rng.IntN(20) == 0 {
		k += "a"
	}
	return k
}

// span draws a range [start, end): usually a few keys wide, sometimes half
// the universe, now and then empty or inverted, and now and then open at
// one end ("-": a nil start is before every key, a nil end after every
// key).
func (g *generator) span() (string, string) {
	i := g.rng.IntN(g.keys)
	w := 1 + g.rng.IntN(8)
	switch g.rng.IntN(40) {
	case 0, 1:
		w = g.keys / 2
	case 2, 3:
		w = 0
	case 4, 5:
		w = -1 - g.rng.IntN(3)
	case 6:
		return keyName(i), "-"
	case 7:
		return "-", keyName(i)
	}
	return keyName(i), keyName(i + w)
}

// bounds draws iterator bounds, "-" for an open side.
func (g *generator) bounds() (string, string) {
	switch g.rng.IntN(4) {
	case 0:
		return "-", "-"
	case 1:
		return g.key(), "-"
	case 2:
		return "-", g.key()
	}
	s, e := g.span()
	if g.rng.IntN(3) == 0 {
		e = keyName(g.rng.IntN(g.keys + 1))
	}
	return s, e
}

func (g *generator) value() string {
	g.vals++
	v := "v" + strconv.Itoa(g.vals)
	switch r := g.rng.IntN(40); {
	case r == 0:
		return "''"
	case r < 5:
		return v + "*" + strconv.Itoa(100+g.rng.IntN(2000))
	}
	return v
}

func (g *generator) writeOpt() []string {
	switch g.rng.IntN(12) {
	case 0:
		return []string{"sync"}
	case 1:
		return []string{"nowal"}
	}
	return nil
}

// write emits a put, delete or range deletion on obj ("" for the db).
func (g *generator) write(obj string, opts bool) {
	var wo []string
	if opts {
		wo = g.writeOpt()
	}
	switch r := g.rng.IntN(10); {
	case r < 2 && !strings.HasPrefix(obj, "t"):
		// Transactions have no Merge.
		g.vals++
		g.emit(obj, "merge", append([]string{g.key(), "m" + strconv.Itoa(g.vals)}, wo...)...)
	case r < 6:
		g.emit(obj, "put", append([]string{g.key(), g.value()}, wo...)...)
	case r < 9:
		g.emit(obj, "del", append([]string{g.key()}, wo...)...)
	default:
		s, e := g.span()
		g.emit(obj, "delrange", append([]string{s, e}, wo...)...)
	}
}

func (g *generator) keyList() []string {
	ks := make([]string, 1+g.rng.IntN(6))
	for i := range ks {
		ks[i] = g.key()
	}
	return ks
}

// read emits a get, multiget or (rarely) scan on obj.
func (g *generator) read(obj string) {
	switch r := g.rng.IntN(20); {
	case r < 12:
		g.emit(obj, "get", g.key())
	case r < 19:
		g.emit(obj, "multiget", g.keyList()...)
	default:
		g.emit(obj, "scan")
	}
}

func pick(rng *rand.Rand, xs []string) string { return xs[rng.IntN(len(xs))] }

func remove(xs []string, x string) []string {
	return slices.DeleteFunc(xs, func(y string) bool { return y == x })
}

func (g *generator) closeIter(it string) {
	g.emit(it, "close")
	g.iters = remove(g.iters, it)
	delete(g.owner, it)
}

// endTx closes the transaction's iterators and commits or rolls it back.
func (g *generator) endTx(tx string, commit bool) {
	for _, it := range slices.Clone(g.iters) {
		if g.owner[it] == tx {
			g.closeIter(it)
		}
	}
	if commit {
		g.emit(tx, "commit")
	} else {
		g.emit(tx, "rollback")
	}
	g.txs = remove(g.txs, tx)
}

func (g *generator) closeAll() {
	for _, it := range slices.Clone(g.iters) {
		g.closeIter(it)
	}
	for _, tx := range slices.Clone(g.txs) {
		g.endTx(tx, g.rng.IntN(2) == 0)
	}
	for _, s := range g.snaps {
		g.emit(s, "close")
	}
	g.snaps = nil
	for _, b := range g.batches {
		g.emit(b, "write")
	}
	g.batches = nil
}

// step emits one op, or a short run of them.
func (g *generator) step() {
	rng := g.rng
	switch r := rng.IntN(1000); {
	case r < 220: // point writes and range deletions
		g.write("", true)
	case r < 380:
		g.read("")
	case r < 450: // build a batch, a few writes at a time, and write it
		if len(g.batches) == 0 || rng.IntN(3) == 0 {
			b := g.id("b")
			g.batches = append(g.batches, b)
			g.emit("", "batch", b)
		}
		b := pick(rng, g.batches)
		for range 1 + rng.IntN(4) {
			g.write(b, false)
		}
		if rng.IntN(3) == 0 {
			g.emit(b, "write", g.writeOpt()...)
			g.batches = remove(g.batches, b)
		}
	case r < 455:
		g.largeBatch()
	case r < 480: // snapshots
		if len(g.snaps) < 4 {
			s := g.id("s")
			g.snaps = append(g.snaps, s)
			g.emit("", "snap", s)
		}
	case r < 530:
		if len(g.snaps) > 0 {
			g.read(pick(rng, g.snaps))
		}
	case r < 545:
		if len(g.snaps) > 0 {
			s := pick(rng, g.snaps)
			g.emit(s, "close")
			g.snaps = remove(g.snaps, s)
		}
	case r < 565: // transactions
		if len(g.txs) < 3 {
			t := g.id("t")
			g.txs = append(g.txs, t)
			g.emit("", "begin", append([]string{t}, g.writeOpt()...)...)
		}
	case r < 620:
		if len(g.txs) > 0 {
			t := pick(rng, g.txs)
			if rng.IntN(2) == 0 {
				g.write(t, false)
			} else {
				g.read(t)
			}
		}
	case r < 640:
		if len(g.txs) > 0 {
			g.endTx(pick(rng, g.txs), rng.IntN(5) != 0)
		}
	case r < 650:
		g.conflict()
	case r < 690: // iterators on the db, a snapshot or a transaction
		if len(g.iters) < 5 {
			owner := ""
			switch rng.IntN(4) {
			case 0:
				if len(g.snaps) > 0 {
					owner = pick(rng, g.snaps)
				}
			case 1:
				if len(g.txs) > 0 {
					owner = pick(rng, g.txs)
				}
			}
			it := g.id("i")
			lo, hi := g.bounds()
			if g.rng.IntN(3) == 0 {
				// A prefix of a key (k%05d): 1 to 6 bytes, so that it is
				// shorter, as long as or longer than the configs'
				// prefix extractors.
				k := g.key()
				g.emit(owner, "piter", it, lo, hi, k[:1+g.rng.IntN(len(k))])
			} else {
				g.emit(owner, "iter", it, lo, hi)
			}
			g.iters = append(g.iters, it)
			g.owner[it] = owner
		}
	case r < 920:
		if len(g.iters) > 0 {
			g.iterMoves(pick(rng, g.iters))
		}
	case r < 940:
		if len(g.iters) > 0 {
			g.closeIter(pick(rng, g.iters))
		}
	case r < 955:
		g.emit("", "flush")
	case r < 965:
		if rng.IntN(3) == 0 {
			g.emit("", "compact", "-", "-")
		} else {
			lo, hi := g.bounds()
			g.emit("", "compact", lo, hi)
		}
	case r < 972: // unlogged writes made durable by a flush
		for range 1 + rng.IntN(10) {
			g.emit("", "put", g.key(), g.value(), "nowal")
		}
		g.emit("", "flush")
	case r < 978:
		g.emit("", "syncwal")
	case r < 984:
		g.emit("", "checkpoint")
	case r < 990:
		g.closeAll()
		g.emit("", "reopen")
	case r < 995:
		g.ingest()
	default:
		g.emit("", "scan")
	}
}

// ingest emits a bulk load of a few puts, keys increasing and distinct.
func (g *generator) ingest() {
	keys := make(map[string]bool)
	for range 1 + g.rng.IntN(8) {
		keys[g.key()] = true
	}
	var args []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		args = append(args, k, g.value())
	}
	g.emit("", "ingest", args...)
}

// iterMoves emits a positioning op and a few steps from it.
func (g *generator) iterMoves(it string) {
	rng := g.rng
	switch rng.IntN(6) {
	case 0:
		g.emit(it, "first")
	case 1:
		g.emit(it, "last")
	case 2, 3:
		g.emit(it, "seekge", g.key())
	case 4, 5:
		g.emit(it, "seeklt", g.key())
	}
	dir := "next"
	if rng.IntN(2) == 0 {
		dir = "prev"
	}
	for range rng.IntN(8) {
		if rng.IntN(6) == 0 {
			if dir == "next" {
				dir = "prev"
			} else {
				dir = "next"
			}
		}
		g.emit(it, dir)
	}
}

// largeBatch writes a batch of half a small memtable or more (with range
// deletions among its writes), which the engine turns into a memtable of
// its own.
func (g *generator) largeBatch() {
	b := g.id("b")
	g.emit("", "batch", b)
	n := 100 + g.rng.IntN(300)
	for range n {
		if g.rng.IntN(50) == 0 {
			s, e := g.span()
			g.emit(b, "delrange", s, e)
			continue
		}
		g.vals++
		g.emit(b, "put", g.key(), "v"+strconv.Itoa(g.vals)+"*"+strconv.Itoa(100+g.rng.IntN(400)))
	}
	g.emit(b, "write", g.writeOpt()...)
}

// load starts a history with a batch that writes about half the
// universe, so that reads and iterators find keys from the first op.
func (g *generator) load() {
	b := g.id("b")
	g.emit("", "batch", b)
	for i := 0; i < g.keys; i += 1 + g.rng.IntN(3) {
		g.emit(b, "put", keyName(i), g.value())
	}
	g.emit(b, "write")
}

// conflict emits two transactions that write the same key: the second to
// commit must fail with a conflict. Now and then a plain write of the key
// between the begins and the commits makes both fail.
func (g *generator) conflict() {
	t1, t2 := g.id("t"), g.id("t")
	k := g.key()
	g.emit("", "begin", t1)
	g.emit("", "begin", t2)
	g.emit(t1, "put", k, g.value())
	if g.rng.IntN(4) == 0 {
		s := keyName(max(0, g.rng.IntN(g.keys)-2))
		g.emit(t2, "delrange", s, k+"z")
	} else {
		g.emit(t2, "put", k, g.value())
	}
	g.emit(t2, "get", k)
	if g.rng.IntN(5) == 0 {
		g.emit("", "put", k, g.value())
	}
	first, second := t1, t2
	if g.rng.IntN(2) == 0 {
		first, second = t2, t1
	}
	g.emit(first, "commit")
	g.emit(second, "commit")
}
