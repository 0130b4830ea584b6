package memtable

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/shaledb/shale/internal/base"
	"github.com/stretchr/testify/require"
)

// TestReleaseDropsPages checks that Release gives a mapped arena's written
// pages back to the kernel (its mapping's Rss falls) and that the arena
// serves a new memtable after Reset.
func TestReleaseDropsPages(t *testing.T) {
	m := New(8 << 20)
	defer m.Free()
	require.True(t, m.arena.mapped)
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(m.arena.buf)))
	value := make([]byte, 1000)
	for i := 0; m.arena.size() < 6<<20; i++ {
		require.NoError(t, m.Add(base.SeqNum(i+1), base.KindSet, fmt.Appendf(nil, "k%07d", i), value))
	}
	written := mappingRssKiB(t, addr)
	require.GreaterOrEqual(t, written, 6<<10, "the written arena is resident")

	m.Release()
	require.Less(t, mappingRssKiB(t, addr), 64, "a released arena holds no memory")

	m.Reset()
	require.NoError(t, m.Add(1, base.KindSet, []byte("k"), []byte("v")))
	v, _, ok := m.Get([]byte("k"), 1)
	require.True(t, ok)
	require.Equal(t, "v", string(v))
	require.Less(t, mappingRssKiB(t, addr), 4<<10, "a reset arena is resident only where written")
}

// mappingRssKiB returns the resident KiB of the mapping that starts at addr.
func mappingRssKiB(t *testing.T, addr uintptr) int {
	f, err := os.Open("/proc/self/smaps")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var start, end uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &start, &end); n == 2 && strings.Contains(line, " ") && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			in = start == addr
			continue
		}
		var kib int
		if in && strings.HasPrefix(line, "Rss:") {
			_, err := fmt.Sscanf(line, "Rss: %d kB", &kib)
			require.NoError(t, err)
			return kib
		}
	}
	require.NoError(t, sc.Err())
	t.Fatalf("no mapping starts at %#x", addr)
	return 0
}
