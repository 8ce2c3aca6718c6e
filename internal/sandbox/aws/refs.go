package aws

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"unicode"
)

// Ref is one cross-resource reference of a managed resource kind, read
// from the provider's generated resolvers
// (apis/cluster/<service>/<version>/zz_generated.resolvers.go of
// provider-upjet-aws): the field that holds the value, the *Ref(s) and
// *Selector fields, the kind it points to and how the value is extracted
// from that kind.
type Ref struct {
	// Value, Reference and Selector are JSON paths under the object ("*"
	// stands for every element of a list).
	Value, Reference, Selector []string
	// Multi is a list of values (ResolveMultiple).
	Multi bool
	// Target is the referenced kind: API group, version and kind.
	Group, Version, Kind string
	// Extract is how the value is read from the target: "external-name",
	// or a path under status.atProvider ("id", "arn", ...) or, when
	// FromSpec, under spec.forProvider.
	Extract  string
	FromSpec bool
	// ActiveOnly reads the external name only once the target reports
	// status.atProvider.status ACTIVE (eks ExternalNameIfClusterActive).
	ActiveOnly bool
	// Source is where the resolver was read, file:line.
	Source string
}

// goField is a struct field of the provider's API types.
type goField struct {
	json, typ string
	list      bool
}

// Package is what the stand-in reads of one API package of the provider
// (apis/cluster/<service>/<version>): every kind's references and its
// Terraform resource type.
type Package struct {
	// Refs are the references of each kind.
	Refs map[string][]Ref
	// TerraformType is each kind's Terraform resource type
	// (zz_<kind>_terraformed.go, GetTerraformResourceType).
	TerraformType map[string]string
}

// ReadPackage reads service/version of the provider module at dir.
func ReadPackage(dir, service, version string) (*Package, error) {
	pkgDir := filepath.Join(dir, "apis", "cluster", service, version)
	fset := token.NewFileSet()
	structs := map[string]map[string]goField{}
	entries, err := os.ReadDir(pkgDir)
	if err != nil {
		return nil, err
	}
	out := &Package{Refs: map[string][]Ref{}, TerraformType: map[string]string{}}
	var resolvers *ast.File
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(pkgDir, e.Name()), nil, 0)
		if err != nil {
			return nil, err
		}
		switch {
		case e.Name() == "zz_generated.resolvers.go":
			resolvers = f
		case strings.HasSuffix(e.Name(), "_terraformed.go"):
			readTerraformTypes(f, out.TerraformType)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			fields := map[string]goField{}
			for _, fl := range st.Fields.List {
				if len(fl.Names) == 0 || fl.Tag == nil {
					continue
				}
				tag, _ := strconv.Unquote(fl.Tag.Value)
				j := strings.Split(reflect.StructTag(tag).Get("json"), ",")[0]
				typ, list := typeName(fl.Type)
				fields[fl.Names[0].Name] = goField{json: j, typ: typ, list: list}
			}
			structs[ts.Name.Name] = fields
			return true
		})
	}
	if resolvers == nil {
		return out, nil
	}
	for _, d := range resolvers.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != "ResolveReferences" || fd.Recv == nil {
			continue
		}
		kind, _ := typeName(fd.Recv.List[0].Type)
		var target [3]string
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CallExpr:
				if sel, ok := x.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "GetManagedResource" && len(x.Args) >= 3 {
					for i := 0; i < 3; i++ {
						if lit, ok := x.Args[i].(*ast.BasicLit); ok {
							target[i], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			case *ast.CompositeLit:
				sel, ok := x.Type.(*ast.SelectorExpr)
				if !ok || (sel.Sel.Name != "ResolutionRequest" && sel.Sel.Name != "MultiResolutionRequest") {
					return true
				}
				r := Ref{Multi: sel.Sel.Name == "MultiResolutionRequest", Group: target[0], Version: target[1], Kind: target[2],
					Source: fmt.Sprintf("%s:%d", filepath.Join("apis", "cluster", service, version, "zz_generated.resolvers.go"), fset.Position(x.Pos()).Line)}
				for _, el := range x.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					switch kv.Key.(*ast.Ident).Name {
					case "CurrentValue", "CurrentValues":
						if call, ok := kv.Value.(*ast.CallExpr); ok && len(call.Args) == 1 {
							r.Value = jsonPath(call.Args[0], kind, structs)
						}
					case "Reference", "References":
						r.Reference = jsonPath(kv.Value, kind, structs)
					case "Selector":
						r.Selector = jsonPath(kv.Value, kind, structs)
					case "Extract":
						r.Extract, r.FromSpec, r.ActiveOnly = extractor(kv.Value)
					}
				}
				if r.Value != nil && r.Extract != "" {
					out.Refs[kind] = append(out.Refs[kind], r)
				}
			}
			return true
		})
	}
	return out, nil
}

// readTerraformTypes reads `func (mg *K) GetTerraformResourceType() string
// { return "aws_x" }`.
func readTerraformTypes(f *ast.File, into map[string]string) {
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != "GetTerraformResourceType" || fd.Recv == nil || fd.Body == nil || len(fd.Body.List) != 1 {
			continue
		}
		ret, ok := fd.Body.List[0].(*ast.ReturnStmt)
		if !ok || len(ret.Results) != 1 {
			continue
		}
		if lit, ok := ret.Results[0].(*ast.BasicLit); ok {
			kind, _ := typeName(fd.Recv.List[0].Type)
			into[kind], _ = strconv.Unquote(lit.Value)
		}
	}
}

func typeName(e ast.Expr) (string, bool) {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name, false
	case *ast.StarExpr:
		return typeName(t.X)
	case *ast.ArrayType:
		n, _ := typeName(t.Elt)
		return n, true
	case *ast.SelectorExpr:
		return t.Sel.Name, false
	}
	return "", false
}

// jsonPath turns mg.Spec.ForProvider.A[i].B into its JSON path
// (spec, forProvider, a, *, b) through the provider's types.
func jsonPath(e ast.Expr, kind string, structs map[string]map[string]goField) []string {
	var names []string
	var walk func(ast.Expr)
	walk = func(e ast.Expr) {
		switch x := e.(type) {
		case *ast.SelectorExpr:
			walk(x.X)
			names = append(names, x.Sel.Name)
		case *ast.IndexExpr:
			walk(x.X)
			names = append(names, "*")
		case *ast.Ident:
			// mg
		}
	}
	walk(e)
	var out []string
	typ := kind
	for _, n := range names {
		if n == "*" {
			out = append(out, "*")
			continue
		}
		f, ok := structs[typ][n]
		if !ok {
			out = append(out, lowerFirst(n))
			continue
		}
		out = append(out, f.json)
		typ = f.typ
	}
	return out
}

func lowerFirst(s string) string {
	r := []rune(s)
	r[0] = unicode.ToLower(r[0])
	return string(r)
}

// extractor reads an Extract expression.
func extractor(e ast.Expr) (path string, fromSpec, activeOnly bool) {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return "", false, false
	}
	name := ""
	switch f := call.Fun.(type) {
	case *ast.SelectorExpr:
		name = f.Sel.Name
	case *ast.Ident:
		name = f.Name
	}
	switch name {
	case "ExternalName":
		return "external-name", false, false
	case "ExternalNameIfClusterActive":
		return "external-name", false, true
	case "ExtractResourceID", "TerraformID":
		return "id", false, false
	case "ARNExtractor":
		return "arn", false, false
	case "ExtractParamPath":
		if len(call.Args) == 2 {
			p, _ := strconv.Unquote(call.Args[0].(*ast.BasicLit).Value)
			computed := call.Args[1].(*ast.Ident).Name == "true"
			return camel(p), !computed, false
		}
	}
	return "", false, false
}

// camel turns a Terraform attribute name into upjet's JSON name.
func camel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] == "id" {
			parts[i] = "Id"
			continue
		}
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}
