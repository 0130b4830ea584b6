package driver_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"slices"
	"sort"
	"sync"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
)

// memDriver is a minimal driver: a sorted map behind a mutex. It implements
// only the required interfaces, so MultiGet runs the façade's fallback, and
// it logs the activity and priority of each read it is asked for, which an
// engine would pass down to its file reads.
type memDriver struct{}

func (memDriver) Open(dsn string) (driver.DriverConn, error) {
	d, err := driver.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	c := &memConn{data: map[string][]byte{}}
	if v, ok, err := d.LookupBool("log_reads"); err != nil {
		return nil, err
	} else if ok {
		c.logReads = v
	}
	if unused := d.Unused(); len(unused) > 0 {
		return nil, fmt.Errorf("mem: unknown DSN parameters %q", unused)
	}
	return c, nil
}

type memConn struct {
	mu       sync.Mutex
	data     map[string][]byte
	logReads bool
}

func (c *memConn) logRead(api string, req ioctx.ReadRequest) {
	if c.logReads {
		fmt.Printf("  driver: %s activity=%s priority=%s\n", api, req.IO.Activity, req.IO.RateLimiterPriority)
	}
}

func (c *memConn) Get(ctx context.Context, req ioctx.ReadRequest, key []byte) ([]byte, error) {
	c.logRead("Get", req)
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.data[string(key)]
	if !ok {
		return nil, driver.ErrNotFound
	}
	return slices.Clone(v), nil
}

func (c *memConn) Put(ctx context.Context, _ ioctx.WriteOptions, key, value []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.data[string(key)] = append([]byte{}, value...)
	return nil
}

func (c *memConn) Delete(ctx context.Context, _ ioctx.WriteOptions, key []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.data, string(key))
	return nil
}

// Write reads the batch with its Reader, which does not allocate. It never
// sees a range deletion: memConn does not implement driver.RangeDeleter.
func (c *memConn) Write(ctx context.Context, _ ioctx.WriteOptions, b *driver.Batch) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := b.Reader()
	for op, ok := r.Next(); ok; op, ok = r.Next() {
		if op.Kind == driver.OpDelete {
			delete(c.data, string(op.Key))
		} else {
			c.data[string(op.Key)] = append([]byte{}, op.Value...)
		}
	}
	return nil
}

func (c *memConn) NewIterator(ctx context.Context, req ioctx.ReadRequest, opts driver.IterOptions) (driver.Iter, error) {
	c.logRead("NewIterator", req)
	c.mu.Lock()
	defer c.mu.Unlock()
	it := &memIter{pos: -1}
	for k, v := range c.data {
		if (opts.LowerBound == nil || k >= string(opts.LowerBound)) && (opts.UpperBound == nil || k < string(opts.UpperBound)) {
			it.keys = append(it.keys, k)
			it.vals = append(it.vals, v)
		}
	}
	sort.Sort(it)
	return it, nil
}

func (c *memConn) Close() error { return nil }

// memIter iterates a sorted snapshot.
type memIter struct {
	keys []string
	vals [][]byte
	pos  int
}

func (it *memIter) Len() int           { return len(it.keys) }
func (it *memIter) Less(i, j int) bool { return it.keys[i] < it.keys[j] }
func (it *memIter) Swap(i, j int) {
	it.keys[i], it.keys[j] = it.keys[j], it.keys[i]
	it.vals[i], it.vals[j] = it.vals[j], it.vals[i]
}

func (it *memIter) at(i int) bool { it.pos = i; return i >= 0 && i < len(it.keys) }
func (it *memIter) First() bool   { return it.at(0) }
func (it *memIter) Last() bool    { return it.at(len(it.keys) - 1) }
func (it *memIter) SeekGE(k []byte) bool {
	return it.at(sort.SearchStrings(it.keys, string(k)))
}
func (it *memIter) SeekLT(k []byte) bool {
	return it.at(sort.SearchStrings(it.keys, string(k)) - 1)
}
func (it *memIter) Next() bool    { return it.at(it.pos + 1) }
func (it *memIter) Prev() bool    { return it.at(it.pos - 1) }
func (it *memIter) Key() []byte   { return []byte(it.keys[it.pos]) }
func (it *memIter) Value() []byte { return it.vals[it.pos] }
func (it *memIter) Error() error  { return nil }
func (it *memIter) Close() error  { return nil }

func init() {
	// A real engine registers itself in its own init, and users import it
	// for that side effect.
	driver.Register("example-mem", memDriver{})
}

func Example() {
	ctx := context.Background()
	db, err := driver.Open("example-mem", ":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	var b driver.Batch
	b.Put([]byte("apple"), []byte("red"))
	b.Put([]byte("banana"), []byte("yellow"))
	b.Put([]byte("cherry"), []byte("dark red"))
	b.Put([]byte("empty"), nil)
	if err := db.Write(ctx, &b); err != nil {
		log.Fatal(err)
	}

	v, err := db.Get(ctx, []byte("banana"))
	fmt.Printf("banana: %s %v\n", v, err)
	_, err = db.Get(ctx, []byte("durian"))
	fmt.Println("durian not found:", errors.Is(err, driver.ErrNotFound))

	vals, _ := db.MultiGet(ctx, [][]byte{[]byte("apple"), []byte("durian"), []byte("empty")})
	fmt.Printf("MultiGet: %q (nil=%v, found empty=%v)\n", vals, vals[1] == nil, vals[2] != nil)

	it, err := db.NewIterator(ctx, &driver.IterOptions{LowerBound: []byte("b")})
	if err != nil {
		log.Fatal(err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Printf("%s=%s\n", it.Key(), it.Value())
	}
	if err := it.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// banana: yellow <nil>
	// durian not found: true
	// MultiGet: ["red" "" ""] (nil=true, found empty=true)
	// banana=yellow
	// cherry=dark red
	// empty=
}

// Example_readOptions shows a read's options travelling in its context:
// each API tags the read with its own activity, a session (Conn) sets
// defaults, and an activity meant for another API is refused before the
// driver is called.
func Example_readOptions() {
	ctx := context.Background()
	db, err := driver.Open("example-mem", "/ignored?log_reads=on")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	_ = db.Put(ctx, []byte("k"), []byte("v"))

	fmt.Println("Get at user priority:")
	userCtx := ioctx.WithReadOptions(ctx, ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityUser})
	_, _ = db.Get(userCtx, []byte("k"))

	fmt.Println("MultiGet without a batched driver path (keeps its tag):")
	_, _ = db.MultiGet(userCtx, [][]byte{[]byte("k"), []byte("x")})

	fmt.Println("a background session at low priority:")
	bg, err := db.Conn(ioctx.WithReadOptions(ctx, ioctx.ReadOptions{RateLimiterPriority: ioctx.PriorityLow}))
	if err != nil {
		log.Fatal(err)
	}
	defer bg.Close()
	it, _ := bg.NewIterator(ctx, nil)
	_ = it.Close()

	fmt.Println("a Get carrying the Flush activity:")
	_, err = db.Get(ioctx.WithReadOptions(ctx, ioctx.ReadOptions{Activity: ioctx.ActivityFlush}), []byte("k"))
	fmt.Println(" ", err)
	fmt.Println("  invalid argument:", errors.Is(err, driver.ErrInvalidArgument))
	// Output:
	// Get at user priority:
	//   driver: Get activity=Get priority=User
	// MultiGet without a batched driver path (keeps its tag):
	//   driver: Get activity=MultiGet priority=User
	//   driver: Get activity=MultiGet priority=User
	// a background session at low priority:
	//   driver: NewIterator activity=DBIterator priority=Low
	// a Get carrying the Flush activity:
	//   Can only call Get with `ReadOptions::io_activity` is `Env::IOActivity::kUnknown` or `Env::IOActivity::kGet`, not `Env::IOActivity::kFlush`
	//   invalid argument: true
}

func ExampleParseDSN() {
	d, err := driver.ParseDSN("/var/lib/app/db?block_cache_size=32MiB&sync=on&bogus=1")
	if err != nil {
		log.Fatal(err)
	}
	size, _, err := d.LookupSize("block_cache_size")
	fmt.Println(d.Path, size, err)
	sync, _, err := d.LookupBool("sync")
	fmt.Println(sync, err)
	fmt.Println("unknown keys:", d.Unused())
	fmt.Println(driver.FormatDSN("/data/my db?", []driver.Param{{Key: "block_cache_size", Value: driver.FormatSize(64 << 20)}}))
	// Output:
	// /var/lib/app/db 33554432 <nil>
	// true <nil>
	// unknown keys: [bogus]
	// /data/my db%3F?block_cache_size=64MiB
}
