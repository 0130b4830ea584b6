//go:build !amd64 || race

package statistics

import "sync/atomic"

// ownedStripes is false: every write to a stripe is an atomic add (see
// owned_amd64.go for where plain adds are used instead).
const ownedStripes = false

func addOwned(a *atomic.Uint64, n uint64) { a.Add(n) }

func raiseOwned(a *atomic.Uint64, v uint64) {
	if v > a.Load() {
		raise(a, v)
	}
}
