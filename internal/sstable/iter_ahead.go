package sstable

import (
	"github.com/shaledb/shale/internal/cache"
	"github.com/shaledb/shale/internal/sstable/block"
)

// A forward scan looks up the block after the one it moves to as soon as it
// moves there, and when that block is cached, pins it and prefetches its
// first lines (block.Prefetch). Moving to a cached block otherwise costs a
// few dependent processor cache misses (the cache's index, its entry, then
// the block's restart count and first entries, which a scan over more data
// than the processor's caches finds in memory); looked up a block early,
// the block's lines arrive while the Iter walks the current one. The look-up
// is made before the block moved to is read, so that when that block
// misses the cache and the next one is cached, the readahead refill stops
// at the end of the missed block (PrefetchBuffer.LimitNextRefill) instead
// of copying the cached block from the file: a scan that finds most of its
// blocks cached misses them mostly one at a time.
//
// The look-ahead changes nothing that can be observed: the block is
// counted as a cache hit (its tickers recorded) only when the Iter moves to
// it (takeAhead), and the pin is dropped when the Iter moves anywhere else,
// is exhausted, fails or closes. A block the look-ahead does not find in
// the cache is read as usual when the Iter moves to it; so a scan that
// finds few of its blocks cached (PrefetchBuffer.MostlyCached false: more
// than a quarter of those it visits are read) does not look ahead, whose
// lookups would mostly miss.

// lookAhead pins the cached block after the loaded one, when a forward
// move may read it: it is in the same index (partition), and the loaded
// block's entries are all below upper.
func (i *Iter) lookAhead() {
	i.dropAhead()
	c := i.r.opts.Cache
	if c == nil || !i.belowUpper || i.ib+1 >= i.x.len() {
		return
	}
	h := i.x.handle(i.ib + 1)
	// As readData: a damaged handle must not find a cached block.
	if !blockWithin(h, i.r.dataEnd) {
		return
	}
	hd, ok := c.Get(i.r.cacheKey(h))
	i.aheadAt = h
	if !ok {
		i.aheadMissed = true
		return
	}
	block.Prefetch(hd.Value())
	i.ahead = hd
}

// aheadFound says what the look-ahead knows of a block the Iter moves to.
type aheadFound uint8

const (
	aheadNone aheadFound = iota // it did not look the block up
	aheadHit                    // it holds the block
	aheadMiss                   // the block was not in the cache
)

// takeAhead consumes the look-ahead. When it holds the block at h, it
// returns the block and its pin, recording the cache hit as readData does;
// otherwise it drops the look-ahead's pin and says whether h is the block
// whose look-up missed (see readMissed).
func (i *Iter) takeAhead(h block.Handle) ([]byte, BlockPin, aheadFound) {
	if i.aheadMissed {
		i.aheadMissed = false
		if i.aheadAt == h {
			return nil, BlockPin{}, aheadMiss
		}
		return nil, BlockPin{}, aheadNone
	}
	if !i.ahead.Valid() {
		return nil, BlockPin{}, aheadNone
	}
	hd := i.ahead
	i.ahead = cache.Handle{}
	if i.aheadAt != h {
		hd.Release()
		return nil, BlockPin{}, aheadNone
	}
	v := hd.Value()
	noteDataHit(i.r.opts.Stats, &i.env, len(v))
	return v, BlockPin{h: hd}, aheadHit
}

// readMissed reads the block at h, whose look-up by the look-ahead missed
// the cache: it records the miss as readData does and reads the block as
// readData does after a miss, without looking it up a second time. (A block
// another reader loaded in between is found by the cache's single-flight
// load, which then does not read it again.)
func (i *Iter) readMissed(h block.Handle, dest blockDest) ([]byte, BlockPin, blockLoc, error) {
	noteDataMiss(i.r.opts.Stats, &i.env)
	return i.r.readDataUncached(i.ctx, &i.env, h, dest)
}

// dropAhead releases the look-ahead's pin, if any, and forgets its miss.
func (i *Iter) dropAhead() {
	i.aheadMissed = false
	if i.ahead.Valid() {
		i.ahead.Release()
		i.ahead = cache.Handle{}
	}
}
