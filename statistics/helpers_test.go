package statistics

import (
	"strconv"
	"testing"
)

// skipIfRace skips allocation tests under -race: the race detector
// allocates.
func skipIfRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race")
	}
}

// quote is %q, as the errors print values.
func quote(s string) string { return strconv.Quote(s) }
