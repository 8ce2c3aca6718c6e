package aws

import (
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
)

// Naming is how a Terraform resource type is named in AWS, as the
// provider's external-name configuration says (config/externalname.go of
// provider-upjet-aws, the ExternalNameConfigs maps).
type Naming int

const (
	// ProviderID: AWS assigns the ID; the provider writes it to the
	// external-name annotation after create (config.IdentifierFromProvider
	// and every custom configuration the stand-in does not know).
	ProviderID Naming = iota
	// ByName: the external name is the resource's name in AWS, defaulting
	// to metadata.name (config.NameAsIdentifier: crossplane-runtime's
	// NameAsExternalName initializer).
	ByName
	// ByNameInTemplate: the external name is the name in AWS and the ID is
	// built from a template around it (config.TemplatedStringAsIdentifier
	// with a name field, for example a node group: <cluster>:<name>).
	ByNameInTemplate
)

// ReadNaming reads every Terraform resource type's naming from the
// provider module at dir.
func ReadNaming(dir string) (map[string]Naming, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(dir, "config", "externalname.go"), nil, 0)
	if err != nil {
		return nil, err
	}
	out := map[string]Naming{}
	ast.Inspect(f, func(n ast.Node) bool {
		kv, ok := n.(*ast.KeyValueExpr)
		if !ok {
			return true
		}
		lit, ok := kv.Key.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		tf, _ := strconv.Unquote(lit.Value)
		if !strings.HasPrefix(tf, "aws_") {
			return true
		}
		var b strings.Builder
		_ = printer.Fprint(&b, fset, kv.Value)
		expr := b.String()
		switch {
		case expr == "config.NameAsIdentifier":
			out[tf] = ByName
		case strings.HasPrefix(expr, "config.TemplatedStringAsIdentifier(\"") && !strings.HasPrefix(expr, "config.TemplatedStringAsIdentifier(\"\""):
			out[tf] = ByNameInTemplate
		default:
			out[tf] = ProviderID
		}
		return false
	})
	return out, nil
}
