//go:build !unix

package cache

// mapRegion is unavailable: the cache's buffers live on the Go heap.
func mapRegion(int) []byte { return nil }

func unmapRegion([]byte) {}
