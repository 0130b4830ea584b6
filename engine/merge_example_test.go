package engine_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"log"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/engine"
	"github.com/shaledb/shale/vfs"
)

// A counter kept with RocksDB's uint64add merge operator: each Merge adds
// to the key's 8-byte little-endian value without reading it first.
func ExampleParseMergeOperator() {
	ctx := context.Background()
	op, err := engine.ParseMergeOperator("uint64add") // DSN: ?merge_operator=uint64add
	if err != nil {
		log.Fatal(err)
	}
	db := driver.OpenDB(engine.NewConnector("/db", &engine.Options{FS: vfs.NewMem(), MergeOperator: op}))
	defer db.Close()

	one := binary.LittleEndian.AppendUint64(nil, 1)
	for range 3 {
		if err := db.Merge(ctx, []byte("visits"), one); err != nil {
			log.Fatal(err)
		}
	}
	var b driver.Batch
	b.Merge([]byte("visits"), binary.LittleEndian.AppendUint64(nil, 39))
	if err := db.Write(ctx, &b); err != nil {
		log.Fatal(err)
	}
	v, err := db.Get(ctx, []byte("visits"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(binary.LittleEndian.Uint64(v))
	// Output: 42
}
