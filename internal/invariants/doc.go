// Package invariants exposes a compile-time switch for expensive assertions.
// Enabled is true in builds with the "invariants" or "race" tag, so checks
// guarded by it compile away in release builds.
package invariants
