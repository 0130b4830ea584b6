package ioctx

import "context"

// ctxKey is the one context key of this package. It has no fields, so
// converting it to an interface for ctx.Value does not allocate.
type ctxKey struct{}

// WithReadOptions returns a copy of ctx that carries ro. Reads made with the
// returned context use ro; a later WithReadOptions replaces them.
func WithReadOptions(ctx context.Context, ro ReadOptions) context.Context {
	return context.WithValue(ctx, ctxKey{}, ro)
}

// ReadOptionsFrom returns the ReadOptions ctx carries, or the zero
// ReadOptions (RocksDB's defaults) when it carries none. It does not allocate.
// Call it once per API call, at the API boundary.
func ReadOptionsFrom(ctx context.Context) ReadOptions {
	ro, _ := ctx.Value(ctxKey{}).(ReadOptions)
	return ro
}
