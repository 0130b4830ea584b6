package driver

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports enforces the package's one structural rule: it imports only
// the standard library, ioctx, statistics and the module's error classes
// (never an engine, as database/sql never imports a driver). internal/lint checks the module's
// packages; this also catches third-party imports such as an error library.
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{
		"github.com/shaledb/shale/ioctx":      true,
		"github.com/shaledb/shale/statistics": true,
		// The error classes' one definition: a stdlib-only leaf.
		"github.com/shaledb/shale/internal/errclass": true,
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			stdlib := !strings.Contains(first, ".")
			if !stdlib && !allowed[path] {
				t.Errorf("%s imports %s; package driver may import only the standard library, ioctx, statistics and internal/errclass", name, path)
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no source files checked")
	}
}
