//go:build unix && !linux

package cache

// mapNoReserve is Linux's MAP_NORESERVE; elsewhere a private anonymous
// mapping is already committed lazily, or the flag does not exist.
const mapNoReserve = 0
