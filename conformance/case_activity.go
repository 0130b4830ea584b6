package conformance

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/ioctx"
)

// readAPI is one public read method of DB, Conn or Tx.
type readAPI struct {
	name string // how messages name it: "DB.Get", "Tx.MultiGet"
	api  string // RocksDB's name, as the activity message spells it
	own  ioctx.Activity
	// call makes the read with ctx and returns its error. An iterator's
	// error may come from NewIterator or from its first move.
	call func(ctx context.Context) error
}

// verifier is what DB and Conn have for verification.
type verifier interface {
	VerifyChecksum(ctx context.Context) error
	VerifyFileChecksums(ctx context.Context) error
}

// readAPIs returns the five read APIs of r (all but the verifications when
// r is not a verifier), reading key k.
func readAPIs(prefix string, r reader, k []byte) []readAPI {
	apis := []readAPI{
		{prefix + ".Get", "Get", ioctx.ActivityGet, func(ctx context.Context) error {
			_, err := r.Get(ctx, k)
			return err
		}},
		{prefix + ".MultiGet", "MultiGet", ioctx.ActivityMultiGet, func(ctx context.Context) error {
			_, err := r.MultiGet(ctx, [][]byte{k, []byte("absent")})
			return err
		}},
		{prefix + ".NewIterator", "NewIterator", ioctx.ActivityDBIterator, func(ctx context.Context) error {
			return scanAll(ctx, r)
		}},
	}
	if v, ok := r.(verifier); ok {
		apis = append(apis,
			readAPI{prefix + ".VerifyChecksum", "VerifyChecksum", ioctx.ActivityVerifyDBChecksum, v.VerifyChecksum},
			readAPI{prefix + ".VerifyFileChecksums", "VerifyFileChecksums", ioctx.ActivityVerifyFileChecksums,
				v.VerifyFileChecksums})
	}
	return apis
}

// scanAll creates an iterator with ctx, scans it and closes it, returning
// the first error of the three.
func scanAll(ctx context.Context, r reader) error {
	it, err := r.NewIterator(ctx, nil)
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
	}
	err = it.Error()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return err
}

// activityPrefix is the start of RocksDB's message for api called with
// an activity other than Unknown and own (spec §3.2).
func activityPrefix(api string, own ioctx.Activity) string {
	return "Can only call " + api + " with `ReadOptions::io_activity` is `Env::IOActivity::kUnknown` or " +
		"`Env::IOActivity::k" + own.String() + "`"
}

// checkActivity calls api with ReadOptions{Activity: a} in ctx and reports
// a wrong acceptance or rejection. how says where the activity came from.
func checkActivity(t testing.TB, api readAPI, a ioctx.Activity, ctx context.Context, how string) {
	t.Helper()
	err := api.call(ctx)
	if a == ioctx.ActivityUnknown || a == api.own {
		if err != nil && !errors.Is(err, driver.ErrNotSupported) {
			t.Errorf("%s with activity %s %s failed: %v; an API must accept Unknown and its own activity (%s)",
				api.name, a, how, err, api.own)
		}
		return
	}
	prefix := activityPrefix(api.api, api.own)
	switch {
	case err == nil:
		t.Errorf("%s with activity %s %s succeeded; want an error matching driver.ErrInvalidArgument: %s "+
			"accepts only Unknown and %s", api.name, a, how, api.name, api.own)
	case !errors.Is(err, driver.ErrInvalidArgument):
		t.Errorf("%s with activity %s %s failed with %q, which does not match driver.ErrInvalidArgument",
			api.name, a, how, err)
	case !strings.HasPrefix(err.Error(), prefix):
		t.Errorf("%s with activity %s %s failed with %q; want a message starting with RocksDB's %q",
			api.name, a, how, err, prefix)
	case !strings.Contains(err.Error()[len(prefix):], "Env::IOActivity::k"+a.String()):
		t.Errorf("%s with activity %s %s failed with %q, which does not name the activity given (%s)",
			api.name, a, how, err, "Env::IOActivity::k"+a.String())
	}
}

func testActivityCheck(t testing.TB, s *suite) {
	db := s.open(t)
	k := []byte("k")
	mustPut(t, db, k, []byte("v"))
	if err := db.Flush(bg); err != nil && !errors.Is(err, driver.ErrNotSupported) {
		t.Fatalf("Flush: %v", err)
	}
	conn, err := db.Conn(bg)
	if err != nil {
		t.Fatalf("DB.Conn: %v", err)
	}
	defer conn.Close()
	apis := append(readAPIs("DB", db, k), readAPIs("Conn", conn, k)...)
	tx, err := db.BeginTx(bg, nil)
	switch {
	case errors.Is(err, driver.ErrNotSupported):
		t.Logf("the driver has no transactions (%v): Tx reads not checked", err)
	case err != nil:
		t.Fatalf("BeginTx: %v", err)
	default:
		defer tx.Rollback()
		apis = append(apis, readAPIs("Tx", tx, k)...)
	}
	for _, api := range apis {
		for a := range ioctx.NumActivities {
			checkActivity(t, api, a, withRO(ioctx.ReadOptions{Activity: a}), "in the call's context")
		}
	}
}
