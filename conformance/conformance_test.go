package conformance

import (
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestModel runs the suite against the model driver, with a directory DSN
// (everything but the corruption case can run: the model writes no files)
// and with ":memory:" (reopen-dependent checks are skipped too).
func TestModel(t *testing.T) {
	Run(t, modelDriverName, func(t *testing.T) string { return t.TempDir() })
}

func TestModelMemory(t *testing.T) {
	Run(t, modelDriverName, func(*testing.T) string { return memoryPath })
}

// TestModelSkips checks that the cases needing what the model lacks skip,
// with a message naming the missing capability, rather than fail.
func TestModelSkips(t *testing.T) {
	dir := func(t *testing.T) string { return t.TempDir() }
	memory := func(*testing.T) string { return memoryPath }
	for _, tc := range []struct {
		name   string
		newDSN func(*testing.T) string
		skip   string // a substring of the skip message
	}{
		{"Corruption", dir, "no *.sst table files"},
		{"Corruption", memory, `needs a database that outlives Close; the DSN's path is ":memory:"`},
		{"Reopen", memory, "needs a database that outlives Close"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runRecorded(t, modelDriverName, caseNamed(t, tc.name), tc.newDSN)
			require.False(t, r.Failed(), "errors: %q", r.errors)
			require.True(t, r.Skipped(), "the case did not skip; log: %q", r.logs)
			require.Contains(t, r.skipped, tc.skip)
		})
	}
}

func TestCaseNames(t *testing.T) {
	names := CaseNames()
	require.Len(t, names, len(cases))
	seen := map[string]bool{}
	doc, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	for _, n := range names {
		require.False(t, seen[n], "duplicate case name %q", n)
		seen[n] = true
		documented := strings.Contains(string(doc), "//   - "+n+":") || strings.Contains(string(doc), "//   - "+n+" (")
		require.True(t, documented, "doc.go does not document case %s", n)
	}
	for _, c := range cases {
		require.NotEmpty(t, c.explanation, c.name)
	}
}

// TestConfigSkip runs only the cheapest case, skipping every other through
// Config.Skip.
func TestConfigSkip(t *testing.T) {
	skip := slices.DeleteFunc(CaseNames(), func(n string) bool { return n == "Batch" })
	RunWith(t, modelDriverName, func(t *testing.T) string { return t.TempDir() }, Config{Skip: skip})
}

// TestImports enforces the package's import rule: its non-test code imports
// only the standard library, driver, ioctx and statistics, so any driver's
// tests can import it without importing shale's engine.
func TestImports(t *testing.T) {
	allowed := map[string]bool{
		"github.com/shaledb/shale/driver":     true,
		"github.com/shaledb/shale/ioctx":      true,
		"github.com/shaledb/shale/statistics": true,
	}
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	files := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		files++
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			first, _, _ := strings.Cut(path, "/")
			if !strings.Contains(first, ".") {
				continue // the standard library
			}
			require.True(t, allowed[path], "%s imports %s; package conformance may import only the standard "+
				"library, driver, ioctx and statistics", name, path)
		}
	}
	require.Greater(t, files, 5)
}

func TestMentions(t *testing.T) {
	for _, tc := range []struct {
		msg, key string
		want     bool
	}{
		{`unknown key "rate_limit_mode"`, "rate_limit_mode", true},
		{`unknown key "rate_limit_mode"`, "rate_limit", false},
		{`bad value for rate_limit: "x"`, "rate_limit", true},
		{`rate_limit`, "rate_limit", true},
		{`xrate_limit rate_limit2`, "rate_limit", false},
		{`no such key`, "stats_level", false},
	} {
		require.Equal(t, tc.want, mentions(tc.msg, tc.key), "%q in %q", tc.key, tc.msg)
	}
}

// TestRejectedKeys checks how a case reacts to DSN keys the driver rejects:
// a required one skips the case naming the key, an optional one is
// dropped.
func TestRejectedKeys(t *testing.T) {
	s := &suite{driverName: modelDriverName, newDSN: func() string { return t.TempDir() }}
	r := &recorder{TB: t}
	var h *dbh
	runOnGoroutine(func() { h = s.open(r, opt("write_buffer_size", "1MiB"), opt("no_such_hint", "1")) })
	require.False(t, r.Failed(), "%q", r.errors)
	require.NotNil(t, h, "the open with an optional unknown key did not succeed")
	require.NotContains(t, h.dsn, "no_such_hint")
	require.Contains(t, h.dsn, "write_buffer_size=1MiB")
	require.True(t, slices.ContainsFunc(r.logs, func(l string) bool {
		return strings.Contains(l, "driver rejects the optional DSN key no_such_hint")
	}), "%q", r.logs)
	require.NoError(t, h.Close())

	r = &recorder{TB: t}
	runOnGoroutine(func() { s.open(r, req("stats_level", "all"), req("no_such_key", "1")) })
	require.False(t, r.Failed(), "%q", r.errors)
	require.Contains(t, r.skipped, "driver does not support DSN key no_such_key (opening with no_such_key=1 failed: ")

	r = &recorder{TB: t}
	runOnGoroutine(func() { s.open(r, req("stats_level", "no-such-level")) })
	require.False(t, r.Failed(), "%q", r.errors)
	require.Contains(t, r.skipped, "driver does not support DSN key stats_level")
}
