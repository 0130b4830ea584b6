package errorfs

import (
	"fmt"
	"math/rand/v2"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/errclass"
	"github.com/shaledb/shale/ioctx"
)

// ErrInjected is the error errorfs injects. Injected errors wrap it or are
// marked with it, so errors.Is(err, ErrInjected) holds for every one of them,
// also after the engine wraps them further.
var ErrInjected = errors.New("errorfs: injected error")

// Injector decides, before each operation, whether the operation fails.
// A non-nil error from MaybeError is returned in place of the operation,
// which then does not run (see the package doc for Close).
//
// An FS calls MaybeError from whatever goroutines use it, so an Injector
// must be safe for concurrent use; all injectors of this package are.
type Injector interface {
	MaybeError(op Op) error
}

// Predicate selects operations. A Predicate is also an Injector that injects
// ErrInjected into every operation it selects, so
//
//	errorfs.Wrap(fs, errorfs.And(errorfs.Reads(), errorfs.PathMatch("*.sst")))
//
// fails every read of a table file. The injected error's message names the
// operation and the predicate.
//
// Predicates may be stateful (OnIndex counts, Randomly draws), so Evaluate is
// called once per operation that reaches the predicate; And, Or and Not
// evaluate their operands left to right and stop as soon as the result is
// known. Predicates of this package are safe for concurrent use.
type Predicate interface {
	Injector
	// Evaluate reports whether op is selected.
	Evaluate(op Op) bool
	// String describes the predicate in the syntax that builds it, such as
	// `And(Reads, PathMatch("*.sst"))`.
	String() string
}

// predicate is the one Predicate implementation: a description and a
// function.
type predicate struct {
	desc string
	fn   func(Op) bool
}

func (p *predicate) Evaluate(op Op) bool { return p.fn(op) }

func (p *predicate) String() string { return p.desc }

func (p *predicate) MaybeError(op Op) error {
	if !p.fn(op) {
		return nil
	}
	return errors.Wrapf(ErrInjected, "%s (injected by %s)", op, p.desc)
}

// PredicateFunc returns a Predicate that selects the operations for which fn
// returns true; desc is its String. fn must be safe for concurrent use.
func PredicateFunc(desc string, fn func(Op) bool) Predicate {
	return &predicate{desc: desc, fn: fn}
}

// OnIndex selects the n-th operation (0-based) that reaches it, and only
// that one: it counts every operation it evaluates. Alone it fails the n-th
// operation of the FS; under And it counts only the operations that the
// operands before it selected, so And(Writes(), OnIndex(2)) fails the third
// write. A negative n selects nothing.
//
// A fresh OnIndex starts counting at zero; use one per run.
func OnIndex(n int64) Predicate {
	var seen atomic.Int64
	return &predicate{
		desc: fmt.Sprintf("OnIndex(%d)", n),
		fn:   func(Op) bool { return seen.Add(1)-1 == n },
	}
}

// OnKind selects the operations of the given kinds.
func OnKind(kinds ...OpKind) Predicate {
	var mask uint32
	names := make([]string, len(kinds))
	for i, k := range kinds {
		mask |= 1 << k
		names[i] = k.String()
	}
	return &predicate{
		desc: "OnKind(" + strings.Join(names, ", ") + ")",
		fn:   func(op Op) bool { return mask&(1<<op.Kind) != 0 },
	}
}

var (
	reads  = &predicate{desc: "Reads", fn: func(op Op) bool { return op.Kind.IsRead() }}
	writes = &predicate{desc: "Writes", fn: func(op Op) bool { return op.Kind.IsWrite() }}
)

// Reads selects the operations that only observe the filesystem (see
// OpKind.IsRead).
func Reads() Predicate { return reads }

// Writes selects the operations that change the filesystem (see
// OpKind.IsWrite).
func Writes() Predicate { return writes }

// OnActivity selects file reads made with one of the given IO activities
// (Op.IO.Activity). Operations other than reads carry no activity:
// OnActivity(ioctx.ActivityUnknown) selects them too.
func OnActivity(acts ...ioctx.Activity) Predicate {
	names := make([]string, len(acts))
	for i, a := range acts {
		names[i] = a.String()
	}
	acts = append([]ioctx.Activity(nil), acts...)
	return &predicate{
		desc: "OnActivity(" + strings.Join(names, ", ") + ")",
		fn: func(op Op) bool {
			for _, a := range acts {
				if op.IO.Activity == a {
					return true
				}
			}
			return false
		},
	}
}

// PathMatch selects operations on names that match glob, with path.Match's
// syntax. A glob without a slash is matched against the base name, so
// PathMatch("*.sst") selects "/db/000001.sst"; a glob with a slash is
// matched against the whole name, as given to the FS (OS separators are
// turned into slashes). A rename is selected if either name matches.
//
// PathMatch panics if glob is malformed, as regexp.MustCompile does: the
// pattern is a constant of the test that calls it.
func PathMatch(glob string) Predicate {
	if _, err := path.Match(glob, ""); err != nil {
		panic(errors.Wrapf(err, "errorfs: PathMatch(%q)", glob))
	}
	whole := strings.Contains(glob, "/")
	match := func(name string) bool {
		if name == "" {
			return false
		}
		name = filepath.ToSlash(name)
		if !whole {
			name = path.Base(name)
		}
		ok, _ := path.Match(glob, name)
		return ok
	}
	return &predicate{
		desc: fmt.Sprintf("PathMatch(%q)", glob),
		fn:   func(op Op) bool { return match(op.Path) || match(op.NewPath) },
	}
}

// Randomly selects each operation that reaches it with probability p (0 or
// less never, 1 or more always). The draws come from a PCG generator seeded
// with seed, so the same seed and the same sequence of operations select the
// same operations; with concurrent operations the sequence, and so the
// selection, depends on scheduling.
func Randomly(p float64, seed int64) Predicate {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
	return &predicate{
		desc: fmt.Sprintf("Randomly(%g, %d)", p, seed),
		fn: func(Op) bool {
			mu.Lock()
			defer mu.Unlock()
			return rng.Float64() < p
		},
	}
}

// And selects the operations that every one of ps selects, evaluating them
// left to right and stopping at the first that does not. And() selects
// everything.
func And(ps ...Predicate) Predicate {
	ps = append([]Predicate(nil), ps...)
	return &predicate{
		desc: "And(" + join(ps) + ")",
		fn: func(op Op) bool {
			for _, p := range ps {
				if !p.Evaluate(op) {
					return false
				}
			}
			return true
		},
	}
}

// Or selects the operations that any of ps selects, evaluating them left to
// right and stopping at the first that does. Or() selects nothing.
func Or(ps ...Predicate) Predicate {
	ps = append([]Predicate(nil), ps...)
	return &predicate{
		desc: "Or(" + join(ps) + ")",
		fn: func(op Op) bool {
			for _, p := range ps {
				if p.Evaluate(op) {
					return true
				}
			}
			return false
		},
	}
}

// Not selects the operations p does not select.
func Not(p Predicate) Predicate {
	return &predicate{
		desc: "Not(" + p.String() + ")",
		fn:   func(op Op) bool { return !p.Evaluate(op) },
	}
}

func join(ps []Predicate) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

// InjectError returns an Injector that fails the operations p selects with
// err (for example syscall.ENOSPC) instead of ErrInjected. The error
// returned wraps err and is marked ErrInjected, so both errors.Is(e, err)
// and errors.Is(e, ErrInjected) hold.
func InjectError(err error, p Predicate) Injector {
	return &errInjector{err: err, p: p}
}

type errInjector struct {
	err error
	p   Predicate
}

func (e *errInjector) MaybeError(op Op) error {
	if !e.p.Evaluate(op) {
		return nil
	}
	return errclass.Mark(errors.Wrapf(e.err, "%s (injected by %s)", op, e.p), ErrInjected)
}

// Any returns an Injector that asks each of injs in turn and returns the
// first error; the ones after it are not asked. An observer placed first
// (see WrapObserver) thus sees every operation.
func Any(injs ...Injector) Injector {
	return anyInjector(append([]Injector(nil), injs...))
}

type anyInjector []Injector

func (a anyInjector) MaybeError(op Op) error {
	for _, inj := range a {
		if err := inj.MaybeError(op); err != nil {
			return err
		}
	}
	return nil
}

// Observe returns an Injector that calls fn with every operation and never
// injects. fn must be safe for concurrent use.
func Observe(fn func(Op)) Injector { return observer(fn) }

type observer func(Op)

func (o observer) MaybeError(op Op) error {
	o(op)
	return nil
}
