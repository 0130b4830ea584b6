package metamorphic

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/engine" // also registers the "shale" driver
	"github.com/shaledb/shale/ioctx"
)

// runner runs a history's ops on a database opened through the façade with
// one configuration's DSN, and prints each op's observable result as the
// model does: values, "err=notfound" and the other error classes, iterator
// positions as "key=value" or ".", scans as every entry.
type runner struct {
	cfg     Config
	dir     string // the database's directory
	scratch string // where checkpoints go
	ctx     context.Context
	db      *driver.DB

	batches map[string]*driver.Batch
	snaps   map[string]*driver.Snapshot
	txs     map[string]*driver.Tx
	iters   map[string]*driver.Iterator
	nckpt   int
	ningest int // tables the ingest ops wrote

	// errs holds the messages of errors of no known class, which print as
	// "err=other" (their text may differ between configurations).
	errs []string
}

func newRunner(cfg Config, dir string) (*runner, error) {
	r := &runner{
		cfg:     cfg,
		dir:     filepath.Join(dir, "db"),
		scratch: dir,
		ctx:     context.Background(),
		batches: map[string]*driver.Batch{},
		snaps:   map[string]*driver.Snapshot{},
		txs:     map[string]*driver.Tx{},
		iters:   map[string]*driver.Iterator{},
	}
	return r, r.open()
}

func (r *runner) dsn(dir string) string {
	// Every configuration merges with stringappend, which the model
	// applies (see mwrite).
	return dir + "?" + with(r.cfg.DSN, "merge_operator=stringappend")
}

func (r *runner) open() error {
	db, err := driver.Open("shale", r.dsn(r.dir))
	if err != nil {
		return err
	}
	if err := db.Ping(r.ctx); err != nil {
		_ = db.Close()
		return err
	}
	r.db = db
	return nil
}

// Close closes the database.
func (r *runner) Close() error {
	if r.db == nil {
		return nil
	}
	err := r.db.Close()
	r.db = nil
	return err
}

// errClass names the class of err as the output shows it.
func (r *runner) errClass(o Op, err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, driver.ErrNotFound):
		return "err=notfound"
	case errors.Is(err, driver.ErrConflict):
		return "err=conflict"
	case errors.Is(err, driver.ErrTxDone):
		return "err=txdone"
	case errors.Is(err, driver.ErrClosed):
		return "err=closed"
	case errors.Is(err, driver.ErrInvalidArgument):
		return "err=invalid"
	case errors.Is(err, driver.ErrNotSupported):
		return "err=notsupported"
	case errors.Is(err, driver.ErrCorruption):
		r.errs = append(r.errs, o.String()+": "+err.Error())
		return "err=corruption"
	}
	r.errs = append(r.errs, o.String()+": "+err.Error())
	return "err=other"
}

func (r *runner) wctx(wo string) context.Context {
	switch wo {
	case "sync":
		return ioctx.WithWriteOptions(r.ctx, ioctx.WriteOptions{Sync: true})
	case "nowal":
		return ioctx.WithWriteOptions(r.ctx, ioctx.WriteOptions{DisableWAL: true})
	}
	return r.ctx
}

// reader is what a DB, a Snapshot and a Tx have in common.
type reader interface {
	Get(ctx context.Context, key []byte) ([]byte, error)
	MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error)
	NewIterator(ctx context.Context, opts *driver.IterOptions) (*driver.Iterator, error)
}

// Exec runs one op and returns its output.
func (r *runner) Exec(o Op) (string, error) {
	if o.Obj == "" {
		return r.execDB(o)
	}
	if b, ok := r.batches[o.Obj]; ok {
		return r.execBatch(o, b)
	}
	if s, ok := r.snaps[o.Obj]; ok {
		if o.Name == "close" {
			delete(r.snaps, o.Obj)
			return r.errClass(o, s.Close()), nil
		}
		return r.execRead(o, s)
	}
	if tx, ok := r.txs[o.Obj]; ok {
		return r.execTx(o, tx)
	}
	if it, ok := r.iters[o.Obj]; ok {
		return r.execIter(o, it)
	}
	return "", errors.Newf("%q: no open object %s", o.String(), o.Obj)
}

func (r *runner) execRead(o Op, rd reader) (string, error) {
	switch o.Name {
	case "get":
		if err := argN(o, 1); err != nil {
			return "", err
		}
		v, err := rd.Get(r.ctx, []byte(o.Args[0]))
		if err != nil {
			return r.errClass(o, err), nil
		}
		return fmtVal(v), nil
	case "multiget":
		keys := make([][]byte, len(o.Args))
		for i, a := range o.Args {
			keys[i] = []byte(a)
		}
		vals, err := rd.MultiGet(r.ctx, keys)
		if err != nil {
			return r.errClass(o, err), nil
		}
		out := make([]string, len(vals))
		for i, v := range vals {
			if v == nil {
				out[i] = "<nil>"
			} else {
				out[i] = fmtVal(v)
			}
		}
		return strings.Join(out, " "), nil
	case "scan":
		return r.scan(o, rd), nil
	case "iter", "piter":
		// piter: iter with IterOptions.Prefix (its fourth argument).
		opts := &driver.IterOptions{}
		if o.Name == "piter" {
			if err := argN(o, 4); err != nil {
				return "", err
			}
			opts.Prefix = []byte(o.Args[3])
		} else if err := argN(o, 3); err != nil {
			return "", err
		}
		opts.LowerBound, opts.UpperBound = bound(o.Args[1]), bound(o.Args[2])
		it, err := rd.NewIterator(r.ctx, opts)
		if err != nil {
			return r.errClass(o, err), nil
		}
		r.iters[o.Args[0]] = it
		return "ok", nil
	}
	return "", errors.Newf("unknown read op %q", o.String())
}

// scan prints every entry rd holds, in order.
func (r *runner) scan(o Op, rd reader) string {
	it, err := rd.NewIterator(r.ctx, nil)
	if err != nil {
		return r.errClass(o, err)
	}
	var b strings.Builder
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		b.WriteByte(' ')
		b.WriteString(string(it.Key()))
		b.WriteByte('=')
		b.WriteString(fmtVal(it.Value()))
		n++
	}
	err = errors.CombineErrors(it.Error(), it.Close())
	if err != nil {
		return r.errClass(o, err)
	}
	return "n=" + strconv.Itoa(n) + b.String()
}

func (r *runner) execIter(o Op, it *driver.Iterator) (string, error) {
	var ok bool
	switch o.Name {
	case "close":
		delete(r.iters, o.Obj)
		return r.errClass(o, it.Close()), nil
	case "first":
		ok = it.First()
	case "last":
		ok = it.Last()
	case "next":
		ok = it.Next()
	case "prev":
		ok = it.Prev()
	case "seekge", "seeklt":
		if err := argN(o, 1); err != nil {
			return "", err
		}
		if o.Name == "seekge" {
			ok = it.SeekGE([]byte(o.Args[0]))
		} else {
			ok = it.SeekLT([]byte(o.Args[0]))
		}
	default:
		return "", errors.Newf("unknown iterator op %q", o.String())
	}
	if !ok {
		if err := it.Error(); err != nil {
			return ". " + r.errClass(o, err), nil
		}
		if it.Valid() {
			return ". valid-after-false", nil
		}
		return ".", nil
	}
	if !it.Valid() {
		return string(it.Key()) + "=" + fmtVal(it.Value()) + " invalid-after-true", nil
	}
	return string(it.Key()) + "=" + fmtVal(it.Value()), nil
}

func (r *runner) execDB(o Op) (string, error) {
	switch o.Name {
	case "put", "del", "delrange", "merge":
		w, wo, err := parseWrite(o)
		if err != nil {
			return "", err
		}
		ctx := r.wctx(wo)
		switch w.kind {
		case 'p':
			err = r.db.Put(ctx, []byte(w.a), []byte(w.b))
		case 'm':
			err = r.db.Merge(ctx, []byte(w.a), []byte(w.b))
		case 'd':
			err = r.db.Delete(ctx, []byte(w.a))
		case 'r':
			err = r.db.DeleteRange(ctx, bound(w.a), bound(w.b))
		}
		return r.errClass(o, err), nil
	case "get", "multiget", "scan", "iter", "piter":
		return r.execRead(o, r.db)
	case "batch":
		if err := argN(o, 1); err != nil {
			return "", err
		}
		r.batches[o.Args[0]] = &driver.Batch{}
		return "ok", nil
	case "snap":
		if err := argN(o, 1); err != nil {
			return "", err
		}
		s, err := r.db.NewSnapshot(r.ctx)
		if err != nil {
			return r.errClass(o, err), nil
		}
		r.snaps[o.Args[0]] = s
		return "ok", nil
	case "begin":
		args, wo := writeOpt(o.Args)
		if len(args) != 1 {
			return "", errors.Newf("%q: want a name", o.String())
		}
		tx, err := r.db.BeginTx(r.wctx(wo), nil)
		if err != nil {
			return r.errClass(o, err), nil
		}
		r.txs[args[0]] = tx
		return "ok", nil
	case "flush":
		return r.errClass(o, r.db.Flush(r.ctx)), nil
	case "compact":
		if err := argN(o, 2); err != nil {
			return "", err
		}
		return r.errClass(o, r.db.Compact(r.ctx, bound(o.Args[0]), bound(o.Args[1]))), nil
	case "syncwal":
		return r.errClass(o, r.db.SyncWAL(r.ctx)), nil
	case "checkpoint":
		return r.checkpoint(o), nil
	case "ingest":
		return r.ingest(o)
	case "reopen":
		if len(r.iters)+len(r.snaps)+len(r.txs) > 0 {
			return "", errors.Newf("reopen with objects open")
		}
		if err := r.Close(); err != nil {
			return r.errClass(o, err), nil
		}
		if err := r.open(); err != nil {
			return "", errors.Wrap(err, "reopen")
		}
		return "ok", nil
	}
	return "", errors.Newf("unknown op %q", o.String())
}

// ingest writes the op's puts to a table with engine.TableWriter (with the
// database's options) and bulk-loads it.
func (r *runner) ingest(o Op) (string, error) {
	if len(o.Args) == 0 || len(o.Args)%2 != 0 {
		return "", errors.Newf("%q: want key and value pairs", o.String())
	}
	_, opts, err := engine.ParseDSN(r.dsn(r.dir))
	if err != nil {
		return "", err
	}
	r.ningest++
	path := filepath.Join(r.scratch, "ingest"+strconv.Itoa(r.ningest)+".sst")
	defer os.Remove(path)
	tw, err := engine.NewTableWriter(path, opts)
	if err != nil {
		return "", err
	}
	for i := 0; i < len(o.Args); i += 2 {
		if err := tw.Set([]byte(o.Args[i]), ValueBytes(o.Args[i+1])); err != nil {
			_ = tw.Abort()
			return "", errors.Wrapf(err, "%q", o.String())
		}
	}
	if _, err := tw.Finish(); err != nil {
		return "", err
	}
	return r.errClass(o, r.db.Ingest(r.ctx, []string{path})), nil
}

// checkpoint writes a checkpoint, opens it with the same configuration and
// prints what it holds.
func (r *runner) checkpoint(o Op) string {
	r.nckpt++
	dir := filepath.Join(r.scratch, "checkpoint"+strconv.Itoa(r.nckpt))
	if err := r.db.Checkpoint(r.ctx, dir); err != nil {
		return r.errClass(o, err)
	}
	defer os.RemoveAll(dir)
	db, err := driver.Open("shale", r.dsn(dir))
	if err != nil {
		return r.errClass(o, err)
	}
	out := r.scan(o, db)
	if err := db.Close(); err != nil {
		return r.errClass(o, err)
	}
	return "ok " + out
}

func (r *runner) execBatch(o Op, b *driver.Batch) (string, error) {
	if o.Name == "write" {
		_, wo := writeOpt(o.Args)
		return r.errClass(o, r.db.Write(r.wctx(wo), b)), nil
	}
	w, _, err := parseWrite(o)
	if err != nil {
		return "", err
	}
	switch w.kind {
	case 'p':
		b.Put([]byte(w.a), []byte(w.b))
	case 'm':
		b.Merge([]byte(w.a), []byte(w.b))
	case 'd':
		b.Delete([]byte(w.a))
	case 'r':
		b.DeleteRange(bound(w.a), bound(w.b))
	}
	return "ok", nil
}

func (r *runner) execTx(o Op, tx *driver.Tx) (string, error) {
	switch o.Name {
	case "put", "del", "delrange":
		w, _, err := parseWrite(o)
		if err != nil {
			return "", err
		}
		switch w.kind {
		case 'p':
			err = tx.Put(r.ctx, []byte(w.a), []byte(w.b))
		case 'd':
			err = tx.Delete(r.ctx, []byte(w.a))
		case 'r':
			err = tx.DeleteRange(r.ctx, bound(w.a), bound(w.b))
		}
		return r.errClass(o, err), nil
	case "commit":
		delete(r.txs, o.Obj)
		return r.errClass(o, tx.Commit()), nil
	case "rollback":
		delete(r.txs, o.Obj)
		return r.errClass(o, tx.Rollback()), nil
	}
	return r.execRead(o, tx)
}
