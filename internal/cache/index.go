package cache

// hashKey mixes a key into 64 bits: the three words are multiplied by odd
// constants, since offsets are multiples of block sizes and file numbers are
// small, and the product's top bits, which every input bit reaches, pick the
// key's shard (see Cache.shardOf). The whole hash keys the shard's index.
func hashKey(k Key) uint64 {
	h := k.ID*0x9e3779b97f4a7c15 ^ k.FileNum*0xc2b2ae3d27d4eb4f ^ k.Offset*0x165667b19e3779f9
	return h * 0xff51afd7ed558ccd
}

// index maps a key's hash to the chain of entries (linked by hashNext) whose
// keys have that hash. Keying the map by a uint64 rather than by the 24-byte
// Key makes each map operation markedly cheaper (a one-word hash and compare,
// 16-byte slots), and a miss takes four of them; the chain keeps it exact
// when two keys' hashes collide, which is rare enough that chains almost
// always hold one entry. All methods need the shard's write lock, find the
// read lock.
type index map[uint64]*entry

// find returns the entry of k, whose hash is h, or nil.
func (x index) find(h uint64, k Key) *entry {
	e, _ := x.lookup(h, k)
	return e
}

// lookup is find that also returns the head of the chain, for an add that
// follows.
func (x index) lookup(h uint64, k Key) (e, head *entry) {
	head = x[h]
	return chainFind(head, k), head
}

// chainFind returns the entry of k in the chain that starts at e, or nil.
func chainFind(e *entry, k Key) *entry {
	for e != nil && e.key != k {
		e = e.hashNext
	}
	return e
}

// add puts e, which is in no index, on the chain of h, the hash of e.key.
// head must be x[h], which the caller has just looked up.
func (x index) add(h uint64, e, head *entry) {
	if head != nil {
		head.chained = true
		e.hashNext = head
	}
	x[h] = e
}

// remove takes e off the chain of h, the hash of e.key.
func (x index) remove(h uint64, e *entry) {
	switch {
	case e.chained:
		// Not the head: find its predecessor.
		p := x[h]
		for p.hashNext != e {
			p = p.hashNext
		}
		p.hashNext = e.hashNext
	case e.hashNext == nil:
		// The usual case: alone on its chain. The flag spares a lookup.
		delete(x, h)
	default:
		e.hashNext.chained = false
		x[h] = e.hashNext
	}
	e.hashNext, e.chained = nil, false
}
