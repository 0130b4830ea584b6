//go:build !race

package ioctx

const raceEnabled = false
