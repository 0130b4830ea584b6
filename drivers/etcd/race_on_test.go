//go:build race

package etcd

// raceEnabled says the race detector is on: the in-process members run
// several times slower, so the test cluster's ticks are longer.
const raceEnabled = true
