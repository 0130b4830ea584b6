//go:build race

package invariants

// RaceEnabled is true when built with -race. Allocation tests skip under it:
// the race detector allocates.
const RaceEnabled = true
