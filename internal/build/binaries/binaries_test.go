package binaries

import (
	"os"
	"path/filepath"
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
