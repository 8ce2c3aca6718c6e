package kbuild

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// writeTree writes files (slash paths relative to dir) and returns dir.
func writeTree(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// listed reads the resources of a kustomization.yaml.
func listed(t *testing.T, p string) []string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		t.Fatal(err)
	}
	return k.Resources
}

// TestCopyTreeScoped: the copy leaves out pruned and removed paths and
// writes the overlay; a pruned file leaves its directory's listing only
// when that listing builds resource by resource, else it is copied after
// all.
func TestCopyTreeScoped(t *testing.T) {
	const plain = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ns.yaml\n  - a.yaml\n  - b.yaml\n"
	tests := []struct {
		name        string
		kust        string
		wantListing []string // nil: listing untouched
		wantB       bool     // b.yaml (pruned) present in the copy
	}{
		{"plain listing", plain, []string{"ns.yaml", "a.yaml"}, false},
		{"namePrefix (renames across resources)", plain + "namePrefix: x-\n", nil, true},
		{"replacements (read other resources)", plain + "replacements:\n  - path: r.yaml\n", nil, true},
		{"a directory resource", strings.Replace(plain, "  - ns.yaml\n", "  - sub\n", 1), nil, true},
		{"a file elsewhere", strings.Replace(plain, "  - ns.yaml\n", "  - ../x/ns.yaml\n", 1), nil, true},
		{"a remote resource", strings.Replace(plain, "  - ns.yaml\n", "  - https://example.com/x.yaml\n", 1), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := writeTree(t, filepath.Join(t.TempDir(), "manifests"), map[string]string{
				"gitops-system/claims/kustomization.yaml": tt.kust,
				"gitops-system/claims/ns.yaml":            "kind: Namespace\n",
				"gitops-system/claims/a.yaml":             "kind: A\n",
				"gitops-system/claims/b.yaml":             "kind: B\n",
				"gitops-system/other/keep.yaml":           "keep\n",
				"gitops-system/other/gone.yaml":           "gone\n",
				"workloads/b/kustomization.yaml":          "b\n",
				"workloads/a/kustomization.yaml":          "a\n",
			})
			root := t.TempDir()
			overlay := map[string][]byte{"gitops-system/claims/new.yaml": []byte("kind: New\n"), "gitops-system/other/keep.yaml": []byte("changed\n")}
			prefix, rewritten, err := CopyTreeScoped(tree, root, "manifests/gitops-system", overlay,
				[]string{"gitops-system/other/gone.yaml"}, []string{"gitops-system/claims/b.yaml", "workloads/b"})
			if err != nil {
				t.Fatal(err)
			}
			if prefix != "manifests" {
				t.Fatalf("prefix %q", prefix)
			}
			src := filepath.Join(root, "manifests")
			exists := func(rel string) bool {
				_, err := os.Stat(filepath.Join(src, filepath.FromSlash(rel)))
				return err == nil
			}
			for rel, want := range map[string]bool{
				"gitops-system/claims/a.yaml": true, "gitops-system/claims/ns.yaml": true, "gitops-system/claims/new.yaml": true,
				"gitops-system/claims/b.yaml": tt.wantB, "gitops-system/other/gone.yaml": false,
				"workloads/a/kustomization.yaml": true, "workloads/b": false,
			} {
				if exists(rel) != want {
					t.Errorf("%s in the copy: %v, want %v", rel, !want, want)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(src, "gitops-system/other/keep.yaml")); string(b) != "changed\n" {
				t.Errorf("overlay not applied: keep.yaml = %q", b)
			}
			got := listed(t, filepath.Join(src, "gitops-system/claims/kustomization.yaml"))
			if tt.wantListing == nil {
				if b, _ := os.ReadFile(filepath.Join(src, "gitops-system/claims/kustomization.yaml")); string(b) != tt.kust {
					t.Errorf("listing changed:\n%s", b)
				}
				if len(rewritten) != 0 {
					t.Errorf("rewritten %v, want none", rewritten)
				}
				return
			}
			if !slices.Equal(got, tt.wantListing) {
				t.Errorf("listing %v, want %v", got, tt.wantListing)
			}
			if !slices.Equal(rewritten, []string{"gitops-system/claims"}) {
				t.Errorf("rewritten %v", rewritten)
			}
		})
	}
}

func ks(name, path string, spec map[string]any) Built {
	s := map[string]any{"path": path, "sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"}, "interval": "10m"}
	for k, v := range spec {
		s[k] = v
	}
	return Built{Object: &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": name, "namespace": "flux-system"}, "spec": s,
	}}}
}

// TestCheckScoped: a rewritten listing may be built only by Kustomizations
// that set nothing changing the kustomize build, and be included by no
// kustomization.yaml.
func TestCheckScoped(t *testing.T) {
	tests := []struct {
		name   string
		ks     []Built
		extra  map[string]string
		unsafe bool
	}{
		{"substitution only", []Built{ks("claims", "./manifests/gitops-system/claims", map[string]any{"postBuild": map[string]any{}, "prune": true})}, nil, false},
		{"other path with a build field", []Built{ks("x", "./manifests/gitops-system/other", map[string]any{"namePrefix": "x-"})}, nil, false},
		{"namePrefix", []Built{ks("claims", "./manifests/gitops-system/claims", map[string]any{"namePrefix": "x-"})}, nil, true},
		{"patches", []Built{ks("claims", "manifests/gitops-system/claims/", map[string]any{"patches": []any{}})}, nil, true},
		{"components", []Built{ks("claims", "./manifests/gitops-system/claims", map[string]any{"components": []any{"../c"}})}, nil, true},
		{"included by a kustomization.yaml", nil, map[string]string{"gitops-system/all/kustomization.yaml": "resources:\n  - ../claims\n"}, true},
		{"parent included by a kustomization.yaml", nil, map[string]string{"kustomization.yaml": "resources:\n  - gitops-system\n"}, true},
		{"sibling included", nil, map[string]string{"gitops-system/all/kustomization.yaml": "resources:\n  - ../other\n"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			files := map[string]string{"manifests/gitops-system/claims/kustomization.yaml": "resources:\n  - a.yaml\n"}
			for k, v := range tt.extra {
				files["manifests/"+k] = v
			}
			writeTree(t, root, files)
			err := CheckScoped(root, "manifests", []string{"gitops-system/claims"}, tt.ks)
			if got := errors.Is(err, ErrScopeUnsafe); got != tt.unsafe {
				t.Fatalf("unsafe = %v (%v), want %v", got, err, tt.unsafe)
			}
			if err != nil && !tt.unsafe {
				t.Fatal(err)
			}
			if err := CheckScoped(root, "manifests", nil, tt.ks); err != nil {
				t.Errorf("nothing rewritten: %v", err)
			}
		})
	}
}
