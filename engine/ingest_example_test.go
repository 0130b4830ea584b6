package engine_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/engine"
)

// A bulk load: write sorted keys to table files with engine.TableWriter,
// outside the database, then add them to it atomically with DB.Ingest.
func ExampleNewTableWriter() {
	dir, err := os.MkdirTemp("", "shale-bulk")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	// Each table's keys are added in increasing order; the tables of one
	// ingest must not overlap each other.
	var paths []string
	for i, prefix := range []string{"apple", "pear"} {
		path := filepath.Join(dir, fmt.Sprintf("load-%d.sst", i))
		tw, err := engine.NewTableWriter(path, nil) // the database's Options, for matching filters and codecs
		if err != nil {
			log.Fatal(err)
		}
		for j := range 3 {
			if err := tw.Set(fmt.Appendf(nil, "%s/%d", prefix, j), []byte("fresh")); err != nil {
				log.Fatal(err)
			}
		}
		info, err := tw.Finish()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %d entries, %s to %s\n", filepath.Base(info.Path), info.Entries, info.Smallest, info.Largest)
		paths = append(paths, path)
	}

	db, err := driver.Open(engine.DriverName, filepath.Join(dir, "db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := db.Put(ctx, []byte("apple/1"), []byte("stale")); err != nil {
		log.Fatal(err)
	}
	// All of the tables or none; their entries are newer than every write
	// before the call. The files are linked (or copied) in, and kept.
	if err := db.Ingest(ctx, paths); err != nil {
		log.Fatal(err)
	}
	v, err := db.Get(ctx, []byte("apple/1"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("apple/1 = %s\n", v)
	// Output:
	// load-0.sst: 3 entries, apple/0 to apple/2
	// load-1.sst: 3 entries, pear/0 to pear/2
	// apple/1 = fresh
}
