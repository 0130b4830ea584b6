//go:build race

package ioctx

const raceEnabled = true
