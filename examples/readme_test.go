package examples_test

import (
	"bytes"
	"context"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// readmeQuickStart returns the first ```go block under the heading
// "## Quick start" of the README at path.
func readmeQuickStart(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	_, section, ok := strings.Cut(readme, "\n## Quick start\n")
	if !ok {
		t.Fatalf("%s has no \"## Quick start\" heading", path)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	_, block, ok := strings.Cut(section, "\n```go\n")
	if !ok {
		t.Fatalf("%s: the Quick start has no ```go block", path)
	}
	block, _, ok = strings.Cut(block, "\n```")
	if !ok {
		t.Fatalf("%s: the Quick start's ```go block is not closed", path)
	}
	return block + "\n"
}

// requireLines returns the require directives of the go.mod at path, in
// block form, and its go directive.
func requireLines(t *testing.T, path string) (requires []string, goVersion string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	inBlock := false
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "go "):
			goVersion = strings.TrimPrefix(line, "go ")
		case line == "require (":
			inBlock = true
		case inBlock && line == ")":
			inBlock = false
		case inBlock && line != "":
			requires = append(requires, line)
		case strings.HasPrefix(line, "require "):
			requires = append(requires, strings.TrimPrefix(line, "require "))
		}
	}
	if goVersion == "" {
		t.Fatalf("%s has no go directive", path)
	}
	return requires, goVersion
}

// TestREADMEQuickStart extracts the README's Quick start, which must be a
// whole program, builds it in a module of its own that uses this checkout
// (a replace directive, and the main module's requirements and go.sum, so
// that it builds offline from the module cache), and runs it: the program
// a newcomer copies must compile and exit 0.
func TestREADMEQuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the README's Quick start in a module of its own (several seconds); skipped with -short")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	src := readmeQuickStart(t, filepath.Join(root, "README.md"))
	f, err := parser.ParseFile(token.NewFileSet(), "quickstart.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("the README's Quick start does not parse: %v\n%s", err, src)
	}
	if f.Name.Name != "main" {
		t.Fatalf("the README's Quick start is package %s, want a whole program (package main)", f.Name.Name)
	}
	if !regexp.MustCompile(`(?m)^func main\(\) \{`).MatchString(src) {
		t.Fatal("the README's Quick start has no func main")
	}

	requires, goVersion := requireLines(t, filepath.Join(root, "go.mod"))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	gomod := "module example.com/readme-quickstart\n\ngo " + goVersion + "\n\n" +
		// Any version: the replace makes it this checkout.
		"require github.com/shaledb/shale v0.0.0\n\nrequire (\n\t" + strings.Join(requires, "\n\t") + "\n)\n\n" +
		"replace github.com/shaledb/shale => " + root + "\n"
	for name, data := range map[string][]byte{
		"go.mod": []byte(gomod), "go.sum": sum, "main.go": []byte(src),
	} {
		if err := os.WriteFile(filepath.Join(mod, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOSUMDB=off")
	exe := filepath.Join(mod, "quickstart")
	build := exec.Command(goTool(t), "build", "-o", exe, ".")
	build.Dir, build.Env = mod, env
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the README's Quick start does not build: %v\n%s\n--- go.mod\n%s--- main.go\n%s", err, out, gomod, src)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, exe)
	run.Dir = mod
	var out bytes.Buffer
	run.Stdout, run.Stderr = &out, &out
	start := time.Now()
	if err := run.Run(); err != nil {
		t.Fatalf("the README's Quick start failed: %v\n%s", err, out.String())
	}
	t.Logf("the Quick start ran in %s:\n%s", time.Since(start).Round(time.Millisecond), out.String())
}
