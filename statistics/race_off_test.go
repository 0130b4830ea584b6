//go:build !race

package statistics

const raceEnabled = false
