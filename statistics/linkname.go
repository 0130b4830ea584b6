package statistics

import _ "unsafe" // for go:linkname

// Recording reaches three runtime functions through go:linkname, the only
// way to get a per-P index or the bare monotonic clock. All three are on the
// runtime's list of symbols outside packages may link to (the "hall of
// shame", go.dev/issue/67401): the runtime marks them with a push linkname
// and promises never to remove them or change their signatures, so a plain
// go build and go vet accept them, no -ldflags=-checklinkname=0 needed. They
// exist on every platform.

// nanotime is the runtime's monotonic clock in nanoseconds, from an
// arbitrary origin. time.Since on a monotonic base reads the same clock but
// adds a synctest-bubble check and an overflow-safe subtraction
// (BenchmarkClock compares the two). Unlike time.Since it ignores a
// testing/synctest bubble's fake clock: a latency sample is real time spent.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// procPin returns the ID of the P (the scheduler's processor, one of
// GOMAXPROCS) the calling goroutine runs on, and keeps the goroutine on it
// until procUnpin. sync.Pool picks its per-P shard the same way.
//
//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()
