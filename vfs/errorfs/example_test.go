package errorfs_test

import (
	"fmt"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// ExampleWrapObserver records every file read and checks its IO activity,
// as the engine's tests do to assert that each read of a Get is tagged
// ActivityGet.
func ExampleWrapObserver() {
	var (
		mu    sync.Mutex // the engine reads from many goroutines
		reads []errorfs.Op
	)
	fs := errorfs.WrapObserver(vfs.NewMem(), func(op errorfs.Op) {
		if op.Kind == errorfs.OpFileRead {
			mu.Lock()
			reads = append(reads, op)
			mu.Unlock()
		}
	})

	f, _ := fs.Create("000001.sst")
	_, _ = f.Write([]byte("block0block1"))
	_ = f.Close()

	// The file reader reads through vfs.ReadAtOptions with the IO options
	// derived from the Get's ReadOptions.
	r, _ := fs.Open("000001.sst")
	buf := make([]byte, 6)
	get := ioctx.IOOptions{Activity: ioctx.ActivityGet, RateLimiterPriority: ioctx.PriorityUser}
	_, _ = vfs.ReadAtOptions(r, get, buf, 6)
	_, _ = r.ReadAt(buf, 0) // an untagged read, which the check catches
	_ = r.Close()

	mu.Lock()
	defer mu.Unlock()
	for _, op := range reads {
		if op.IO.Activity != ioctx.ActivityGet {
			fmt.Println("untagged:", op)
			continue
		}
		fmt.Println("ok:", op)
	}
	// Output:
	// ok: FileRead 000001.sst off=6 len=6 activity=Get priority=User
	// untagged: FileRead 000001.sst off=0 len=6
}

// ExampleWrap fails every read of a table file.
func ExampleWrap() {
	mem := vfs.NewMem()
	f, _ := mem.Create("000001.sst")
	_, _ = f.Write([]byte("table"))
	_ = f.Close()

	fs := errorfs.Wrap(mem, errorfs.And(errorfs.Reads(), errorfs.PathMatch("*.sst")))
	_, err := fs.Open("000001.sst")
	fmt.Println(errors.Is(err, errorfs.ErrInjected))
	fmt.Println(err)
	// Output:
	// true
	// Open 000001.sst (injected by And(Reads, PathMatch("*.sst"))): errorfs: injected error
}
