package lint

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// goDirective matches a go.mod's go line.
var goDirective = regexp.MustCompile(`(?m)^go (\S+)$`)

// TestNestedModulesGoVersion checks that every nested module names the
// same oldest Go release as the main module. CI builds and vets each of them
// with that release; a `go get` that raises one module's go directive (a
// dependency that needs a newer Go) fails there, late and far from the
// change, so it is caught here instead.
func TestNestedModulesGoVersion(t *testing.T) {
	root := filepath.Join("..", "..")
	want := goVersion(t, filepath.Join(root, "go.mod"))
	mods, err := filepath.Glob(filepath.Join(root, "*", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	deeper, err := filepath.Glob(filepath.Join(root, "*", "*", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mods = append(mods, deeper...)
	if len(mods) == 0 {
		t.Fatal("no nested go.mod found")
	}
	for _, mod := range mods {
		if got := goVersion(t, mod); got != want {
			rel, _ := filepath.Rel(root, mod)
			t.Errorf("%s says go %s, the main module go %s: pin the dependency that raised it to a version "+
				"that supports go %s (the oldest release the project supports)", rel, got, want, want)
		}
	}
}

func goVersion(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := goDirective.FindSubmatch(data)
	if m == nil {
		t.Fatalf("%s has no go directive", path)
	}
	return string(m[1])
}
