package binaries

import (
	"context"
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"

	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
)

// TestToolModulesPinVersions holds every tool module's go.mod to the one
// version fact in internal/contract/versions: the binaries the tests run
// are the releases the fleet pins.
func TestToolModulesPinVersions(t *testing.T) {
	dir, err := ToolsDir()
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		module, path, version string
	}{
		"kubernetes":           {"kubernetes", "k8s.io/kubernetes", "v" + versions.KubernetesRelease},
		"etcd":                 {"etcd", "go.etcd.io/etcd/server/v3", "v" + versions.Etcd},
		"kwok":                 {"kwok", "sigs.k8s.io/kwok", "v" + versions.Kwok},
		"source-controller":    {"source-controller", "github.com/fluxcd/source-controller", "v" + versions.SourceController},
		"kustomize-controller": {"kustomize-controller", "github.com/fluxcd/kustomize-controller", "v" + versions.KustomizeController},
		"helm-controller":      {"helm-controller", "github.com/fluxcd/helm-controller", "v" + versions.HelmController},
		"crossplane":           {"crossplane", "github.com/crossplane/crossplane/v2", "v" + versions.Crossplane},
		"sealed-secrets":       {"sealed-secrets", "github.com/bitnami-labs/sealed-secrets", "v" + versions.SealedSecrets},
		"external-secrets":     {"external-secrets", "github.com/external-secrets/external-secrets", "v" + versions.ExternalSecrets},
		"patch-and-transform":  {"functions/patch-and-transform", "github.com/crossplane-contrib/function-patch-and-transform", "v" + versions.FunctionPatchAndTransform},
		"auto-ready":           {"functions/auto-ready", "github.com/crossplane/function-auto-ready", "v" + versions.FunctionAutoReady},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, filepath.FromSlash(tc.module), "go.mod")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			f, err := modfile.Parse(p, b, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			for _, r := range f.Require {
				if r.Mod.Path == tc.path {
					got = r.Mod.Version
				}
			}
			if got != tc.version {
				t.Errorf("%s requires %s %q, want %q (internal/contract/versions)", p, tc.path, got, tc.version)
			}
		})
	}
	// Every tool the tests build is covered above.
	covered := map[string]bool{}
	for _, tc := range cases {
		covered[tc.module] = true
	}
	for _, tool := range All() {
		if !covered[tool.Module] {
			t.Errorf("tool %s: module %s has no version check here", tool.Name, tool.Module)
		}
	}
}

func TestKeyFollowsContent(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "m")
	if err := os.MkdirAll(filepath.Join(mod, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(mod, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module m\n")
	write("go.sum", "")
	write("sub/main.go", "package main\n")
	tool := Tool{Name: "x", Module: "m", Package: "m/sub"}
	k1, err := tool.Key(dir)
	if err != nil {
		t.Fatal(err)
	}
	write("README.md", "not an input")
	if k, _ := tool.Key(dir); k != k1 {
		t.Error("a file that is not a build input changed the key")
	}
	write("sub/main.go", "package main\n\nfunc main() {}\n")
	k2, _ := tool.Key(dir)
	if k2 == k1 {
		t.Error("changed Go source kept the key: a stale binary would be reused")
	}
	tool.LDFlags = "-X a=b"
	if k, _ := tool.Key(dir); k == k2 {
		t.Error("changed link flags kept the key")
	}
}

// TestLDFlagsStable: link flags are part of the cache key, so they must be
// the same in every process (a map's order would rebuild the Kubernetes
// binaries on most runs).
func TestLDFlagsStable(t *testing.T) {
	first := kubeLDFlags()
	for range 100 {
		if got := kubeLDFlags(); got != first {
			t.Fatalf("kubeLDFlags() changed between calls:\n%s\n%s", first, got)
		}
	}
}

// TestBuildAll builds small tool modules side by side, as a cold suite
// does: each tool that compiles lands in the cache without debug
// information, and a failure names its tool without losing the others.
func TestBuildAll(t *testing.T) {
	const good = "package main\n\nfunc main() { println(\"ok\") }\n"
	cases := map[string]struct {
		reason  string
		sources map[string]string // tool name to its main.go
		wantErr []string          // tools the error must name
	}{
		"all build": {
			reason:  "two modules built at once both land in the cache",
			sources: map[string]string{"one": good, "two": good},
		},
		"one fails": {
			reason:  "a compile error names its tool and the other tool is still built",
			sources: map[string]string{"one": good, "broken": "package main\n\nfunc main() { undefined() }\n"},
			wantErr: []string{"build broken"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("EKS_FLEET_BIN_CACHE", filepath.Join(dir, "cache"))
			var tools []Tool
			for tool, src := range tc.sources {
				mod := filepath.Join(dir, tool)
				if err := os.MkdirAll(mod, 0o755); err != nil {
					t.Fatal(err)
				}
				for f, s := range map[string]string{"go.mod": "module example.com/" + tool + "\n\ngo 1.22\n", "main.go": src} {
					if err := os.WriteFile(filepath.Join(mod, f), []byte(s), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				tools = append(tools, Tool{Name: tool, Module: tool, Package: "example.com/" + tool})
			}
			got, err := buildAll(context.Background(), dir, 2, tools)
			for _, want := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%s: error %v does not name %q", tc.reason, err, want)
				}
			}
			if len(tc.wantErr) == 0 && err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			for _, tool := range tools {
				broken := tool.Name == "broken"
				p, ok := got[tool.Name]
				if ok == broken {
					t.Errorf("%s: %s built = %v, want %v", tc.reason, tool.Name, ok, !broken)
					continue
				}
				if broken {
					continue
				}
				if want, _ := tool.Path(dir); p != want {
					t.Errorf("%s: %s at %s, want its cache path %s", tc.reason, tool.Name, p, want)
				}
				f, err := elf.Open(p)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				for _, s := range f.Sections {
					if strings.HasPrefix(s.Name, ".debug_") || s.Name == ".symtab" {
						t.Errorf("%s: %s has section %s; tools are built without debug information", tc.reason, tool.Name, s.Name)
					}
				}
			}
		})
	}
}
