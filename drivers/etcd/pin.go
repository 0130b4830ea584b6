package etcd

import (
	"sync"
	"sync/atomic"
)

// pins tracks the revisions that this DB's open iterators, transactions and
// multi-Txn MultiGets read at, so that Compact never compacts past one of
// them.
//
// A reader registers its pin before its first RPC, when it does not yet
// know the revision it will read at, with a floor: the highest revision any
// response of this DB has shown so far. Its first read is linearizable and
// starts later, so it reads at a revision at least that high. Compact reads
// the current revision C first and the pins second, and compacts to at most
// the lowest pin and C. A reader registered after Compact read the pins
// reads at a revision at least C (it starts after C was current), and one
// registered before is counted, at its floor or its revision: either way
// the revision it reads at survives.
type pins struct {
	// seen is the highest revision of any response header.
	seen atomic.Int64

	mu  sync.Mutex
	set map[*pin]struct{}
}

// pin is one reader's registration: the revision it reads at, or until it
// knows it, the floor it was registered with.
type pin struct {
	rev int64
}

// observe records a response's revision.
func (p *pins) observe(rev int64) {
	for {
		old := p.seen.Load()
		if rev <= old || p.seen.CompareAndSwap(old, rev) {
			return
		}
	}
}

// add registers a reader whose revision is not known yet.
func (p *pins) add() *pin {
	pn := &pin{rev: p.seen.Load()}
	p.mu.Lock()
	if p.set == nil {
		p.set = make(map[*pin]struct{})
	}
	p.set[pn] = struct{}{}
	p.mu.Unlock()
	return pn
}

// resolve records the revision the reader reads at (never below its floor,
// which it cannot be).
func (p *pins) resolve(pn *pin, rev int64) {
	p.mu.Lock()
	pn.rev = max(pn.rev, rev)
	p.mu.Unlock()
}

// remove ends a registration. A nil pin is ignored.
func (p *pins) remove(pn *pin) {
	if pn == nil {
		return
	}
	p.mu.Lock()
	delete(p.set, pn)
	p.mu.Unlock()
}

// min returns the lowest pinned revision, and false when nothing is pinned.
func (p *pins) min() (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	lowest, any := int64(0), false
	for pn := range p.set {
		if !any || pn.rev < lowest {
			lowest, any = pn.rev, true
		}
	}
	return lowest, any
}
