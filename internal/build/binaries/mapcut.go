package binaries

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"slices"
	"strconv"

	"golang.org/x/tools/go/ast/astutil"
)

// MapKeys are the string keys of the composite literal that the
// package-level variable name is set to in the Go source src, in source
// order.
func MapKeys(src []byte, name string) ([]string, error) {
	_, lit, err := mapLiteral(token.NewFileSet(), src, name)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(lit.Elts))
	for _, e := range lit.Elts {
		k, err := entryKey(e)
		if err != nil {
			return nil, fmt.Errorf("variable %s: %w", name, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// keepEntries returns src with the composite literal of the package-level
// variable name left with the entries whose string keys are in keep, in
// upstream's order, and the imports only the dropped entries used removed
// (an import unused before the cut stays, so a wrong guess of an import's
// name cannot remove one). A key of keep that src lacks is an error: the
// entry would silently be gone.
func keepEntries(src []byte, name string, keep []string) ([]byte, error) {
	fset := token.NewFileSet()
	f, lit, err := mapLiteral(fset, src, name)
	if err != nil {
		return nil, err
	}
	type imported struct{ name, path string }
	var used []imported
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if astutil.UsesImport(f, p) {
			used = append(used, imported{imp.Name.String(), p})
		}
	}
	var kept []ast.Expr
	var seen []string
	for _, e := range lit.Elts {
		k, err := entryKey(e)
		if err != nil {
			return nil, fmt.Errorf("variable %s: %w", name, err)
		}
		if slices.Contains(keep, k) {
			kept = append(kept, e)
			seen = append(seen, k)
		}
	}
	for _, k := range keep {
		if !slices.Contains(seen, k) {
			return nil, fmt.Errorf("variable %s has no entry %q to keep", name, k)
		}
	}
	lit.Elts = kept
	for _, imp := range used {
		if !astutil.UsesImport(f, imp.path) {
			name := imp.name
			if name == "<nil>" {
				name = "" // no name given
			}
			astutil.DeleteNamedImport(fset, f, name, imp.path)
		}
	}
	var out bytes.Buffer
	if err := format.Node(&out, fset, f); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// mapLiteral parses src and finds the composite literal the package-level
// variable name is set to.
func mapLiteral(fset *token.FileSet, src []byte, name string) (*ast.File, *ast.CompositeLit, error) {
	f, err := parser.ParseFile(fset, "", src, parser.ParseComments)
	if err != nil {
		return nil, nil, err
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			for i, n := range v.Names {
				if n.Name != name || i >= len(v.Values) {
					continue
				}
				lit, ok := v.Values[i].(*ast.CompositeLit)
				if !ok {
					return nil, nil, fmt.Errorf("variable %s is not set to a composite literal", name)
				}
				return f, lit, nil
			}
		}
	}
	return nil, nil, fmt.Errorf("no package-level variable %s", name)
}

// entryKey is the key of a composite literal's entry, a string literal.
func entryKey(e ast.Expr) (string, error) {
	kv, ok := e.(*ast.KeyValueExpr)
	if !ok {
		return "", fmt.Errorf("an element without a key")
	}
	b, ok := kv.Key.(*ast.BasicLit)
	if !ok || b.Kind != token.STRING {
		return "", fmt.Errorf("a key that is not a string literal")
	}
	return strconv.Unquote(b.Value)
}
