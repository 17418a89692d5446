//go:build linux

package linux

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// linux is an enforcer behind the runtime: it reads policies, never
// settings files, and never imports the runtime above it or the decision
// pipeline.
func TestDeps(t *testing.T) {
	testutil.Forbid(t, "github.com/moat-sandbox/moat/runtime/settings", "github.com/moat-sandbox/moat/validators",
		"github.com/moat-sandbox/moat/permissions", "github.com/moat-sandbox/moat/darwin")
	for _, dep := range testutil.Deps(t, "", ".") {
		if dep == "github.com/moat-sandbox/moat/runtime" {
			t.Errorf("linux depends on the runtime package above it")
		}
	}
}

// A library reports through errors, violations and the logger it is given:
// nothing in linux, or any package below it (nsinit, seccomp, journal...),
// writes to the process's stderr or stdout.
func TestNoStdio(t *testing.T) {
	// What writes there: package name (as imported) -> names.
	bad := map[string]map[string]bool{
		"os":       {"Stderr": true, "Stdout": true},
		"fmt":      {"Print": true, "Printf": true, "Println": true},
		"log":      {"Print": true, "Printf": true, "Println": true, "Fatal": true, "Fatalf": true, "Fatalln": true, "Panic": true, "Panicf": true, "Panicln": true, "Default": true, "Writer": true},
		"log/slog": {"Debug": true, "Info": true, "Warn": true, "Error": true, "DebugContext": true, "InfoContext": true, "WarnContext": true, "ErrorContext": true, "Log": true, "LogAttrs": true, "Default": true},
	}
	files := 0
	err := filepath.WalkDir(testutil.PackageDir(t), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		imported := map[string]string{} // local name -> import path
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			name := p[strings.LastIndex(p, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			imported[name] = p
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && bad[imported[x.Name]][n.Sel.Name] {
					t.Errorf("%s:%d uses %s.%s", path, fset.Position(n.Pos()).Line, x.Name, n.Sel.Name)
				}
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok && (id.Name == "print" || id.Name == "println") {
					t.Errorf("%s:%d uses the builtin %s", path, fset.Position(n.Pos()).Line, id.Name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 20 {
		t.Fatalf("only %d Go files under linux/", files)
	}
}
