package ratelimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shaledb/shale/ioctx"
	"github.com/shaledb/shale/statistics"
)

// BenchmarkRequest measures one Request through the Limiter interface, as the
// file reader makes it. limited=false is the not-charged fast path (priority
// Total); limited=true is an uncontended request granted from the current
// period's budget (the rate is high enough never to run dry).
func BenchmarkRequest(b *testing.B) {
	ctx := context.Background()
	stats := statistics.New(statistics.DefaultLevel)
	for _, limited := range []bool{false, true} {
		b.Run(fmt.Sprintf("limited=%t", limited), func(b *testing.B) {
			var l Limiter = NewGeneric(1<<50, 0, 0, ModeReads)
			pri := ioctx.PriorityTotal
			if limited {
				pri = ioctx.PriorityUser
			}
			b.ReportAllocs()
			b.SetBytes(4096)
			for b.Loop() {
				if err := l.Request(ctx, 4096, pri, stats, OpRead); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRequestParallel is BenchmarkRequest/limited=true from every P at
// once: the cost of the one mutex under contention.
func BenchmarkRequestParallel(b *testing.B) {
	ctx := context.Background()
	g := NewGeneric(1<<50, 0, 0, ModeReads)
	b.ReportAllocs()
	b.SetBytes(4096)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := g.Request(ctx, 4096, ioctx.PriorityHigh, nil, OpRead); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkRefill measures one refill that grants queued requests, queued at
// random priorities with a fixed seed: the work done under the mutex by the
// waiter that performs it.
func BenchmarkRefill(b *testing.B) {
	for _, queued := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("queued=%d", queued), func(b *testing.B) {
			g := NewGeneric(1<<30, time.Second, 0, ModeAll)
			rng := rand.New(rand.NewPCG(1, 2))
			size := g.SingleBurstBytes() / int64(queued)
			reqs := make([]*request, queued)
			pris := make([]ioctx.Priority, queued)
			for i := range pris {
				pris[i] = charged[rng.IntN(len(charged))]
			}
			b.ReportAllocs()
			for b.Loop() {
				for i := range reqs {
					reqs[i] = queueFake(g, pris[i], size)
				}
				refillNow(g)
				for _, r := range reqs {
					if r.remaining != 0 {
						b.Fatal("not granted")
					}
					putRequest(r)
				}
			}
		})
	}
}
