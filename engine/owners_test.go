package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOneOwnerForInstallingAndDeleting keeps installing a version edit and
// deleting files each in one owner (install.go, obsolete.go), so that a rule
// such as "never delete what the MANIFEST cannot account for" stays written
// once: it fails when another function of the engine calls one of the
// operations those owners alone perform. Each allowed call site outside
// them is listed with its reason.
func TestOneOwnerForInstallingAndDeleting(t *testing.T) {
	// allowed maps a method name to the functions ("file:func") that may
	// call it.
	allowed := map[string][]string{
		// Logging an edit to the MANIFEST.
		"LogAndApply": {"install.go:logAndApply"},
		// Deleting files. removeLock removes the LOCK file a failed Open
		// created, and a failed checkpoint its own directory: neither is a
		// table, WAL or MANIFEST of the database.
		"Remove": {"obsolete.go:removeObsoleteFile", "obsolete.go:removeAbandonedTable",
			"obsolete.go:removeCreated", "open.go:removeLock", "checkpoint.go:abandon",
			// A TableWriter's own file, outside any database.
			"tablewriter.go:remove"},
		// Setting a file aside, and a failed Open undoing it; an ingest
		// naming its linked table (a .dbtmp Open deletes until then).
		"Rename": {"obsolete.go:setAside", "recovery.go:abandon", "ingest.go:link",
			// Installing MERGE_OPERATOR, which names the merge operator
			// and is never replaced: not a table, WAL or MANIFEST.
			"merge.go:recordMergeOperator"},
		"notifyTableDeleted": {"obsolete.go:removeObsoleteFile"},
		// A secondary deletes nothing: it closes the tables no version of
		// its own names any more (the primary deleted them, or will).
		"evict": {"obsolete.go:deleteObsoleteFiles", "obsolete.go:removeAbandonedTable",
			"secondary.go:installSecondary"},
		// Unmarking a compaction's inputs.
		"unmarkLocked": {"install.go:installEdit", "install.go:logAndApply"},
	}
	// The flush and the compaction, which once installed their edits by
	// hand, may end a reservation only in their work's rollback of its
	// partial outputs, and drop no reference (installEdit drops the
	// flushed memtable's). The names are too common to check elsewhere.
	workOnly := map[string]map[string][]string{
		"flush.go":      {"abandon": {"flushMemTable"}, "release": nil, "unref": nil},
		"compaction.go": {"abandon": {"compactFiles"}, "release": nil, "unref": nil},
	}

	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		f, err := parser.ParseFile(fset, name, src, 0)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				method := sel.Sel.Name
				if funcs, ok := workOnly[name][method]; ok && !slices.Contains(funcs, fn.Name.Name) {
					t.Errorf("%s: %s calls %s, which installEdit does for it", fset.Position(call.Pos()), fn.Name.Name, method)
				}
				sites, ok := allowed[method]
				if !ok {
					return true
				}
				if !slices.Contains(sites, name+":"+fn.Name.Name) && !slices.Contains(sites, name+":*") {
					t.Errorf("%s: %s calls %s, which only %v may", fset.Position(call.Pos()), fn.Name.Name, method, sites)
				}
				return true
			})
		}
	}
}
