package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/ratelimit"
)

func Example() {
	// 1 MiB/s for reads, refilled every 100 ms (RocksDB's default), so the
	// burst is 104857 bytes.
	lim := ratelimit.NewGeneric(1<<20, 0, 0, ratelimit.ModeReads)
	defer lim.Close()
	ctx := context.Background()

	// A user read of 4 KiB, charged at PriorityUser.
	if err := lim.Request(ctx, 4096, ioctx.PriorityUser, nil, ratelimit.OpRead); err != nil {
		fmt.Println(err)
	}
	// A read of 1 MiB in direct IO: clamped to the burst, rounded down to
	// whole 4 KiB pages. More than is left of this period, so it takes the
	// rest and waits for the next refill.
	n, err := lim.RequestToken(ctx, 1<<20, 4096, ioctx.PriorityLow, nil, ratelimit.OpRead)
	fmt.Println(n, err)
	// Writes, and reads at PriorityTotal, are not charged in this mode.
	_ = lim.Request(ctx, 1<<30, ioctx.PriorityTotal, nil, ratelimit.OpRead)
	_ = lim.Request(ctx, 1<<30, ioctx.PriorityHigh, nil, ratelimit.OpWrite)

	fmt.Println(lim.SingleBurstBytes(), lim.TotalRequests(ioctx.PriorityTotal), lim.TotalBytesThrough(ioctx.PriorityTotal))
	// Output:
	// 102400 <nil>
	// 104857 2 106496
}

func ExampleLimiter_cancel() {
	lim := ratelimit.NewGeneric(1000, time.Second, 0, ratelimit.ModeAll)
	defer lim.Close()
	// Spend the first refill, so the next request has to wait a second.
	_ = lim.Request(context.Background(), 1000, ioctx.PriorityHigh, nil, ratelimit.OpWrite)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err := lim.Request(ctx, 500, ioctx.PriorityHigh, nil, ratelimit.OpWrite)
	fmt.Println(err)
	fmt.Println(lim.TotalPendingRequests(ioctx.PriorityTotal))
	// Output:
	// ratelimit: 500-byte request at priority High: context deadline exceeded
	// 0
}
