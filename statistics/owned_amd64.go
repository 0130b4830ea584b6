//go:build amd64 && !race

package statistics

import (
	"sync/atomic"
	"unsafe"
)

// ownedStripes says a P may write its own stripe with plain adds instead of
// locked ones (see Statistics.pin). That takes two things. Writes to a
// stripe must be exclusive: a P's stripe is written only by the goroutine
// running on that P, which procPin keeps from being preempted until
// procUnpin, so it is. And readers, which load each counter atomically and
// sum the stripes while recorders write, must see whole values, in the
// order they were written: a word-sized plain store is whole (the Go memory
// model promises a racing word-sized read some written value), and amd64
// does not reorder stores (nor does the compiler reorder a goroutine's
// stores to memory), so a reader that counts a histogram sample also sees
// its sum, as with atomics. Weakly ordered CPUs (arm64) and the race
// detector, which would rightly report the mixed accesses, keep the locked
// adds.
//
// A locked add costs 6.9-7.7 CPU ns on this project's benchmark VM, a
// plain one 0.62 (BenchmarkOwnedAdd on a loaded run, 37bce2c); a cached Get
// records a dozen counters.
const ownedStripes = true

// addOwned adds n to a counter of the caller's own stripe.
func addOwned(a *atomic.Uint64, n uint64) {
	p := (*uint64)(unsafe.Pointer(a))
	*p += n
}

// raiseOwned sets a counter of the caller's own stripe to v if v is higher.
func raiseOwned(a *atomic.Uint64, v uint64) {
	p := (*uint64)(unsafe.Pointer(a))
	if v > *p {
		*p = v
	}
}
