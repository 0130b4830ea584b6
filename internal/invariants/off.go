//go:build !invariants && !race

package invariants

// Enabled is false: this build does not check invariants.
const Enabled = false
