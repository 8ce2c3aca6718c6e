// Package layers states the import direction between the repository's
// subsystems and checks the source tree against it.
//
// Each subsystem is a unit: a parent folder under internal/ (contract, iam,
// build, proof, fleet, hub, sandbox, testsupport) or a top-level folder the design
// fixes (components, stacks, functions, scripts, test, and the root package
// of main.go). A non-test file of a unit may import its own unit and the
// units Allowed lists for it; test files may import any unit, since a test
// drives what it tests from outside. Imports outside this module are not
// checked.
package layers

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Module is the repository's module path.
const Module = "github.com/gitops-fleet/eks-fleet"

// Allowed lists, for each unit, the other units its non-test files may
// import. The order reads bottom-up: contract is the floor, and the CLI,
// the hub's wiring and the tests sit on top.
var Allowed = map[string][]string{
	"internal/contract":    {},
	"internal/iam":         {"internal/contract"},
	"internal/build":       {"internal/contract"},
	"functions":            {"internal/contract", "internal/iam"},
	"components":           {"internal/contract", "internal/iam"},
	"stacks":               {"internal/contract", "internal/iam"},
	"internal/proof":       {"internal/contract", "internal/iam", "internal/build", "functions"},
	"internal/hub":         {"internal/contract", "internal/iam", "components", "stacks"},
	"internal/fleet":       {"internal/contract", "internal/iam", "internal/build", "internal/proof", "functions", "components", "stacks"},
	"internal/sandbox":     {"internal/contract", "internal/iam", "internal/build", "internal/fleet", "internal/hub", "functions", "components", "stacks"},
	"internal/testsupport": {"internal/contract", "internal/iam", "internal/build", "internal/proof", "internal/fleet", "internal/hub", "internal/sandbox", "functions", "components", "stacks"},
	"scripts":              {"internal/contract", "internal/build", "internal/fleet", "internal/sandbox", "internal/testsupport"},
	"":                     {"internal/hub"},
	"test":                 {},
}

// Violation is one import against the direction.
type Violation struct {
	File, Import     string
	FromUnit, ToUnit string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s imports %s: %s may not import %s (allowed: %s)", v.File, v.Import, show(v.FromUnit), show(v.ToUnit), strings.Join(Allowed[v.FromUnit], ", "))
}

func show(unit string) string {
	if unit == "" {
		return "the root package"
	}
	return unit
}

// Unit returns the unit a slash-separated path inside the repository
// belongs to ("" for the root), and false for a path in no unit.
func Unit(rel string) (string, bool) {
	parts := strings.Split(rel, "/")
	if len(parts) == 1 {
		return "", true
	}
	if parts[0] == "internal" {
		if len(parts) < 3 {
			return "", false
		}
		u := "internal/" + parts[1]
		_, ok := Allowed[u]
		return u, ok
	}
	_, ok := Allowed[parts[0]]
	return parts[0], ok
}

// Check returns the violations of one file's imports: file is its path
// relative to the repository, imports its import paths.
func Check(file string, imports []string) ([]Violation, error) {
	from, ok := Unit(filepath.ToSlash(file))
	if !ok {
		return nil, fmt.Errorf("%s: in no unit: put it under one of the folders layers.Allowed names", file)
	}
	if strings.HasSuffix(file, "_test.go") {
		return nil, nil
	}
	var out []Violation
	for _, imp := range imports {
		rest, ok := strings.CutPrefix(imp, Module+"/")
		if !ok {
			continue
		}
		to, ok := Unit(rest + "/x.go")
		if !ok {
			return nil, fmt.Errorf("%s imports %s, which is in no unit", file, imp)
		}
		if to == from || slices.Contains(Allowed[from], to) {
			continue
		}
		out = append(out, Violation{File: file, Import: imp, FromUnit: from, ToUnit: to})
	}
	return out, nil
}

// CheckTree parses the imports of every .go file under root (the
// repository), skipping nested modules and testdata, and checks each.
func CheckTree(root string) ([]Violation, error) {
	var out []Violation
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == root {
				return nil
			}
			name := d.Name()
			if name == "testdata" || strings.HasPrefix(name, ".") || name == "node_modules" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return fmt.Errorf("parse %s: %w", path, err)
		}
		var imports []string
		for _, s := range f.Imports {
			p, err := strconv.Unquote(s.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: import %s: %w", path, s.Path.Value, err)
			}
			imports = append(imports, p)
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		v, err := Check(rel, imports)
		out = append(out, v...)
		return err
	})
	return out, err
}
