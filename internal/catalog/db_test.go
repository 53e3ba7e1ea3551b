package catalog

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneWayToTheDatabase: no code of the package but db.go's uses the
// database (a .db) or a transaction (a .tx) itself: every statement goes
// through the helpers there.
func TestOneWayToTheDatabase(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	read := 0
	for _, name := range files {
		if name == "db.go" || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		read++
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && (sel.Sel.Name == "db" || sel.Sel.Name == "tx") {
				t.Errorf("%s: .%s outside db.go: run the statement through read, readRow, write or writeRow", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
	if read < 20 {
		t.Fatalf("%d files read", read)
	}
}
