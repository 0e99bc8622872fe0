package jobs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlowsTakeTheirStoreConcern: the flows that keep one or two kinds of things in Redis reach them
// through their own fields (h.records, h.slots, h.handoffs), never through the whole store, so what
// a flow keeps shows in its type.
func TestFlowsTakeTheirStoreConcern(t *testing.T) {
	narrow := map[string]bool{"API": true, "CIWatch": true, "Publish": true, "Reaper": true, "Resumer": true, "Rollbacks": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Body == nil {
				continue
			}
			star, ok := fn.Recv.List[0].Type.(*ast.StarExpr)
			if !ok {
				continue
			}
			recv, ok := star.X.(*ast.Ident)
			if !ok || !narrow[recv.Name] {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				// h.d.Store: a selector Store on a selector d.
				sel, ok := n.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Store" {
					return true
				}
				if inner, ok := sel.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "d" {
					t.Errorf("%s: (*%s).%s reaches the whole store; use the flow's own store field",
						fset.Position(sel.Pos()), recv.Name, fn.Name.Name)
				}
				return true
			})
		}
	}
}
