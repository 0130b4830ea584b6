package ioctx

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/shaledb/shale/internal/errclass"
)

// Tag attributes reads to a tenant, a job or any other caller-chosen party,
// next to (never instead of) the read's [Activity]: a Get made for tenant A
// keeps activity Get, passes RocksDB's check-then-tag rule as any Get does,
// and in addition counts in tenant A's own statistics and is charged to
// tenant A's own budget, if it has one.
//
// A Tag is registered once, by name, with [RegisterTag]. Its numeric value
// is the one RocksDB reserves for custom IO activities, 0x80 to 0xFE
// ([Tag.RocksDBValue]), which bounds the registry to [MaxTags] tags. The
// zero Tag, TagNone, is "no tag".
//
// The registry is per process, not per database: a tag rides in a context
// (ReadOptions), and one context may serve reads of several databases, so
// a tag must mean the same party everywhere; the number a file system or a
// trace sees for it must not depend on the database either. What is per
// database is what a tag accumulates: each database's statistics keep their
// own counters and histogram for each tag they have seen, so two databases
// can still be told apart. A tag's budget, being the tag's, is shared by
// every database of the process: a tenant throttled to 8 MiB/s reads 8 MiB/s
// in all.
type Tag uint8

// TagNone is the zero Tag: reads not attributed to any tag.
const TagNone Tag = 0

const (
	// firstTagValue and lastTagValue are RocksDB's custom IO activity range
	// (Env::IOActivity::kCustomIOActivity80 to kCustomIOActivityFE).
	firstTagValue = 0x80
	lastTagValue  = 0xFE

	// MaxTags is how many tags a process can register.
	MaxTags = lastTagValue - firstTagValue + 1
)

// TagOptions are what a tag carries besides its name.
type TagOptions struct {
	// Priority, when not PriorityTotal, is the rate-limiter priority of the
	// tag's reads whose ReadOptions leave RateLimiterPriority at
	// PriorityTotal: a tag can make a tenant's reads charged by default.
	Priority Priority

	// Budget, when not nil, is a byte-rate budget of the tag's own: every
	// file read of a request carrying the tag is charged to it in addition
	// to the database's rate limiter, so one tenant's scans can be
	// throttled without touching another's. A *ratelimit.Generic in mode
	// ModeReads or ModeAll is one; it is charged at the read's priority, or
	// at PriorityUser for a read the database does not charge.
	Budget Budget
}

// Budget is a byte-rate budget a tag's reads are charged to
// (*ratelimit.Generic implements it). It must be safe for concurrent use.
type Budget interface {
	// ChargeRead waits until up to bytes may be read at pri, or until ctx
	// is done (an error for which errors.Is(err, ctx.Err()) holds). It
	// returns how many bytes were granted, at least 1 on success: a caller
	// reads that many and asks again for the rest.
	ChargeRead(ctx context.Context, bytes int64, pri Priority) (int64, error)
}

// tagInfo is one registered tag; never changed once published.
type tagInfo struct {
	name string
	opts TagOptions
}

// tagRegistry is the set of registered tags. Registration is rare and takes
// the mutex; lookups on the read path are one atomic load.
type tagRegistry struct {
	mu     sync.Mutex
	byName map[string]Tag
	infos  [MaxTags]atomic.Pointer[tagInfo]
}

// registry is the process's tags.
var registry tagRegistry

// RegisterTag registers a tag named name with opts and returns it. The name
// must be non-empty, at most 64 bytes of letters, digits, '_' and '-' (it
// becomes part of statistics names and a Prometheus label value), and not
// registered yet. Registering more than MaxTags tags is an error. Errors are
// marked ErrInvalidArgument.
//
// Tags are never unregistered: register each tenant or job class once, at
// start-up, not once per request.
func RegisterTag(name string, opts TagOptions) (Tag, error) {
	return registry.register(name, opts)
}

func (r *tagRegistry) register(name string, opts TagOptions) (Tag, error) {
	if err := checkTagName(name); err != nil {
		return TagNone, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.byName[name]; ok {
		return TagNone, errclass.New("ioctx: tag "+strconv.Quote(name)+" is already registered", errclass.ErrInvalidArgument, nil)
	}
	n := len(r.byName)
	if n >= MaxTags {
		return TagNone, errclass.New("ioctx: cannot register tag "+strconv.Quote(name)+": all "+
			strconv.Itoa(MaxTags)+" tags (RocksDB's custom activities 0x80-0xFE) are taken", errclass.ErrInvalidArgument, nil)
	}
	if r.byName == nil {
		r.byName = map[string]Tag{}
	}
	t := Tag(firstTagValue + n)
	r.infos[n].Store(&tagInfo{name: name, opts: opts})
	r.byName[name] = t
	return t, nil
}

// MustRegisterTag is RegisterTag that panics on error, for package-level
// variables.
func MustRegisterTag(name string, opts TagOptions) Tag {
	t, err := RegisterTag(name, opts)
	if err != nil {
		panic(err)
	}
	return t
}

// LookupTag returns the tag registered as name.
func LookupTag(name string) (Tag, bool) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	t, ok := registry.byName[name]
	return t, ok
}

func checkTagName(name string) error {
	if name == "" || len(name) > 64 {
		return errclass.New("ioctx: a tag name must have 1 to 64 bytes, not "+strconv.Itoa(len(name)), errclass.ErrInvalidArgument, nil)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return errclass.New("ioctx: tag name "+strconv.Quote(name)+" has a byte other than a letter, a digit, '_' or '-'",
				errclass.ErrInvalidArgument, nil)
		}
	}
	return nil
}

// info returns the registered tag's record; nil for TagNone and for a value
// nothing was registered as.
func (t Tag) info() *tagInfo {
	i := int(t) - firstTagValue
	if i < 0 || i >= MaxTags {
		return nil
	}
	return registry.infos[i].Load()
}

// Registered reports whether t is a registered tag (TagNone is not).
func (t Tag) Registered() bool { return t.info() != nil }

// String returns the tag's name; "" for TagNone and "Tag(N)" for a value
// that was never registered.
func (t Tag) String() string {
	if t == TagNone {
		return ""
	}
	if ti := t.info(); ti != nil {
		return ti.name
	}
	return "Tag(" + strconv.Itoa(int(t)) + ")"
}

// RocksDBValue returns the tag's value in RocksDB's Env::IOActivity, within
// the custom range 0x80-0xFE; 0xFF (kUnknown) for TagNone.
func (t Tag) RocksDBValue() uint8 {
	if t == TagNone {
		return 0xFF
	}
	return uint8(t)
}

// Priority returns the tag's default rate-limiter priority (PriorityTotal
// when it has none, or for TagNone).
func (t Tag) Priority() Priority {
	if ti := t.info(); ti != nil {
		return ti.opts.Priority
	}
	return PriorityTotal
}

// Budget returns the tag's own byte-rate budget; nil when it has none, or
// for TagNone.
func (t Tag) Budget() Budget {
	if t == TagNone {
		return nil
	}
	if ti := t.info(); ti != nil {
		return ti.opts.Budget
	}
	return nil
}
