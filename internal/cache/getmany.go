package cache

// manyBatch is how many keys GetMany looks up under one set of shard locks:
// a MultiGet's batch, and few enough that the locks are held briefly.
const manyBatch = 16

// GetMany looks up every key, as Get would one after the other: out[i] gets a
// referenced handle to keys[i]'s value on a hit (the caller must Release it)
// and the zero Handle on a miss (an absent key or a load in progress). It
// returns the number of hits. A key listed twice gets two handles, each
// holding its own reference. out must be at least as long as keys. GetMany
// does not allocate; on a nil *Cache every key misses.
//
// Get's lookup is a chain of dependent cache misses (the shard's lock, the
// index's buckets, the entry), and the atomic operations of its lock and of
// the reference count keep the CPU from starting the next key's chain before
// the last one ends. GetMany takes the read locks of the keys' shards first
// (each once, in shard order, so that two batches cannot deadlock behind
// each other's pending writers), then runs all the index lookups, which have
// no atomics between them and so overlap, then takes the references and
// releases the locks.
func (c *Cache) GetMany(keys []Key, out []Handle) (hits int) {
	out = out[:len(keys)]
	if c == nil {
		clear(out)
		return 0
	}
	for len(keys) > 0 {
		n := min(len(keys), manyBatch)
		hits += c.getMany(keys[:n], out[:n])
		keys, out = keys[n:], out[n:]
	}
	return hits
}

// getMany is GetMany for at most manyBatch keys.
func (c *Cache) getMany(keys []Key, out []Handle) (hits int) {
	var hashes [manyBatch]uint64
	// shards lists the keys' distinct shards, ascending.
	var shards [manyBatch]uint16
	n := 0
	for i, k := range keys {
		h := hashKey(k)
		hashes[i] = h
		if j, dup := insertionPoint(shards[:n], uint16(h>>c.shift)); !dup {
			copy(shards[j+1:n+1], shards[j:n])
			shards[j] = uint16(h >> c.shift)
			n++
		}
	}
	for _, si := range shards[:n] {
		c.shards[si].mu.RLock()
	}
	// The index lookups first, then the entries they found: each loop's
	// loads are independent of each other, so their misses overlap.
	var found [manyBatch]*entry
	for i := range keys {
		s := c.shardOf(hashes[i])
		found[i] = s.entries[hashes[i]&s.mask]
	}
	for i, k := range keys {
		e := chainFind(found[i], k)
		if e == nil || e.state != stateIndexed {
			out[i] = Handle{}
			continue
		}
		out[i] = refLocked(e)
		hits++
	}
	for _, si := range shards[:n] {
		c.shards[si].mu.RUnlock()
	}
	return hits
}

// insertionPoint returns where si goes in the ascending list s, and whether
// s holds it already.
func insertionPoint(s []uint16, si uint16) (int, bool) {
	j := len(s)
	for j > 0 && s[j-1] > si {
		j--
	}
	return j, j > 0 && s[j-1] == si
}
