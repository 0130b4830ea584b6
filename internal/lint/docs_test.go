package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// publicPackages are the packages a program outside the module imports.
// Each must have a package doc, and each of its exported names a doc
// comment: they are the API, and `go doc` is where a user meets it.
var publicPackages = []string{"driver", "engine", "ioctx", "statistics", "ratelimit", "readpath", "conformance", "vfs", "vfs/errorfs"}

// TestPublicDocs checks that every public package has a package doc and
// that every exported top-level name (function, type, method of an exported
// type, constant, variable) has a doc comment. In a parenthesised const or
// var group, the group's comment covers the names that have none of their
// own, as go doc shows them together.
func TestPublicDocs(t *testing.T) {
	pkgs := map[string]pkgInfo{}
	for _, p := range listPackages(t) {
		pkgs[p.path] = p
	}
	for _, path := range publicPackages {
		p, ok := pkgs[path]
		if !ok {
			t.Errorf("public package %s not found", path)
			continue
		}
		checkPackageDocs(t, path, p.dir, p.goFiles)
	}
	// The nested modules' packages, which go list of this module does not
	// see: their non-test Go files, read from their directories.
	for _, dir := range nestedPublicPackages {
		entries, err := os.ReadDir(filepath.Join("..", "..", dir))
		if err != nil {
			t.Fatal(err)
		}
		var files []string
		for _, e := range entries {
			if name := e.Name(); !e.IsDir() && strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
				files = append(files, name)
			}
		}
		checkPackageDocs(t, dir, filepath.Join("..", "..", dir), files)
	}
}

// checkPackageDocs reports, for the package path whose files are in dir,
// a missing package doc and every exported name without a doc comment.
func checkPackageDocs(t *testing.T, path, dir string, files []string) {
	t.Helper()
	fset := token.NewFileSet()
	hasPkgDoc := false
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil && strings.HasPrefix(f.Doc.Text(), "Package "+f.Name.Name) {
			hasPkgDoc = true
		}
		for _, missing := range undocumented(f) {
			t.Errorf("%s: exported %s has no doc comment", fset.Position(missing.Pos()), missing.Name)
		}
	}
	if !hasPkgDoc {
		t.Errorf("package %s has no package doc (a comment starting \"Package %s\")", path, filepath.Base(path))
	}
}

// nestedPublicPackages are the public packages of the nested modules.
var nestedPublicPackages = []string{"contrib/shaleprom", "drivers/etcd"}

// undocumented returns the exported top-level names of f without a doc
// comment.
func undocumented(f *ast.File) []*ast.Ident {
	var out []*ast.Ident
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || d.Doc != nil {
				continue
			}
			if d.Recv != nil && !exportedReceiver(d.Recv.List[0].Type) {
				continue
			}
			out = append(out, d.Name)
		case *ast.GenDecl:
			grouped := d.Lparen.IsValid() && d.Doc != nil
			for _, sp := range d.Specs {
				switch sp := sp.(type) {
				case *ast.TypeSpec:
					if sp.Name.IsExported() && sp.Doc == nil && d.Doc == nil {
						out = append(out, sp.Name)
					}
				case *ast.ValueSpec:
					if sp.Doc != nil || sp.Comment != nil || grouped || (d.Doc != nil && !d.Lparen.IsValid()) {
						continue
					}
					for _, n := range sp.Names {
						if n.IsExported() {
							out = append(out, n)
						}
					}
				}
			}
		}
	}
	return out
}

func exportedReceiver(t ast.Expr) bool {
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	id, ok := t.(*ast.Ident)
	return ok && id.IsExported()
}
