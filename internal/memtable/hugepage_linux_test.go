package memtable

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestHugePageAdvice checks that a large mapped arena carries the
// MADV_HUGEPAGE advice (the "hg" flag of its mapping in /proc/self/smaps)
// and a small one does not.
func TestHugePageAdvice(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("the kernel has no transparent huge pages")
	}
	for _, tc := range []struct {
		size int
		want bool
	}{{hugePageMin, true}, {64 << 20, true}, {hugePageMin - 4096, false}} {
		t.Run(fmt.Sprint(tc.size), func(t *testing.T) {
			m := New(tc.size)
			defer m.Free()
			require.True(t, m.arena.mapped)
			flags := mappingFlags(t, uintptr(unsafe.Pointer(unsafe.SliceData(m.arena.buf))))
			require.Equal(t, tc.want, slices.Contains(flags, "hg"), "VmFlags %v", flags)
		})
	}
}

// mappingFlags returns the VmFlags of the mapping that holds addr. An
// arena without the advice may share its mapping with a neighbour of the
// same flags (the kernel merges adjacent anonymous mappings), so the
// mapping need not start at addr.
func mappingFlags(t *testing.T, addr uintptr) []string {
	f, err := os.Open("/proc/self/smaps")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var start, end uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &start, &end); n == 2 && strings.Contains(line, " ") && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			in = start <= addr && addr < end
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.Fields(strings.TrimPrefix(line, "VmFlags:"))
		}
	}
	require.NoError(t, sc.Err())
	t.Fatalf("no mapping holds %#x", addr)
	return nil
}
