package metamorphic

import (
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
)

// model is the reference a history's outputs are checked against: a map
// from key to value, with snapshots as copies of it, transactions as a copy
// plus their writes, and iterators as the sorted entries of their view when
// they were created. It prints exactly what the runner prints for a
// database that behaves as the driver package documents.
type model struct {
	cur     map[string]string
	log     [][]span // the key spans each committed write covered, in commit order
	batches map[string][]mwrite
	snaps   map[string]map[string]string
	txs     map[string]*mtx
	iters   map[string]*miter
}

// mwrite is one write of a batch or transaction.
type mwrite struct {
	kind byte // 'p' put, 'd' delete, 'r' range deletion, 'm' merge
	a, b string
}

// span is a key range [start, end) a write covered; a point write of k
// covers [k, k+"\x00").
type span struct{ start, end string }

func (w mwrite) span() (span, bool) {
	if w.kind == 'r' {
		s, e := rangeEnds(w)
		return span{s, e}, s < e
	}
	return span{w.a, w.a + "\x00"}, true
}

// rangeEnds returns a range deletion's ends as the model compares them: an
// open start ("-") is "", the smallest key, and an open end is afterAll.
func rangeEnds(w mwrite) (string, string) {
	s, e := w.a, w.b
	if s == "-" {
		s = ""
	}
	if e == "-" {
		e = afterAll
	}
	return s, e
}

// empty reports whether a range deletion holds no key.
func (w mwrite) empty() bool {
	s, e := rangeEnds(w)
	return s >= e
}

// afterAll sorts after every key the generator makes (they start with 'k').
const afterAll = "\xff"

type mtx struct {
	view  map[string]string // the snapshot at begin with the tx's writes applied
	w     []mwrite
	begin int // len(log) at begin
}

type miter struct {
	keys, vals []string
	pos        int // -1: not at a key
}

func newModel() *model {
	return &model{
		cur:     map[string]string{},
		batches: map[string][]mwrite{},
		snaps:   map[string]map[string]string{},
		txs:     map[string]*mtx{},
		iters:   map[string]*miter{},
	}
}

func apply(m map[string]string, ws []mwrite) {
	for _, w := range ws {
		switch w.kind {
		case 'p':
			m[w.a] = w.b
		case 'm':
			// The stringappend operator every configuration opens with.
			if v, ok := m[w.a]; ok {
				m[w.a] = v + "," + w.b
			} else {
				m[w.a] = w.b
			}
		case 'd':
			delete(m, w.a)
		case 'r':
			s, e := rangeEnds(w)
			for k := range m {
				if s <= k && k < e {
					delete(m, k)
				}
			}
		}
	}
}

// commit applies ws to the current state and logs the spans they cover.
func (m *model) commit(ws []mwrite) {
	apply(m.cur, ws)
	var sp []span
	for _, w := range ws {
		if s, ok := w.span(); ok {
			sp = append(sp, s)
		}
	}
	m.log = append(m.log, sp)
}

// conflicts reports whether a write committed since begin covers a key
// range one of ws covers.
func (m *model) conflicts(begin int, ws []mwrite) bool {
	for _, logged := range m.log[begin:] {
		for _, a := range logged {
			for _, w := range ws {
				if b, ok := w.span(); ok && a.start < b.end && b.start < a.end {
					return true
				}
			}
		}
	}
	return false
}

// parseWrite reads the write an op of put, del or delrange describes.
func parseWrite(o Op) (mwrite, string, error) {
	args, wo := writeOpt(o.Args)
	switch o.Name {
	case "put":
		if len(args) != 2 {
			return mwrite{}, "", errors.Newf("%q: want key and value", o.String())
		}
		return mwrite{'p', args[0], string(ValueBytes(args[1]))}, wo, nil
	case "merge":
		if len(args) != 2 {
			return mwrite{}, "", errors.Newf("%q: want key and operand", o.String())
		}
		return mwrite{'m', args[0], string(ValueBytes(args[1]))}, wo, nil
	case "del":
		if len(args) != 1 {
			return mwrite{}, "", errors.Newf("%q: want a key", o.String())
		}
		return mwrite{'d', args[0], ""}, wo, nil
	case "delrange":
		if len(args) != 2 {
			return mwrite{}, "", errors.Newf("%q: want start and end", o.String())
		}
		return mwrite{'r', args[0], args[1]}, wo, nil
	}
	return mwrite{}, "", errors.Newf("%q is not a write", o.String())
}

func getOut(view map[string]string, k string) string {
	if v, ok := view[k]; ok {
		return fmtVal([]byte(v))
	}
	return "err=notfound"
}

func multiGetOut(view map[string]string, keys []string) string {
	out := make([]string, len(keys))
	for i, k := range keys {
		if v, ok := view[k]; ok {
			out[i] = fmtVal([]byte(v))
		} else {
			out[i] = "<nil>"
		}
	}
	return strings.Join(out, " ")
}

func newMIter(view map[string]string, lo, hi []byte) *miter {
	it := &miter{pos: -1}
	for k := range view {
		if (lo == nil || k >= string(lo)) && (hi == nil || k < string(hi)) {
			it.keys = append(it.keys, k)
		}
	}
	slices.Sort(it.keys)
	for _, k := range it.keys {
		it.vals = append(it.vals, view[k])
	}
	return it
}

// withPrefix returns the entries of view whose key starts with prefix: the
// model of IterOptions.Prefix, independent of how the façade applies it.
func withPrefix(view map[string]string, prefix string) map[string]string {
	out := make(map[string]string)
	for k, v := range view {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}

func scanOut(view map[string]string) string {
	it := newMIter(view, nil, nil)
	var b strings.Builder
	b.WriteString("n=")
	b.WriteString(strconv.Itoa(len(it.keys)))
	for i, k := range it.keys {
		b.WriteByte(' ')
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(fmtVal([]byte(it.vals[i])))
	}
	return b.String()
}

func (it *miter) out() string {
	if it.pos < 0 || it.pos >= len(it.keys) {
		it.pos = -1
		return "."
	}
	return it.keys[it.pos] + "=" + fmtVal([]byte(it.vals[it.pos]))
}

func (it *miter) exec(o Op) (string, error) {
	switch o.Name {
	case "first":
		it.pos = 0
	case "last":
		it.pos = len(it.keys) - 1
	case "next":
		if it.pos >= 0 {
			it.pos++
		}
	case "prev":
		if it.pos >= 0 {
			it.pos--
		}
	case "seekge":
		if err := argN(o, 1); err != nil {
			return "", err
		}
		it.pos, _ = slices.BinarySearch(it.keys, o.Args[0])
	case "seeklt":
		if err := argN(o, 1); err != nil {
			return "", err
		}
		i, _ := slices.BinarySearch(it.keys, o.Args[0])
		it.pos = i - 1
	default:
		return "", errors.Newf("unknown iterator op %q", o.String())
	}
	return it.out(), nil
}

// Exec runs one op on the model and returns its output.
func (m *model) Exec(o Op) (string, error) {
	if o.Obj == "" {
		return m.execDB(o)
	}
	_, b := m.batches[o.Obj]
	_, s := m.snaps[o.Obj]
	_, t := m.txs[o.Obj]
	it, i := m.iters[o.Obj]
	switch {
	case b:
		return m.execBatch(o)
	case s:
		return m.execSnap(o)
	case t:
		return m.execTx(o)
	case i:
		if o.Name == "close" {
			delete(m.iters, o.Obj)
			return "ok", nil
		}
		return it.exec(o)
	}
	return "", errors.Newf("%q: no open object %s", o.String(), o.Obj)
}

func (m *model) execDB(o Op) (string, error) {
	switch o.Name {
	case "put", "del", "delrange", "merge":
		w, _, err := parseWrite(o)
		if err != nil {
			return "", err
		}
		m.commit([]mwrite{w})
		return "ok", nil
	case "get":
		if err := argN(o, 1); err != nil {
			return "", err
		}
		return getOut(m.cur, o.Args[0]), nil
	case "multiget":
		return multiGetOut(m.cur, o.Args), nil
	case "scan":
		return scanOut(m.cur), nil
	case "batch":
		if err := argN(o, 1); err != nil {
			return "", err
		}
		m.batches[o.Args[0]] = []mwrite{}
		return "ok", nil
	case "snap":
		if err := argN(o, 1); err != nil {
			return "", err
		}
		m.snaps[o.Args[0]] = clone(m.cur)
		return "ok", nil
	case "begin":
		args, _ := writeOpt(o.Args)
		if len(args) != 1 {
			return "", errors.Newf("%q: want a name", o.String())
		}
		m.txs[args[0]] = &mtx{view: clone(m.cur), begin: len(m.log)}
		return "ok", nil
	case "iter":
		if err := argN(o, 3); err != nil {
			return "", err
		}
		m.iters[o.Args[0]] = newMIter(m.cur, bound(o.Args[1]), bound(o.Args[2]))
		return "ok", nil
	case "piter":
		if err := argN(o, 4); err != nil {
			return "", err
		}
		m.iters[o.Args[0]] = newMIter(withPrefix(m.cur, o.Args[3]), bound(o.Args[1]), bound(o.Args[2]))
		return "ok", nil
	case "compact":
		if err := argN(o, 2); err != nil {
			return "", err
		}
		if lo, hi := bound(o.Args[0]), bound(o.Args[1]); lo != nil && hi != nil && string(lo) > string(hi) {
			return "err=invalid", nil // an inverted range is a misuse
		}
		return "ok", nil
	case "flush", "syncwal", "reopen":
		return "ok", nil
	case "checkpoint":
		return "ok " + scanOut(m.cur), nil
	case "ingest":
		// A bulk load is a write of its puts, all at once.
		var ws []mwrite
		for i := 0; i+1 < len(o.Args); i += 2 {
			ws = append(ws, mwrite{'p', o.Args[i], string(ValueBytes(o.Args[i+1]))})
		}
		m.commit(ws)
		return "ok", nil
	}
	return "", errors.Newf("unknown op %q", o.String())
}

func (m *model) execBatch(o Op) (string, error) {
	b, ok := m.batches[o.Obj]
	if !ok {
		return "", errors.Newf("%q: no batch %s", o.String(), o.Obj)
	}
	if o.Name == "write" {
		m.commit(b)
		return "ok", nil
	}
	w, _, err := parseWrite(o)
	if err != nil {
		return "", err
	}
	if w.kind == 'r' && w.empty() {
		return "ok", nil // not recorded
	}
	m.batches[o.Obj] = append(b, w)
	return "ok", nil
}

func (m *model) execSnap(o Op) (string, error) {
	view := m.snaps[o.Obj]
	switch o.Name {
	case "get":
		if err := argN(o, 1); err != nil {
			return "", err
		}
		return getOut(view, o.Args[0]), nil
	case "multiget":
		return multiGetOut(view, o.Args), nil
	case "scan":
		return scanOut(view), nil
	case "iter":
		if err := argN(o, 3); err != nil {
			return "", err
		}
		m.iters[o.Args[0]] = newMIter(view, bound(o.Args[1]), bound(o.Args[2]))
		return "ok", nil
	case "piter":
		if err := argN(o, 4); err != nil {
			return "", err
		}
		m.iters[o.Args[0]] = newMIter(withPrefix(view, o.Args[3]), bound(o.Args[1]), bound(o.Args[2]))
		return "ok", nil
	case "close":
		delete(m.snaps, o.Obj)
		return "ok", nil
	}
	return "", errors.Newf("unknown snapshot op %q", o.String())
}

func (m *model) execTx(o Op) (string, error) {
	tx := m.txs[o.Obj]
	switch o.Name {
	case "put", "del", "delrange":
		w, _, err := parseWrite(o)
		if err != nil {
			return "", err
		}
		if w.kind == 'r' && w.empty() {
			return "ok", nil
		}
		tx.w = append(tx.w, w)
		apply(tx.view, []mwrite{w})
		return "ok", nil
	case "get":
		if err := argN(o, 1); err != nil {
			return "", err
		}
		return getOut(tx.view, o.Args[0]), nil
	case "multiget":
		return multiGetOut(tx.view, o.Args), nil
	case "scan":
		return scanOut(tx.view), nil
	case "iter":
		if err := argN(o, 3); err != nil {
			return "", err
		}
		m.iters[o.Args[0]] = newMIter(tx.view, bound(o.Args[1]), bound(o.Args[2]))
		return "ok", nil
	case "piter":
		if err := argN(o, 4); err != nil {
			return "", err
		}
		m.iters[o.Args[0]] = newMIter(withPrefix(tx.view, o.Args[3]), bound(o.Args[1]), bound(o.Args[2]))
		return "ok", nil
	case "commit":
		delete(m.txs, o.Obj)
		if len(tx.w) == 0 {
			return "ok", nil
		}
		if m.conflicts(tx.begin, tx.w) {
			return "err=conflict", nil
		}
		m.commit(tx.w)
		return "ok", nil
	case "rollback":
		delete(m.txs, o.Obj)
		return "ok", nil
	}
	return "", errors.Newf("unknown transaction op %q", o.String())
}

func clone(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
