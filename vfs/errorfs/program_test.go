package errorfs_test

import (
	"context"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/engine"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// TestProgramFaultLoop is the test a program using shale would write with
// the public packages alone: run its workload on a filesystem that fails the
// i-th operation, for i = 0, 1, 2, … until the workload runs without a
// fault, and check that every failure reaches the program as an error that
// is the injected one (never a wrong value, never a panic), and that what
// was acknowledged is there after reopening on the filesystem without
// faults.
func TestProgramFaultLoop(t *testing.T) {
	ctx := context.Background()
	keys := []string{"a", "b", "c"}
	for i := int64(0); ; i++ {
		mem := vfs.NewMem()
		fs := errorfs.Wrap(mem, errorfs.OnIndex(i))
		acked := map[string]bool{}
		err := func() (err error) {
			db := driver.OpenDB(engine.NewConnector("/db", &engine.Options{FS: fs, Sync: true}))
			defer func() { err = errors.CombineErrors(err, db.Close()) }()
			for _, k := range keys {
				if err := db.Put(ctx, []byte(k), []byte("v"+k)); err != nil {
					return err
				}
				acked[k] = true
			}
			for _, k := range keys {
				v, err := db.Get(ctx, []byte(k))
				if err != nil {
					return err
				}
				if string(v) != "v"+k {
					t.Fatalf("op %d: Get(%s) = %q", i, k, v)
				}
			}
			return nil
		}()
		if fs.Injected() == 0 {
			if err != nil {
				t.Fatalf("op %d: no fault injected, yet: %v", i, err)
			}
			if i == 0 {
				t.Fatal("the workload did no filesystem operation")
			}
			t.Logf("workload of %d operations, each failed in turn", i)
			break // i is past the workload's last operation
		}
		if err != nil && !errors.Is(err, errorfs.ErrInjected) {
			t.Fatalf("op %d: error is not the injected one: %v", i, err)
		}

		// Reopen on the same files, without faults: every acknowledged
		// write is there.
		db := driver.OpenDB(engine.NewConnector("/db", &engine.Options{FS: mem}))
		for k := range acked {
			if v, err := db.Get(ctx, []byte(k)); err != nil || string(v) != "v"+k {
				t.Errorf("op %d: acknowledged %s: Get = %q, %v", i, k, v, err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatalf("op %d: close after reopen: %v", i, err)
		}
	}
}
