package ioctx

import "context"

// ctxKey is the one context key of this package. It has no fields, so
// converting it to an interface for ctx.Value does not allocate.
type ctxKey struct{}

// WithReadOptions returns a copy of ctx that carries ro. Reads made with the
// returned context use ro; a later WithReadOptions replaces them.
func WithReadOptions(ctx context.Context, ro ReadOptions) context.Context {
	// A pointer, so that resolution reads the fields in place instead of
	// copying the struct out of the interface (storing the struct boxed
	// it on the heap all the same).
	return context.WithValue(ctx, ctxKey{}, &ro)
}

// ReadOptionsFrom returns the ReadOptions ctx carries, or the zero
// ReadOptions (RocksDB's defaults) when it carries none. It does not allocate.
// Call it once per API call, at the API boundary.
func ReadOptionsFrom(ctx context.Context) ReadOptions { return *readOptionsIn(ctx) }

// zeroReadOptions is what a context without ReadOptions carries. Read only.
var zeroReadOptions ReadOptions

// readOptionsIn returns the ReadOptions ctx carries, or a pointer to the
// zero ReadOptions. The caller must not modify them.
func readOptionsIn(ctx context.Context) *ReadOptions {
	if ro, ok := ctx.Value(ctxKey{}).(*ReadOptions); ok {
		return ro
	}
	return &zeroReadOptions
}
