//go:build !unix

package memtable

// mapMemory is unavailable: arenas live on the Go heap.
func mapMemory(int) []byte { return nil }

func unmapMemory([]byte) {}
