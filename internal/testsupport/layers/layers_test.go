package layers

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate this test's source file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// TestTreeFollowsLayers checks every import of the repository against
// Allowed.
func TestTreeFollowsLayers(t *testing.T) {
	v, err := CheckTree(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range v {
		t.Error(x)
	}
}

func TestCheck(t *testing.T) {
	m := Module + "/"
	cases := map[string]struct {
		reason  string
		file    string
		imports []string
		want    []Violation
		wantErr string
	}{
		"ContractImportsFleet": {
			reason:  "a planted upward import: the floor reaching up to the CLI",
			file:    "internal/contract/versions/versions.go",
			imports: []string{"fmt", m + "internal/fleet/fleetcmd"},
			want:    []Violation{{File: "internal/contract/versions/versions.go", Import: m + "internal/fleet/fleetcmd", FromUnit: "internal/contract", ToUnit: "internal/fleet"}},
		},
		"ProofImportsHub": {
			reason:  "the proof may not depend on the hub's Pulumi wiring",
			file:    "internal/proof/kbuild/kbuild.go",
			imports: []string{m + "internal/hub"},
			want:    []Violation{{File: "internal/proof/kbuild/kbuild.go", Import: m + "internal/hub", FromUnit: "internal/proof", ToUnit: "internal/hub"}},
		},
		"NonTestImportsTestsupport": {
			reason:  "test support stays out of what ships",
			file:    "components/irsarole/irsarole.go",
			imports: []string{m + "internal/testsupport/plant"},
			want:    []Violation{{File: "components/irsarole/irsarole.go", Import: m + "internal/testsupport/plant", FromUnit: "components", ToUnit: "internal/testsupport"}},
		},
		"ComponentImportsSandbox": {
			reason:  "the program runs on AWS; the local stand-ins are only the sandbox's and the tests'",
			file:    "components/irsarole/irsarole.go",
			imports: []string{m + "internal/sandbox/mocks"},
			want:    []Violation{{File: "components/irsarole/irsarole.go", Import: m + "internal/sandbox/mocks", FromUnit: "components", ToUnit: "internal/sandbox"}},
		},
		"SandboxImportsTestsupport": {
			reason:  "the sandbox ships in fleet; test-only waits and checks stay out of it",
			file:    "internal/sandbox/site/hub.go",
			imports: []string{m + "internal/testsupport/plant"},
			want:    []Violation{{File: "internal/sandbox/site/hub.go", Import: m + "internal/testsupport/plant", FromUnit: "internal/sandbox", ToUnit: "internal/testsupport"}},
		},
		"DownwardAndSameUnit": {
			reason:  "importing a lower unit or one's own is the direction",
			file:    "internal/fleet/fleetcmd/root.go",
			imports: []string{m + "internal/fleet/policy", m + "internal/proof", m + "internal/contract/versions", "github.com/spf13/cobra"},
		},
		"TestFileMayImportAnything": {
			reason:  "tests drive their package from outside",
			file:    "internal/contract/versions/versions_test.go",
			imports: []string{m + "internal/sandbox/mocks", m + "internal/fleet/fleetcmd"},
		},
		"FileInNoUnit": {
			reason:  "a new parent folder under internal/ must be placed in the order first",
			file:    "internal/stray/x.go",
			wantErr: "in no unit",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Check(tc.file, tc.imports)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s\nCheck(...) error = %v, want one containing %q", tc.reason, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nCheck(...): %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nCheck(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestEveryUnitHasADoc makes each parent folder say what it serves.
func TestEveryUnitHasADoc(t *testing.T) {
	root := repoRoot(t)
	for unit := range Allowed {
		if !strings.HasPrefix(unit, "internal/") {
			continue
		}
		if _, err := filepath.Glob(filepath.Join(root, unit, "*.go")); err != nil {
			t.Fatal(err)
		}
		docs, _ := filepath.Glob(filepath.Join(root, unit, "doc.go"))
		pkg, _ := filepath.Glob(filepath.Join(root, unit, filepath.Base(unit)+".go"))
		if len(docs)+len(pkg) == 0 {
			t.Errorf("%s has no doc.go (or %s.go) saying what it serves and what it may import", unit, filepath.Base(unit))
		}
	}
}
