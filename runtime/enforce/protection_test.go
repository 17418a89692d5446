package enforce

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

// The Protection constants are the whole set: distinct names, each
// declared with the type.
func TestProtectionConstants(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(testutil.PackageDir(t), "enforce.go"), nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, sp := range g.Specs {
			vs := sp.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Protection" {
				continue
			}
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Errorf("%s: not a string literal", name.Name)
					continue
				}
				v, _ := strconv.Unquote(lit.Value)
				if !strings.HasPrefix(name.Name, "Protection") || v == "" {
					t.Errorf("%s = %q: want a ProtectionX name and a value", name.Name, v)
				}
				if other, dup := seen[v]; dup {
					t.Errorf("%s and %s are both %q", name.Name, other, v)
				}
				seen[v] = name.Name
			}
		}
	}
	if len(seen) < 10 {
		t.Fatalf("found %d Protection constants in enforce.go", len(seen))
	}
}

// TestSkipsUseConstants reads every non-test Go file of the module: a
// skipped protection is named by an enforce.Protection constant, never by
// a literal (in a Skip, a comparison, an assignment, a conversion, or a
// field of type Protection), so that the set stays the constants' and a
// typo cannot make a new name.
func TestSkipsUseConstants(t *testing.T) {
	type file struct {
		path string
		f    *ast.File
	}
	var files []file
	fset := token.NewFileSet()
	root := filepath.Join(testutil.PackageDir(t), "..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "testdata" || n == "vendor" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files = append(files, file{path, f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	self, _ := filepath.Abs(testutil.PackageDir(t))
	isProtection := func(e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.Ident:
			return e.Name == "Protection"
		case *ast.SelectorExpr:
			return e.Sel.Name == "Protection"
		}
		return false
	}
	hasLiteral := func(e ast.Expr) bool {
		found := false
		ast.Inspect(e, func(n ast.Node) bool {
			if l, ok := n.(*ast.BasicLit); ok && l.Kind == token.STRING {
				found = true
			}
			return !found
		})
		return found
	}
	// Struct types with a field of type Protection: by directory and
	// name, the field's position (-1 when it shares a line of names).
	type structKey struct{ dir, name string }
	fields := map[structKey]map[string]int{}
	for _, fl := range files {
		ast.Inspect(fl.f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			i := 0
			for _, fd := range st.Fields.List {
				names := max(len(fd.Names), 1)
				if isProtection(fd.Type) {
					m := fields[structKey{filepath.Dir(fl.path), ts.Name.Name}]
					if m == nil {
						m = map[string]int{}
						fields[structKey{filepath.Dir(fl.path), ts.Name.Name}] = m
					}
					for _, n := range fd.Names {
						m[n.Name] = i
						if len(fd.Names) > 1 {
							m[n.Name] = -1
						}
					}
				}
				i += names
			}
			return true
		})
	}
	const skipType = "enforce.Skip"
	skips := 0
	for _, fl := range files {
		dir := filepath.Dir(fl.path)
		inEnforce := false
		if abs, err := filepath.Abs(dir); err == nil && abs == self {
			inEnforce = true
		}
		bad := func(n ast.Node, what string) {
			t.Errorf("%s: %s: a literal protection name: use an enforce.Protection constant", fset.Position(n.Pos()), what)
		}
		// checkLit checks a composite literal of the struct type name.
		checkLit := func(cl *ast.CompositeLit, name string) {
			m := fields[structKey{dir, name}]
			if name == skipType {
				m = map[string]int{"Protection": 0}
			}
			if m == nil {
				return
			}
			for i, el := range cl.Elts {
				if kv, ok := el.(*ast.KeyValueExpr); ok {
					if k, ok := kv.Key.(*ast.Ident); ok {
						if _, ok := m[k.Name]; ok && hasLiteral(kv.Value) {
							bad(kv, name+"."+k.Name)
						}
					}
					continue
				}
				for f, at := range m {
					if (at == i || at < 0) && hasLiteral(el) {
						bad(el, name+"."+f)
					}
				}
			}
		}
		typeName := func(e ast.Expr) string {
			switch e := e.(type) {
			case *ast.Ident:
				if inEnforce && e.Name == "Skip" {
					return skipType
				}
				return e.Name
			case *ast.SelectorExpr:
				if x, ok := e.X.(*ast.Ident); ok && x.Name == "enforce" && e.Sel.Name == "Skip" {
					return skipType
				}
			case *ast.StarExpr:
				if id, ok := e.X.(*ast.Ident); ok {
					return id.Name
				}
			}
			return ""
		}
		ast.Inspect(fl.f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				name := typeName(n.Type)
				if name == skipType {
					skips++
				}
				checkLit(n, name)
				// Elements of a slice, array or map literal may leave
				// their type out.
				var elt ast.Expr
				switch ty := n.Type.(type) {
				case *ast.ArrayType:
					elt = ty.Elt
				case *ast.MapType:
					elt = ty.Value
				}
				if en := typeName(elt); elt != nil && en != "" {
					for _, el := range n.Elts {
						if kv, ok := el.(*ast.KeyValueExpr); ok {
							el = kv.Value
						}
						if cl, ok := el.(*ast.CompositeLit); ok && cl.Type == nil {
							if en == skipType {
								skips++
							}
							checkLit(cl, en)
						}
					}
				}
			case *ast.BinaryExpr:
				if (n.Op == token.EQL || n.Op == token.NEQ) &&
					(isProtection(n.X) && hasLiteral(n.Y) || isProtection(n.Y) && hasLiteral(n.X)) {
					bad(n, "a comparison")
				}
			case *ast.AssignStmt:
				for i, l := range n.Lhs {
					if isProtection(l) && i < len(n.Rhs) && hasLiteral(n.Rhs[i]) {
						bad(n, "an assignment")
					}
				}
			case *ast.CallExpr:
				if isProtection(n.Fun) && len(n.Args) == 1 && hasLiteral(n.Args[0]) {
					bad(n, "a conversion")
				}
			case *ast.ValueSpec:
				if n.Type != nil && isProtection(n.Type) && !inEnforce {
					for _, v := range n.Values {
						if hasLiteral(v) {
							bad(n, "a declaration")
						}
					}
				}
			}
			return true
		})
		// switch x.Protection { case "lit": ... }
		ast.Inspect(fl.f, func(n ast.Node) bool {
			sw, ok := n.(*ast.SwitchStmt)
			if !ok || sw.Tag == nil || !isProtection(sw.Tag) {
				return true
			}
			for _, c := range sw.Body.List {
				for _, e := range c.(*ast.CaseClause).List {
					if hasLiteral(e) {
						bad(e, "a switch case")
					}
				}
			}
			return true
		})
	}
	if skips < 15 {
		t.Errorf("found %d enforce.Skip literals in the module: the scan misses them", skips)
	}
}
