// Package errorfs wraps a vfs.FS to inject errors into its operations and to
// observe them: for a program's tests of how it handles shale's errors (a
// full disk, a failed sync, a failed open), handing the wrapped FS to
// engine.Options.FS, and for the engine's own tests of its error paths and
// IO tagging. Its names are the wrapper ([Wrap], [WrapObserver], [FS]), the
// vocabulary of operations ([Op], [OpKind]), the injectors below, and
// [ErrInjected], which every injected error matches.
//
// # Injecting
//
// [Wrap] returns an [FS] that describes every operation as an [Op] (kind,
// path, offset, length, and for reads the ioctx.IOOptions) and asks an
// [Injector] whether it fails. The injectors are predicates over operations,
// combined with [And], [Or] and [Not]; every [Predicate] injects
// [ErrInjected] into the operations it selects:
//
//	OnIndex(n)              the n-th operation that reaches it (0-based), once
//	OnKind(kinds...)        operations of these kinds
//	Reads(), Writes()       see OpKind.IsRead and OpKind.IsWrite
//	OnActivity(acts...)     reads made with one of these IO activities
//	PathMatch(glob)         names matching glob ("*.sst" matches base names)
//	Randomly(p, seed)       each operation with probability p, reproducibly
//
// For example, Wrap(fs, And(Reads(), PathMatch("*.sst"))) fails every read
// of a table, and Wrap(fs, And(Writes(), OnIndex(3))) fails the fourth write.
// [InjectError] injects an error of the test's choosing instead (such as
// syscall.ENOSPC), still marked ErrInjected; [Any] tries several injectors.
//
// [DiskFull] is not a predicate but a model of a filesystem with limited
// space: a byte budget shared by every file written through the FS. A write
// past it writes what fits and fails with ENOSPC in an *os.PathError, as the
// operating system's does; removing files frees space, and so does raising
// the budget (SetBudget), after which writes succeed again. Tests of how the
// engine stops and resumes on a full disk use it.
//
// Operations are classified by their effect: a read only observes the
// filesystem, a write changes it or makes changes durable. FileClose is
// neither, since closing a handle neither reads nor writes; select it by
// kind.
//
// # What a failure does
//
// An injected error replaces the operation: the wrapped FS is not called.
// So a failed Write writes nothing and returns 0 (unless DiskFull failed it:
// then it writes the bytes that fit, as a full disk does); a failed Sync leaves the
// file's data as undurable as it was (vfs.MemFS.CrashClone drops it); a
// failed Create, Rename, Remove or MkdirAll changes nothing. The one
// exception is Close: the wrapped file is closed anyway, as close(2) frees
// the descriptor even when it fails, and the injected error is returned.
// Closing a lock and Unmap are not operations and never fail.
//
// Every injected error satisfies errors.Is(err, ErrInjected) and names the
// operation and the predicate that failed it (DiskFull's read as the
// operating system's do: "write /db/000004.log: no space left on device").
//
// # Counting: fail each operation in turn
//
// [FS.Ops] counts the operations an FS has seen and [FS.Injected] those that
// failed. The pattern of pebble's TestErrors runs a workload with OnIndex(i)
// for i = 0, 1, 2, … until it passes, checking that each failure surfaces as
// an error that is ErrInjected (or is handled) and never as bad data:
//
//	for i := int64(0); ; i++ {
//		fs := errorfs.Wrap(vfs.NewMem(), errorfs.OnIndex(i))
//		err := workload(fs)
//		if fs.Injected() == 0 {
//			break // i is past the workload's last operation
//		}
//		if err != nil && !errors.Is(err, errorfs.ErrInjected) {
//			t.Fatalf("op %d: %v", i, err)
//		}
//	}
//
// # Observing
//
// [WrapObserver] calls a function with every Op and injects nothing. The
// engine's tests use it to check that each file read of a Get carries
// ioctx.ActivityGet: the file reader reads through vfs.ReadAtOptions, the
// files of an FS implement vfs.ReaderAtWithOptions, and the options arrive
// in Op.IO. See the example of WrapObserver.
//
// # Concurrency
//
// FS and every Injector and Predicate of this package are safe for
// concurrent use. Stateful predicates (OnIndex, Randomly) see operations in
// the order goroutines reach them, so under concurrency which operation is
// "the n-th" depends on scheduling.
package errorfs
