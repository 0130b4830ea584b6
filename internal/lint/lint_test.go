// Package lint holds tests that enforce the project's structure: imports point
// down (DESIGN.md, "Layout and dependency direction"), errors come from
// cockroachdb/errors outside the leaf packages, and atomics use the typed
// wrappers. The compiler cannot enforce these, because any package of the
// module may import any internal package.
package lint

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/shaledb/shale"

type pkgInfo struct {
	path    string // import path relative to the module ("" for the root)
	dir     string
	imports []string // module-relative paths of module imports (non-test)
	stdlib  []string // other imports
	goFiles []string
}

// listPackages runs `go list` over the module and returns every package with
// its non-test imports.
func listPackages(t *testing.T) []pkgInfo {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{.Dir}}|{{join .Imports \",\"}}|{{join .GoFiles \",\"}}", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkgInfo
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		parts := strings.Split(sc.Text(), "|")
		if len(parts) != 4 {
			t.Fatalf("unexpected go list line %q", sc.Text())
		}
		p := pkgInfo{path: rel(parts[0]), dir: parts[1]}
		for _, imp := range splitList(parts[2]) {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				p.imports = append(p.imports, rel(imp))
			} else {
				p.stdlib = append(p.stdlib, imp)
			}
		}
		p.goFiles = splitList(parts[3])
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no packages")
	}
	return pkgs
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func rel(importPath string) string {
	return strings.TrimPrefix(strings.TrimPrefix(importPath, module), "/")
}

// under reports whether pkg is dir or below it.
func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// rule says which module packages a group of packages may import. A package
// matches the first rule whose prefix it is under.
type rule struct {
	prefix string
	// allowed lists module directories the package may import (itself and
	// its own subpackages are always allowed); nil with leaf=true means none.
	allowed []string
	// denied lists directories it must never import, checked even when
	// allowed is nil (meaning "anything not denied").
	denied []string
}

var rules = []rule{
	// ioctx may import the error classes only, for its deprecated aliases.
	{prefix: "ioctx", allowed: []string{"internal/errclass"}},
	{prefix: "statistics", allowed: []string{}},
	{prefix: "ratelimit", allowed: []string{"ioctx", "statistics", "internal/base", "internal/errclass", "internal/invariants"}},
	{prefix: "internal/invariants", allowed: []string{}},
	{prefix: "internal/errclass", allowed: []string{}},
	{prefix: "internal/base", allowed: []string{"internal/errclass", "internal/invariants", "ioctx"}},
	// The filesystem is public API and a leaf below the engine: a program
	// implements or wraps vfs.FS, so vfs and vfs/errorfs import nothing of
	// the module beyond the IO options they pass on and the error marker.
	{prefix: "vfs", allowed: []string{"ioctx", "internal/errclass", "internal/invariants", "internal/iobatch"}},
	// The io_uring batch contract between vfs's OS files and the file
	// reader: engine plumbing kept out of vfs's public names.
	{prefix: "internal/iobatch", allowed: []string{"ioctx"}},
	{prefix: "internal/lint", allowed: []string{}},
	{prefix: "internal/cpubench", allowed: []string{}},
	{prefix: "internal/version", allowed: []string{}},
	// The internal packages, in layers: each may import only the layers
	// below it, so the storage formats never learn about the file reader,
	// nor the file reader about tables.
	{prefix: "internal/crc", allowed: []string{"internal/invariants"}},
	{prefix: "internal/bloom", allowed: []string{"internal/invariants"}},
	{prefix: "internal/batch", allowed: []string{"internal/base", "internal/invariants"}},
	{prefix: "internal/compress", allowed: []string{"internal/base", "internal/invariants"}},
	{prefix: "internal/merging", allowed: []string{"internal/base", "internal/invariants"}},
	{prefix: "internal/cache", allowed: []string{"internal/base", "internal/invariants"}},
	{prefix: "internal/checksum", allowed: []string{"internal/base", "internal/crc", "internal/invariants"}},
	{prefix: "internal/wal", allowed: []string{"internal/base", "internal/crc", "internal/invariants"}},
	{prefix: "internal/rangedel", allowed: []string{"internal/base", "internal/invariants"}},
	{prefix: "internal/memtable", allowed: []string{"internal/base", "internal/batch", "internal/invariants", "internal/rangedel"}},
	{prefix: "internal/manifest", allowed: []string{"internal/base", "internal/crc", "vfs", "internal/wal",
		"internal/invariants"}},
	// The merge operators time their merges into the statistics, as the
	// file reader times its reads; compaction combines operands with them.
	{prefix: "internal/merge", allowed: []string{"internal/base", "internal/invariants", "statistics"}},
	{prefix: "internal/compact", allowed: []string{"internal/base", "internal/manifest", "internal/invariants",
		"internal/rangedel", "internal/merge", "statistics"}},
	{prefix: "internal/fileio", allowed: []string{"internal/base", "internal/errclass", "internal/iobatch", "vfs", "internal/invariants", "ioctx",
		"ratelimit", "statistics"}},
	{prefix: "internal/sstable/block", allowed: []string{"internal/base", "internal/checksum", "internal/compress",
		"internal/invariants"}},
	{prefix: "internal/sstable", allowed: []string{"internal/base", "internal/bloom", "internal/cache",
		"internal/checksum", "internal/compress", "internal/crc", "internal/fileio", "vfs",
		"internal/invariants", "internal/rangedel", "ioctx", "statistics"}},
	// The read path over the engine's immutable views: below the engine,
	// above the storage formats.
	{prefix: "internal/readpath", denied: []string{"engine", "driver", "conformance", "examples", "cmd",
		"internal/compact"}},
	// The randomized tests sit above the engine: they reach it through the
	// façade only (engine for its registration and NewConnector), and the
	// crash test injects faults through errorfs.
	{prefix: "internal/metamorphic", allowed: []string{"driver", "engine", "ioctx"}},
	{prefix: "internal/crashtest", allowed: []string{"driver", "engine", "ioctx", "vfs"}},
	// A new internal package must be placed in the layers above.
	{prefix: "internal", allowed: []string{}},
	// The top-level readpath documents the read path and tests it through
	// the façade; it holds no implementation.
	{prefix: "readpath", allowed: []string{"ioctx", "statistics"}},
	{prefix: "engine", denied: []string{"conformance", "examples", "cmd"}},
	{prefix: "driver", allowed: []string{"ioctx", "statistics", "internal/errclass"}},
	{prefix: "conformance", allowed: []string{"driver", "ioctx", "statistics"}},
	{prefix: "examples", denied: []string{"internal", "readpath"}},
	{prefix: "cmd", denied: []string{"readpath"}},
}

func TestImportDirection(t *testing.T) {
	for _, p := range listPackages(t) {
		var r *rule
		for i := range rules {
			if under(p.path, rules[i].prefix) {
				r = &rules[i]
				break
			}
		}
		if r == nil {
			continue
		}
		for _, imp := range p.imports {
			if under(imp, r.prefix) {
				continue
			}
			if violates(*r, imp) {
				t.Errorf("%s imports %s: imports must point down (see DESIGN.md); %s may import %s",
					p.path, imp, r.prefix, describe(*r))
			}
		}
	}
}

func violates(r rule, imp string) bool {
	for _, d := range r.denied {
		if under(imp, d) {
			return true
		}
	}
	if r.allowed == nil {
		return false
	}
	for _, a := range r.allowed {
		if under(imp, a) {
			return false
		}
	}
	return true
}

func describe(r rule) string {
	switch {
	case r.allowed != nil && len(r.allowed) == 0:
		return "nothing of the module"
	case r.allowed != nil:
		return "only " + strings.Join(r.allowed, ", ")
	default:
		return "anything but " + strings.Join(r.denied, ", ")
	}
}

// TestRulesCatchViolations makes sure the rule table is not vacuous.
func TestRulesCatchViolations(t *testing.T) {
	for _, tc := range []struct {
		pkg, imp string
		bad      bool
	}{
		{"driver", "engine", true},
		{"driver", "ioctx", false},
		{"ioctx", "statistics", true},
		{"statistics", "ioctx", true},
		{"internal/sstable", "engine", true},
		{"internal/sstable", "internal/cache", false},
		{"internal/fileio", "internal/sstable", true},
		{"internal/wal", "internal/manifest", true},
		{"internal/manifest", "internal/wal", false},
		{"internal/base", "internal/batch", true},
		{"internal/readpath", "engine", true},
		{"internal/readpath", "driver", true},
		{"readpath", "internal/sstable", true},
		{"engine", "driver", false},
		{"conformance", "engine", true},
		{"examples/quickstart", "internal/base", true},
		{"examples/quickstart", "vfs", false},
		{"vfs", "internal/base", true},
		{"vfs", "engine", true},
		{"internal/manifest", "vfs", false},
		{"examples/quickstart", "engine", false},
	} {
		var r rule
		for _, rr := range rules {
			if under(tc.pkg, rr.prefix) {
				r = rr
				break
			}
		}
		if got := violates(r, tc.imp); got != tc.bad {
			t.Errorf("%s importing %s: violation=%v, want %v", tc.pkg, tc.imp, got, tc.bad)
		}
	}
}

// TestErrorsPackage checks that only the leaf packages (stdlib-only by
// design) use the standard errors package or fmt.Errorf; everything else uses
// cockroachdb/errors, so errors carry marks, stacks and safe details.
func TestErrorsPackage(t *testing.T) {
	for _, p := range listPackages(t) {
		if p.path == "ioctx" || p.path == "statistics" || p.path == "internal/errclass" || under(p.path, "internal/lint") ||
			under(p.path, "examples") || under(p.path, "conformance") || under(p.path, "driver") {
			// driver and conformance import only stdlib plus ioctx,
			// statistics and the error classes, so they use the standard
			// errors package too; internal/errclass is a stdlib-only leaf.
			continue
		}
		for _, imp := range p.stdlib {
			if imp == "errors" {
				t.Errorf("%s imports the standard errors package; use github.com/cockroachdb/errors", p.path)
			}
		}
		forEachCall(t, p, func(pos token.Position, pkg, fn string) {
			switch {
			case pkg == "fmt" && fn == "Errorf":
				t.Errorf("%s: fmt.Errorf; use errors.Newf / errors.Wrapf", pos)
			case pkg == "errors" && fn == "Mark" && p.path != "internal/base":
				// The standard errors.Is does not see cockroachdb marks, and
				// users test errors with it.
				t.Errorf("%s: errors.Mark; use base.Mark, which errors.Is sees", pos)
			}
		})
	}
}

// TestNoRawAtomics bans sync/atomic's functions on plain integers: the typed
// wrappers (atomic.Uint64, ...) cannot be accessed non-atomically by mistake
// and are always aligned.
func TestNoRawAtomics(t *testing.T) {
	for _, p := range listPackages(t) {
		forEachCall(t, p, func(pos token.Position, pkg, fn string) {
			if pkg != "atomic" {
				return
			}
			for _, prefix := range []string{"Add", "Load", "Store", "Swap", "CompareAndSwap", "And", "Or"} {
				if strings.HasPrefix(fn, prefix) {
					t.Errorf("%s: atomic.%s on a plain value; use a typed atomic (atomic.Uint64, ...)", pos, fn)
				}
			}
		})
	}
}

// forEachCall parses the package's non-test files and calls fn for every
// call of the form pkg.Fn(...).
func forEachCall(t *testing.T, p pkgInfo, fn func(pos token.Position, pkg, name string)) {
	t.Helper()
	fset := token.NewFileSet()
	for _, name := range p.goFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok {
				fn(fset.Position(call.Pos()), id.Name, sel.Sel.Name)
			}
			return true
		})
	}
}
